/**
 * The default embedded engine: MiniSearch over the SpamAssassin public corpus, one index per corpus
 * group (easy-ham-1, easy-ham-2, hard-ham-1, spam-1, spam-2), each split into shards by a hash of
 * the mail id. Implements `EngineModule` (src/pool/engine-module.ts) with named exports.
 *
 * Life cycle: `prepare` (main thread, once) builds the shards and writes them to the cache, or reuses
 * the cache; `init` (each worker) loads every shard from the cache (about 0.7 s and 130 MB of heap
 * per worker for the full corpus, see shard-codec.ts); `validate` (main thread) checks a request
 * cheaply; `handle` (worker) runs it.
 *
 * engineOptions (see engine-options.ts): `shardsPerIndex` (1..64, default 2),
 * `maxDocumentsPerIndex` (default all), `indices` (subset of the group names, default all).
 */

import { IndexNotFoundError } from '../errors.js';
import type {
  EngineDescription,
  EngineInitContext,
  EnginePrepareContext,
  EngineRequest,
  TaskContext,
} from '../pool/engine-module.js';
import { parseEngineOptions } from './engine-options.js';
import { executeSearch, type SearchResponse } from './execute-search.js';
import { ensureIndexCache, type LoadedIndices, loadIndexCache } from './index-cache.js';
import { parseSearchBody } from './search-request.js';
import { CORPUS_GROUPS } from './spam-assassin-corpus.js';

export type { SearchHit, SearchResponse } from './execute-search.js';

/** Index names this thread knows (after prepare or init); before either, every corpus group. */
let knownIndices: ReadonlySet<string> = new Set(CORPUS_GROUPS);
/** The shards this thread holds (after init). */
let loaded: LoadedIndices | undefined;

/**
 * Main thread, once: build the index cache under `context.cacheDir` (about 5.5 s for the full
 * corpus: read and parse 1.1 s, index 3.7 s, encode and write 0.7 s) or reuse it when its key matches.
 *
 * @returns `{ indices }`: the served index names, in corpus order.
 * @throws InvalidArgumentError for bad engineOptions; Error when the corpus or the cache cannot be read/written.
 */
export function prepare(context: EnginePrepareContext): EngineDescription {
  const options = parseEngineOptions(context.options);
  const { manifest } = ensureIndexCache(context.cacheDir, options, (message) => context.log(message));
  const indices = Object.keys(manifest.indices);
  knownIndices = new Set(indices);
  return { indices };
}

/**
 * Each worker, once: load every shard from the cache written by `prepare` (builds it when missing).
 *
 * @throws InvalidArgumentError for bad engineOptions; Error when a cache file is unreadable.
 */
export function init(context: EngineInitContext): void {
  const options = parseEngineOptions(context.options);
  const { dir, manifest } = ensureIndexCache(context.cacheDir, options);
  loaded = loadIndexCache(dir, manifest);
  knownIndices = new Set(loaded.keys());
}

/**
 * Main thread, per request, cheap (no index access): check the body and the index names.
 *
 * @throws EngineRequestError `parsing_exception` (400) for a bad body (see search-request.ts);
 *   IndexNotFoundError (404) for an index this engine does not serve.
 */
export function validate(request: EngineRequest): void {
  parseSearchBody(request.body);
  for (const name of request.indices) if (!knownIndices.has(name)) throw new IndexNotFoundError(name);
}

/**
 * Worker, per task: run the search over each requested index (none when `request.indices` is empty)
 * and each of its shards, calling `context.checkpoint()` before every shard and once at the end.
 *
 * @returns an OpenSearch-shaped response (`took` in ms; hits sorted by score desc, index, `_id`).
 * @throws EngineRequestError / IndexNotFoundError as `validate`; whatever `checkpoint` throws when the
 *   task is cancelled; Error when `init` has not run in this thread.
 */
export function handle(request: EngineRequest, context: TaskContext): SearchResponse {
  const plan = parseSearchBody(request.body);
  if (!loaded)
    throw new Error('the MiniSearch engine is not initialised in this thread (init was not called)');
  return executeSearch(loaded, request.indices, plan, () => context.checkpoint());
}
