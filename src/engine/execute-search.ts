/**
 * Runs a search plan over loaded shards and builds an OpenSearch-shaped response.
 */

import MiniSearch, { type SearchOptions, type SearchResult } from 'minisearch';
import { IndexNotFoundError } from '../errors.js';
import type { LoadedIndices } from './index-cache.js';
import { fuzzyDistance, type QueryPlan, type SearchPlan } from './search-request.js';

/** `_source` of a hit: the stored fields. `date` is epoch ms or null. */
export interface HitSource {
  readonly subject: string;
  readonly from: string;
  readonly date: number | null;
}

/** One hit. `_score` is shard-local (as in OpenSearch's default query_then_fetch). */
export interface SearchHit {
  readonly _index: string;
  readonly _id: string;
  readonly _score: number;
  readonly _source: HitSource;
}

/** The OpenSearch-shaped search response. `took` is in ms. */
export interface SearchResponse {
  readonly took: number;
  readonly timed_out: false;
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
 * @param checkpoint called before each shard is searched (records memory; throws to abort the search).
 * @returns hits sorted by score desc, then index name, then `_id`; paged by from/size.
 * @throws IndexNotFoundError for a name that is not loaded; whatever `checkpoint` throws.
 */
export function executeSearch(
  loaded: LoadedIndices,
  indexNames: readonly string[],
  plan: SearchPlan,
  checkpoint: () => void,
): SearchResponse {
  const started = performance.now();
  const names = [...new Set(indexNames)];
  const targets = names.map((name) => {
    const shards = loaded.get(name);
    if (!shards) throw new IndexNotFoundError(name);
    return { name, shards };
  });
  const query =
    plan.query.kind === 'match_all'
      ? MiniSearch.wildcard
      : plan.query.kind === 'prefix'
        ? plan.query.value
        : plan.query.text;
  const options = searchOptions(plan.query);
  const hits: SearchHit[] = [];
  let shardCount = 0;
  for (const { name, shards } of targets) {
    for (const shard of shards) {
      checkpoint();
      shardCount++;
      for (const result of shard.search(query, options)) hits.push(toHit(name, result));
    }
  }
  checkpoint();
  hits.sort(compareHits);
  let maxScore: number | null = null;
  for (const hit of hits) if (maxScore === null || hit._score > maxScore) maxScore = hit._score;
  return {
    took: Math.round(performance.now() - started),
    timed_out: false,
    _shards: { total: shardCount, successful: shardCount, skipped: 0, failed: 0 },
    hits: {
      total: { value: hits.length, relation: 'eq' },
      max_score: maxScore,
      hits: hits.slice(plan.from, plan.from + plan.size),
    },
  };
}

/** MiniSearch options for a query plan. */
export function searchOptions(query: QueryPlan): SearchOptions {
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

function toHit(index: string, result: SearchResult): SearchHit {
  return {
    _index: index,
    _id: String(result.id),
    _score: result.score,
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
