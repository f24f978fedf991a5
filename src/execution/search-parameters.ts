/**
 * The search parameters the runtime applies itself, beside the engine: the search `timeout` (the
 * engine returns what it has, `timed_out: true`) and `cancel_after_time_interval` (the wall-clock
 * watchdog cancels the task), each from the request or from its sandbox's search settings
 * (`sandbox/search-settings.ts`, OpenSearch's precedence).
 *
 * Where they come from on a request: `SearchRequest.timeout` / `cancelAfterTimeInterval` (the HTTP
 * layer fills them from the URL parameters `?timeout=` and `?cancel_after_time_interval=`), else, for
 * `timeout`, the `timeout` key of an object body, as Elasticsearch reads it from the search source.
 * That key is taken out of the body the engine gets: the runtime hands the engine the effective value
 * (`EngineRequest.timeoutMs`) instead.
 */
import { InvalidArgumentError } from '../errors.js';
import { parseTimeValueMs } from '../common/time-value.js';
import { isPlainObject } from '../common/is-plain-object.js';
import {
  type EffectiveSearchSettings,
  resolveSetting,
  type SettingSource,
} from '../sandbox/search-settings.js';

/** What a request asks for itself. Times in ms; -1: explicitly none; undefined: not given. */
export interface RequestedParameters {
  /** The body the engine gets (without a `timeout` key). */
  readonly body: unknown;
  readonly timeoutMs: number | undefined;
  readonly cancelAfterMs: number | undefined;
}

/**
 * A request time value: positive, or -1 for none.
 * @throws InvalidArgumentError naming `path` and the value.
 */
export function parseRequestTime(value: unknown, path: string): number {
  const ms = parseTimeValueMs(value, path);
  if (ms === 0)
    throw new InvalidArgumentError(
      path,
      'must be a positive time value such as "500ms", or -1 for none',
      value,
    );
  return ms;
}

/**
 * Reads a request's own `timeout` and `cancel_after_time_interval`.
 * @throws InvalidArgumentError naming `timeout` or `cancel_after_time_interval` and the value.
 */
export function requestedParameters(request: {
  readonly body: unknown;
  readonly timeout?: string | number | undefined;
  readonly cancelAfterTimeInterval?: string | number | undefined;
}): RequestedParameters {
  let body = request.body;
  let timeout: unknown = request.timeout;
  if (isPlainObject(body) && Object.hasOwn(body, 'timeout')) {
    const { timeout: inBody, ...rest } = body;
    // As Elasticsearch: the URL parameter wins over the body's.
    timeout ??= inBody;
    body = rest;
  }
  return {
    body,
    timeoutMs: timeout === undefined ? undefined : parseRequestTime(timeout, 'timeout'),
    cancelAfterMs:
      request.cancelAfterTimeInterval === undefined
        ? undefined
        : parseRequestTime(request.cancelAfterTimeInterval, 'cancel_after_time_interval'),
  };
}

/** A time limit in force for one search, and who set it. */
export interface TimeLimit {
  readonly ms: number;
  readonly source: SettingSource;
  /** The sandbox whose search setting it is (when `source` is `sandbox`). */
  readonly sandboxId: string | undefined;
  /** The value as written (`"500ms"`), for messages. */
  readonly text: string;
}

/** The search `timeout` in force for a request of a sandbox with `settings`, or undefined for none. */
export function timeoutOf(
  requestedMs: number | undefined,
  settings: EffectiveSearchSettings,
): TimeLimit | undefined {
  const r = resolveSetting(requestedMs, settings.timeout?.ms, settings.overrideRequestValues);
  if (r === undefined) return undefined;
  return r.source === 'sandbox'
    ? { ms: r.value, source: r.source, sandboxId: settings.from.timeout, text: settings.timeout!.text }
    : { ms: r.value, source: r.source, sandboxId: undefined, text: `${r.value}ms` };
}

/** The `cancel_after_time_interval` in force, or undefined for none. */
export function cancelAfterOf(
  requestedMs: number | undefined,
  settings: EffectiveSearchSettings,
): TimeLimit | undefined {
  const r = resolveSetting(requestedMs, settings.cancelAfterTimeInterval?.ms, settings.overrideRequestValues);
  if (r === undefined) return undefined;
  return r.source === 'sandbox'
    ? {
        ms: r.value,
        source: r.source,
        sandboxId: settings.from.cancelAfterTimeInterval,
        text: settings.cancelAfterTimeInterval!.text,
      }
    : { ms: r.value, source: r.source, sandboxId: undefined, text: `${r.value}ms` };
}

/** Where a limit came from, for a message: `search_settings.<key> of sandbox [id]` or `the request's <key>`. */
export function describeLimit(limit: TimeLimit, key: 'timeout' | 'cancel_after_time_interval'): string {
  return limit.source === 'sandbox'
    ? `search_settings.${key} [${limit.text}] of sandbox [${limit.sandboxId}]`
    : `the request's ${key} [${limit.text}]`;
}
