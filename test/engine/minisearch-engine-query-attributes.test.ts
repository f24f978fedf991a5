import { describe, expect, it } from 'vitest';
import { queryAttributes, validate } from '../../src/engine/minisearch-engine.js';

const ms = (iso: string): number => Date.parse(iso);
/** A Wednesday afternoon. */
const NOW = ms('2002-08-14T15:27:33.123Z');

function attributes(body: unknown): ReturnType<typeof queryAttributes> {
  const request = { indices: ['spam-1'], body };
  validate(request);
  return queryAttributes(request, NOW);
}

function timeRangeOf(query: unknown): { fromMs: number; toMs: number } | undefined {
  return attributes({ query }).timeRange;
}

describe('minisearch engine: queryAttributes', () => {
  it('reports the compact JSON of the body as the text', () => {
    const body = { query: { match: { body: 'free  money' } }, size: 5 };
    expect(attributes(body)).toEqual({ text: '{"query":{"match":{"body":"free  money"}},"size":5}' });
    expect(attributes(undefined)).toEqual({ text: '{}' });
    expect(attributes(null)).toEqual({ text: '{}' });
  });

  it('reports no time range for a query without a date restriction', () => {
    expect(timeRangeOf({ match_all: {} })).toBeUndefined();
    expect(attributes({}).timeRange).toBeUndefined();
    expect(timeRangeOf({ bool: { must: { match: { body: 'money' } } } })).toBeUndefined();
    expect('timeRange' in attributes({ query: { prefix: { subject: 'mon' } } })).toBe(false);
  });

  it('takes the time range from a top-level range, epoch ms inclusive', () => {
    expect(timeRangeOf({ range: { date: { gte: '2002-07-01', lte: '2002-07-31' } } })).toEqual({
      fromMs: ms('2002-07-01T00:00:00.000Z'),
      toMs: ms('2002-07-31T23:59:59.999Z'),
    });
    expect(timeRangeOf({ range: { date: { gte: 1000, lte: 2000, format: 'epoch_millis' } } })).toEqual({
      fromMs: 1000,
      toMs: 2000,
    });
  });

  it('moves gt and lt bounds in by one millisecond', () => {
    expect(timeRangeOf({ range: { date: { gt: 1000, lt: 2000 } } })).toEqual({ fromMs: 1001, toMs: 1999 });
    expect(
      timeRangeOf({ range: { date: { gt: '2002-08-01T10:00:00.000Z', lt: '2002-08-02T00:00:00Z' } } }),
    ).toEqual({
      fromMs: ms('2002-08-01T10:00:00.001Z'),
      toMs: ms('2002-08-01T23:59:59.999Z'),
    });
  });

  it('reports a missing lower bound as -Infinity and a missing or future upper bound as now', () => {
    expect(timeRangeOf({ range: { date: { gte: 'now-1h' } } })).toEqual({
      fromMs: NOW - 3_600_000,
      toMs: NOW,
    });
    expect(timeRangeOf({ range: { date: { lt: '2002-01-01' } } })).toEqual({
      fromMs: Number.NEGATIVE_INFINITY,
      toMs: ms('2001-12-31T23:59:59.999Z'),
    });
    // No data lies in the future: an upper bound after now reads up to now (lte now/d is common).
    expect(timeRangeOf({ range: { date: { gte: 'now-1d/d', lte: 'now/d' } } })).toEqual({
      fromMs: ms('2002-08-13T00:00:00.000Z'),
      toMs: NOW,
    });
    expect(timeRangeOf({ range: { date: { gte: 'now', lte: 'now+1d' } } })).toEqual({
      fromMs: NOW,
      toMs: NOW,
    });
    // A range entirely after now reads nothing: an empty range.
    expect(timeRangeOf({ range: { date: { gt: 'now' } } })).toEqual({ fromMs: NOW + 1, toMs: NOW });
  });

  it('resolves date math against nowMs with Elasticsearch rounding', () => {
    expect(timeRangeOf({ range: { date: { gte: 'now-1d/d', lt: 'now/d' } } })).toEqual({
      fromMs: ms('2002-08-13T00:00:00.000Z'),
      toMs: ms('2002-08-13T23:59:59.999Z'),
    });
    expect(timeRangeOf({ range: { date: { gt: 'now-7d/d', lte: 'now-1w/w' } } })).toEqual({
      fromMs: ms('2002-08-08T00:00:00.000Z'),
      toMs: ms('2002-08-11T23:59:59.999Z'),
    });
  });

  it('takes the time range from bool must and filter clauses, recursively', () => {
    const week = { range: { date: { gte: 'now-7d', lte: 'now' } } };
    expect(timeRangeOf({ bool: { filter: week, must: { match: { body: 'money' } } } })).toEqual({
      fromMs: NOW - 7 * 86_400_000,
      toMs: NOW,
    });
    expect(timeRangeOf({ bool: { must: [{ match_all: {} }, week] } })).toEqual({
      fromMs: NOW - 7 * 86_400_000,
      toMs: NOW,
    });
    expect(timeRangeOf({ bool: { filter: { bool: { must: { bool: { filter: [week] } } } } } })).toEqual({
      fromMs: NOW - 7 * 86_400_000,
      toMs: NOW,
    });
  });

  it('intersects several restricting ranges', () => {
    expect(
      timeRangeOf({
        bool: {
          must: { range: { date: { gte: '2002-07-01', lte: '2002-07-31' } } },
          filter: [
            { range: { date: { gt: '2002-07-10T00:00:00Z' } } },
            { bool: { filter: { range: { date: { lt: '2002-07-20T00:00:00Z' } } } } },
          ],
        },
      }),
    ).toEqual({ fromMs: ms('2002-07-10T00:00:01.000Z'), toMs: ms('2002-07-19T23:59:59.999Z') });
    // (gt fills the missing fraction of 00:00:00Z with .999, as Elasticsearch's round-up parser does.)
    // Disjoint ranges read nothing: reported as an empty range (fromMs > toMs).
    const empty = timeRangeOf({
      bool: { filter: [{ range: { date: { lt: 1000 } } }, { range: { date: { gte: 5000 } } }] },
    });
    expect(empty).toEqual({ fromMs: 5000, toMs: 999 });
  });

  it('ignores ranges under should and must_not, which do not restrict what is read', () => {
    const august = { range: { date: { gte: '2002-08-01', lt: '2002-09-01' } } };
    expect(timeRangeOf({ bool: { should: [august] } })).toBeUndefined();
    expect(timeRangeOf({ bool: { must_not: august } })).toBeUndefined();
    expect(
      timeRangeOf({ bool: { must: { bool: { should: [august, { match_all: {} }] } } } }),
    ).toBeUndefined();
    expect(
      timeRangeOf({ bool: { filter: { range: { date: { gte: 1000 } } }, should: august, must_not: august } }),
    ).toEqual({ fromMs: 1000, toMs: NOW });
  });

  it('does not throw for an invalid body: it reports the text alone', () => {
    const request = { indices: ['spam-1'], body: { query: { range: { date: { gte: 'soon' } } } } };
    expect(() => validate(request)).toThrow(/\[range\]\[date\]\[gte\]/);
    expect(queryAttributes(request, NOW)).toEqual({ text: '{"query":{"range":{"date":{"gte":"soon"}}}}' });
  });
});
