import { InvalidSandboxError } from '../errors.js';
import { isPlainObject } from '../common/is-plain-object.js';
import { parseTimeValueMs } from '../common/time-value.js';
import { type ParsedResourceLimits, parseResourceLimits } from './resource-limits.js';
import { type CancellationGrace, parseCancellationGrace } from './cancellation-grace.js';
import { ROOT_SANDBOX_ID, SandboxMode, type SelectionAttributes } from './sandbox.js';
import { parseSearchSettings, type SearchSettings } from './search-settings.js';
import { parseSelectionAttributes } from './selection-attributes.js';
import { sandboxChecks } from '../common/option-checks.js';

/** Fields a sandbox entry of a sandbox file may have. */
const ENTRY_KEYS = [
  '_id',
  'name',
  'parent_id',
  'priority',
  'mode',
  'resourceConsumptionLimits',
  'selectionAttributes',
  'tags',
  'max_queue_wait',
  'cancellationGraceMs',
  'search_settings',
  'max_concurrent_tasks',
  'max_concurrent_tasks_per_user',
  'updated_at',
  'version',
] as const;
/** Fields the root's entry (`"_id": "_root"`) may have. */
const ROOT_ENTRY_KEYS = [
  '_id',
  'priority',
  'max_queue_wait',
  'cancellationGraceMs',
  'search_settings',
  'updated_at',
  'version',
] as const;

/** Largest `max_concurrent_tasks` / `max_concurrent_tasks_per_user`. */
export const MAX_CONCURRENT_TASKS = 100_000;

/** Names and ids: 1..50 (names) or 1..100 (ids) characters of `[A-Za-z0-9_-]`. */
const NAME_PATTERN = /^[A-Za-z0-9_-]+$/;
export const MAX_NAME_LENGTH = 50;
export const MAX_ID_LENGTH = 100;
/** A tag is 1..100 characters. */
export const MAX_TAG_LENGTH = 100;

/** One entry of a sandbox file, checked on its own (checks across entries come later). */
export interface SandboxEntry {
  /** Position in the file's `sandboxes` list. */
  readonly index: number;
  /** Path of the entry, e.g. `sandboxes[2]`. */
  readonly path: string;
  readonly id: string;
  /** True when `_id` was not written and the id is the name. */
  readonly idFromName: boolean;
  readonly name: string;
  /** `parent_id` as written: `null` when absent, null or `_root`. */
  readonly parentId: string | null;
  readonly priority: number;
  readonly mode: SandboxMode;
  readonly limits: ParsedResourceLimits;
  readonly selectionAttributes: SelectionAttributes;
  readonly tags: readonly string[];
  /** `max_queue_wait` in ms (Infinity: no bound); undefined when absent (inherited). */
  readonly maxQueueWaitMs: number | undefined;
  /** `cancellationGraceMs`; `undefined` when absent (inherited). */
  readonly cancellationGraceMs: CancellationGrace | undefined;
  readonly searchSettings: SearchSettings;
  /** `max_concurrent_tasks`, 1..100000, or undefined. */
  readonly maxConcurrentTasks: number | undefined;
  /** `max_concurrent_tasks_per_user`, 1..100000, or undefined. */
  readonly maxConcurrentTasksPerUser: number | undefined;
  /** `updated_at`, ms since the epoch (0 when absent). */
  readonly updatedAt: number;
  /** `version`, >= 1 (1 when absent). */
  readonly version: number;
}

/** The root's entry: only its priority, maximum queue wait, cancellation grace and search settings (the node-wide defaults) can be set. */
export interface RootEntry {
  readonly index: number;
  readonly path: string;
  readonly priority: number;
  readonly maxQueueWaitMs: number | undefined;
  readonly cancellationGraceMs: CancellationGrace | undefined;
  readonly searchSettings: SearchSettings;
  readonly updatedAt: number;
  readonly version: number;
}

/**
 * Checks one entry of a sandbox file's `sandboxes` list.
 *
 * @param value the raw entry.
 * @param index its position; paths in errors read `sandboxes[index].field`.
 * @returns a `RootEntry` for `"_id": "_root"`, else a `SandboxEntry`.
 * @throws InvalidSandboxError naming the exact field.
 */
export function parseSandboxEntry(value: unknown, index: number): SandboxEntry | RootEntry {
  const path = `sandboxes[${index}]`;
  if (!isPlainObject(value)) throw new InvalidSandboxError(path, 'must be an object', value);
  if (value['_id'] === ROOT_SANDBOX_ID) {
    refuseUnknownKeys(
      value,
      path,
      ROOT_ENTRY_KEYS,
      'on the root sandbox entry (only _id, priority, max_queue_wait, cancellationGraceMs and search_settings may be set)',
    );
    return Object.freeze({
      index,
      path,
      priority: parsePriority(value['priority'], `${path}.priority`),
      maxQueueWaitMs: parseMaxQueueWait(value['max_queue_wait'], `${path}.max_queue_wait`),
      cancellationGraceMs: parseCancellationGrace(
        value['cancellationGraceMs'],
        `${path}.cancellationGraceMs`,
      ),
      searchSettings: parseSearchSettings(value['search_settings'], `${path}.search_settings`),
      updatedAt: parseCount(value['updated_at'], `${path}.updated_at`, 0, 0),
      version: parseCount(value['version'], `${path}.version`, 1, 1),
    });
  }
  refuseUnknownKeys(value, path, ENTRY_KEYS, `(expected one of ${ENTRY_KEYS.join(', ')})`);

  const name = value['name'];
  if (typeof name !== 'string' || name.length > MAX_NAME_LENGTH || !NAME_PATTERN.test(name)) {
    throw new InvalidSandboxError(
      `${path}.name`,
      `must be 1..${MAX_NAME_LENGTH} characters of [A-Za-z0-9_-]`,
      name,
    );
  }
  const rawId = value['_id'];
  if (
    rawId !== undefined &&
    (typeof rawId !== 'string' || rawId.length > MAX_ID_LENGTH || !NAME_PATTERN.test(rawId))
  ) {
    throw new InvalidSandboxError(
      `${path}._id`,
      `must be 1..${MAX_ID_LENGTH} characters of [A-Za-z0-9_-]`,
      rawId,
    );
  }
  const parentId = value['parent_id'];
  if (
    parentId !== undefined &&
    parentId !== null &&
    (typeof parentId !== 'string' || parentId.length === 0)
  ) {
    throw new InvalidSandboxError(`${path}.parent_id`, 'must be the _id of another sandbox', parentId);
  }
  // Any case (the rule of common/option-checks.ts); stored in the set's own spelling.
  const mode = sandboxChecks.oneOf(
    `${path}.mode`,
    value['mode'] ?? undefined,
    Object.values(SandboxMode),
    SandboxMode.ENFORCED,
  );

  return Object.freeze({
    index,
    path,
    id: rawId ?? name,
    idFromName: rawId === undefined,
    name,
    parentId: parentId === undefined || parentId === null || parentId === ROOT_SANDBOX_ID ? null : parentId,
    priority: parsePriority(value['priority'], `${path}.priority`),
    mode: mode as SandboxMode,
    limits: parseResourceLimits(value['resourceConsumptionLimits'], `${path}.resourceConsumptionLimits`),
    selectionAttributes: parseSelectionAttributes(
      value['selectionAttributes'],
      `${path}.selectionAttributes`,
    ),
    tags: parseTags(value['tags'], `${path}.tags`),
    maxQueueWaitMs: parseMaxQueueWait(value['max_queue_wait'], `${path}.max_queue_wait`),
    cancellationGraceMs: parseCancellationGrace(value['cancellationGraceMs'], `${path}.cancellationGraceMs`),
    searchSettings: parseSearchSettings(value['search_settings'], `${path}.search_settings`),
    maxConcurrentTasks: parseCap(value['max_concurrent_tasks'], `${path}.max_concurrent_tasks`),
    maxConcurrentTasksPerUser: parseCap(
      value['max_concurrent_tasks_per_user'],
      `${path}.max_concurrent_tasks_per_user`,
    ),
    updatedAt: parseCount(value['updated_at'], `${path}.updated_at`, 0, 0),
    version: parseCount(value['version'], `${path}.version`, 1, 1),
  });
}

/** A concurrency cap: an integer in 1..100000, or undefined when absent. */
function parseCap(value: unknown, path: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_CONCURRENT_TASKS) {
    throw new InvalidSandboxError(
      path,
      `must be an integer in 1..${MAX_CONCURRENT_TASKS} (tasks running at once)`,
      value,
    );
  }
  return value;
}

/** An integer >= `min` (`fallback` when absent): `updated_at` (ms since the epoch), `version`. */
function parseCount(value: unknown, path: string, min: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new InvalidSandboxError(path, `must be an integer >= ${min}`, value);
  }
  return value;
}

function refuseUnknownKeys(
  value: Record<string, unknown>,
  path: string,
  allowed: readonly string[],
  explanation: string,
): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key))
      throw new InvalidSandboxError(`${path}.${key}`, `is not allowed ${explanation}`, value[key]);
  }
}

/** The longest `max_queue_wait`: one day. */
export const MAX_QUEUE_WAIT_MS = 86_400_000;

/**
 * `max_queue_wait`: an Elasticsearch time value (`"5s"`, `"500ms"`, `"2m"`) of whole milliseconds in
 * 1 ms..1 day, or `-1` / `"-1"` for no bound; absent or null: inherited (undefined).
 * @returns ms, Infinity for no bound, undefined when absent.
 * @throws InvalidSandboxError naming `path` and the value.
 */
export function parseMaxQueueWait(value: unknown, path: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  const expectation =
    'must be a time value such as "5s" or "500ms" (whole milliseconds, 1ms to 1d), or -1 for no bound';
  let ms: number;
  try {
    ms = parseTimeValueMs(value, path);
  } catch {
    throw new InvalidSandboxError(path, expectation, value);
  }
  if (ms === -1) return Number.POSITIVE_INFINITY;
  if (!Number.isInteger(ms) || ms < 1 || ms > MAX_QUEUE_WAIT_MS)
    throw new InvalidSandboxError(path, expectation, value);
  return ms;
}

/** A queue-wait bound as the time value a document shows: `"5s"` for whole seconds, else `"750ms"`; `"-1"` for none. */
export function formatMaxQueueWait(ms: number): string {
  if (ms === Number.POSITIVE_INFINITY) return '-1';
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

function parsePriority(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new InvalidSandboxError(
      path,
      'must be an integer in -(2^53 - 1)..2^53 - 1 (higher = more important)',
      value,
    );
  }
  return value;
}

function parseTags(value: unknown, path: string): readonly string[] {
  if (value === undefined) return Object.freeze([]);
  if (!Array.isArray(value)) throw new InvalidSandboxError(path, 'must be a list of strings', value);
  value.forEach((tag: unknown, tagIndex) => {
    if (typeof tag !== 'string' || tag.length === 0 || tag.length > MAX_TAG_LENGTH) {
      throw new InvalidSandboxError(
        `${path}[${tagIndex}]`,
        `must be a string of 1..${MAX_TAG_LENGTH} characters`,
        tag,
      );
    }
  });
  return Object.freeze([...(value as string[])]);
}
