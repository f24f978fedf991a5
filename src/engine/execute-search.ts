/**
 * Runs a search plan over loaded shards and builds an OpenSearch-shaped response. Leaf queries are
 * MiniSearch searches; range and bool queries are evaluated here, per shard, over the matches of
 * their clauses (see `matchBool`).
 */

import MiniSearch, { type SearchOptions, type SearchResult } from 'minisearch';
import { EngineRequestError, IndexNotFoundError } from '../errors.js';
import type { LoadedIndices } from './index-cache.js';
import { filterSource, type SortKey } from './search-options.js';
import type { BoolQueryPlan, MatchAllPlan, PrefixQueryPlan, QueryPlan, TextQueryPlan } from './query-plan.js';
import { fuzzyDistance, resolveDateRange, type SearchPlan, type TermQueryPlan } from './search-request.js';
import { keywordMatches, sourcePath } from './term-queries.js';

/** `_source` of a hit: the stored fields. `date` is epoch ms or null. */
export interface HitSource {
  readonly subject: string;
  readonly from: string;
  readonly date: number | null;
}

/**
 * One hit. `_score` is shard-local (as in OpenSearch's default query_then_fetch), null when the search
 * sorts on fields only. A corpus mail's `_source` holds its stored fields (`HitSource`); a writable
 * index's document returns its whole `_source`, and `_routing` when it was stored with one. `_source`
 * is filtered as the search's `_source` asks (absent with `_source: false`); `sort` holds the hit's sort
 * values when the search gave `sort` (`date`: epoch ms, null for a document without one).
 */
export interface SearchHit {
  readonly _index: string;
  readonly _id: string;
  readonly _score: number | null;
  readonly _routing?: string;
  readonly _source?: HitSource | Readonly<Record<string, unknown>>;
  readonly sort?: readonly (number | null)[];
}

/** `hits.total`: exact (`eq`) or a lower bound (`gte`) beyond `track_total_hits`. */
export interface TotalHits {
  readonly value: number;
  readonly relation: 'eq' | 'gte';
}

/** The Elasticsearch-shaped search response. `took` is in ms. */
export interface SearchResponse {
  readonly took: number;
  /** True when the search stopped at its `timeout` (the hits are those found until then). */
  readonly timed_out: boolean;
  readonly _shards: {
    readonly total: number;
    readonly successful: number;
    readonly skipped: 0;
    readonly failed: 0;
  };
  readonly hits: {
    /** Absent with `track_total_hits: false`. */
    readonly total?: TotalHits;
    /**
     * Highest score over all matching hits (not only the returned page); null when nothing matched or
     * when the search sorts on fields only.
     */
    readonly max_score: number | null;
    readonly hits: readonly SearchHit[];
  };
}

/** Thrown inside a search when its `timeout` passed (caught by `executeSearch`). */
class SearchTimedOut extends Error {}

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
 * @param timeoutMs the search timeout in force, ms (> 0), counted from this call; given, it replaces
 *   the plan's own `timeout` (the runtime resolves the request's value against its sandbox's
 *   `search_settings`). Checked before each shard and each clause of a bool query: once it has passed,
 *   the search stops and the response has `timed_out: true` with the hits found so far (or, with
 *   `allow_partial_search_results: false`, fails). As with an Elasticsearch shard that times out
 *   before it collects anything, a shard not searched counts in `_shards` as successful with no hits.
 *   Absent: the plan's `timeout`, if any.
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
  const limitMs = timeoutMs ?? plan.timeoutMs;
  const deadline = limitMs === undefined ? undefined : started + limitMs;
  const check =
    deadline === undefined
      ? checkpoint
      : () => {
          checkpoint();
          if (performance.now() > deadline) throw new SearchTimedOut();
        };
  const run: QueryRun = { nowMs, checkpoint: check };
  const matches: ScoredMatch[] = [];
  // Every targeted shard counts, also those a timeout left unsearched (successful, no hits), as in Elasticsearch.
  const shardCount = targets.reduce((n, t) => n + t.shards.length, 0);
  let timedOut = false;
  search: for (const { name, shards } of targets) {
    for (const shard of shards) {
      let found: ShardMatches;
      try {
        check();
        found = matchShard(shard, plan.query, run);
      } catch (error) {
        if (!(error instanceof SearchTimedOut)) throw error;
        timedOut = true;
        break search;
      }
      for (const match of found.values())
        matches.push({ index: name, result: match.result, score: match.score });
    }
  }
  checkpoint();
  if (timedOut && !plan.allowPartial) {
    throw new EngineRequestError(
      'search_phase_execution_exception',
      `Partial shards failure: the search passed its timeout of ${limitMs} ms (Time exceeded) and allow_partial_search_results is false`,
      429,
    );
  }
  const scored = plan.sort.length === 0 || plan.sort.some((k) => k.field === '_score');
  matches.sort(plan.sort.length === 0 ? compareScored : (a, b) => compareSorted(plan.sort, a, b));
  let maxScore: number | null = null;
  if (scored) for (const m of matches) if (maxScore === null || m.score > maxScore) maxScore = m.score;
  const total = totalOf(matches.length, plan.trackTotalHits);
  const page = matches.slice(plan.from, plan.from + plan.size).map((m) => toHit(m, plan, scored));
  return {
    took: Math.round(performance.now() - started),
    timed_out: timedOut,
    _shards: { total: shardCount, successful: shardCount, skipped: 0, failed: 0 },
    hits:
      total === undefined ? { max_score: maxScore, hits: page } : { total, max_score: maxScore, hits: page },
  };
}

/** `hits.total` for `count` matches under `track_total_hits` (undefined: not tracked). */
export function totalOf(count: number, trackTotalHits: number | null): TotalHits | undefined {
  if (trackTotalHits === null) return undefined;
  return count > trackTotalHits
    ? { value: trackTotalHits, relation: 'gte' }
    : { value: count, relation: 'eq' };
}

/** A match with its index, before it becomes a hit. */
interface ScoredMatch {
  readonly index: string;
  readonly result: SearchResult;
  readonly score: number;
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
    case 'term':
      return matchTerm(shard, query);
  }
}

/** A term, terms or ids query on one shard (see `term-queries.ts` for what each field means). */
function matchTerm(shard: MiniSearch, query: TermQueryPlan): ShardMatches {
  if (query.target === 'text') {
    const terms = query.values.map((v) => (query.caseInsensitive ? String(v).toLowerCase() : String(v)));
    // Exact indexed terms: no tokenizing or lower-casing of the value, no fuzziness, no prefix.
    return collect(
      shard.search(
        { combineWith: 'OR', queries: terms },
        {
          fields: [query.field],
          tokenize: (text) => [text],
          processTerm: (term) => term,
          prefix: false,
          fuzzy: false,
        },
      ),
    );
  }
  if (query.target === 'id') {
    const ids = new Set(query.values.map(String));
    return collect(shard.search(MiniSearch.wildcard, { filter: (r) => ids.has(String(r.id)) }), 1);
  }
  if (query.target === 'date') {
    const wanted = query.values.map((v) => (typeof v === 'number' ? v : Date.parse(String(v))));
    return collect(
      shard.search(MiniSearch.wildcard, {
        filter: (r) => typeof r['date'] === 'number' && wanted.includes(r['date']),
      }),
      1,
    );
  }
  if (query.target === 'routing') {
    return collect(
      shard.search(MiniSearch.wildcard, {
        filter: (r) => keywordMatches(r['_routing'], query.values, query.caseInsensitive),
      }),
      1,
    );
  }
  return collect(
    shard.search(MiniSearch.wildcard, {
      filter: (r) => keywordMatches(storedValue(r, query.field), query.values, query.caseInsensitive),
    }),
    1,
  );
}

/** A stored field of a result: a path of a writable document's `_source`, or a corpus mail's stored field. */
function storedValue(result: SearchResult, path: string): unknown {
  const source = result['_source'];
  if (typeof source === 'object' && source !== null)
    return sourcePath(source as Record<string, unknown>, path);
  return path === 'subject' || path === 'from' || path === 'date' ? result[path] : undefined;
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

function toHit(match: ScoredMatch, plan: SearchPlan, scored: boolean): SearchHit {
  const { index, result } = match;
  const stored = result['_source'];
  const routing = result['_routing'];
  const source: Readonly<Record<string, unknown>> =
    typeof stored === 'object' && stored !== null
      ? (stored as Record<string, unknown>)
      : {
          subject: typeof result['subject'] === 'string' ? result['subject'] : '',
          from: typeof result['from'] === 'string' ? result['from'] : '',
          date: typeof result['date'] === 'number' ? result['date'] : null,
        };
  const hit: {
    _index: string;
    _id: string;
    _score: number | null;
    _routing?: string;
    _source?: Readonly<Record<string, unknown>>;
    sort?: (number | null)[];
  } = { _index: index, _id: String(result.id), _score: scored ? match.score : null };
  if (typeof routing === 'string') hit._routing = routing;
  if (plan.source.fetch) hit._source = filterSource(source, plan.source);
  if (plan.sort.length > 0) hit.sort = plan.sort.map((key) => sortValue(match, key));
  return hit;
}

/** A match's value for one sort key: its score, or its stored date (null when it has none). */
function sortValue(match: ScoredMatch, key: SortKey): number | null {
  if (key.field === '_score') return match.score;
  const date = match.result['date'];
  return typeof date === 'number' ? date : null;
}

/** Score descending, then index name, then `_id` (the engine's order without `sort`). */
function compareScored(a: ScoredMatch, b: ScoredMatch): number {
  if (a.score !== b.score) return b.score - a.score;
  return compareIdentity(a, b);
}

function compareIdentity(a: ScoredMatch, b: ScoredMatch): number {
  if (a.index !== b.index) return a.index < b.index ? -1 : 1;
  const x = String(a.result.id);
  const y = String(b.result.id);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** By the sort keys in order (a missing date sorts last in either order), then index and `_id`. */
function compareSorted(keys: readonly SortKey[], a: ScoredMatch, b: ScoredMatch): number {
  for (const key of keys) {
    const c = compareSortValues(sortValue(a, key), sortValue(b, key), key.order);
    if (c !== 0) return c;
  }
  return compareIdentity(a, b);
}

/**
 * Two sort values under an order: numbers by the order, null (a missing value) after every number
 * in both orders, as Elasticsearch's default `missing: _last`.
 */
export function compareSortValues(a: number | null, b: number | null, order: 'asc' | 'desc'): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return order === 'asc' ? a - b : b - a;
}
