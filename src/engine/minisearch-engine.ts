/**
 * The default embedded engine: MiniSearch over the SpamAssassin public corpus, one index per corpus
 * group (easy-ham-1, easy-ham-2, hard-ham-1, spam-1, spam-2), each split into shards by a hash of
 * the mail id. Implements `EngineModule` (src/pool/engine-module.ts) with named exports.
 *
 * Life cycle: `prepare` (main thread, once) builds the shards and writes them to the cache, or reuses
 * the cache; `init` (each worker) loads every held shard from the cache (about 0.7 s and 130 MB of heap
 * per worker for the full corpus, see shard-codec.ts); `validate` (main thread) checks a request
 * cheaply; `queryAttributes` (main thread) reports the query text and the time range it reads to the
 * scheduler's priority rules; `handle` (worker) runs it.
 *
 * engineOptions (see engine-options.ts): `shardsPerIndex` (1..64, default 2),
 * `maxDocumentsPerIndex` (default all), `indices` (subset of the group names, default all),
 * `heldShards` (the shard copies this node holds and loads, default all). Documents go to shards by
 * the Elasticsearch routing of their `_id` (`shard-of.ts`). A request may name the shards to search
 * (`EngineRequest.shards`); a shard this node does not hold answers 404 `shard_not_found_exception`.
 *
 * Writable indices (`writableIndices`): when the runtime passes its refresh board at `init`, each
 * worker also holds a MiniSearch per writable shard copy of its node and, at the start of every
 * `handle`, applies the writes published by refreshes since its last task (`writable-shards.ts`).
 */

import type MiniSearch from 'minisearch';
import { EngineRequestError, IndexNotFoundError } from '../errors.js';
import type {
  EngineDescription,
  EngineInitContext,
  EnginePrepareContext,
  EngineRequest,
  QueryAttributes,
  TaskContext,
} from '../pool/engine-module.js';
import { parseEngineOptions } from './engine-options.js';
import { executeSearch, type SearchResponse } from './execute-search.js';
import { ensureIndexCache, type LoadedIndices, loadIndexCache } from './index-cache.js';
import { dateRangeRead, parseSearchBody, type SearchPlan } from './search-request.js';
import { CORPUS_GROUPS } from './spam-assassin-corpus.js';
import { WritableShards } from './writable-shards.js';

export type { SearchHit, SearchResponse } from './execute-search.js';

/** Index names this thread knows (after prepare or init); before either, every corpus group. */
let knownIndices: ReadonlySet<string> = new Set(CORPUS_GROUPS);
/** The shards this thread holds (after init). */
let loaded: LoadedIndices | undefined;
/** The writable shard copies of this node, when the runtime serves writable indices (after init). */
let writable: WritableShards | undefined;
/** `loaded` plus the writable copies, rebuilt when the writable catalog changes. */
let searchable: LoadedIndices | undefined;
let searchableFor: unknown;

/** This engine searches writable indices (see `EngineModule.writableIndices`). */
export const writableIndices = true;

/**
 * Main thread, once: build the index cache under `context.cacheDir` (about 5.5 s for the full
 * corpus: read and parse 1.1 s, index 3.7 s, encode and write 0.7 s) or reuse it when its key matches.
 *
 * @returns the served index names (in corpus order), their shard and document counts and the mappings.
 * @throws InvalidArgumentError for bad engineOptions; Error when the corpus or the cache cannot be read/written.
 */
export function prepare(context: EnginePrepareContext): EngineDescription {
  const options = parseEngineOptions(context.options);
  const { manifest } = ensureIndexCache(context.cacheDir, options, (message) => context.log(message));
  const indices = Object.keys(manifest.indices);
  knownIndices = new Set(indices);
  return {
    indices,
    shardsPerIndex: manifest.shardsPerIndex,
    docsPerIndex: manifest.indices,
    mappings: MAIL_MAPPINGS,
  };
}

/**
 * What this engine does with the fields, in Elasticsearch's mapping terms: `subject`, `from` and
 * `body` are analysed text (lower-cased words), `date` a date in epoch ms (corpus mails without a
 * `Date:` header have none). Writable indices store the whole `_source` besides.
 */
export const MAIL_MAPPINGS: Readonly<Record<string, unknown>> = Object.freeze({
  properties: {
    subject: { type: 'text' },
    from: { type: 'text' },
    body: { type: 'text' },
    date: { type: 'date', format: 'strict_date_optional_time||epoch_millis' },
  },
});

/**
 * Each worker, once: load the held shards (every shard without `heldShards`) from the cache written
 * by `prepare` (builds it when missing).
 *
 * @throws InvalidArgumentError for bad engineOptions; Error when a cache file is unreadable.
 */
export function init(context: EngineInitContext): void {
  const options = parseEngineOptions(context.options);
  const { dir, manifest } = ensureIndexCache(context.cacheDir, options);
  loaded = loadIndexCache(dir, manifest, options.heldShards);
  knownIndices = new Set(loaded.keys());
  if (context.writableIndices !== undefined) {
    writable = new WritableShards(context.writableIndices.board);
    writable.sync();
  }
}

/** The corpus shards plus the writable copies, after pulling refreshed writes from the board. */
function searchableIndices(corpus: LoadedIndices): LoadedIndices {
  if (writable === undefined) return corpus;
  writable.sync();
  const copies = writable.indices;
  if (searchable === undefined || searchableFor !== copies) {
    // Searches read only what every MiniSearch has (ids, scores, stored fields): the document type differs.
    const combined = new Map<string, readonly (MiniSearch | undefined)[]>(corpus);
    for (const [name, shards] of copies) combined.set(name, shards);
    searchable = combined;
    searchableFor = copies;
  }
  return searchable;
}

/**
 * Main thread, per request, cheap (no index access): check the body and the index names.
 *
 * @throws EngineRequestError `parsing_exception` (400) for a bad body (see search-request.ts);
 *   IndexNotFoundError (404) for an index this engine does not serve. Requested shards are checked by
 *   `handle`, in the worker that holds them (the main thread's module is shared by every runtime of the
 *   process, so it keeps no per-node shard state).
 */
export function validate(request: EngineRequest): void {
  parseSearchBody(request.body);
  for (const name of request.indices) if (!knownIndices.has(name)) throw new IndexNotFoundError(name);
}

/**
 * Main thread, per request, after `validate`: what the scheduler's priority rules match on.
 *
 * @param nowMs what `now` means in the query's date math (epoch ms).
 * @returns `text`: the compact JSON of the body (`JSON.stringify(body ?? {})`); `timeRange`: the
 *   range of `date` the query reads, epoch ms inclusive, from the range queries that must match (the
 *   query itself and the must/filter clauses of bools, intersected; should and must_not do not
 *   restrict); `fromMs` -Infinity without a lower bound, `toMs` = `nowMs` without an upper bound or
 *   with one after now, `gt`/`lt` moved in by 1 ms; absent when no range restricts the query (or the
 *   body is invalid).
 *   Never throws for a body that passed `validate`; costs one parse of the body.
 */
export function queryAttributes(request: EngineRequest, nowMs: number): QueryAttributes {
  const text = JSON.stringify(request.body ?? {});
  let plan: SearchPlan;
  try {
    plan = parseSearchBody(request.body);
  } catch (error) {
    // Not validated: the runtime refuses it anyway; report the text alone.
    if (error instanceof EngineRequestError) return { text };
    throw error;
  }
  const timeRange = dateRangeRead(plan.query, nowMs);
  return timeRange === undefined ? { text } : { text, timeRange };
}

/**
 * Worker, per task: run the search over each requested index (none when `request.indices` is empty)
 * and each of its held shards (or the shards `request.shards` names), calling `context.checkpoint()`
 * before every shard, before every clause of a bool query on a shard, and once at the end; `now` in
 * date math is the worker's clock. With `request.timeoutMs`, shards left when it has passed are not
 * searched and the response says `timed_out: true` (see `executeSearch`).
 *
 * @returns an OpenSearch-shaped response (`took` in ms; hits sorted by score desc, index, `_id`).
 * @throws EngineRequestError / IndexNotFoundError as `validate`, and `shard_not_found_exception`
 *   (404) for a requested shard this worker does not hold; whatever `checkpoint` throws when the task
 *   is cancelled; Error when `init` has not run in this thread.
 */
export function handle(request: EngineRequest, context: TaskContext): SearchResponse {
  const plan = parseSearchBody(request.body);
  if (!loaded)
    throw new Error('the MiniSearch engine is not initialised in this thread (init was not called)');
  return executeSearch(
    searchableIndices(loaded),
    request.indices,
    plan,
    () => context.checkpoint(),
    Date.now(),
    request.shards,
    request.timeoutMs,
  );
}
