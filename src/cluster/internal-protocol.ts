/**
 * The node-to-node HTTP protocol of a cluster: what a coordinator asks a data node and what it
 * answers. JSON over HTTP/1.1 with keep-alive; every answer to an internal route carries the data
 * node's own `Resource_Usage_Stats` entry (see `admission/stats-header.ts`).
 *
 * - `GET /_internal/node_info` -> `NodeInfo`: who the node is and which shard copies it holds
 *   (discovery, at the coordinator's start).
 * - `POST /_internal/shard_search` with `ShardSearchRequest` -> `ShardSearchResponse`: runs one search
 *   over the given shards through the data node's own runtime (its sandboxes, governor and queue
 *   apply; the end user and sandbox choice travel in the usual `x-user` / `x-sandbox-id` headers).
 *   Errors use the usual `{"error": {...}, "status": N}` body and status.
 * - `POST|DELETE /_internal/debug/cpu_hog` (only with `--debug-routes`): see `cpu-hog.ts`; and
 *   `POST|DELETE /_internal/debug/latency`: see `latency-injector.ts`.
 * - Writable indices (see `remote-placement.ts` and `data-node-routes.ts`): `PUT|DELETE
 *   /_internal/indices/{index}` (metadata from the coordinator), `PUT /_internal/indices/{index}/_settings`,
 *   `POST /_internal/bulk` (shard bulks on primaries), `POST /_internal/replicate` (primary to replica),
 *   `POST /_internal/recover` (replica from primary), `POST /_internal/get`, `GET /_internal/cat_shards`,
 *   `POST /_internal/refresh`.
 *
 * Every message is encoded and decoded, on both sides, by `internal-codecs.ts`.
 */
export const NODE_INFO_PATH = '/_internal/node_info';
export const SHARD_SEARCH_PATH = '/_internal/shard_search';
export const CPU_HOG_PATH = '/_internal/debug/cpu_hog';
/** `POST|DELETE`: added latency on this node's internal routes (benchmarks: a sick node). */
export const LATENCY_PATH = '/_internal/debug/latency';
/** `PUT|DELETE /_internal/indices/{index}`, `PUT /_internal/indices/{index}/_settings`: writable-index metadata. */
export const INDICES_PATH = '/_internal/indices';
/** `POST`: shard bulks for the primaries this node holds. */
export const SHARD_BULK_PATH = '/_internal/bulk';
/** `POST`: a primary's operations for a replica this node holds. */
export const REPLICATE_PATH = '/_internal/replicate';
/** `POST`: a replica asks the primary for the operations it lacks. */
export const RECOVER_PATH = '/_internal/recover';
/** `POST`: a real-time GET on a copy this node holds. */
export const GET_PATH = '/_internal/get';
/** `GET`: the `_cat/shards` rows of this node's writable copies. */
export const CAT_SHARDS_PATH = '/_internal/cat_shards';
/** `POST`: refresh this node's copies of some writable indices. */
export const REFRESH_PATH = '/_internal/refresh';
/** Responses to paths under this prefix carry the stats header. */
export const INTERNAL_PATH_PREFIX = '/_internal/';

/** One shard copy a data node holds. */
export interface NodeInfoCopy {
  readonly index: string;
  readonly shard: number;
  readonly primary: boolean;
}

/** `GET /_internal/node_info`. */
export interface NodeInfo {
  readonly node_id: string;
  readonly roles: readonly ['data'];
  /** Index names the node's engine serves, in the engine's order. */
  readonly indices: readonly string[];
  /** Shards per index (`index.number_of_shards`), the same for every index. */
  readonly shards_per_index: number;
  readonly copies: readonly NodeInfoCopy[];
  /** Documents of each of `indices` (whole index, every shard), when the engine reports them. */
  readonly docs_per_index?: Readonly<Record<string, number>>;
  /** The engine's field mappings (Elasticsearch's shape), when it reports them. */
  readonly mappings?: Readonly<Record<string, unknown>>;
}

/** `POST /_internal/shard_search` body. */
export interface ShardSearchRequest {
  /** Comma list of concrete index names. */
  readonly index: string;
  /** Index name to the shard numbers to search on this node. */
  readonly shards: Readonly<Record<string, readonly number[]>>;
  /** The search body for the shards (the coordinator asks each shard for `from + size` hits from 0). */
  readonly body: Readonly<Record<string, unknown>>;
  /** The request's own `cancel_after_time_interval`, passed on (the body carries its `timeout`). */
  readonly cancel_after_time_interval?: string;
}

/** `POST /_internal/shard_search` answer. */
export interface ShardSearchResponse {
  readonly node_id: string;
  /** Time from the request's arrival at the data node to its result, queueing included, ns. */
  readonly service_time_ns: number;
  /** Tasks waiting in the data node's queue when it answered. */
  readonly queue_size: number;
  /** The engine's response (OpenSearch-shaped for the built-in engine). */
  readonly response: unknown;
}
