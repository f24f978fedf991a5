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
 * - `POST|DELETE /_internal/debug/cpu_hog` (only with `--debug-routes`): see `cpu-hog.ts`.
 */
import { InvalidArgumentError } from '../errors.js';
import { isPlainObject } from '../sandbox/is-plain-object.js';

export const NODE_INFO_PATH = '/_internal/node_info';
export const SHARD_SEARCH_PATH = '/_internal/shard_search';
export const CPU_HOG_PATH = '/_internal/debug/cpu_hog';
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
}

/** `POST /_internal/shard_search` body. */
export interface ShardSearchRequest {
  /** Comma list of concrete index names. */
  readonly index: string;
  /** Index name to the shard numbers to search on this node. */
  readonly shards: Readonly<Record<string, readonly number[]>>;
  /** The search body for the shards (the coordinator asks each shard for `from + size` hits from 0). */
  readonly body: Readonly<Record<string, unknown>>;
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

/**
 * Checks a shard-search body as received by a data node (deeper checks of `shards` are the runtime's).
 * @throws InvalidArgumentError naming `index`, `shards` or `body` and the value.
 */
export function parseShardSearchRequest(raw: unknown): ShardSearchRequest {
  if (!isPlainObject(raw)) throw new InvalidArgumentError('body', 'must be a JSON object', raw);
  for (const key of Object.keys(raw)) {
    if (key !== 'index' && key !== 'shards' && key !== 'body') {
      throw new InvalidArgumentError(key, 'is not a field of a shard search (index, shards, body)', raw[key]);
    }
  }
  const { index, shards, body } = raw;
  if (typeof index !== 'string' || index.length === 0) {
    throw new InvalidArgumentError('index', 'must be a non-empty comma list of index names', index);
  }
  if (!isPlainObject(shards)) {
    throw new InvalidArgumentError('shards', 'must be an object of index name to shard numbers', shards);
  }
  if (body !== undefined && !isPlainObject(body)) {
    throw new InvalidArgumentError('body', 'must be a JSON object', body);
  }
  return { index, shards: shards as Record<string, number[]>, body: body ?? {} };
}

/**
 * Checks a node-info answer as received by a coordinator.
 * @throws Error naming the node URL and the bad field.
 */
export function parseNodeInfo(raw: unknown, url: string): NodeInfo {
  const fail = (what: string, value: unknown): never => {
    throw new Error(
      `data node ${url} answered ${NODE_INFO_PATH} with ${what}; received ${JSON.stringify(value)}`,
    );
  };
  if (!isPlainObject(raw)) return fail('a body that is not an object', raw);
  const { node_id, indices, shards_per_index, copies } = raw;
  if (typeof node_id !== 'string' || node_id.length === 0) return fail('no node_id', node_id);
  if (!Array.isArray(indices) || !indices.every((i) => typeof i === 'string')) {
    return fail('indices that are not a list of names', indices);
  }
  if (typeof shards_per_index !== 'number' || !Number.isInteger(shards_per_index) || shards_per_index < 1) {
    return fail('a bad shards_per_index', shards_per_index);
  }
  if (!Array.isArray(copies)) return fail('copies that are not a list', copies);
  for (const c of copies) {
    if (
      !isPlainObject(c) ||
      typeof c['index'] !== 'string' ||
      !indices.includes(c['index']) ||
      !Number.isInteger(c['shard']) ||
      (c['shard'] as number) < 0 ||
      (c['shard'] as number) >= shards_per_index ||
      typeof c['primary'] !== 'boolean'
    ) {
      return fail('a bad copy', c);
    }
  }
  return raw as unknown as NodeInfo;
}
