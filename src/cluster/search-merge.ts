/**
 * Merging the data nodes' answers to one search, as a coordinator's query phase does (Elasticsearch
 * `SearchPhaseController.reducedQueryPhase` / `sortDocs`, with `_source` already in the hits since
 * the engine answers query and fetch in one go): each node returned its best `from + size` hits of the
 * shards it searched, sorted; the coordinator sorts their union the same way and keeps
 * `[from, from + size)`:
 * - without `sort`: by score (descending), then index name, then `_id` (the engine's own tie-break, so
 *   one node and a cluster page alike);
 * - with `sort`: by the hits' `sort` values in the request's orders (`_score` descending and fields
 *   ascending unless given; a missing value, `null`, after every other in both orders), then index
 *   name and `_id`.
 *
 * Totals add up (`relation: "gte"` when any node's is), then are capped at `track_total_hits` as
 * Elasticsearch's reduce does; `max_score` is the largest non-null one; `timed_out` when any node's is.
 *
 * Scores are shard-local (no global term statistics, as `query_then_fetch`), so a cluster with the
 * same shards as a single node returns the same hits in the same order.
 */
import { isPlainObject } from '../common/is-plain-object.js';

/** One hit as the engine returns it; the coordinator reads these fields and keeps the rest. */
export interface MergeableHit {
  readonly _index: string;
  readonly _id: string;
  /** Null when the search sorts on fields only. */
  readonly _score: number | null;
  /** The hit's sort values, when the search gave `sort`. */
  readonly sort?: readonly (number | string | null)[];
}

/** `hits.total` of a node or of the merge. */
export interface MergedTotal {
  readonly value: number;
  readonly relation: 'eq' | 'gte';
}

/** The part of a node's search response the merge reads. */
export interface NodeHits {
  /** Absent when the search asked for no total (`track_total_hits: false`). */
  readonly total: MergedTotal | undefined;
  readonly maxScore: number | null;
  readonly hits: readonly MergeableHit[];
  readonly timedOut?: boolean;
}

/** The merged page. */
export interface MergedHits {
  readonly total: MergedTotal | undefined;
  readonly maxScore: number | null;
  readonly hits: readonly MergeableHit[];
  readonly timedOut: boolean;
}

/** How the merge orders and counts: the request's sort orders and its `track_total_hits`. */
export interface MergeOrder {
  /** One order per sort key; empty: by score. */
  readonly sortOrders: readonly ('asc' | 'desc')[];
  /** Exact up to this many hits (`Infinity`: all), or `null` for no total. @default 10000 */
  readonly trackTotalHits: number | null;
}

const BY_SCORE: MergeOrder = { sortOrders: [], trackTotalHits: 10_000 };

function identity(a: MergeableHit, b: MergeableHit): number {
  if (a._index !== b._index) return a._index < b._index ? -1 : 1;
  return a._id < b._id ? -1 : a._id > b._id ? 1 : 0;
}

/** Score descending, then `_index`, then `_id` (UTF-16 code unit order), as the engine sorts. */
export function compareHits(a: MergeableHit, b: MergeableHit): number {
  const x = a._score ?? Number.NEGATIVE_INFINITY;
  const y = b._score ?? Number.NEGATIVE_INFINITY;
  if (x !== y) return y - x;
  return identity(a, b);
}

function compareValue(
  a: number | string | null | undefined,
  b: number | string | null | undefined,
  order: 'asc' | 'desc',
): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1;
  if (b === null || b === undefined) return -1;
  const c = typeof a === 'number' && typeof b === 'number' ? a - b : String(a) < String(b) ? -1 : 1;
  return order === 'asc' ? c : -c;
}

/** By the hits' sort values in `orders`, then `_index` and `_id`. */
export function compareSorted(orders: readonly ('asc' | 'desc')[], a: MergeableHit, b: MergeableHit): number {
  for (let i = 0; i < orders.length; i++) {
    const c = compareValue(a.sort?.[i], b.sort?.[i], orders[i]!);
    if (c !== 0) return c;
  }
  return identity(a, b);
}

/**
 * The orders of a search body's `sort` (a key or a list of `"field"`, `{"field": "asc"}`,
 * `{"field": {"order"}}`), with Elasticsearch's defaults; the data nodes validate the keys.
 */
export function mergeOrderOf(body: Readonly<Record<string, unknown>>): MergeOrder {
  const raw = body['sort'];
  const entries = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  const sortOrders = entries.map((entry): 'asc' | 'desc' => {
    const [field, spec] =
      typeof entry === 'string' ? [entry, undefined] : (Object.entries(entry ?? {})[0] ?? ['', undefined]);
    const order = isPlainObject(spec) ? spec['order'] : spec;
    if (order === 'asc' || order === 'desc') return order;
    return field === '_score' ? 'desc' : 'asc';
  });
  const track = body['track_total_hits'];
  const trackTotalHits =
    track === undefined
      ? 10_000
      : track === true || track === 'true' || track === -1
        ? Number.POSITIVE_INFINITY
        : track === false || track === 'false'
          ? null
          : Number(track);
  return { sortOrders, trackTotalHits: Number.isNaN(trackTotalHits) ? 10_000 : trackTotalHits };
}

/**
 * Reads the hits part of an Elasticsearch-shaped search response (`hits.total`, `hits.max_score`,
 * `hits.hits[]` with `_index`, `_id`, `_score` (a number or null) and optionally `sort`, and
 * `timed_out`); `undefined` when the shape is not that (the node's answer cannot be merged). Never throws.
 */
export function readNodeHits(response: unknown): NodeHits | undefined {
  if (!isPlainObject(response)) return undefined;
  const hits = response['hits'];
  if (!isPlainObject(hits)) return undefined;
  const rawTotal = hits['total'];
  let total: MergedTotal | undefined;
  if (rawTotal !== undefined) {
    const value = isPlainObject(rawTotal) ? rawTotal['value'] : rawTotal;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) return undefined;
    const relation = isPlainObject(rawTotal) && rawTotal['relation'] === 'gte' ? 'gte' : 'eq';
    total = { value, relation };
  }
  const maxScore = hits['max_score'];
  const list = hits['hits'];
  if (maxScore !== null && typeof maxScore !== 'number') return undefined;
  if (!Array.isArray(list)) return undefined;
  for (const hit of list) {
    if (
      !isPlainObject(hit) ||
      typeof hit['_index'] !== 'string' ||
      typeof hit['_id'] !== 'string' ||
      (hit['_score'] !== null && typeof hit['_score'] !== 'number') ||
      (hit['sort'] !== undefined && !Array.isArray(hit['sort']))
    ) {
      return undefined;
    }
  }
  return {
    total,
    maxScore: maxScore as number | null,
    hits: list as unknown as MergeableHit[],
    timedOut: response['timed_out'] === true,
  };
}

/**
 * Merges the nodes' hits and cuts the page `[from, from + size)` (see module doc).
 * @param from hits to skip, integer >= 0.
 * @param size hits to keep, integer >= 0.
 * @param order the request's sort orders and `track_total_hits`; default by score, totals up to 10000.
 */
export function mergeHits(
  parts: readonly NodeHits[],
  from: number,
  size: number,
  order: MergeOrder = BY_SCORE,
): MergedHits {
  let value = 0;
  let gte = false;
  let counted = false;
  let maxScore: number | null = null;
  let timedOut = false;
  const all: MergeableHit[] = [];
  for (const part of parts) {
    if (part.total !== undefined) {
      counted = true;
      value += part.total.value;
      gte ||= part.total.relation === 'gte';
    }
    if (part.maxScore !== null && (maxScore === null || part.maxScore > maxScore)) maxScore = part.maxScore;
    timedOut ||= part.timedOut === true;
    for (const hit of part.hits) all.push(hit);
  }
  all.sort(order.sortOrders.length === 0 ? compareHits : (a, b) => compareSorted(order.sortOrders, a, b));
  let total: MergedTotal | undefined;
  if (order.trackTotalHits !== null && (counted || parts.length === 0)) {
    total =
      value > order.trackTotalHits
        ? { value: order.trackTotalHits, relation: 'gte' }
        : { value, relation: gte ? 'gte' : 'eq' };
  }
  return { total, maxScore, hits: all.slice(from, from + size), timedOut };
}
