/**
 * The Elasticsearch-shaped error body and its HTTP status, for every error the server answers with:
 *
 * ```json
 * {"error": {"root_cause": [{"type", "reason", ...}], "type", "reason", "code", ...}, "status": N}
 * ```
 *
 * `root_cause` lists the underlying errors as Elasticsearch does (`ElasticsearchException.guessRootCauses`):
 * the error itself for a simple one, the distinct shard failures for a search whose shards failed. The
 * official clients print `type`, then each root cause's `type: reason`, as the error's message. `code`
 * is this project's (`errors.ts`), the other extra fields say more where Elasticsearch has them (`index`,
 * `index_uuid`, `resource.type`, `resource.id` for a missing index; `phase`, `grouped`, `failed_shards`
 * for a search). The one place where errors become HTTP.
 */
import type { FastifyReply } from 'fastify';
import {
  AbortedError,
  AdmissionRejectedError,
  clientErrorStatusOf,
  DocumentWriteError,
  httpStatusOf,
  IndexNotFoundError,
  isQuerySandboxError,
  RejectedError,
  RemoteClientError,
  CancelledError,
  InvalidBulkError,
  ShardsFailedError,
  TimedOutError,
  UnsupportedContentTypeError,
  WriteRejectedError,
} from '../errors.js';

/** One entry of `error.root_cause`. */
export interface RootCause {
  readonly type: string;
  readonly reason: string;
  readonly [extra: string]: unknown;
}

export interface ErrorBody {
  readonly error: {
    readonly root_cause: readonly RootCause[];
    readonly type: string;
    readonly reason: string;
    readonly [extra: string]: unknown;
  };
  readonly status: number;
}

/**
 * An error body in Elasticsearch's shape: `root_cause` (default: the error itself, with the `index`
 * fields of `extra` when it has them), then `type`, `reason` and `extra`.
 */
export function errorBody(
  status: number,
  type: string,
  reason: string,
  extra: Readonly<Record<string, unknown>> = {},
  rootCause?: readonly RootCause[],
): ErrorBody {
  const own: Record<string, unknown> = { type, reason };
  for (const key of ['resource.type', 'resource.id', 'index_uuid', 'index', 'shard']) {
    if (extra[key] !== undefined) own[key] = extra[key];
  }
  return {
    error: { root_cause: rootCause ?? [own as RootCause], type, reason, ...extra },
    status,
  };
}

/** The distinct causes of shard failures (by type, reason and index), as Elasticsearch groups them. */
function shardRootCauses(error: ShardsFailedError): RootCause[] {
  const seen = new Set<string>();
  const causes: RootCause[] = [];
  for (const f of error.failures) {
    const key = `${f.reason.type}\u0000${f.reason.reason}\u0000${f.index}`;
    if (seen.has(key)) continue;
    seen.add(key);
    causes.push({ type: f.reason.type, reason: f.reason.reason, index: f.index });
  }
  return causes.length > 0 ? causes : [{ type: error.type, reason: error.message }];
}

/** Status and body for `error` (a runtime error, a fastify error, or anything else thrown). */
export function toErrorResponse(error: unknown): { status: number; body: ErrorBody } {
  if (isQuerySandboxError(error)) {
    const status = httpStatusOf(error);
    // A data node's 4xx that a coordinator passes on: the data node's own body.
    if (error instanceof RemoteClientError) return { status, body: error.body as unknown as ErrorBody };
    // Elasticsearch answers a content type it does not read with a plain string `error`, no root cause.
    if (error instanceof UnsupportedContentTypeError) {
      return { status, body: { error: error.message, status } as unknown as ErrorBody };
    }
    const extra: Record<string, unknown> = { code: error.code };
    if (error instanceof RejectedError || error instanceof CancelledError) {
      extra['sandbox_id'] = error.sandboxId;
      extra['resource'] = error.resource;
    }
    if (error instanceof RejectedError) extra['rejection_reason'] = error.reason;
    if (error instanceof CancelledError) {
      extra['hard'] = error.hard;
      extra['cancellation_reason'] = error.reason;
    }
    if (error instanceof AbortedError || error instanceof TimedOutError) {
      if (error.sandboxId !== undefined) extra['sandbox_id'] = error.sandboxId;
      extra['queued'] = error.queued;
    }
    if (error instanceof AdmissionRejectedError) {
      extra['node_id'] = error.nodeId;
      extra['resource'] = error.resource;
      extra['index'] = error.index;
      extra['shard'] = error.shard;
    }
    if (error instanceof IndexNotFoundError) {
      extra['resource.type'] = 'index_or_alias';
      extra['resource.id'] = error.index;
      extra['index_uuid'] = '_na_';
      extra['index'] = error.index;
    }
    if (error instanceof DocumentWriteError) {
      extra['index'] = error.index;
      if (error.shard !== undefined) extra['shard'] = error.shard;
    }
    if (error instanceof InvalidBulkError && error.line !== undefined) extra['line'] = error.line;
    if (error instanceof WriteRejectedError) {
      extra['in_flight_bytes'] = error.inFlightBytes;
      extra['limit_bytes'] = error.limitBytes;
    }
    if (error instanceof ShardsFailedError) {
      extra['phase'] = 'query';
      extra['grouped'] = true;
      extra['failed_shards'] = error.failures;
      return { status, body: errorBody(status, error.type, error.message, extra, shardRootCauses(error)) };
    }
    return { status, body: errorBody(status, error.type, error.message, extra) };
  }
  const e = error as { message?: unknown; code?: unknown };
  const status = clientErrorStatusOf(error);
  if (status !== undefined) {
    const reason = String(e.message ?? 'bad request');
    const type =
      status === 413
        ? 'content_too_long_exception'
        : status === 415
          ? 'media_type_header_exception'
          : 'parsing_exception';
    const isJson = e.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError;
    const text = isJson ? `request body is not valid JSON: ${reason}` : reason;
    const code = isJson
      ? { code: 'QS_INVALID_ARGUMENT' }
      : typeof e.code === 'string'
        ? { code: e.code }
        : {};
    return { status, body: errorBody(status, type, text, code) };
  }
  return { status: 500, body: errorBody(500, 'exception', 'internal error; see the server log') };
}

/** Answers `error` with its OpenSearch-shaped body and status (`toErrorResponse`). */
export function sendError(reply: FastifyReply, error: unknown): FastifyReply {
  const { status, body } = toErrorResponse(error);
  return reply.code(status).send(body);
}
