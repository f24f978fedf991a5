/**
 * Runs a search plan over loaded shards and builds an OpenSearch-shaped response. Leaf queries are
 * MiniSearch searches; range and bool queries are evaluated here, per shard, over the matches of
 * their clauses (see `matchBool`).
 */

import MiniSearch, { type SearchOptions, type SearchResult } from 'minisearch';
import { EngineRequestError, IndexNotFoundError } from '../errors.js';
import type { LoadedIndices } from './index-cache.js';
import {
  type BoolQueryPlan,
  fuzzyDistance,
  type MatchAllPlan,
  type PrefixQueryPlan,
  type QueryPlan,
  resolveDateRange,
  type SearchPlan,
  type TextQueryPlan,
} from './search-request.js';

/** `_source` of a hit: the stored fields. `date` is epoch ms or null. */
export interface HitSource {
  readonly subject: string;
  readonly from: string;
  readonly date: number | null;
}

/**
 * One hit. `_score` is shard-local (as in OpenSearch's default query_then_fetch). A corpus mail's
 * `_source` holds its stored fields (`HitSource`); a writable index's document returns its whole
 * `_source`, and `_routing` when it was stored with one.
 */
export interface SearchHit {
  readonly _index: string;
  readonly _id: string;
  readonly _score: number;
  readonly _routing?: string;
  readonly _source: HitSource | Readonly<Record<string, unknown>>;
}

/**
 * The OpenSearch-shaped search response. `took` is in ms. `timed_out` is true when the search timeout
 * stopped the search before every shard was searched: the hits are those of the shards searched.
 */
export interface SearchResponse {
  readonly took: number;
  readonly timed_out: boolean;
  readonly _shards: {
    readonly total: number;
    readonly successful: number;
    readonly skipped: 0;
    readonly failed: 0;
  };
  readonly hits: {
    readonly total: { readonly value: number; readonly relation: 'eq' };
    /** Highest score over all matching hits (not only the returned page); null when nothing matched. */
    readonly max_score: number | null;
    readonly hits: readonly SearchHit[];
  };
}

/**
 * Run `plan` over every shard of `indexNames`.
 *
 * @param loaded the worker's indices.
 * @param indexNames the indices to search, each a key of `loaded`; empty (a wildcard that matched
 *   nothing) searches nothing and answers no hits, as OpenSearch does.
 * @param plan a plan from `parseSearchBody`.
 * @param checkpoint called before each shard is searched, before each clause of a bool query on a
 *   shard, and once at the end (records memory; throws to abort the search).
 * @param nowMs what `now` means in date math (epoch ms); default the current time.
 * @param shards index name to the shard numbers to search; an index absent from it (or no `shards`)
 *   searches every shard held (loaded) of it.
 * @param timeoutMs the search timeout, ms (> 0), counted from this call: once it has passed, no further
 *   shard is searched and the response has `timed_out: true` with the hits found so far (at least the
 *   first shard is always searched). As with an Elasticsearch shard that times out before it collects
 *   anything, a shard not searched counts as successful with no hits. Absent: no timeout.
 * @returns hits sorted by score desc, then index name, then `_id`; paged by from/size.
 * @throws IndexNotFoundError for a name that is not loaded; EngineRequestError
 *   `shard_not_found_exception` (404) for a requested shard that is not held; whatever `checkpoint` throws.
 */
export function executeSearch(
  loaded: LoadedIndices,
  indexNames: readonly string[],
  plan: SearchPlan,
  checkpoint: () => void,
  nowMs: number = Date.now(),
  shards?: Readonly<Record<string, readonly number[]>>,
  timeoutMs?: number,
): SearchResponse {
  const started = performance.now();
  const names = [...new Set(indexNames)];
  const targets = names.map((name) => {
    const held = loaded.get(name);
    if (!held) throw new IndexNotFoundError(name);
    const wanted = shards?.[name];
    if (wanted === undefined) return { name, shards: held.filter((s) => s !== undefined) };
    return { name, shards: wanted.map((n) => heldShard(held, name, n)) };
  });
  const run: QueryRun = { nowMs, checkpoint };
  const hits: SearchHit[] = [];
  let shardCount = 0;
  let timedOut = false;
  const deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : started + timeoutMs;
  for (const { name, shards } of targets) {
    for (const shard of shards) {
      checkpoint();
      shardCount++;
      if (timedOut || (shardCount > 1 && performance.now() >= deadline)) {
        timedOut = true;
        continue;
      }
      for (const match of matchShard(shard, plan.query, run).values()) {
        hits.push(toHit(name, match.result, match.score));
      }
    }
  }
  checkpoint();
  hits.sort(compareHits);
  let maxScore: number | null = null;
  for (const hit of hits) if (maxScore === null || hit._score > maxScore) maxScore = hit._score;
  return {
    took: Math.round(performance.now() - started),
    timed_out: timedOut,
    _shards: { total: shardCount, successful: shardCount, skipped: 0, failed: 0 },
    hits: {
      total: { value: hits.length, relation: 'eq' },
      max_score: maxScore,
      hits: hits.slice(plan.from, plan.from + plan.size),
    },
  };
}

/** Shard `n` of an index, when this node holds it. @throws EngineRequestError 404 otherwise. */
function heldShard(held: readonly (MiniSearch | undefined)[], index: string, n: number): MiniSearch {
  const shard = held[n];
  if (shard === undefined) {
    throw new EngineRequestError(
      'shard_not_found_exception',
      `no such shard [${index}][${n}] on this node (it holds ${describeHeld(held)})`,
      404,
    );
  }
  return shard;
}

function describeHeld(held: readonly (MiniSearch | undefined)[]): string {
  const numbers = held.flatMap((s, i) => (s === undefined ? [] : [i]));
  return numbers.length === 0 ? 'no shard of it' : `shards [${numbers.join(', ')}]`;
}

/** The query types MiniSearch runs itself (one `search` call each). */
export type LeafQueryPlan = TextQueryPlan | PrefixQueryPlan | MatchAllPlan;

/** MiniSearch options for a query plan MiniSearch runs itself. */
export function searchOptions(query: LeafQueryPlan): SearchOptions {
  switch (query.kind) {
    case 'match_all':
      return {};
    case 'prefix':
      return { fields: [query.field], prefix: true, fuzzy: false, combineWith: 'OR' };
    case 'text': {
      const { fuzziness, prefixLength } = query;
      return {
        fields: [...query.fields],
        boost: { ...query.boost },
        prefix: false,
        fuzzy: (term: string) => fuzzyDistance(term, fuzziness, prefixLength) || false,
        combineWith: query.operator === 'and' ? 'AND' : 'OR',
      };
    }
  }
}

/** What every clause of one search shares. */
interface QueryRun {
  readonly nowMs: number;
  readonly checkpoint: () => void;
}

/** A matching document of one shard: its score under the query and MiniSearch's result (stored fields). */
interface ShardMatch {
  score: number;
  readonly result: SearchResult;
}

/** Matches by MiniSearch document id; each call returns a new map the caller may change. */
type ShardMatches = Map<unknown, ShardMatch>;

function matchShard(shard: MiniSearch, query: QueryPlan, run: QueryRun): ShardMatches {
  switch (query.kind) {
    case 'match_all':
      return collect(shard.search(MiniSearch.wildcard), 1);
    case 'prefix':
      return collect(shard.search(query.value, searchOptions(query)));
    case 'text':
      return collect(shard.search(query.text, searchOptions(query)));
    case 'range': {
      const { fromMs, toMs } = resolveDateRange(query, run.nowMs);
      const filter = (result: SearchResult): boolean => dateWithin(result, fromMs, toMs);
      return collect(shard.search(MiniSearch.wildcard, { filter }), 1);
    }
    case 'bool':
      return matchBool(shard, query, run);
  }
}

/**
 * A bool query on one shard. Clauses that need a MiniSearch search run first and their matches are
 * intersected; range clauses then test the surviving candidates' stored date instead of scanning the
 * shard (a range scans only when it is the first required clause, or a `should` without required
 * clauses).
 */
function matchBool(shard: MiniSearch, bool: BoolQueryPlan, run: QueryRun): ShardMatches {
  let candidates: ShardMatches | undefined;
  const requireClause = (clause: QueryPlan, scoring: boolean): void => {
    run.checkpoint();
    const matches = matchShard(shard, clause, run);
    if (candidates === undefined) {
      if (!scoring) for (const match of matches.values()) match.score = 0;
      candidates = matches;
      return;
    }
    for (const [id, candidate] of candidates) {
      const match = matches.get(id);
      if (match === undefined) candidates.delete(id);
      else if (scoring) candidate.score += match.score;
    }
  };
  for (const clause of bool.must) if (clause.kind !== 'range') requireClause(clause, true);
  for (const clause of bool.filter) if (clause.kind !== 'range') requireClause(clause, false);
  for (const [clauses, scoring] of [
    [bool.must, true],
    [bool.filter, false],
  ] as const) {
    for (const clause of clauses) {
      if (clause.kind !== 'range') continue;
      if (candidates === undefined) {
        requireClause(clause, scoring);
        continue;
      }
      const { fromMs, toMs } = resolveDateRange(clause, run.nowMs);
      for (const [id, candidate] of candidates) {
        if (!dateWithin(candidate.result, fromMs, toMs)) candidates.delete(id);
        else if (scoring) candidate.score += 1;
      }
    }
  }

  if (candidates === undefined) {
    if (bool.should.length === 0) {
      // No positive clause: every document; 0 with only must_not clauses (a filter), else 1 (empty bool).
      candidates = collect(shard.search(MiniSearch.wildcard), bool.mustNot.length > 0 ? 0 : 1);
    } else {
      // At least one should clause must match; the score sums those that do.
      candidates = new Map();
      for (const clause of bool.should) {
        run.checkpoint();
        for (const [id, match] of matchShard(shard, clause, run)) {
          const candidate = candidates.get(id);
          if (candidate === undefined) candidates.set(id, match);
          else candidate.score += match.score;
        }
      }
    }
  } else {
    for (const clause of bool.should) {
      if (clause.kind === 'range') {
        const { fromMs, toMs } = resolveDateRange(clause, run.nowMs);
        for (const candidate of candidates.values()) {
          if (dateWithin(candidate.result, fromMs, toMs)) candidate.score += 1;
        }
        continue;
      }
      run.checkpoint();
      const matches = matchShard(shard, clause, run);
      for (const [id, candidate] of candidates) {
        const match = matches.get(id);
        if (match !== undefined) candidate.score += match.score;
      }
    }
  }

  for (const clause of bool.mustNot) {
    if (clause.kind === 'range') {
      const { fromMs, toMs } = resolveDateRange(clause, run.nowMs);
      for (const [id, candidate] of candidates) {
        if (dateWithin(candidate.result, fromMs, toMs)) candidates.delete(id);
      }
      continue;
    }
    run.checkpoint();
    for (const id of matchShard(shard, clause, run).keys()) candidates.delete(id);
  }
  return candidates;
}

/** Whether a result's stored date lies in [fromMs, toMs]; a null date never does. */
function dateWithin(result: SearchResult, fromMs: number, toMs: number): boolean {
  const date = result['date'];
  return typeof date === 'number' && date >= fromMs && date <= toMs;
}

/** MiniSearch results by id, scored by MiniSearch or with a constant `score`. */
function collect(results: readonly SearchResult[], score?: number): ShardMatches {
  const matches: ShardMatches = new Map();
  for (const result of results) matches.set(result.id, { score: score ?? result.score, result });
  return matches;
}

function toHit(index: string, result: SearchResult, score: number): SearchHit {
  const source = result['_source'];
  if (typeof source === 'object' && source !== null) {
    const routing = result['_routing'];
    return typeof routing === 'string'
      ? { _index: index, _id: String(result.id), _score: score, _routing: routing, _source: source }
      : { _index: index, _id: String(result.id), _score: score, _source: source };
  }
  return {
    _index: index,
    _id: String(result.id),
    _score: score,
    _source: {
      subject: typeof result['subject'] === 'string' ? result['subject'] : '',
      from: typeof result['from'] === 'string' ? result['from'] : '',
      date: typeof result['date'] === 'number' ? result['date'] : null,
    },
  };
}

function compareHits(a: SearchHit, b: SearchHit): number {
  if (a._score !== b._score) return b._score - a._score;
  if (a._index !== b._index) return a._index < b._index ? -1 : 1;
  return a._id < b._id ? -1 : a._id > b._id ? 1 : 0;
}
