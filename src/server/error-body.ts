/**
 * The OpenSearch-shaped error body and its HTTP status, for every error the server answers with:
 * `{"error": {"type", "reason", ...}, "status": N}`. The one place where errors become HTTP.
 */
import {
  AbortedError,
  AdmissionRejectedError,
  clientErrorStatusOf,
  httpStatusOf,
  isQuerySandboxError,
  RejectedError,
  CancelledError,
  InvalidBulkError,
  ShardsFailedError,
  TimedOutError,
  WriteRejectedError,
} from '../errors.js';

export interface ErrorBody {
  readonly error: { readonly type: string; readonly reason: string; readonly [extra: string]: unknown };
  readonly status: number;
}

/** Status and body for `error` (a runtime error, a fastify error, or anything else thrown). */
export function toErrorResponse(error: unknown): { status: number; body: ErrorBody } {
  if (isQuerySandboxError(error)) {
    const status = httpStatusOf(error);
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
    if (error instanceof InvalidBulkError && error.line !== undefined) extra['line'] = error.line;
    if (error instanceof WriteRejectedError) {
      extra['in_flight_bytes'] = error.inFlightBytes;
      extra['limit_bytes'] = error.limitBytes;
    }
    if (error instanceof ShardsFailedError) {
      extra['phase'] = 'query';
      extra['grouped'] = true;
      extra['failed_shards'] = error.failures;
    }
    return { status, body: { error: { type: error.type, reason: error.message, ...extra }, status } };
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
    const text =
      e.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError
        ? `request body is not valid JSON: ${reason}`
        : reason;
    const isJson = e.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError;
    const code = isJson
      ? { code: 'QS_INVALID_ARGUMENT' }
      : typeof e.code === 'string'
        ? { code: e.code }
        : {};
    return { status, body: { error: { type, reason: text, ...code }, status } };
  }
  return {
    status: 500,
    body: { error: { type: 'exception', reason: 'internal error; see the server log' }, status: 500 },
  };
}
