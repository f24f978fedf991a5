/**
 * The search options around the query (track_total_hits, _source, sort, timeout,
 * allow_partial_search_results) and the exact-value and query-string queries, on small in-memory
 * shards: corpus-like mails and writable documents with a whole `_source`.
 */
import MiniSearch from 'minisearch';
import { describe, expect, it } from 'vitest';
import { executeSearch, type SearchResponse } from '../../src/engine/execute-search.js';
import { buildShards } from '../../src/engine/mail-index.js';
import { filterSource, parseSort, parseTrackTotalHits } from '../../src/engine/search-options.js';
import { parseSearchBody } from '../../src/engine/search-request.js';
import type { MailDocument } from '../../src/engine/spam-assassin-corpus.js';
import {
  type IndexedDocument,
  toIndexedDocument,
  WRITABLE_INDEX_OPTIONS,
} from '../../src/engine/writable-shards.js';
import { EngineRequestError } from '../../src/errors.js';
import { errorOf } from './parse-error-of.js';

const ms = (iso: string): number => Date.parse(iso);
const MAILS: readonly MailDocument[] = [
  {
    id: 'a',
    subject: 'free money',
    from: 'x@spam.example',
    body: 'money now',
    date: ms('2002-08-01T10:00:00Z'),
  },
  {
    id: 'b',
    subject: 'Meeting',
    from: 'ann@work.example',
    body: 'linux kernel',
    date: ms('2002-08-02T00:00:00Z'),
  },
  { id: 'c', subject: 'free linux', from: 'bob@lists.example', body: 'money linux', date: null },
  { id: 'd', subject: 'offer', from: 'x@spam.example', body: 'free offer', date: ms('2002-09-15T12:00:00Z') },
];
const CORPUS = new Map([['mail', buildShards(MAILS, 2)]]);

function writableShard(docs: Record<string, Record<string, unknown>>): MiniSearch<IndexedDocument> {
  const search = new MiniSearch<IndexedDocument>(WRITABLE_INDEX_OPTIONS);
  let seqNo = 0;
  for (const [id, source] of Object.entries(docs)) {
    search.add(
      toIndexedDocument({ op: 'index', id, seqNo: seqNo++, routing: id === 'p3' ? 'r1' : undefined, source }),
    );
  }
  return search;
}
const PRODUCTS = new Map([
  [
    'products',
    [
      writableShard({
        p1: {
          title: 'Lamp',
          tags: ['home', 'light'],
          price: 10,
          user: { id: 'kimchy', name: 'Shay' },
          date: '2024-01-02',
        },
        p2: { title: 'Desk', tags: ['home'], price: 99, user: { id: 'ann' }, subject: 'oak desk' },
      }),
      writableShard({
        p3: { title: 'Lamp', tags: 'office', price: 12, user: { id: 'kimchy' }, date: 1_700_000_000_000 },
      }),
    ],
  ],
]);

function run(
  body: unknown,
  loaded: ReadonlyMap<string, readonly (MiniSearch | undefined)[]> = CORPUS,
  checkpoint = () => {},
): SearchResponse {
  const name = [...loaded.keys()][0]!;
  return executeSearch(loaded, [name], parseSearchBody(body), checkpoint);
}
const ids = (r: SearchResponse) => r.hits.hits.map((h) => h._id);

describe('track_total_hits', () => {
  it('counts exactly up to the limit, then reports a lower bound', () => {
    expect(run({ track_total_hits: 2 }).hits.total).toEqual({ value: 2, relation: 'gte' });
    expect(run({ track_total_hits: 4 }).hits.total).toEqual({ value: 4, relation: 'eq' });
    expect(run({ track_total_hits: true }).hits.total).toEqual({ value: 4, relation: 'eq' });
    expect(run({}).hits.total).toEqual({ value: 4, relation: 'eq' });
  });

  it('leaves the total out with false', () => {
    const r = run({ track_total_hits: false });
    expect(r.hits.total).toBeUndefined();
    expect(r.hits.hits).toHaveLength(4);
  });

  it('reads the URL forms and refuses anything else', () => {
    expect(parseTrackTotalHits('true')).toBe(Number.POSITIVE_INFINITY);
    expect(parseTrackTotalHits('false')).toBeNull();
    expect(parseTrackTotalHits('15')).toBe(15);
    expect(errorOf({ track_total_hits: 'many' }).message).toBe(
      '[track_total_hits] must be true, false or an integer >= 0; received "many"',
    );
  });
});

describe('_source', () => {
  const first = (body: unknown) =>
    run({ query: { ids: { values: ['p1'] } }, ...(body as object) }, PRODUCTS).hits.hits[0]!;

  it('drops it with false and keeps it whole by default', () => {
    expect(first({ _source: false })).not.toHaveProperty('_source');
    expect(first({})._source).toMatchObject({ title: 'Lamp', price: 10 });
  });

  it('keeps the included fields, nested paths and wildcards, and removes the excluded ones', () => {
    expect(first({ _source: 'title' })._source).toEqual({ title: 'Lamp' });
    expect(first({ _source: ['user.id', 'price'] })._source).toEqual({ price: 10, user: { id: 'kimchy' } });
    expect(first({ _source: { includes: ['user'], excludes: ['user.name'] } })._source).toEqual({
      user: { id: 'kimchy' },
    });
    expect(first({ _source: { includes: 't*' } })._source).toEqual({
      title: 'Lamp',
      tags: ['home', 'light'],
    });
    expect(first({ _source: { excludes: ['tags', 'user', 'date'] } })._source).toEqual({
      title: 'Lamp',
      price: 10,
    });
  });

  it('filters the stored fields of corpus mails too, and never changes the stored document', () => {
    const hit = run({ query: { ids: { values: ['a'] } }, _source: ['subject'] }).hits.hits[0]!;
    expect(hit._source).toEqual({ subject: 'free money' });
    const stored = { a: { b: 1, c: 2 } };
    filterSource(stored, { fetch: true, includes: ['a.b'], excludes: [] });
    expect(stored).toEqual({ a: { b: 1, c: 2 } });
  });

  it('refuses a malformed filter naming it', () => {
    expect(errorOf({ _source: 3 }).message).toMatch(/^\[_source\] must be true, false, a field pattern/);
    expect(errorOf({ _source: { include: 'a', fields: 'b' } }).message).toMatch(
      /^\[_source\] does not support \[fields\]/,
    );
  });
});

describe('sort', () => {
  it('sorts on date either way with dateless documents last, and gives sort values without scores', () => {
    const asc = run({ sort: [{ date: 'asc' }] });
    expect(ids(asc)).toEqual(['a', 'b', 'd', 'c']);
    expect(asc.hits.hits.map((h) => h.sort)).toEqual([
      [MAILS[0]!.date],
      [MAILS[1]!.date],
      [MAILS[3]!.date],
      [null],
    ]);
    expect(asc.hits.hits.every((h) => h._score === null)).toBe(true);
    expect(asc.hits.max_score).toBeNull();
    expect(ids(run({ sort: { date: { order: 'desc' } } }))).toEqual(['d', 'b', 'a', 'c']);
  });

  it('sorts on _score (descending by default) with the score kept, then on date', () => {
    const r = run({ query: { match: { body: 'money' } }, sort: ['_score', { date: 'desc' }] });
    expect(r.hits.hits[0]!._score).toBeGreaterThan(0);
    expect(r.hits.hits.map((h) => h.sort![0])).toEqual(r.hits.hits.map((h) => h._score));
    expect(r.hits.max_score).toBe(r.hits.hits[0]!._score);
  });

  it('refuses other fields and bad orders', () => {
    expect(() => parseSort([{ price: 'asc' }])).toThrow(
      /sorting on \[price\] is not supported; the fields a search can sort on are _score, date/,
    );
    expect(errorOf({ sort: [{ date: 'up' }] }).message).toBe(
      '[sort][0][date][order] must be "asc" or "desc"; received "up"',
    );
  });
});

describe('timeout and allow_partial_search_results', () => {
  const slow = () => {
    const until = performance.now() + 3;
    while (performance.now() < until);
  };

  it('stops at the timeout and answers what it found with timed_out', () => {
    const r = run({ timeout: '1ms' }, CORPUS, slow);
    expect(r.timed_out).toBe(true);
    expect(r.hits.hits.length).toBeLessThan(MAILS.length);
    expect(run({ timeout: '10s' }, CORPUS, slow).timed_out).toBe(false);
  });

  it('fails with 429 when partial results are not allowed', () => {
    let error: unknown;
    try {
      run({ timeout: '1ms', allow_partial_search_results: false }, CORPUS, slow);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(EngineRequestError);
    expect((error as EngineRequestError).statusCode).toBe(429);
    expect((error as EngineRequestError).type).toBe('search_phase_execution_exception');
  });

  it('refuses a time value without unit', () => {
    expect(errorOf({ timeout: '5' }).message).toMatch(/^\[timeout\] must be a time value with a unit/);
  });
});

describe('term, terms and ids', () => {
  it('matches one exact indexed term of a text field (case sensitive unless asked)', () => {
    expect(ids(run({ query: { term: { subject: 'free' } } })).sort()).toEqual(['a', 'c']);
    expect(ids(run({ query: { term: { subject: 'meeting' } } }))).toEqual(['b']);
    expect(ids(run({ query: { term: { subject: 'Meeting' } } }))).toEqual([]);
    expect(
      ids(run({ query: { term: { subject: { value: 'FREE', case_insensitive: true } } } })).sort(),
    ).toEqual(['a', 'c']);
    expect(ids(run({ query: { term: { body: 'free offer' } } }))).toEqual([]);
  });

  it('matches keyword values of a _source path, arrays, numbers, _id, _routing and date', () => {
    const p = (query: unknown) => ids(run({ query }, PRODUCTS)).sort();
    expect(p({ term: { 'user.id': 'kimchy' } })).toEqual(['p1', 'p3']);
    expect(p({ term: { 'title.keyword': 'Lamp' } })).toEqual(['p1', 'p3']);
    expect(p({ terms: { tags: ['office', 'light'] } })).toEqual(['p1', 'p3']);
    expect(p({ term: { price: 99 } })).toEqual(['p2']);
    expect(p({ term: { price: '12' } })).toEqual(['p3']);
    expect(p({ term: { _id: 'p2' } })).toEqual(['p2']);
    expect(p({ term: { _routing: 'r1' } })).toEqual(['p3']);
    expect(p({ term: { date: 1_700_000_000_000 } })).toEqual(['p3']);
    expect(p({ term: { date: '2024-01-02' } })).toEqual(['p1']);
    expect(p({ term: { nothing: 'x' } })).toEqual([]);
    expect(p({ ids: { values: ['p3', 'p9'] } })).toEqual(['p3']);
    expect(
      p({
        bool: { filter: [{ term: { 'user.id': 'kimchy' } }], must_not: [{ terms: { tags: ['office'] } }] },
      }),
    ).toEqual(['p1']);
  });

  it('refuses malformed queries naming the path and the value', () => {
    expect(errorOf({ query: { term: { subject: ['a'] } } }).message).toBe(
      '[term][subject] must be a string, number or boolean value; received ["a"]',
    );
    expect(errorOf({ query: { terms: { tags: 'home' } } }).message).toBe(
      '[terms][tags] must be an array of values; received "home"',
    );
    expect(errorOf({ query: { terms: { tags: { index: 'i', id: '1', path: 'p' } } } }).message).toMatch(
      /terms lookup is not supported/,
    );
    expect(errorOf({ query: { ids: { values: 'a' } } }).message).toBe(
      '[ids][values] must be an array of ids; received "a"',
    );
    expect(errorOf({ query: { term: { a: 1, b: 2 } } }).message).toMatch(
      /^\[term\] query must name exactly one field/,
    );
  });
});

describe('query_string (the q parameter)', () => {
  const q = (query: string, options: Record<string, unknown> = {}) =>
    ids(run({ query: { query_string: { query, ...options } } })).sort();

  it('searches every text field for bare terms, or the named field', () => {
    expect(q('linux')).toEqual(['b', 'c']);
    expect(q('subject:linux')).toEqual(['c']);
    expect(q('linux', { default_field: 'body' })).toEqual(['b', 'c']);
    expect(q('*')).toEqual(['a', 'b', 'c', 'd']);
  });

  it('reads +, -, AND, OR, NOT, phrases, prefixes and the default operator', () => {
    expect(q('money linux')).toEqual(['a', 'b', 'c']);
    expect(q('money AND linux')).toEqual(['c']);
    expect(q('+money -linux')).toEqual(['a']);
    expect(q('money NOT subject:free')).toEqual([]);
    expect(q('free OR kernel')).toEqual(['a', 'b', 'c', 'd']);
    expect(q('money linux', { default_operator: 'AND' })).toEqual(['c']);
    expect(q('"money now"')).toEqual(['a']);
    expect(q('subject:mee*')).toEqual(['b']);
    expect(q('_id:d')).toEqual(['d']);
  });

  it('refuses what it does not support, naming it', () => {
    const e = (query: string) => errorOf({ query: { query_string: { query } } }).message;
    expect(e('(a OR b)')).toMatch(/parentheses and ranges are not supported/);
    expect(e('date:[2002 TO 2003]')).toMatch(/unknown field \[date\]|parentheses and ranges/);
    expect(e('mony~1')).toMatch(/fuzzy and proximity searches/);
    expect(e('title:lamp')).toMatch(/unknown field \[title\]/);
    expect(e('money AND')).toMatch(/ends with an operator/);
    expect(e('"open')).toMatch(/unterminated phrase/);
  });
});
