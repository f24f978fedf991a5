import MiniSearch, { type SearchResult } from 'minisearch';
import { describe, expect, it } from 'vitest';
import { buildShards, MAIL_INDEX_OPTIONS, tokenizeMail } from '../../src/engine/mail-index.js';
import { decodeShard, encodeShard, SHARD_CODEC_VERSION } from '../../src/engine/shard-codec.js';
import { shardOf } from '../../src/engine/shard-of.js';
import { readCorpus } from '../../src/engine/spam-assassin-corpus.js';

const docs = readCorpus(['spam-2'], 150).get('spam-2')!;

describe('shardOf', () => {
  it('is stable and spreads ids over the shards', () => {
    expect(shardOf('00001', 4)).toBe(shardOf('00001', 4));
    const counts = [0, 0, 0, 0];
    for (const doc of docs) counts[shardOf(doc.id, 4)]!++;
    for (const count of counts) expect(count).toBeGreaterThan(15);
  });
});

function comparable(result: SearchResult): SearchResult {
  return { ...result, terms: [...result.terms].sort() };
}

describe('shard codec', () => {
  const [shard] = buildShards(docs, 1);
  const reference = MiniSearch.loadJSON(JSON.stringify(shard), MAIL_INDEX_OPTIONS);
  const queries: Array<[string, Parameters<MiniSearch['search']>[1]]> = [
    ['money', {}],
    ['free offer', { combineWith: 'AND' }],
    ['monney', { fuzzy: 2 }],
    ['cl', { prefix: true, fields: ['subject'] }],
  ];

  it('round-trips a shard through the radix-tree format with identical search results', () => {
    const text = encodeShard(shard!);
    expect(JSON.parse(text).codec).toBe('radix-tree');
    const loaded = decodeShard(text, MAIL_INDEX_OPTIONS);
    expect(loaded.documentCount).toBe(docs.length);
    for (const [query, options] of queries) {
      const expected = reference.search(query, options);
      expect(expected.length).toBeGreaterThan(0);
      // The radix tree keeps the built index's child order, so fuzzy `terms` may be listed in another order.
      expect(loaded.search(query, options).map(comparable)).toEqual(expected.map(comparable));
    }
    expect(loaded.search(MiniSearch.wildcard)).toHaveLength(docs.length);
  });

  it('loads the plain MiniSearch format too (the fallback when internals differ)', () => {
    const text = JSON.stringify({
      codec: 'minisearch',
      codecVersion: SHARD_CODEC_VERSION,
      js: shard!.toJSON(),
    });
    const loaded = decodeShard(text, MAIL_INDEX_OPTIONS);
    for (const [query, options] of queries) {
      expect(loaded.search(query, options)).toEqual(reference.search(query, options));
    }
  });

  it('refuses another codec version', () => {
    expect(() => decodeShard('{"codecVersion":0,"js":{}}', MAIL_INDEX_OPTIONS)).toThrow(/codec version/);
  });
});

describe('tokenizeMail', () => {
  it('splits at anything that is not a letter or digit', () => {
    expect(tokenizeMail("<Money> a@b.com http://x.org/p?q=1 don't café_2002")).toEqual([
      'Money',
      'a',
      'b',
      'com',
      'http',
      'x',
      'org',
      'p',
      'q',
      '1',
      'don',
      't',
      'café',
      '2002',
    ]);
  });
});
