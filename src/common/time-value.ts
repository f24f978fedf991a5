/**
 * Elasticsearch time values (`1s`, `500ms`, `-1`), as index settings such as `index.refresh_interval`
 * take them.
 *
 * Source: Elasticsearch `org.elasticsearch.core.TimeValue.parseTimeValue`: the value is lowercased and
 * trimmed; the unit is one of `nanos`, `micros`, `ms`, `s`, `m`, `h`, `d` (tested in that order as
 * suffixes); the number before it must be a whole number ("fractional time values are not supported");
 * without a unit only `-1` (any `-0*1`) and `0` (any `0+`) are accepted ("unit is missing or
 * unrecognized"). The setting's minimum is `-1`, which means "disabled".
 */
import { InvalidArgumentError } from '../errors.js';

const UNITS: readonly (readonly [suffix: string, ms: number])[] = [
  ['nanos', 1e-6],
  ['micros', 1e-3],
  ['ms', 1],
  ['s', 1000],
  ['m', 60_000],
  ['h', 3_600_000],
  ['d', 86_400_000],
];

/**
 * Parses an Elasticsearch time value into milliseconds.
 *
 * @param value a string such as `1s`, `500ms`, `2m`, `-1`, `0`; or the numbers -1 and 0 (a JSON number
 *   reaches Elasticsearch as its text, so other numbers lack a unit).
 * @param path the setting, named in errors (e.g. `settings.index.refresh_interval`).
 * @returns milliseconds (fractional for `nanos` and `micros`); -1 for "disabled".
 * @throws InvalidArgumentError naming `path` and the value for anything else: no or an unknown unit, a
 *   fraction, or a duration below -1.
 */
export function parseTimeValueMs(value: unknown, path: string): number {
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string') {
    throw new InvalidArgumentError(path, 'must be a time value such as "1s", "500ms" or "-1"', value);
  }
  const normalized = text.toLowerCase().trim();
  for (const [suffix, msPerUnit] of UNITS) {
    if (!normalized.endsWith(suffix)) continue;
    const digits = normalized.slice(0, -suffix.length).trim();
    if (/^[+-]?\d+$/.test(digits)) {
      // Elasticsearch reads the amount as a Java long: one past 2^63 - 1 fails to parse there too.
      if (BigInt(digits) > 9_223_372_036_854_775_807n) {
        throw new InvalidArgumentError(
          path,
          'must be a time value whose amount fits in a 64-bit integer',
          value,
        );
      }
      const amount = Number(digits);
      if (amount < -1 || (amount === -1 && msPerUnit !== 1)) {
        throw new InvalidArgumentError(path, 'must be a time value >= -1 (-1 disables it)', value);
      }
      return amount === -1 ? -1 : amount * msPerUnit;
    }
    if (digits !== '' && Number.isFinite(Number(digits))) {
      throw new InvalidArgumentError(
        path,
        'must be a whole number of its unit (fractional time values are not supported)',
        value,
      );
    }
    break;
  }
  if (/^-0*1$/.test(normalized)) return -1;
  if (/^0+$/.test(normalized)) return 0;
  throw new InvalidArgumentError(
    path,
    'must be a time value with a unit (nanos, micros, ms, s, m, h, d), or -1 to disable (unit is missing or unrecognized)',
    value,
  );
}
