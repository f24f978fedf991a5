/**
 * One JSON call from a node to another node's `/_internal/` route (global `fetch`: Node's undici,
 * keep-alive per origin), for the write side of a cluster: index metadata, shard bulks, replication,
 * recovery, GET, `_cat/shards`. Like `callShardSearch`, it never throws for what the other node answers
 * or fails to answer: it returns an outcome to act on.
 */
import { STATS_HEADER_KEY } from '../admission/stats-header.js';
import { isPlainObject } from '../common/is-plain-object.js';
import { decodeErrorAnswer } from './internal-codecs.js';

/** What one internal call came to. */
export type InternalCallOutcome =
  | {
      readonly ok: true;
      readonly status: number;
      readonly body: Record<string, unknown>;
      readonly statsHeader: string | undefined;
      /** From sending to the whole body read, ns. */
      readonly responseTimeNs: number;
    }
  | {
      readonly ok: false;
      /** HTTP status; 0 when the node did not answer (refused, reset, timed out). */
      readonly status: number;
      readonly body: Record<string, unknown> | undefined;
      readonly reason: { readonly type: string; readonly reason: string };
      readonly statsHeader: string | undefined;
      readonly responseTimeNs: number;
    };

/** How one internal call is made. */
export interface InternalCallOptions {
  /** The call fails as `receive_timeout_transport_exception` after this long, ms. */
  readonly timeoutMs: number;
  /** The cluster secret, sent as `Authorization: Bearer <secret>` (the other node refuses the call without it). */
  readonly secret: string | undefined;
  /** Aborts the call (the caller closing). */
  readonly signal?: AbortSignal | undefined;
  /** Statuses that count as an answer to read. @default [200] (replication also reads its 409) */
  readonly okStatuses?: readonly number[];
}

/** The headers of an internal call: the cluster secret, and the JSON content type when there is a body. */
export function internalHeaders(secret: string | undefined, json: boolean): Record<string, string> {
  const headers: Record<string, string> = json ? { 'content-type': 'application/json' } : {};
  if (secret !== undefined) headers['authorization'] = `Bearer ${secret}`;
  return headers;
}

/** Calls `method url+path` with a JSON body (none for GET/DELETE without one). */
export async function callInternal(
  url: string,
  path: string,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  body: unknown,
  options: InternalCallOptions,
): Promise<InternalCallOutcome> {
  const { timeoutMs, signal } = options;
  const okStatuses = options.okStatuses ?? [200];
  const started = performance.now();
  const elapsedNs = () => Math.round((performance.now() - started) * 1e6);
  const timeout = AbortSignal.timeout(timeoutMs);
  let response: Response;
  let text: string;
  try {
    response = await fetch(`${url}${path}`, {
      method,
      headers: internalHeaders(options.secret, body !== undefined),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: signal === undefined ? timeout : AbortSignal.any([timeout, signal]),
    });
    text = await response.text();
  } catch (error) {
    const e = error as { name?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } };
    const reason =
      e?.name === 'TimeoutError'
        ? { type: 'receive_timeout_transport_exception', reason: `no answer within ${timeoutMs} ms` }
        : e?.name === 'AbortError'
          ? { type: 'node_closed_exception', reason: 'the node is closing' }
          : {
              type: 'connect_transport_exception',
              reason:
                typeof e?.cause?.code === 'string'
                  ? e.cause.code
                  : String(e?.cause?.message ?? e?.message ?? error),
            };
    return {
      ok: false,
      status: 0,
      body: undefined,
      reason,
      statsHeader: undefined,
      responseTimeNs: elapsedNs(),
    };
  }
  const responseTimeNs = elapsedNs();
  const statsHeader = response.headers.get(STATS_HEADER_KEY) ?? undefined;
  let parsed: unknown;
  try {
    parsed = text.length === 0 ? {} : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const answer = isPlainObject(parsed) ? parsed : undefined;
  if (okStatuses.includes(response.status) && answer !== undefined) {
    return { ok: true, status: response.status, body: answer, statsHeader, responseTimeNs };
  }
  return {
    ok: false,
    status: response.status === 200 ? 502 : response.status,
    body: answer,
    reason: decodeErrorAnswer(answer, response.status, response.statusText),
    statsHeader,
    responseTimeNs,
  };
}
