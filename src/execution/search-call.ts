/**
 * The caller's control over one `runtime.search` call, and the request's own `timeout`.
 *
 * - `SearchCallOptions.signal`: aborting it settles the call at once with `AbortedError`; a queued task
 *   is removed without running, a running one is cancelled (soft, then hard after the grace period).
 *   The HTTP server aborts it when the client's connection closes before the answer is sent.
 * - `SearchCallOptions.timeoutMs`: the same at a deadline, with `TimedOutError`.
 * - The request's `timeout` (Elasticsearch's search `timeout`: the body's, into which the HTTP edge
 *   folds `?timeout=`) also bounds how long the task may wait in the queue when it is smaller than its
 *   sandbox's `max_queue_wait` (see docs/overload.md).
 */
import { InvalidArgumentError } from '../errors.js';

/**
 * Per-call options of `runtime.search(request, options)`. An interface of its own so that embedders
 * and later options extend it.
 */
export interface SearchCallOptions {
  /**
   * Aborting it gives up the call: it rejects at once with `AbortedError` (`QS_ABORTED`); a queued
   * task is removed without running, a running one is cancelled. Already aborted: rejected before
   * anything is queued.
   */
  readonly signal?: AbortSignal | undefined;
  /**
   * Milliseconds the whole call may take (queue and run), an integer in 1..2147483647: past it the
   * call rejects with `TimedOutError` (`QS_TIMED_OUT`) and the task is removed or cancelled as for
   * `signal`. Default: none.
   */
  readonly timeoutMs?: number | undefined;
}

/** Largest `timeoutMs`: what `setTimeout` takes. */
export const MAX_CALL_TIMEOUT_MS = 2_147_483_647;

/**
 * Checks the per-call options once, at the call.
 * @throws InvalidArgumentError naming `options`, `options.signal` or `options.timeoutMs` and the value.
 */
export function checkSearchCallOptions(options: unknown): SearchCallOptions | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidArgumentError('options', 'must be an object { signal?, timeoutMs? }', options);
  }
  const { signal, timeoutMs } = options as { signal?: unknown; timeoutMs?: unknown };
  if (
    signal !== undefined &&
    (typeof signal !== 'object' ||
      signal === null ||
      typeof (signal as AbortSignal).aborted !== 'boolean' ||
      typeof (signal as AbortSignal).addEventListener !== 'function')
  ) {
    throw new InvalidArgumentError('options.signal', 'must be an AbortSignal', signal);
  }
  if (
    timeoutMs !== undefined &&
    (typeof timeoutMs !== 'number' ||
      !Number.isInteger(timeoutMs) ||
      timeoutMs < 1 ||
      timeoutMs > MAX_CALL_TIMEOUT_MS)
  ) {
    throw new InvalidArgumentError(
      'options.timeoutMs',
      `must be an integer in 1..${MAX_CALL_TIMEOUT_MS}`,
      timeoutMs,
    );
  }
  if (signal === undefined && timeoutMs === undefined) return undefined;
  return options as SearchCallOptions;
}
