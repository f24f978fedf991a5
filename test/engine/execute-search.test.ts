import { describe, expect, it } from 'vitest';
import { executeSearch, type SearchResponse } from '../../src/engine/execute-search.js';
import { buildShards } from '../../src/engine/mail-index.js';
import { parseSearchBody } from '../../src/engine/search-request.js';
import type { MailDocument } from '../../src/engine/spam-assassin-corpus.js';

const ms = (iso: string): number => Date.parse(iso);

const DOCS: readonly MailDocument[] = [
  {
    id: 'a',
    subject: 'free money',
    from: 'x@spam.example',
    body: 'money now',
    date: ms('2002-08-01T10:00:00Z'),
  },
  {
    id: 'b',
    subject: 'meeting',
    from: 'ann@work.example',
    body: 'linux kernel',
    date: ms('2002-08-02T00:00:00Z'),
  },
  { id: 'c', subject: 'free linux', from: 'bob@lists.example', body: 'money linux', date: null },
  { id: 'd', subject: 'offer', from: 'x@spam.example', body: 'free offer', date: ms('2002-09-15T12:00:00Z') },
  {
    id: 'e',
    subject: 'hello',
    from: 'eve@home.example',
    body: 'money money money',
    date: ms('2001-12-31T23:59:59.999Z'),
  },
  {
    id: 'f',
    subject: 'kernel news',
    from: 'ann@work.example',
    body: 'linux news',
    date: ms('2002-08-01T00:00:00Z'),
  },
];

/** One shard, so that scores of different queries are comparable. */
const ONE_SHARD = new Map([['mail', buildShards(DOCS, 1)]]);
/** Three shards, to check that range and bool work per shard too. */
const THREE_SHARDS = new Map([['mail', buildShards(DOCS, 3)]]);
/** A Wednesday afternoon, after every document but `d` (2002-09-15). */
const NOW = ms('2002-08-14T15:27:33.123Z');

function search(query: unknown, loaded = ONE_SHARD, checkpoint: () => void = () => {}): SearchResponse {
  return executeSearch(loaded, ['mail'], parseSearchBody({ query, size: 100 }), checkpoint, NOW);
}

/** `_id` → `_score` of every hit. */
function scores(query: unknown, loaded = ONE_SHARD): Record<string, number> {
  return Object.fromEntries(
    search(query, loaded).hits.hits.map((hit) => [hit._id, hit._score ?? Number.NaN]),
  );
}

function ids(query: unknown, loaded = ONE_SHARD): string[] {
  return Object.keys(scores(query, loaded)).sort();
}

const money = { match: { body: 'money' } };
const linux = { multi_match: { query: 'linux', fields: ['subject', 'body'] } };
const august = { range: { date: { gte: '2002-08-01', lt: '2002-09-01' } } };

describe('executeSearch: range', () => {
  it('matches documents whose date lies in the range, with score 1', () => {
    expect(scores(august)).toEqual({ a: 1, b: 1, f: 1 });
    expect(search(august).hits.max_score).toBe(1);
    expect(ids(august, THREE_SHARDS)).toEqual(['a', 'b', 'f']);
  });

  it('never matches a document without a date, even with an open range', () => {
    expect(ids({ range: { date: { gte: -8.64e15 } } })).toEqual(['a', 'b', 'd', 'e', 'f']);
    expect(ids({ range: { date: { lte: 'now' } } })).toEqual(['a', 'b', 'e', 'f']);
  });

  it('includes gte/lte and excludes gt/lt at the exact millisecond', () => {
    const a = ms('2002-08-01T10:00:00Z');
    expect(ids({ range: { date: { gte: a, lte: a } } })).toEqual(['a']);
    expect(ids({ range: { date: { gt: a, lte: a } } })).toEqual([]);
    expect(ids({ range: { date: { gte: a, lt: a } } })).toEqual([]);
    expect(ids({ range: { date: { gt: a - 1, lt: a + 1 } } })).toEqual(['a']);
  });

  it('reads a plain date as a whole day for lte and excludes that day for gt', () => {
    expect(ids({ range: { date: { gte: '2002-08-01', lte: '2002-08-01' } } })).toEqual(['a', 'f']);
    expect(ids({ range: { date: { gt: '2002-08-01', lte: '2002-08-02' } } })).toEqual(['b']);
    expect(ids({ range: { date: { lte: '2001-12-31' } } })).toEqual(['e']);
    expect(ids({ range: { date: { lt: '2002-01-01T00:00:00Z' } } })).toEqual(['e']);
  });

  it('resolves date math against the given now, rounding per bound', () => {
    // now = 2002-08-14T15:27:33Z: the last 14 days from the start of the day are 2002-07-31 onwards.
    expect(ids({ range: { date: { gte: 'now-14d/d', lte: 'now' } } })).toEqual(['a', 'b', 'f']);
    expect(ids({ range: { date: { gte: 'now-13d/d' } } })).toEqual(['a', 'b', 'd', 'f']);
    // gt rounds up: after the whole of 2002-08-01.
    expect(ids({ range: { date: { gt: '2002-08-01||/d', lt: 'now/d' } } })).toEqual(['b']);
    // lte rounds up: through the end of August 2002.
    expect(ids({ range: { date: { gte: '2002-08-01||/M', lte: '2002-08-01||/M' } } })).toEqual([
      'a',
      'b',
      'f',
    ]);
    expect(ids({ range: { date: { gte: 'now-1y/y', lt: 'now/y' } } })).toEqual(['e']);
    expect(ids({ range: { date: { gte: 'now+1d' } } })).toEqual(['d']);
    expect(ids({ range: { date: { gte: 'now+1M+1d' } } })).toEqual([]);
  });
});

describe('executeSearch: bool', () => {
  const moneyScores = scores(money);
  const linuxScores = scores(linux);

  it('must: every clause must match and the scores add', () => {
    expect(Object.keys(moneyScores).sort()).toEqual(['a', 'c', 'e']);
    expect(Object.keys(linuxScores).sort()).toEqual(['b', 'c', 'f']);
    const both = scores({ bool: { must: [money, linux] } });
    expect(Object.keys(both)).toEqual(['c']);
    expect(both['c']).toBeCloseTo(moneyScores['c']! + linuxScores['c']!, 10);
    // A single clause without an array is the same as a one-element array.
    expect(scores({ bool: { must: money } })).toEqual(moneyScores);
  });

  it('must with a range: the range matches like a filter and adds 1', () => {
    const result = scores({ bool: { must: [money, august] } });
    expect(Object.keys(result)).toEqual(['a']);
    expect(result['a']).toBeCloseTo(moneyScores['a']! + 1, 10);
  });

  it('filter: must match but adds nothing; a filter-only bool scores 0', () => {
    expect(scores({ bool: { must: money, filter: august } })).toEqual({ a: moneyScores['a'] });
    expect(scores({ bool: { filter: [august] } })).toEqual({ a: 0, b: 0, f: 0 });
    expect(scores({ bool: { filter: [august, linux] } })).toEqual({ b: 0, f: 0 });
    expect(scores({ bool: { filter: [linux, august] } }, THREE_SHARDS)).toEqual({ b: 0, f: 0 });
    expect(search({ bool: { filter: august } }).hits.max_score).toBe(0);
  });

  it('should with must or filter is optional and adds the scores of the clauses that match', () => {
    const result = scores({
      bool: { filter: august, should: [money, linux, { range: { date: { lt: '2002-08-02' } } }] },
    });
    expect(Object.keys(result).sort()).toEqual(['a', 'b', 'f']);
    expect(result['a']).toBeCloseTo(moneyScores['a']! + 1, 10);
    expect(result['b']).toBeCloseTo(linuxScores['b']!, 10);
    expect(result['f']).toBeCloseTo(linuxScores['f']! + 1, 10);
  });

  it('should alone: at least one clause must match; the score sums the matching ones', () => {
    const result = scores({ bool: { should: [money, linux] } });
    expect(Object.keys(result).sort()).toEqual(['a', 'b', 'c', 'e', 'f']);
    expect(result['c']).toBeCloseTo(moneyScores['c']! + linuxScores['c']!, 10);
    expect(result['e']).toBeCloseTo(moneyScores['e']!, 10);
    expect(ids({ bool: { should: [august, { range: { date: { lt: '2002' } } }] } })).toEqual([
      'a',
      'b',
      'e',
      'f',
    ]);
    expect(ids({ bool: { should: [money, august] } }, THREE_SHARDS)).toEqual(['a', 'b', 'c', 'e', 'f']);
  });

  it('must_not removes matches; a range there keeps documents without a date', () => {
    expect(scores({ bool: { must: money, must_not: linux } })).toEqual({
      a: moneyScores['a'],
      e: moneyScores['e'],
    });
    expect(ids({ bool: { must: money, must_not: august } })).toEqual(['c', 'e']);
    expect(
      ids({ bool: { should: [money, linux], must_not: [august, { match: { subject: 'hello' } }] } }),
    ).toEqual(['c']);
  });

  it('must_not alone matches every other document with score 0', () => {
    expect(scores({ bool: { must_not: august } })).toEqual({ c: 0, d: 0, e: 0 });
    expect(scores({ bool: { must_not: { match_all: {} } } })).toEqual({});
  });

  it('an empty bool matches every document with score 1, like match_all', () => {
    expect(scores({ bool: {} })).toEqual(scores({ match_all: {} }));
    expect(search({ bool: {} }).hits.total!.value).toBe(DOCS.length);
  });

  it('nests: a bool clause scores like the bool alone', () => {
    const inner = { bool: { should: [money, linux], filter: august } };
    const innerScores = scores(inner);
    expect(Object.keys(innerScores).sort()).toEqual(['a', 'b', 'f']);
    const outer = scores({
      bool: {
        must: [inner, { match: { from: 'ann' } }],
        must_not: { bool: { filter: { prefix: { subject: 'kern' } } } },
      },
    });
    expect(Object.keys(outer)).toEqual(['b']);
    expect(outer['b']).toBeGreaterThan(innerScores['b']!);
  });

  it('is the same over one shard or three (ids; scores are shard-local)', () => {
    const query = {
      bool: {
        should: [money, { prefix: { subject: 'free' } }],
        must_not: { range: { date: { gte: '2002-09-01' } } },
      },
    };
    expect(ids(query, THREE_SHARDS)).toEqual(ids(query));
    expect(ids(query)).toEqual(['a', 'c', 'e']);
  });

  it('checks for cancellation before each bool clause, and stops when the checkpoint throws', () => {
    let calls = 0;
    search(
      { bool: { must: [money, linux], filter: august, should: money, must_not: linux } },
      ONE_SHARD,
      () => calls++,
    );
    // Before the shard, the must clauses (2), the filter range (the first required range would scan,
    // but it runs as a test on the candidates: no call), the should (1), the must_not (1), at the end.
    expect(calls).toBe(1 + 2 + 1 + 1 + 1);
    let seen = 0;
    const abort = new DOMException('task cancelled', 'AbortError');
    expect(() =>
      search({ bool: { should: [money, linux, money] } }, ONE_SHARD, () => {
        if (++seen === 3) throw abort;
      }),
    ).toThrow(abort);
    expect(seen).toBe(3);
  });
});

describe('executeSearch with a search timeout', () => {
  const busy = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end) {
      /* a shard that takes a while */
    }
  };

  it('stops once the timeout has passed and says timed_out, keeping the hits found; every shard counts as successful', () => {
    const plan = parseSearchBody({ query: { match_all: {} }, size: 100 });
    const full = executeSearch(THREE_SHARDS, ['mail'], plan, () => {}, NOW);
    // The first shard is searched (its check comes at once), the next check is past 1 ms.
    let calls = 0;
    const slowAfterFirst = () => {
      if (calls++ > 0) busy(3);
    };
    const partial = executeSearch(THREE_SHARDS, ['mail'], plan, slowAfterFirst, NOW, undefined, 1);
    expect(full.timed_out).toBe(false);
    expect(partial.timed_out).toBe(true);
    expect(partial._shards).toEqual({ total: 3, successful: 3, skipped: 0, failed: 0 });
    expect(partial.hits.total!.value).toBeGreaterThan(0);
    expect(partial.hits.total!.value).toBeLessThan(full.hits.total!.value);
  });

  it("the timeout given replaces the plan's own, and a search that finishes in time does not time out", () => {
    // The plan says 1 ms; the runtime's resolved 60 s wins.
    const plan = parseSearchBody({ query: { match_all: {} }, size: 100, timeout: '1ms' });
    const roomy = executeSearch(THREE_SHARDS, ['mail'], plan, () => busy(2), NOW, undefined, 60_000);
    expect(roomy).toMatchObject({ timed_out: false, hits: { total: { value: DOCS.length } } });
    // Without one, the plan's timeout applies.
    expect(executeSearch(THREE_SHARDS, ['mail'], plan, () => busy(2), NOW).timed_out).toBe(true);
  });
});
