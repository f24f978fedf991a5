/**
 * Search settings of a sandbox: defaults (or caps) that apply to every search the sandbox runs, after
 * OpenSearch's workload-group search settings (3.6 `search_settings`, 3.7 `settings`).
 *
 * A sandbox document holds them under `search_settings`:
 *
 * | key | value | request parameter it stands for |
 * |---|---|---|
 * | `timeout` | time value (`"500ms"`, `"30s"`) or `"-1"` (none) | the search `timeout`: a search past it returns the hits it has with `timed_out: true` |
 * | `cancel_after_time_interval` | time value or `"-1"` | the search's `cancel_after_time_interval`: a task running longer is cancelled (`task_cancelled_exception`) |
 * | `max_concurrent_shard_requests` | integer 1..65536 | shard requests one search sends a data node at once (a cluster coordinator's fan-out) |
 * | `override_request_values` | boolean (default false) | true: the sandbox's values beat the request's |
 *
 * Every key is optional and inherited: a sandbox without a key takes its parent's effective value
 * (the root's `search_settings`, when set, are the node-wide defaults); `"-1"` cancels an inherited
 * time value. Time values are Elasticsearch's (`parseTimeValueMs`: `nanos`, `micros`, `ms`, `s`, `m`,
 * `h`, `d`, whole numbers); they are kept as written and shown back unchanged.
 *
 * Precedence (OpenSearch's, `WorkloadGroupRequestOperationListener`): with `override_request_values`
 * false (the default) a value on the request wins over the sandbox's, which wins over nothing; with
 * true the sandbox's value wins over the request's.
 */
import { InvalidSandboxError } from '../errors.js';
import { parseTimeValueMs } from '../common/time-value.js';
import { isPlainObject } from '../common/is-plain-object.js';
import { sandboxChecks } from '../common/option-checks.js';

/** A time value as written (`text`) and in ms (`-1`: none, which cancels an inherited value). */
export interface TimeSetting {
  readonly text: string;
  readonly ms: number;
}

/** One sandbox's own search settings; an absent key is inherited. */
export interface SearchSettings {
  readonly timeout?: TimeSetting;
  readonly cancelAfterTimeInterval?: TimeSetting;
  readonly maxConcurrentShardRequests?: number;
  readonly overrideRequestValues?: boolean;
}

/** The keys of `search_settings`, in the order documents show them. */
export const SEARCH_SETTING_KEYS = [
  'timeout',
  'cancel_after_time_interval',
  'max_concurrent_shard_requests',
  'override_request_values',
] as const;

/** Largest `max_concurrent_shard_requests`. */
export const MAX_CONCURRENT_SHARD_REQUESTS = 65_536;

const NO_SETTINGS: SearchSettings = Object.freeze({});

/**
 * Parses a `search_settings` object.
 * @param value the raw value; `undefined` means none.
 * @param path its path, e.g. `sandboxes[2].search_settings`.
 * @returns frozen settings (the shared empty object when none are set).
 * @throws InvalidSandboxError naming the key and the value: an unknown key, a time value without a
 *   unit, a fraction, 0 or below -1, a shard-request count outside 1..65536, a non-boolean override.
 */
export function parseSearchSettings(value: unknown, path: string): SearchSettings {
  if (value === undefined) return NO_SETTINGS;
  if (!isPlainObject(value)) throw new InvalidSandboxError(path, 'must be an object', value);
  const out: {
    timeout?: TimeSetting;
    cancelAfterTimeInterval?: TimeSetting;
    maxConcurrentShardRequests?: number;
    overrideRequestValues?: boolean;
  } = {};
  for (const [key, raw] of Object.entries(value)) {
    const at = `${path}.${key}`;
    switch (key) {
      case 'timeout':
        out.timeout = parseTimeSetting(raw, at);
        break;
      case 'cancel_after_time_interval':
        out.cancelAfterTimeInterval = parseTimeSetting(raw, at);
        break;
      case 'max_concurrent_shard_requests':
        out.maxConcurrentShardRequests = parseShardRequests(raw, at);
        break;
      case 'override_request_values':
        if (typeof raw !== 'boolean') throw new InvalidSandboxError(at, 'must be true or false', raw);
        out.overrideRequestValues = raw;
        break;
      default:
        throw new InvalidSandboxError(
          at,
          `is not a search setting (expected one of ${SEARCH_SETTING_KEYS.join(', ')})`,
          raw,
        );
    }
  }
  return Object.keys(out).length === 0 ? NO_SETTINGS : Object.freeze(out);
}

/**
 * A time value that is positive or -1 (none), kept as written.
 * @throws InvalidSandboxError naming `path` and the value.
 */
export function parseTimeSetting(raw: unknown, path: string): TimeSetting {
  if (typeof raw !== 'string' && typeof raw !== 'number') {
    throw new InvalidSandboxError(
      path,
      'must be a time value such as "500ms" or "30s", or "-1" for none',
      raw,
    );
  }
  let ms: number;
  try {
    ms = parseTimeValueMs(raw, path);
  } catch (error) {
    throw new InvalidSandboxError(
      path,
      (error as { expectation?: string }).expectation ?? 'must be a time value',
      raw,
    );
  }
  if (ms === 0) throw new InvalidSandboxError(path, 'must be a positive time value, or "-1" for none', raw);
  return Object.freeze({ text: String(raw).trim(), ms });
}

function parseShardRequests(raw: unknown, path: string): number {
  return sandboxChecks.integerIn(path, raw, 1, MAX_CONCURRENT_SHARD_REQUESTS);
}

/** Settings as a `search_settings` document (a fresh plain object; `{}` when none are set). */
export function toSearchSettingsDocument(settings: SearchSettings): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (settings.timeout !== undefined) out['timeout'] = settings.timeout.text;
  if (settings.cancelAfterTimeInterval !== undefined) {
    out['cancel_after_time_interval'] = settings.cancelAfterTimeInterval.text;
  }
  if (settings.maxConcurrentShardRequests !== undefined) {
    out['max_concurrent_shard_requests'] = settings.maxConcurrentShardRequests;
  }
  if (settings.overrideRequestValues !== undefined) {
    out['override_request_values'] = settings.overrideRequestValues;
  }
  return out;
}

/**
 * A sandbox's effective settings: its own, each absent key taken from its nearest ancestor that sets
 * it (ending at the root). `from` names the sandbox each value came from, for messages.
 */
export interface EffectiveSearchSettings {
  readonly timeout: TimeSetting | undefined;
  readonly cancelAfterTimeInterval: TimeSetting | undefined;
  readonly maxConcurrentShardRequests: number | undefined;
  readonly overrideRequestValues: boolean;
  readonly from: {
    readonly timeout: string | undefined;
    readonly cancelAfterTimeInterval: string | undefined;
    readonly maxConcurrentShardRequests: string | undefined;
  };
}

/** What `effectiveSearchSettings` needs of a sandbox. */
export interface SettingsNode {
  readonly id: string;
  readonly parentId: string | null;
  readonly searchSettings: SearchSettings;
}

/**
 * The effective settings of every sandbox of a tree, by id.
 * @param sandboxes the whole tree, parents before children (as `parseSandboxDefinitions` returns it).
 */
export function effectiveSearchSettings(
  sandboxes: readonly SettingsNode[],
): ReadonlyMap<string, EffectiveSearchSettings> {
  const out = new Map<string, EffectiveSearchSettings>();
  for (const s of sandboxes) {
    const parent = s.parentId === null ? undefined : out.get(s.parentId);
    const own = s.searchSettings;
    out.set(
      s.id,
      Object.freeze({
        timeout: own.timeout ?? parent?.timeout,
        cancelAfterTimeInterval: own.cancelAfterTimeInterval ?? parent?.cancelAfterTimeInterval,
        maxConcurrentShardRequests: own.maxConcurrentShardRequests ?? parent?.maxConcurrentShardRequests,
        overrideRequestValues: own.overrideRequestValues ?? parent?.overrideRequestValues ?? false,
        from: Object.freeze({
          timeout: own.timeout !== undefined ? s.id : parent?.from.timeout,
          cancelAfterTimeInterval:
            own.cancelAfterTimeInterval !== undefined ? s.id : parent?.from.cancelAfterTimeInterval,
          maxConcurrentShardRequests:
            own.maxConcurrentShardRequests !== undefined ? s.id : parent?.from.maxConcurrentShardRequests,
        }),
      }),
    );
  }
  return out;
}

/** Where an effective value came from: the request, or a sandbox's setting. */
export type SettingSource = 'request' | 'sandbox';

/**
 * Resolves one setting for one search: OpenSearch's precedence (see the module doc). A sandbox time
 * value of -1 means none.
 * @param requested the request's value (ms, or a count), undefined when the request gives none.
 * @param configured the sandbox's effective value, undefined when none is set.
 * @returns the value in force and where it came from, or undefined when neither sets one.
 */
export function resolveSetting(
  requested: number | undefined,
  configured: number | undefined,
  overrideRequestValues: boolean,
): { readonly value: number; readonly source: SettingSource } | undefined {
  const sandboxValue = configured === undefined || configured < 0 ? undefined : configured;
  if (configured !== undefined && overrideRequestValues) {
    return sandboxValue === undefined ? undefined : { value: sandboxValue, source: 'sandbox' };
  }
  if (requested !== undefined) return requested < 0 ? undefined : { value: requested, source: 'request' };
  return sandboxValue === undefined ? undefined : { value: sandboxValue, source: 'sandbox' };
}
