/**
 * The coordinator's HTTP calls to data nodes (global `fetch`, i.e. Node's bundled undici, which keeps
 * connections alive per origin). Calls never throw for what a node answers or fails to answer: they
 * return an outcome the coordinator can act on (retry on another copy, pass a client error on).
 */
import { STATS_HEADER_KEY } from '../admission/stats-header.js';
import { isPlainObject } from '../common/is-plain-object.js';
import { internalHeaders } from './internal-call.js';
import {
  decodeErrorAnswer,
  decodeNodeInfo,
  decodeShardSearchAnswer,
  encodeShardSearchRequest,
  type ShardSearchCall,
} from './internal-codecs.js';
import {
  NODE_INFO_PATH,
  type NodeInfo,
  SHARD_SEARCH_PATH,
  type ShardSearchResponse,
} from './internal-protocol.js';

export type { ShardSearchCall } from './internal-codecs.js';

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
  const payload = encodeShardSearchRequest(request);
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
  let reason: { type: string; reason: string };
  if (response.status === 200) {
    try {
      return { ok: true, body: decodeShardSearchAnswer(body), statsHeader, responseTimeNs };
    } catch (error) {
      reason = {
        type: 'exception',
        reason: `the data node answered with a body that is not a shard search result (${(error as Error).message})`,
      };
    }
  } else {
    reason = decodeErrorAnswer(body, response.status, response.statusText);
  }
  return {
    ok: false,
    status: response.status === 200 ? 502 : response.status,
    errorBody: isPlainObject(body) ? body : undefined,
    reason,
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
  return {
    info: decodeNodeInfo(body, url),
    statsHeader: response.headers.get(STATS_HEADER_KEY) ?? undefined,
  };
}
