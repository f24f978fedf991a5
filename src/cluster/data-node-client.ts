/**
 * The coordinator's HTTP calls to data nodes (global `fetch`, i.e. Node's bundled undici, which keeps
 * connections alive per origin). Calls never throw for what a node answers or fails to answer: they
 * return an outcome the coordinator can act on (retry on another copy, pass a client error on).
 */
import { STATS_HEADER_KEY } from '../admission/stats-header.js';
import { isPlainObject } from '../common/is-plain-object.js';
import { internalHeaders } from './internal-call.js';
import {
  NODE_INFO_PATH,
  type NodeInfo,
  parseNodeInfo,
  SHARD_SEARCH_PATH,
  type ShardSearchRequest,
  type ShardSearchResponse,
} from './internal-protocol.js';

/** What one call to a data node came to. */
export type NodeCallOutcome =
  | {
      readonly ok: true;
      readonly body: ShardSearchResponse;
      /** The `Resource_Usage_Stats` value, or `undefined` without one. */
      readonly statsHeader: string | undefined;
      /** Time from sending to the whole body read, ns. */
      readonly responseTimeNs: number;
    }
  | {
      readonly ok: false;
      /** HTTP status; 0 when the node did not answer (refused, reset, timed out). */
      readonly status: number;
      /** The node's error body when it sent one (`{"error": {...}, "status": N}`). */
      readonly errorBody: Readonly<Record<string, unknown>> | undefined;
      readonly reason: { readonly type: string; readonly reason: string };
      readonly statsHeader: string | undefined;
      readonly responseTimeNs: number;
    };

/** Headers passed on to the data node with a search (the end user and sandbox choice). */
export interface ForwardedHeaders {
  readonly user?: string | undefined;
  readonly sandboxId?: string | undefined;
}

function reasonOf(body: unknown, status: number, statusText: string): { type: string; reason: string } {
  if (isPlainObject(body) && isPlainObject(body['error'])) {
    const e = body['error'];
    return {
      type: typeof e['type'] === 'string' ? e['type'] : 'exception',
      reason: typeof e['reason'] === 'string' ? e['reason'] : `HTTP ${status}`,
    };
  }
  return { type: 'exception', reason: `HTTP ${status} ${statusText}`.trim() };
}

/** A network-level failure's short description (`ECONNREFUSED`, `timed out after 30000 ms`). */
function describeFailure(error: unknown, timeoutMs: number): { type: string; reason: string } {
  const e = error as { name?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } };
  if (e?.name === 'TimeoutError') {
    return { type: 'receive_timeout_transport_exception', reason: `no answer within ${timeoutMs} ms` };
  }
  if (e?.name === 'AbortError')
    return { type: 'node_closed_exception', reason: 'the coordinator is closing' };
  const code = typeof e?.cause?.code === 'string' ? e.cause.code : undefined;
  const message = typeof e?.cause?.message === 'string' ? e.cause.message : String(e?.message ?? error);
  return { type: 'connect_transport_exception', reason: code ?? message };
}

/**
 * A shard search to send: `ShardSearchRequest` with its body already serialised (once per search, by
 * the caller, which also refuses a body that cannot be: that is never a node's failure).
 */
export interface ShardSearchCall {
  readonly index: string;
  readonly shards: ShardSearchRequest['shards'];
  /** `ShardSearchRequest.body` as JSON. */
  readonly bodyJson: string;
  /** The request's own `cancel_after_time_interval`, passed on. */
  readonly cancelAfterTimeInterval?: string | undefined;
}

/**
 * `POST /_internal/shard_search` on the node at `url`.
 * @param secret the cluster secret (`Authorization: Bearer`), without which the node answers 401.
 * @param signal aborts the call (the coordinator closing); the call also times out after `timeoutMs`.
 */
export async function callShardSearch(
  url: string,
  request: ShardSearchCall,
  headers: ForwardedHeaders,
  timeoutMs: number,
  secret: string | undefined,
  signal?: AbortSignal,
): Promise<NodeCallOutcome> {
  const started = performance.now();
  const elapsedNs = () => Math.round((performance.now() - started) * 1e6);
  const sent = internalHeaders(secret, true);
  if (headers.user !== undefined) sent['x-user'] = headers.user;
  if (headers.sandboxId !== undefined) sent['x-sandbox-id'] = headers.sandboxId;
  // Names and shard numbers: flat, so this cannot throw.
  const cancelAfter =
    request.cancelAfterTimeInterval === undefined
      ? ''
      : `,"cancel_after_time_interval":${JSON.stringify(request.cancelAfterTimeInterval)}`;
  const payload = `{"index":${JSON.stringify(request.index)},"shards":${JSON.stringify(request.shards)},"body":${request.bodyJson}${cancelAfter}}`;
  const timeout = AbortSignal.timeout(timeoutMs);
  let response: Response;
  let text: string;
  try {
    response = await fetch(`${url}${SHARD_SEARCH_PATH}`, {
      method: 'POST',
      headers: sent,
      body: payload,
      signal: signal === undefined ? timeout : AbortSignal.any([timeout, signal]),
    });
    text = await response.text();
  } catch (error) {
    return {
      ok: false,
      status: 0,
      errorBody: undefined,
      reason: describeFailure(error, timeoutMs),
      statsHeader: undefined,
      responseTimeNs: elapsedNs(),
    };
  }
  const responseTimeNs = elapsedNs();
  const statsHeader = response.headers.get(STATS_HEADER_KEY) ?? undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (response.status === 200 && isPlainObject(body) && 'response' in body) {
    const serviceTimeNs = body['service_time_ns'];
    const queueSize = body['queue_size'];
    return {
      ok: true,
      body: {
        node_id: String(body['node_id']),
        service_time_ns: typeof serviceTimeNs === 'number' && serviceTimeNs >= 0 ? serviceTimeNs : 0,
        queue_size: typeof queueSize === 'number' && queueSize >= 0 ? queueSize : 0,
        response: body['response'],
      },
      statsHeader,
      responseTimeNs,
    };
  }
  return {
    ok: false,
    status: response.status === 200 ? 502 : response.status,
    errorBody: isPlainObject(body) ? body : undefined,
    reason:
      response.status === 200
        ? {
            type: 'exception',
            reason: 'the data node answered with a body that is not a shard search result',
          }
        : reasonOf(body, response.status, response.statusText),
    statsHeader,
    responseTimeNs,
  };
}

/**
 * `GET /_internal/node_info` on the node at `url`, with the cluster secret `secret`.
 * @returns the checked node info and the stats header value, if any.
 * @throws Error when the node does not answer, answers with an error status (401/403: the secret is
 *   missing or wrong), or with a bad body.
 */
export async function fetchNodeInfo(
  url: string,
  timeoutMs: number,
  secret: string | undefined,
): Promise<{ info: NodeInfo; statsHeader: string | undefined }> {
  const response = await fetch(`${url}${NODE_INFO_PATH}`, {
    headers: internalHeaders(secret, false),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await response.text();
  if (response.status !== 200) {
    throw new Error(
      `data node ${url} answered ${NODE_INFO_PATH} with HTTP ${response.status}: ${text.slice(0, 200)}`,
    );
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`data node ${url} answered ${NODE_INFO_PATH} with a body that is not JSON`);
  }
  return { info: parseNodeInfo(body, url), statsHeader: response.headers.get(STATS_HEADER_KEY) ?? undefined };
}
