import { describe, expect, it } from 'vitest';
import type { DateExpression, RangeQueryPlan } from '../../src/engine/query-plan.js';
import { parseSearchBody, resolveDate, resolveDateRange } from '../../src/engine/search-request.js';
import { errorOf } from './parse-error-of.js';

const ms = (iso: string): number => {
  const value = Date.parse(iso);
  if (Number.isNaN(value)) throw new Error(`bad test date ${iso}`);
  return value;
};

function rangeOf(bounds: Record<string, unknown>): RangeQueryPlan {
  const { query } = parseSearchBody({ query: { range: { date: bounds } } });
  if (query.kind !== 'range') throw new Error(`expected a range plan, got ${query.kind}`);
  return query;
}

const fixed = (iso: string): DateExpression => ({ anchor: ms(iso), steps: [] });

describe('parseSearchBody: range', () => {
  it.each<[string, Record<string, unknown>, Partial<RangeQueryPlan>]>([
    [
      'epoch ms, inclusive lower bound only',
      { gte: 1030000000000 },
      { lower: { inclusive: true, date: { anchor: 1030000000000, steps: [] } }, upper: null },
    ],
    [
      'epoch ms as a string of digits',
      { lt: '1030000000000' },
      { lower: null, upper: { inclusive: false, date: { anchor: 1030000000000, steps: [] } } },
    ],
    [
      'an ISO date-time with Z',
      { gte: '2002-08-01T10:30:15.5Z' },
      { lower: { inclusive: true, date: fixed('2002-08-01T10:30:15.500Z') }, upper: null },
    ],
    [
      'an ISO date-time with an offset',
      { gte: '2002-08-01T10:30+02:00', lte: '2002-08-01T10:30:00-0130' },
      {
        lower: { inclusive: true, date: fixed('2002-08-01T08:30:00Z') },
        // lte fills the missing fraction with .999, as Elasticsearch's round-up parser does.
        upper: { inclusive: true, date: fixed('2002-08-01T12:00:00.999Z') },
      },
    ],
    [
      'a date without time: gte starts the day, lte ends it (UTC)',
      { gte: '2002-08-01', lte: '2002-08-01' },
      {
        lower: { inclusive: true, date: fixed('2002-08-01T00:00:00.000Z') },
        upper: { inclusive: true, date: fixed('2002-08-01T23:59:59.999Z') },
      },
    ],
    [
      'gt fills a missing time with its last millisecond, lt with its first',
      { gt: '2002-08-01T10', lt: '2002-09-01' },
      {
        lower: { inclusive: false, date: fixed('2002-08-01T10:59:59.999Z') },
        upper: { inclusive: false, date: fixed('2002-09-01T00:00:00.000Z') },
      },
    ],
    [
      'a year or a month alone fills month and day with 01, as Elasticsearch does',
      { gte: '2002', lte: '2002-08' },
      {
        lower: { inclusive: true, date: fixed('2002-01-01T00:00:00.000Z') },
        upper: { inclusive: true, date: fixed('2002-08-01T23:59:59.999Z') },
      },
    ],
    [
      'date math relative to now, chained, with rounding',
      { gte: 'now-1d-2h/d', lt: 'now' },
      {
        lower: {
          inclusive: true,
          date: {
            anchor: 'now',
            steps: [
              { op: 'add', amount: -1, unit: 'd' },
              { op: 'add', amount: -2, unit: 'h' },
              { op: 'round', unit: 'd' },
            ],
          },
        },
        upper: { inclusive: false, date: { anchor: 'now', steps: [] } },
      },
    ],
    [
      'date math with an omitted amount (1), every unit, and /1 rounding',
      { gte: 'now-d+2y-3M+4w-5H+6m-7s/1M' },
      {
        lower: {
          inclusive: true,
          date: {
            anchor: 'now',
            steps: [
              { op: 'add', amount: -1, unit: 'd' },
              { op: 'add', amount: 2, unit: 'y' },
              { op: 'add', amount: -3, unit: 'M' },
              { op: 'add', amount: 4, unit: 'w' },
              { op: 'add', amount: -5, unit: 'H' },
              { op: 'add', amount: 6, unit: 'm' },
              { op: 'add', amount: -7, unit: 's' },
              { op: 'round', unit: 'M' },
            ],
          },
        },
      },
    ],
    [
      'date math on an anchor date (the anchor is not rounded up, even for lte)',
      { lte: '2002-08-01||+1M/d' },
      {
        upper: {
          inclusive: true,
          date: {
            anchor: ms('2002-08-01T00:00:00Z'),
            steps: [
              { op: 'add', amount: 1, unit: 'M' },
              { op: 'round', unit: 'd' },
            ],
          },
        },
      },
    ],
    [
      'a format naming the default formats (ignored)',
      { gte: 0, format: 'strict_date_optional_time||epoch_millis' },
      { lower: { inclusive: true, date: { anchor: 0, steps: [] } } },
    ],
  ])('parses %s', (_what, bounds, expected) => {
    expect(rangeOf(bounds)).toMatchObject({ kind: 'range', field: 'date', ...expected });
  });

  it.each([
    [
      'an unknown range field',
      { range: { subject: { gte: 1 } } },
      /^\[range\]: unknown field \[subject\]; expected one of date$/,
    ],
    [
      'two range fields',
      { range: { date: { gte: 1 }, from: { gte: 1 } } },
      /^\[range\] query must name exactly one field \(date\); received \{"date":\{"gte":1\},"from":\{"gte":1\}\}$/,
    ],
    [
      'a range that is not an object',
      { range: { date: 5 } },
      /^\[range\]\[date\] must be a JSON object; received 5$/,
    ],
    [
      'an unknown range key',
      { range: { date: { from: 1 } } },
      /^\[range\]\[date\] does not support \[from\]; expected gte, gt, lte, lt, format$/,
    ],
    [
      'time_zone',
      { range: { date: { gte: 1, time_zone: '+01:00' } } },
      /\[range\]\[date\] does not support \[time_zone\]/,
    ],
    [
      'an empty range',
      { range: { date: {} } },
      /^\[range\]\[date\] must give at least one of gte, gt, lte, lt; received \{\}$/,
    ],
    [
      'a range with only a format',
      { range: { date: { format: 'epoch_millis' } } },
      /must give at least one of gte, gt, lte, lt; received \{"format":"epoch_millis"\}/,
    ],
    [
      'both gte and gt',
      { range: { date: { gte: 1, gt: 2 } } },
      /^\[range\]\[date\] may give only one of gte and gt; received \{"gte":1,"gt":2\}$/,
    ],
    ['both lte and lt', { range: { date: { lte: 1, lt: 2 } } }, /may give only one of lte and lt/],
    [
      'an unsupported format',
      { range: { date: { gte: '01/08/2002', format: 'dd/MM/yyyy' } } },
      /^\[range\]\[date\]\[format\] must be one or more of strict_date_optional_time, date_optional_time, epoch_millis joined with \|\|; received "dd\/MM\/yyyy"$/,
    ],
    [
      'a word for a date',
      { range: { date: { gte: 'yesterday' } } },
      /^\[range\]\[date\]\[gte\] must be epoch ms, an ISO-8601 date \(2002-08-01T10:00:00Z\) or date math \(now-1d\/d\); received "yesterday"$/,
    ],
    [
      'an impossible day',
      { range: { date: { lte: '2002-02-29' } } },
      /\[lte\] must be .*received "2002-02-29"/,
    ],
    [
      'hour 24',
      { range: { date: { lt: '2002-08-01T24:00' } } },
      /\[lt\] must be .*received "2002-08-01T24:00"/,
    ],
    ['a month 13', { range: { date: { gt: '2002-13' } } }, /\[gt\] must be .*received "2002-13"/],
    ['a space instead of T', { range: { date: { gte: '2002-08-01 10:00' } } }, /received "2002-08-01 10:00"/],
    [
      'an RFC 2822 date (Date.parse accepts it, ISO-8601 does not)',
      { range: { date: { gte: 'Thu, 01 Aug 2002 10:00:00 +0000' } } },
      /\[gte\] must be epoch ms, an ISO-8601 date/,
    ],
    ['an offset beyond 18 hours', { range: { date: { gte: '2002-08-01T10:00+19:00' } } }, /received/],
    ['a boolean', { range: { date: { gte: true } } }, /\[range\]\[date\]\[gte\] must be .*; received true$/],
    ['null', { range: { date: { lte: null } } }, /\[range\]\[date\]\[lte\] must be .*; received null$/],
    ['an object', { range: { date: { lt: {} } } }, /\[range\]\[date\]\[lt\] must be .*; received \{\}$/],
    [
      'a number beyond the Date range',
      { range: { date: { gte: 1e300 } } },
      /^\[range\]\[date\]\[gte\] must be epoch ms within ±8640000000000000; received 1e\+300$/,
    ],
    [
      'an unknown date-math unit',
      { range: { date: { gte: 'now-1x' } } },
      /^\[range\]\[date\]\[gte\] has bad date math \[-1x\]: unit \[x\] is not supported; expected one of y, M, w, d, h, H, m, s; received "now-1x"$/,
    ],
    [
      'an unknown date-math operator',
      { range: { date: { gte: 'now*1d' } } },
      /has bad date math \[\*1d\]: operator \[\*\] is not supported; expected \+, - or \/; received "now\*1d"/,
    ],
    [
      'text after now',
      { range: { date: { gte: 'nowish' } } },
      /has bad date math \[ish\]: operator \[i\] is not supported/,
    ],
    [
      'a truncated amount',
      { range: { date: { lt: 'now-1' } } },
      /\[lt\] has bad date math \[-1\]: \[-1\] is truncated; expected a unit after it/,
    ],
    ['a lone operator', { range: { date: { lt: 'now-' } } }, /bad date math \[-\]: \[-\] is truncated/],
    [
      'rounding with an amount',
      { range: { date: { lte: 'now/2d' } } },
      /bad date math \[\/2d\]: rounding \[\/2d\] takes a unit without a number/,
    ],
    [
      'an amount beyond a Java int',
      { range: { date: { gte: 'now-2147483648d' } } },
      /bad date math \[-2147483648d\]: \[2147483648\] is larger than 2147483647/,
    ],
    [
      'a bad anchor date',
      { range: { date: { gte: '2002-08-32||+1d' } } },
      /\[gte\] must be epoch ms, .*received "2002-08-32\|\|\+1d"/,
    ],
    [
      'bad math after an anchor',
      { range: { date: { gte: '2002-08-01||+1q' } } },
      /unit \[q\] is not supported/,
    ],
    [
      'a bad bound inside a bool',
      { bool: { filter: [{ match_all: {} }, { range: { date: { gte: 'soon' } } }] } },
      /^\[bool\]\[filter\]\[1\]\[range\]\[date\]\[gte\] must be epoch ms.*received "soon"$/,
    ],
  ])('refuses %s with a parsing_exception naming the field and value', (_what, query, message) => {
    const error = errorOf({ query });
    expect(error.type).toBe('parsing_exception');
    expect(error.statusCode).toBe(400);
    expect(error.message).toMatch(message);
  });
});

describe('resolveDate: date math and rounding', () => {
  // A Wednesday.
  const now = ms('2002-08-14T15:27:33.123Z');
  const at = (text: string, roundUp: boolean, nowMs = now): string => {
    const range = rangeOf({ gte: text });
    return new Date(resolveDate(range.lower!.date, nowMs, roundUp)).toISOString();
  };

  it.each([
    ['now/d', '2002-08-14T00:00:00.000Z', '2002-08-14T23:59:59.999Z'],
    ['now/w', '2002-08-12T00:00:00.000Z', '2002-08-18T23:59:59.999Z'],
    ['now/M', '2002-08-01T00:00:00.000Z', '2002-08-31T23:59:59.999Z'],
    ['now/y', '2002-01-01T00:00:00.000Z', '2002-12-31T23:59:59.999Z'],
    ['now/h', '2002-08-14T15:00:00.000Z', '2002-08-14T15:59:59.999Z'],
    ['now/H', '2002-08-14T15:00:00.000Z', '2002-08-14T15:59:59.999Z'],
    ['now/m', '2002-08-14T15:27:00.000Z', '2002-08-14T15:27:59.999Z'],
    ['now/s', '2002-08-14T15:27:33.000Z', '2002-08-14T15:27:33.999Z'],
    ['now-1d-2h', '2002-08-13T13:27:33.123Z', '2002-08-13T13:27:33.123Z'],
    ['now+1w', '2002-08-21T15:27:33.123Z', '2002-08-21T15:27:33.123Z'],
    ['now-1M/M', '2002-07-01T00:00:00.000Z', '2002-07-31T23:59:59.999Z'],
    // Rounding applies where it is written: later steps move the rounded value.
    ['now/d+1h', '2002-08-14T01:00:00.000Z', '2002-08-15T00:59:59.999Z'],
  ])('%s rounds down to %s and up to %s', (text, down, up) => {
    expect(at(text, false)).toBe(down);
    expect(at(text, true)).toBe(up);
  });

  it('rounds up to the end of the unit even on an exact boundary', () => {
    const midnight = ms('2002-08-14T00:00:00.000Z');
    expect(at('now/d', false, midnight)).toBe('2002-08-14T00:00:00.000Z');
    expect(at('now/d', true, midnight)).toBe('2002-08-14T23:59:59.999Z');
  });

  it('starts weeks on Monday: a Sunday rounds back six days, a Monday stays', () => {
    expect(at('now/w', false, ms('2002-08-18T23:00:00Z'))).toBe('2002-08-12T00:00:00.000Z');
    expect(at('now/w', false, ms('2002-08-12T00:00:00Z'))).toBe('2002-08-12T00:00:00.000Z');
    expect(at('now/w', true, ms('2002-08-11T12:00:00Z'))).toBe('2002-08-11T23:59:59.999Z');
  });

  it('adds months and years in the calendar, clamping the day to a shorter month', () => {
    expect(at('2002-01-31||+1M', false)).toBe('2002-02-28T00:00:00.000Z');
    expect(at('2004-01-31T10:00||+1M', false)).toBe('2004-02-29T10:00:00.000Z');
    expect(at('2004-02-29||+1y', false)).toBe('2005-02-28T00:00:00.000Z');
    expect(at('2002-03-31||-1M', false)).toBe('2002-02-28T00:00:00.000Z');
    expect(at('2002-12-15||+1M', false)).toBe('2003-01-15T00:00:00.000Z');
    expect(at('2002-01-15||-13M', false)).toBe('2000-12-15T00:00:00.000Z');
  });

  it('rounds dates before 1970 and in years below 100 correctly', () => {
    expect(at('1969-12-31T12:00:00Z||/d', false)).toBe('1969-12-31T00:00:00.000Z');
    expect(at('1969-12-31T12:00:00Z||/h', true)).toBe('1969-12-31T12:59:59.999Z');
    expect(at('0050-06-15||/y', false)).toBe('0050-01-01T00:00:00.000Z');
    expect(at('0050-01-31||+1M', false)).toBe('0050-02-28T00:00:00.000Z');
  });

  it('saturates to ±Infinity beyond the Date range instead of throwing', () => {
    expect(resolveDate(rangeOf({ gte: 'now+2147483647y' }).lower!.date, now, false)).toBe(
      Number.POSITIVE_INFINITY,
    );
    expect(resolveDate(rangeOf({ gte: 'now-2147483647y/d' }).lower!.date, now, true)).toBe(
      Number.NEGATIVE_INFINITY,
    );
    expect(resolveDate(rangeOf({ gte: 'now+2147483647d-2147483647d' }).lower!.date, now, false)).toBe(
      Number.POSITIVE_INFINITY,
    );
  });
});

describe('resolveDateRange', () => {
  const now = ms('2002-08-14T15:27:33.123Z');
  const iso = (value: number): string => new Date(value).toISOString();

  it('moves gt and lt in by one millisecond and keeps gte and lte', () => {
    expect(resolveDateRange(rangeOf({ gt: 1000, lt: 2000 }), now)).toEqual({ fromMs: 1001, toMs: 1999 });
    expect(resolveDateRange(rangeOf({ gte: 1000, lte: 2000 }), now)).toEqual({ fromMs: 1000, toMs: 2000 });
    expect(resolveDateRange(rangeOf({ gt: 1000.5, lt: 1999.5 }), now)).toEqual({ fromMs: 1001, toMs: 1999 });
  });

  it('opens the missing side with ±Infinity', () => {
    expect(resolveDateRange(rangeOf({ gte: 5 }), now)).toEqual({ fromMs: 5, toMs: Number.POSITIVE_INFINITY });
    expect(resolveDateRange(rangeOf({ lt: 5 }), now)).toEqual({ fromMs: Number.NEGATIVE_INFINITY, toMs: 4 });
  });

  it('rounds gte and lt down, gt and lte up (Elasticsearch date-math rounding)', () => {
    const today = resolveDateRange(rangeOf({ gte: 'now/d', lte: 'now/d' }), now);
    expect([iso(today.fromMs), iso(today.toMs)]).toEqual([
      '2002-08-14T00:00:00.000Z',
      '2002-08-14T23:59:59.999Z',
    ]);
    // gt now/d excludes all of today; lt now/d excludes all of it too.
    const after = resolveDateRange(rangeOf({ gt: 'now/d' }), now);
    expect(iso(after.fromMs)).toBe('2002-08-15T00:00:00.000Z');
    const before = resolveDateRange(rangeOf({ lt: 'now/d' }), now);
    expect(iso(before.toMs)).toBe('2002-08-13T23:59:59.999Z');
    const yesterday = resolveDateRange(rangeOf({ gte: 'now-1d/d', lt: 'now/d' }), now);
    expect([iso(yesterday.fromMs), iso(yesterday.toMs)]).toEqual([
      '2002-08-13T00:00:00.000Z',
      '2002-08-13T23:59:59.999Z',
    ]);
  });
});
