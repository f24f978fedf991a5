import { describe, expect, it } from 'vitest';
import { jsonDepth } from '../../src/common/json-depth.js';

describe('jsonDepth', () => {
  it.each([
    ['1', 0],
    ['"x"', 0],
    ['null', 0],
    ['{}', 1],
    ['[]', 1],
    ['{"a": 1, "b": "x"}', 1],
    ['{"a": [1]}', 2],
    ['[[], [[{}]]]', 4],
    ['{"a": {"b": 1}, "c": [[[]]]}', 4],
  ])('%s is %d deep', (text, depth) => {
    expect(jsonDepth(JSON.parse(text))).toBe(depth);
  });

  it('walks a value nested far deeper than the call stack allows', () => {
    const text = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    expect(jsonDepth(JSON.parse(text))).toBe(100_000);
  });

  it('stops at the first level over stopAbove', () => {
    const deep = JSON.parse(`${'['.repeat(50)}${']'.repeat(50)}`);
    expect(jsonDepth(deep, 20)).toBe(21);
    expect(jsonDepth(deep, 49)).toBe(50);
    expect(jsonDepth(deep, 50)).toBe(50);
    expect(jsonDepth({ a: 1 }, 20)).toBe(1);
  });
});
