import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SearchResponse } from '../../src/engine/execute-search.js';
import { MAIL_INDEX_OPTIONS, tokenizeMail } from '../../src/engine/mail-index.js';
import * as engine from '../../src/engine/minisearch-engine.js';
import { CORPUS_GROUPS, type MailDocument, readCorpus } from '../../src/engine/spam-assassin-corpus.js';
import { IndexNotFoundError, InvalidArgumentError } from '../../src/errors.js';
import type { EngineModule, TaskContext } from '../../src/pool/engine-module.js';

// The module must satisfy the engine contract (checked by tsc).
const contract: EngineModule<unknown, SearchResponse> = engine;

const MAX_DOCS = 200;
const options = { maxDocumentsPerIndex: MAX_DOCS, shardsPerIndex: 2 };
let cacheDir: string;
const logs: string[] = [];
let docs: Map<string, MailDocument>;

function context(checkpoint: () => void = () => {}): TaskContext {
  return {
    signal: new AbortController().signal,
    cancelled: false,
    throwIfCancelled: () => {},
    checkpoint,
    taskId: 1,
  };
}

function search(body: unknown, indices: readonly string[] = CORPUS_GROUPS): SearchResponse {
  return engine.handle({ indices, body }, context());
}

/** The analysed terms of a document field, as the index sees them. */
function termsOf(hit: { _index: string; _id: string }, field: 'subject' | 'from' | 'body'): string[] {
  const doc = docs.get(`${hit._index}/${hit._id}`)!;
  return tokenizeMail(doc[field])
    .map((t) => MAIL_INDEX_OPTIONS.processTerm!(t))
    .filter((t): t is string => typeof t === 'string');
}

function keyOf(key: string): { _index: string; _id: string } {
  const [index, id] = key.split('/') as [string, string];
  return { _index: index, _id: id };
}

beforeAll(async () => {
  cacheDir = mkdtempSync(join(tmpdir(), 'qs-engine-'));
  const description = await contract.prepare!({ cacheDir, options, log: (m) => logs.push(m) });
  expect(description?.indices).toEqual([...CORPUS_GROUPS]);
  await contract.init!({ cacheDir, options });
  docs = new Map();
  for (const [group, list] of readCorpus([...CORPUS_GROUPS], MAX_DOCS)) {
    for (const doc of list) docs.set(`${group}/${doc.id}`, doc);
  }
});

afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

describe('minisearch engine: queries', () => {
  it('match returns hits whose field contains the term, in OpenSearch shape', () => {
    const response = search({ query: { match: { body: 'money' } }, size: 1000 });
    expect(response).toMatchObject({
      timed_out: false,
      _shards: { total: 10, successful: 10, skipped: 0, failed: 0 },
    });
    expect(response.hits.total!.relation).toBe('eq');
    expect(response.hits.total!.value).toBeGreaterThan(10);
    expect(response.hits.hits).toHaveLength(response.hits.total!.value);
    expect(response.hits.max_score).toBe(response.hits.hits[0]!._score);
    for (const hit of response.hits.hits) expect(termsOf(hit, 'body')).toContain('money');
    const first = response.hits.hits[0]!;
    const doc = docs.get(`${first._index}/${first._id}`)!;
    expect(first._source).toEqual({ subject: doc.subject, from: doc.from, date: doc.date });
    expect(typeof response.took).toBe('number');
  });

  it('sorts by score desc, then index, then _id, and pages with from/size', () => {
    const all = search({ query: { match: { body: 'free money offer' } }, size: 10000 }).hits.hits;
    for (let i = 1; i < all.length; i++) {
      const [a, b] = [all[i - 1]!, all[i]!];
      const ordered =
        a._score! > b._score! ||
        (a._score === b._score && (a._index < b._index || (a._index === b._index && a._id < b._id)));
      expect(ordered).toBe(true);
    }
    const page = search({ query: { match: { body: 'free money offer' } }, from: 5, size: 7 });
    expect(page.hits.hits).toEqual(all.slice(5, 12));
    expect(page.hits.total!.value).toBe(all.length);
    expect(search({ query: { match: { body: 'free' } }, size: 0 }).hits.hits).toEqual([]);
  });

  it('prefix returns hits with a term starting with the prefix', () => {
    const response = search({ query: { prefix: { subject: { value: 'Mon' } } }, size: 1000 });
    expect(response.hits.total!.value).toBeGreaterThan(0);
    for (const hit of response.hits.hits)
      expect(termsOf(hit, 'subject').some((t) => t.startsWith('mon'))).toBe(true);
  });

  it('multi_match searches the listed fields with boosts', () => {
    const response = search({
      query: { multi_match: { query: 'linux', fields: ['subject^3', 'from'] } },
      size: 1000,
    });
    expect(response.hits.total!.value).toBeGreaterThan(0);
    for (const hit of response.hits.hits) {
      expect([...termsOf(hit, 'subject'), ...termsOf(hit, 'from')]).toContain('linux');
    }
  });

  it('match_all (and a missing query) returns every document with score 1', () => {
    const response = search({ query: { match_all: {} }, size: 3 });
    expect(response.hits.total!.value).toBe(MAX_DOCS * CORPUS_GROUPS.length);
    expect(response.hits.max_score).toBe(1);
    expect(response.hits.hits.map((h) => [h._index, h._id])).toEqual([
      ['easy-ham-1', '00001'],
      ['easy-ham-1', '00002'],
      ['easy-ham-1', '00003'],
    ]);
    expect(search(undefined, ['spam-1']).hits.total!.value).toBe(MAX_DOCS);
  });

  it('fuzziness finds a misspelling that the exact query misses', () => {
    const exact = search({ query: { match: { body: 'monney' } } });
    const fuzzy = search({ query: { match: { body: { query: 'monney', fuzziness: 1 } } }, size: 1000 });
    const auto = search({ query: { match: { body: { query: 'monney', fuzziness: 'AUTO' } } } });
    expect(exact.hits.total!.value).toBe(0);
    expect(fuzzy.hits.total!.value).toBeGreaterThan(0);
    expect(auto.hits.total!.value).toBeGreaterThanOrEqual(fuzzy.hits.total!.value);
    expect(fuzzy.hits.hits.some((hit) => termsOf(hit, 'body').includes('money'))).toBe(true);
  });

  it('operator and requires every term; or does not', () => {
    const and = search({ query: { match: { body: { query: 'free money', operator: 'and' } } }, size: 1000 });
    const or = search({ query: { match: { body: 'free money' } }, size: 1000 });
    expect(and.hits.total!.value).toBeGreaterThan(0);
    expect(and.hits.total!.value).toBeLessThan(or.hits.total!.value);
    for (const hit of and.hits.hits)
      expect(termsOf(hit, 'body')).toEqual(expect.arrayContaining(['free', 'money']));
  });

  it('range filters on the stored date with absolute dates, score 1; mails without a date never match', () => {
    const from = Date.parse('2002-08-01T00:00:00Z');
    const to = Date.parse('2002-09-01T00:00:00Z');
    const inAugust = [...docs]
      .filter(([, doc]) => doc.date !== null && doc.date >= from && doc.date < to)
      .map(([key]) => key)
      .sort();
    expect(inAugust.length).toBeGreaterThan(10);
    for (const range of [
      { gte: '2002-08-01', lt: '2002-09-01' },
      { gte: from, lte: to - 1 },
      { gte: '2002-08-15||/M', lte: '2002-08-01||/M' },
    ]) {
      const response = search({ query: { range: { date: range } }, size: 10000 });
      expect(response.hits.hits.map((h) => `${h._index}/${h._id}`).sort()).toEqual(inAugust);
      expect(response.hits.max_score).toBe(1);
    }
    const dated = [...docs.values()].filter((doc) => doc.date !== null).length;
    expect(search({ query: { range: { date: { gte: -8.64e15 } } }, size: 0 }).hits.total!.value).toBe(dated);
  });

  it('bool combines a text match, a date filter and an exclusion', () => {
    const from = Date.parse('2002-08-01T00:00:00Z');
    const response = search({
      query: {
        bool: {
          must: { match: { body: 'money' } },
          filter: { range: { date: { gte: '2002-08-01' } } },
          must_not: [{ prefix: { subject: 're' } }],
        },
      },
      size: 10000,
    });
    const expected = [...docs]
      .filter(
        ([key, doc]) =>
          doc.date !== null &&
          doc.date >= from &&
          termsOf(keyOf(key), 'body').includes('money') &&
          !termsOf(keyOf(key), 'subject').some((t) => t.startsWith('re')),
      )
      .map(([key]) => key)
      .sort();
    expect(expected.length).toBeGreaterThan(0);
    expect(response.hits.hits.map((h) => `${h._index}/${h._id}`).sort()).toEqual(expected);
    // The filter scores nothing: each hit scores as the match alone does.
    const alone = search({ query: { match: { body: 'money' } }, size: 10000 }).hits.hits;
    const scoreOf = new Map(alone.map((h) => [`${h._index}/${h._id}`, h._score]));
    for (const hit of response.hits.hits) expect(hit._score).toBe(scoreOf.get(`${hit._index}/${hit._id}`));
  });

  it('searches only the requested indices', () => {
    const response = search({ query: { match: { body: 'money' } }, size: 1000 }, ['spam-1', 'spam-2']);
    expect(response._shards.total).toBe(4);
    expect(new Set(response.hits.hits.map((h) => h._index))).toEqual(new Set(['spam-1', 'spam-2']));
  });
});

describe('minisearch engine: validate and errors', () => {
  it('validate refuses a bad body and an unknown index, and accepts a good request', () => {
    expect(() => engine.validate({ indices: ['spam-1'], body: { query: { fuzzyy: {} } } })).toThrow(
      /unknown query \[fuzzyy\]/,
    );
    expect(() => engine.validate({ indices: ['nope'], body: {} })).toThrow(IndexNotFoundError);
    expect(() =>
      engine.validate({ indices: ['spam-1'], body: { query: { match: { body: 'x' } } } }),
    ).not.toThrow();
  });

  it('searches nothing when no index is named (a wildcard that matched nothing)', () => {
    const r = search({ query: { match_all: {} } }, []);
    expect(r.hits.total!.value).toBe(0);
    expect(r._shards.total).toBe(0);
  });

  it('refuses a query text of more than 1024 terms with 400 naming the field', () => {
    const text = 'money '.repeat(1025);
    expect(() =>
      engine.validate({ indices: ['spam-1'], body: { query: { match: { body: text } } } }),
    ).toThrow('[match][body] has 1025 terms; at most 1024 are allowed (max_clause_count)');
    expect(() =>
      engine.validate({ indices: ['spam-1'], body: { query: { match: { body: 'money '.repeat(1024) } } } }),
    ).not.toThrow();
  });

  it('handle refuses an unknown index', () => {
    expect(() => search({}, ['spam-3'])).toThrow(/no such index \[spam-3\]/);
  });

  it('checkpoint is called before every shard and once at the end; an abort from it stops the search', () => {
    let calls = 0;
    engine.handle(
      { indices: CORPUS_GROUPS, body: { query: { match: { body: 'money' } } } },
      context(() => calls++),
    );
    expect(calls).toBe(CORPUS_GROUPS.length * 2 + 1);

    let seen = 0;
    const abort = new DOMException('task cancelled', 'AbortError');
    expect(() =>
      engine.handle(
        { indices: CORPUS_GROUPS, body: { query: { match: { body: 'money' } } } },
        context(() => {
          seen++;
          if (seen === 3) throw abort;
        }),
      ),
    ).toThrow(abort);
    expect(seen).toBe(3);
  });

  it('refuses bad engineOptions with the option and value named', async () => {
    const log = () => {};
    await expect(async () =>
      engine.prepare({ cacheDir, options: { shardsPerIndex: 0 }, log }),
    ).rejects.toThrow('engineOptions.shardsPerIndex must be an integer in 1..64; received 0');
    await expect(async () =>
      engine.prepare({ cacheDir, options: { indices: ['spam-9'] }, log }),
    ).rejects.toThrow(InvalidArgumentError);
    await expect(async () =>
      engine.prepare({ cacheDir, options: { maxDocumentsPerIndex: -5 }, log }),
    ).rejects.toThrow(/maxDocumentsPerIndex must be an integer >= 1; received -5/);
    await expect(async () => engine.prepare({ cacheDir, options: { shards: 2 }, log })).rejects.toThrow(
      /engineOptions.shards is not an option/,
    );
  });
});

describe('minisearch engine: cache', () => {
  it('a second prepare reuses the cache; a changed option uses a new key', () => {
    const dirs = () => readdirSync(cacheDir).filter((d) => d.startsWith('minisearch-v'));
    expect(dirs()).toHaveLength(1);
    const manifest = join(cacheDir, dirs()[0]!, 'manifest.json');
    const before = statSync(manifest).mtimeMs;
    expect(logs.some((l) => l.includes('built index cache'))).toBe(true);
    const seen: string[] = [];
    engine.prepare({ cacheDir, options, log: (m) => seen.push(m) });
    expect(seen.join('\n')).toMatch(/reusing index cache/);
    expect(statSync(manifest).mtimeMs).toBe(before);
    expect(readdirSync(join(cacheDir, dirs()[0]!)).filter((f) => f.endsWith('.tmp'))).toEqual([]);

    const small = { maxDocumentsPerIndex: 20, shardsPerIndex: 3, indices: ['spam-2', 'spam-1'] };
    const seenSmall: string[] = [];
    const description = engine.prepare({ cacheDir, options: small, log: (m) => seenSmall.push(m) });
    expect(description.indices).toEqual(['spam-1', 'spam-2']);
    expect(seenSmall.join('\n')).toMatch(/built index cache/);
    expect(dirs()).toHaveLength(2);
    // validate now knows only the served indices.
    expect(() => engine.validate({ indices: ['easy-ham-1'], body: {} })).toThrow(IndexNotFoundError);
    engine.prepare({ cacheDir, options, log: () => {} });
  });
});
