import { describe, expect, it } from 'vitest';
import { compareHits, mergeHits, readNodeHits } from '../../src/cluster/search-merge.js';

const hit = (_index: string, _id: string, _score: number) => ({ _index, _id, _score });

describe('merging node answers', () => {
  const a = {
    timedOut: false,
    total: 4,
    maxScore: 3,
    hits: [hit('i', 'a1', 3), hit('i', 'a2', 2), hit('j', 'a3', 2), hit('i', 'a4', 1)],
  };
  const b = { timedOut: false, total: 3, maxScore: 5, hits: [hit('i', 'b1', 5), hit('i', 'a0', 2), hit('i', 'b3', 1)] };
  const c = { timedOut: false, total: 0, maxScore: null, hits: [] };

  it('orders by score, then index, then _id, and cuts from/size', () => {
    const all = mergeHits([a, b, c], 0, 100);
    expect(all.hits.map((h) => h._id)).toEqual(['b1', 'a1', 'a0', 'a2', 'a3', 'a4', 'b3']);
    expect(all.total).toBe(7);
    expect(all.maxScore).toBe(5);
    expect(mergeHits([a, b], 2, 3).hits.map((h) => h._id)).toEqual(['a0', 'a2', 'a3']);
    expect(mergeHits([a, b], 10, 3).hits).toEqual([]);
    expect(mergeHits([c], 0, 10)).toEqual({ total: 0, maxScore: null, hits: [] });
  });

  it('keeps the rest of each hit as the node sent it', () => {
    const full = { _index: 'i', _id: 'x', _score: 1, _source: { subject: 's' } };
    expect(mergeHits([{ timedOut: false, total: 1, maxScore: 1, hits: [full] }], 0, 1).hits[0]).toBe(full);
  });

  it('compares like the engine', () => {
    expect(compareHits(hit('a', '2', 1), hit('b', '1', 1))).toBeLessThan(0);
    expect(compareHits(hit('a', '2', 1), hit('a', '10', 1))).toBeGreaterThan(0);
    expect(compareHits(hit('a', '1', 1), hit('a', '1', 1))).toBe(0);
  });

  it('reads an OpenSearch-shaped answer and refuses anything else', () => {
    const response = {
      hits: { total: { value: 1, relation: 'eq' }, max_score: 2, hits: [hit('i', 'x', 2)] },
    };
    expect(readNodeHits(response)).toEqual({ timedOut: false, total: 1, maxScore: 2, hits: [hit('i', 'x', 2)] });
    for (const bad of [
      null,
      { echo: 1 },
      { hits: { total: { value: -1 }, max_score: null, hits: [] } },
      { hits: { total: { value: 1 }, max_score: 'x', hits: [] } },
      { hits: { total: { value: 1 }, max_score: 1, hits: [{ _index: 'i', _id: 1, _score: 1 }] } },
      { hits: { total: { value: 1 }, max_score: 1, hits: {} } },
    ]) {
      expect(readNodeHits(bad)).toBeUndefined();
    }
  });
});
