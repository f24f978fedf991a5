/**
 * Merging the data nodes' answers to one search, as a coordinator's query phase does (Elasticsearch
 * `SearchPhaseController.reducedQueryPhase` / `sortDocs`, with `_source` already in the hits since
 * the engine answers query and fetch in one go): each node returned its best `from + size` hits of the
 * shards it searched, sorted; the coordinator sorts their union by score (descending), then index
 * name, then `_id` (the engine's own tie-break, so one node and a cluster page alike), keeps
 * `[from, from + size)`, adds up the totals and takes the largest `max_score`.
 *
 * Scores are shard-local (no global term statistics, as `query_then_fetch`), so a cluster with the
 * same shards as a single node returns the same hits in the same order.
 */
import { isPlainObject } from '../sandbox/is-plain-object.js';

/** One hit as the engine returns it; the coordinator reads these three fields and keeps the rest. */
export interface MergeableHit {
  readonly _index: string;
  readonly _id: string;
  readonly _score: number;
}

/** The part of a node's search response the merge reads. */
export interface NodeHits {
  /** The node's answer said `timed_out: true` (a search timeout stopped it early). */
  readonly timedOut: boolean;
  readonly total: number;
  readonly maxScore: number | null;
  readonly hits: readonly MergeableHit[];
}

/** The merged page. */
export interface MergedHits {
  readonly total: number;
  readonly maxScore: number | null;
  readonly hits: readonly MergeableHit[];
}

/** Score descending, then `_index`, then `_id` (UTF-16 code unit order), as the engine sorts. */
export function compareHits(a: MergeableHit, b: MergeableHit): number {
  if (a._score !== b._score) return b._score - a._score;
  if (a._index !== b._index) return a._index < b._index ? -1 : 1;
  return a._id < b._id ? -1 : a._id > b._id ? 1 : 0;
}

/**
 * Reads the hits part of an OpenSearch-shaped search response (`hits.total.value`, `hits.max_score`,
 * `hits.hits[]` with `_index`, `_id`, `_score`); `undefined` when the shape is not that (the node's
 * answer cannot be merged). Never throws.
 */
export function readNodeHits(response: unknown): NodeHits | undefined {
  if (!isPlainObject(response)) return undefined;
  const hits = response['hits'];
  if (!isPlainObject(hits)) return undefined;
  const total = hits['total'];
  const value = isPlainObject(total) ? total['value'] : total;
  const maxScore = hits['max_score'];
  const list = hits['hits'];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) return undefined;
  if (maxScore !== null && typeof maxScore !== 'number') return undefined;
  if (!Array.isArray(list)) return undefined;
  for (const hit of list) {
    if (
      !isPlainObject(hit) ||
      typeof hit['_index'] !== 'string' ||
      typeof hit['_id'] !== 'string' ||
      typeof hit['_score'] !== 'number'
    ) {
      return undefined;
    }
  }
  return {
    timedOut: response['timed_out'] === true,
    total: value,
    maxScore: maxScore as number | null,
    hits: list as unknown as MergeableHit[],
  };
}

/**
 * Merges the nodes' hits and cuts the page `[from, from + size)` (see module doc).
 * @param from hits to skip, integer >= 0.
 * @param size hits to keep, integer >= 0.
 */
export function mergeHits(parts: readonly NodeHits[], from: number, size: number): MergedHits {
  let total = 0;
  let maxScore: number | null = null;
  const all: MergeableHit[] = [];
  for (const part of parts) {
    total += part.total;
    if (part.maxScore !== null && (maxScore === null || part.maxScore > maxScore)) maxScore = part.maxScore;
    for (const hit of part.hits) all.push(hit);
  }
  all.sort(compareHits);
  return { total, maxScore, hits: all.slice(from, from + size) };
}
