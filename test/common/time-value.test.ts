import { describe, expect, it } from 'vitest';
import { parseTimeValueMs } from '../../src/common/time-value.js';
import { InvalidArgumentError } from '../../src/errors.js';

describe('parseTimeValueMs (TimeValue.parseTimeValue)', () => {
  it.each([
    ['1s', 1000],
    ['500ms', 500],
    ['2m', 120_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['1500micros', 1.5],
    ['2000000nanos', 2],
    [' 3S ', 3000],
    ['-1', -1],
    ['-01', -1],
    ['0', 0],
    ['000', 0],
    ['-1ms', -1],
  ])('%j -> %d ms', (text, ms) => {
    expect(parseTimeValueMs(text, 'x')).toBe(ms);
  });

  it.each(['1', '1.5s', 'abc', '1w', '-2s', '-1s', '', true])('refuses %j', (text) => {
    expect(() => parseTimeValueMs(text, 'x')).toThrow(InvalidArgumentError);
  });

  it('refuses an amount past a 64-bit integer, as Elasticsearch fails to parse it, and takes the largest one', () => {
    expect(() => parseTimeValueMs('99999999999999999999d', 'timeout')).toThrow(
      'timeout must be a time value whose amount fits in a 64-bit integer; received "99999999999999999999d"',
    );
    expect(parseTimeValueMs('9223372036854775807ms', 'timeout')).toBe(Number(9223372036854775807n));
  });
});
