import { describe, expect, it } from 'vitest';
import { isPlainObject } from '../../src/common/is-plain-object.js';

describe('isPlainObject', () => {
  it('is true for the objects JSON.parse makes', () => {
    expect(isPlainObject(JSON.parse('{}'))).toBe(true);
    expect(isPlainObject(JSON.parse('{"a": [1]}'))).toBe(true);
  });

  it.each([null, [], [1], 'x', 1, true, undefined])('is false for %j', (value) => {
    expect(isPlainObject(value)).toBe(false);
  });
});
