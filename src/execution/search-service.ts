/**
 * The one search interface of the project: a single node's runtime (`Runtime`, `governed-runtime.ts`)
 * and a cluster's coordinator (`cluster/coordinator.ts`) both implement `SearchService`, with the same
 * request, the same per-call options and an Elasticsearch-shaped response, so the HTTP search routes
 * (`server/http-server.ts` `registerSearchRoutes`) serve either through it.
 *
 * What each implementation reads of a request:
 *
 * | field | single node | coordinator |
 * |---|---|---|
 * | `index`, `body`, `user`, `sandboxId`, `timeout`, `cancelAfterTimeInterval` | yes | yes (checked, passed on to the data nodes) |
 * | `shards` | yes (the copies of this node to search) | refused (it picks the copies itself) |
 * | `maxConcurrentShardRequests` | ignored (one task searches its shards; there is no fan-out) | bounds the fan-out |
 *
 * Per-call options (`SearchCallOptions`: `signal`, `timeoutMs`) mean the same on both: the call
 * rejects at once with `AbortedError` / `TimedOutError`; a single node removes its queued task or
 * cancels the running one, a coordinator aborts its calls to the data nodes (which then cancel their
 * tasks as for any client that went away).
 */
import type { ShardFailure } from '../errors.js';
import type { SearchCallOptions } from './search-call.js';

export type { SearchCallOptions } from './search-call.js';

/** One search request; `Body` is the engine's body type (`EngineBody`) on a single node. */
export interface SearchRequest<Body = unknown> {
  /** Index expression: a name, a comma list, wildcards (`spam-*`), `_all`. */
  readonly index: string;
  /** The request body (parsed JSON), handed to the engine; on a coordinator `undefined` means `{}`. */
  readonly body: Body;
  /** The authenticated user, from the deployment's authentication layer (a coordinator passes it on as `x-user`). */
  readonly user?: string | undefined;
  /** An explicit sandbox choice, honoured only when the request's attributes match it. */
  readonly sandboxId?: string | undefined;
  /**
   * The shards to search, index name to shard numbers (integers in 0..1023, no repeats, at least
   * one); each key must be one of the indices the expression resolves to. Absent (or an index absent
   * from it): every shard this node holds. Passed to the engine as `EngineRequest.shards`; a cluster
   * coordinator sets it to the copies it picked on a data node, and refuses it in its own requests.
   */
  readonly shards?: Readonly<Record<string, readonly number[]>> | undefined;
  /**
   * The search `timeout` (an Elasticsearch time value such as `"500ms"`, or `"-1"` for none): past it
   * the engine returns the hits it has, with `timed_out: true`. Absent: the `timeout` key of an object
   * body, if any (taken out of the body the engine gets). The sandbox's `search_settings.timeout`
   * applies when neither is given, or always with `override_request_values`.
   */
  readonly timeout?: string | number | undefined;
  /**
   * `cancel_after_time_interval` (a time value, `"-1"` for none): a task that runs longer is cancelled
   * (429 `task_cancelled_exception`, resource `time`). Same precedence as `timeout`.
   */
  readonly cancelAfterTimeInterval?: string | number | undefined;
  /**
   * `max_concurrent_shard_requests`, an integer >= 1: the shards a coordinator sends to one data node
   * at once (see `cluster/coordinator.ts`). A single node ignores it.
   */
  readonly maxConcurrentShardRequests?: number | undefined;
}

/** One hit of a search response. */
export interface SearchHit {
  readonly _index: string;
  readonly _id: string;
  /** Null when the search sorts on fields only. */
  readonly _score: number | null;
  readonly _source?: unknown;
  /** The hit's sort values, when the search gave `sort`. */
  readonly sort?: readonly (number | string | null)[];
}

/** `hits.total`. */
export interface SearchTotal {
  readonly value: number;
  readonly relation: 'eq' | 'gte';
}

/**
 * An Elasticsearch-shaped search response (`_search`): the coordinator's merged answer, and the
 * built-in engine's on a single node (another engine's `Result` may have another shape).
 */
export interface SearchResponse {
  readonly took: number;
  readonly timed_out: boolean;
  readonly _shards: {
    readonly total: number;
    readonly successful: number;
    readonly skipped: number;
    readonly failed: number;
    readonly failures?: readonly ShardFailure[];
  };
  readonly hits: {
    /** Absent with `track_total_hits: false`. */
    readonly total?: SearchTotal;
    readonly max_score: number | null;
    readonly hits: readonly SearchHit[];
  };
}

/**
 * Something that runs searches: a single node's runtime, or a cluster coordinator. `Response` is what
 * `search` resolves with (`SearchResponse` on a coordinator; the engine's result on a runtime).
 */
export interface SearchService<Response = SearchResponse, Body = unknown> {
  /**
   * Runs one search.
   * @throws (the promise rejects) the errors listed in `errors.ts`: `InvalidArgumentError` (400) for
   *   a bad request or bad `options`; `IndexNotFoundError`; the rejections and cancellations of the
   *   governor or of admission control (429); `AbortedError` / `TimedOutError` once `options.signal`
   *   aborts or `options.timeoutMs` passes; `NotRunningError` (503) once closed.
   */
  search(request: SearchRequest<Body>, options?: SearchCallOptions): Promise<Response>;
}
