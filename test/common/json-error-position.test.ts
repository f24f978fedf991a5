import { describe, expect, it } from 'vitest';
import { describeJsonError, jsonErrorPosition } from '../../src/common/json-error-position.js';

function parseError(text: string): Error {
  try {
    JSON.parse(text);
  } catch (error) {
    return error as Error;
  }
  throw new Error(`${text} parsed`);
}

describe('jsonErrorPosition', () => {
  it.each([
    // V8 reports a position for these...
    ['{"a": 1,}', 8],
    ['[1, 2] x', 7],
    ['{"a": "\\q"}', 8],
    // ...and none for an unexpected token on Node 20: found by bisecting.
    ['{"a": tru}', 9],
    ['{"a" 1}', 5],
  ])('%j fails at offset %d', (text, offset) => {
    expect(jsonErrorPosition(text, parseError(text))).toBe(offset);
  });

  it('puts a text that ends too soon at its end', () => {
    const text = '{"a": [1, 2';
    expect(jsonErrorPosition(text, parseError(text))).toBe(text.length);
  });
});

describe('describeJsonError', () => {
  it('gives the reason with the line, column and offset of the offending character (the newline after tru)', () => {
    const text = '{\n  "a": 1,\n  "b": tru\n}';
    const described = describeJsonError(parseError(text), text);
    expect(described).toMatch(/, at line 3 column 11, offset 22$/);
  });
});
