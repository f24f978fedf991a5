import { describe, expect, it } from 'vitest';
import { compareHits, mergeHits, mergeOrderOf, readNodeHits } from '../../src/cluster/search-merge.js';

const hit = (_index: string, _id: string, _score: number) => ({ _index, _id, _score });

describe('merging node answers', () => {
  const a = {
    total: { value: 4, relation: 'eq' as const },
    maxScore: 3,
    hits: [hit('i', 'a1', 3), hit('i', 'a2', 2), hit('j', 'a3', 2), hit('i', 'a4', 1)],
  };
  const b = {
    total: { value: 3, relation: 'eq' as const },
    maxScore: 5,
    hits: [hit('i', 'b1', 5), hit('i', 'a0', 2), hit('i', 'b3', 1)],
  };
  const c = { total: { value: 0, relation: 'eq' as const }, maxScore: null, hits: [] };

  it('orders by score, then index, then _id, and cuts from/size', () => {
    const all = mergeHits([a, b, c], 0, 100);
    expect(all.hits.map((h) => h._id)).toEqual(['b1', 'a1', 'a0', 'a2', 'a3', 'a4', 'b3']);
    expect(all.total).toEqual({ value: 7, relation: 'eq' });
    expect(all.maxScore).toBe(5);
    expect(mergeHits([a, b], 2, 3).hits.map((h) => h._id)).toEqual(['a0', 'a2', 'a3']);
    expect(mergeHits([a, b], 10, 3).hits).toEqual([]);
    expect(mergeHits([c], 0, 10)).toEqual({
      total: { value: 0, relation: 'eq' },
      maxScore: null,
      hits: [],
      timedOut: false,
    });
  });

  it('keeps the rest of each hit as the node sent it', () => {
    const full = { _index: 'i', _id: 'x', _score: 1, _source: { subject: 's' } };
    expect(
      mergeHits([{ total: { value: 1, relation: 'eq' }, maxScore: 1, hits: [full] }], 0, 1).hits[0],
    ).toBe(full);
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
    expect(readNodeHits(response)).toEqual({
      total: { value: 1, relation: 'eq' },
      maxScore: 2,
      hits: [hit('i', 'x', 2)],
      timedOut: false,
    });
    for (const bad of [
      null,
      { echo: 1 },
      { hits: { total: { value: -1 }, max_score: null, hits: [] } },
      { hits: { total: { value: 1 }, max_score: 'x', hits: [] } },
      { hits: { total: { value: 1 }, max_score: 1, hits: [{ _index: 'i', _id: 1, _score: 1 }] } },
      { hits: { total: { value: 1 }, max_score: 1, hits: [{ _index: 'i', _id: '1', _score: 'x' }] } },
      { hits: { total: { value: 1 }, max_score: 1, hits: [{ _index: 'i', _id: '1', _score: 1, sort: 3 }] } },
      { hits: { total: { value: 1 }, max_score: 1, hits: {} } },
    ]) {
      expect(readNodeHits(bad)).toBeUndefined();
    }
  });

  it("merges by the request's sort values, missing values last, then index and _id", () => {
    const sorted = (id: string, date: number | null) => ({
      _index: 'i',
      _id: id,
      _score: null,
      sort: [date],
    });
    const x = {
      total: { value: 2, relation: 'eq' as const },
      maxScore: null,
      hits: [sorted('a', 5), sorted('b', null)],
    };
    const y = {
      total: { value: 2, relation: 'eq' as const },
      maxScore: null,
      hits: [sorted('c', 9), sorted('d', 1)],
    };
    const desc = mergeHits([x, y], 0, 10, mergeOrderOf({ sort: [{ date: { order: 'desc' } }] }));
    expect(desc.hits.map((h) => h._id)).toEqual(['c', 'a', 'd', 'b']);
    const asc = mergeHits([x, y], 0, 10, mergeOrderOf({ sort: 'date' }));
    expect(asc.hits.map((h) => h._id)).toEqual(['d', 'a', 'c', 'b']);
    expect(desc.maxScore).toBeNull();
  });

  it('adds totals up, keeps a lower bound, caps them at track_total_hits, and drops them when not tracked', () => {
    const part = (value: number, relation: 'eq' | 'gte' = 'eq') => ({
      total: { value, relation },
      maxScore: 1,
      hits: [],
    });
    expect(mergeHits([part(6000), part(6000)], 0, 0).total).toEqual({ value: 10_000, relation: 'gte' });
    expect(mergeHits([part(6000), part(6000)], 0, 0, mergeOrderOf({ track_total_hits: true })).total).toEqual(
      { value: 12_000, relation: 'eq' },
    );
    expect(mergeHits([part(5), part(3, 'gte')], 0, 0, mergeOrderOf({ track_total_hits: 100 })).total).toEqual(
      { value: 8, relation: 'gte' },
    );
    const none = { total: undefined, maxScore: 1, hits: [], timedOut: true };
    const merged = mergeHits([none, none], 0, 0, mergeOrderOf({ track_total_hits: false }));
    expect(merged.total).toBeUndefined();
    expect(merged.timedOut).toBe(true);
  });
});
