/**
 * OpenSearch's workload groups as another shape of the same sandboxes (`_wlm/workload_group`): a
 * request body in OpenSearch's shape becomes a sandbox body for the registry, and a sandbox is shown as
 * a workload group. There is no second store.
 *
 * | OpenSearch | sandbox |
 * |---|---|
 * | `name` | `name` |
 * | `resiliency_mode` (`enforced`, `soft`, `monitor`; any case) | `mode` |
 * | `resource_limits.{cpu,memory}`: a ratio L in (0, 1] | `resourceConsumptionLimits`: `low` = 0.8 L, `high` = 0.9 L (OpenSearch rejects above L × `wlm.workload_group.node.*_rejection_threshold`, 0.8, and cancels above L × `*_cancellation_threshold`, 0.9, by default); shown back as `high / 0.9`, at most 1 |
 * | `settings` (3.7+): `search.default_search_timeout`, `search.cancel_after_time_interval`, `search.max_concurrent_shard_requests`, `override_request_values`; values as strings or JSON values; `{"search": {...}}` is flattened | `search_settings`: `timeout`, `cancel_after_time_interval`, `max_concurrent_shard_requests`, `override_request_values` |
 * | `search_settings` (3.6: `timeout`, ...) | `search_settings`, as is |
 * | `throttling`: `{"node_limit": N}` / `{"node_limit": N, "by": "username"}` | `max_concurrent_tasks` N / `max_concurrent_tasks_per_user` N (tasks beyond it wait in the queue instead of a 429) |
 *
 * What OpenSearch has no word for travels as extra keys: `priority` (required by sandboxes, unique
 * among siblings; a group created without it gets the highest free priority at or below its parent's,
 * the root's for a top-level group) and `parent_id` (the tree: OpenSearch's groups are flat). Settings
 * OpenSearch has that this runtime cannot honour (`search.batched_reduce_size`: the coordinator reduces
 * in one pass; `search.max_buckets`: no aggregations) and `throttling.by: role` (no roles) are refused
 * with 400 rather than stored and ignored.
 */
import { InvalidSandboxError } from '../errors.js';
import { isPlainObject } from '../common/is-plain-object.js';
import { RESOURCES, ROOT_SANDBOX_ID, type Sandbox, SandboxMode } from '../sandbox/sandbox.js';
import { parseSearchSettings, toSearchSettingsDocument } from '../sandbox/search-settings.js';
import { MAX_CONCURRENT_TASKS } from '../sandbox/sandbox-entry.js';
import { sandboxChecks } from '../common/option-checks.js';

/** OpenSearch's default node-level rejection and cancellation thresholds, as fractions of a group's limit. */
export const WLM_REJECTION_FRACTION = 0.8;
export const WLM_CANCELLATION_FRACTION = 0.9;

/** How the catch-all group is named in OpenSearch's stats. */
export const DEFAULT_WORKLOAD_GROUP = 'DEFAULT_WORKLOAD_GROUP';

const GROUP_KEYS = [
  'name',
  'resiliency_mode',
  'resource_limits',
  'settings',
  'search_settings',
  'throttling',
  'priority',
  'parent_id',
] as const;

/** `settings` keys (3.7) to `search_settings` keys. */
const SETTING_KEYS: Readonly<Record<string, string>> = {
  'search.default_search_timeout': 'timeout',
  'search.cancel_after_time_interval': 'cancel_after_time_interval',
  'search.max_concurrent_shard_requests': 'max_concurrent_shard_requests',
  override_request_values: 'override_request_values',
};
const UNSUPPORTED_SETTINGS: Readonly<Record<string, string>> = {
  'search.batched_reduce_size': 'the coordinator merges every shard result in one reduce',
  'search.max_buckets': 'the engine has no aggregations',
};

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

/**
 * A sandbox body (for `SandboxRegistry.create` or `update`) from a workload-group body.
 * @param existing the sandboxes now (for the default priority of a create).
 * @param create true for `PUT _wlm/workload_group` (name, resiliency_mode and resource_limits required).
 * @throws InvalidSandboxError naming the field of the OpenSearch body and the value.
 */
export function sandboxBodyOf(
  body: unknown,
  create: boolean,
  existing: readonly Sandbox[],
): Record<string, unknown> {
  if (!isPlainObject(body))
    throw new InvalidSandboxError('body', 'must be a JSON object (a workload group)', body);
  for (const key of Object.keys(body)) {
    if (key === '_id' || key === 'updated_at') {
      throw new InvalidSandboxError(key, 'is set by the server and may not be given', body[key]);
    }
    if (!(GROUP_KEYS as readonly string[]).includes(key)) {
      throw new InvalidSandboxError(
        key,
        `is not a valid field of a workload group (expected one of ${GROUP_KEYS.join(', ')})`,
        body[key],
      );
    }
  }
  const out: Record<string, unknown> = {};
  if (create) {
    for (const key of ['name', 'resiliency_mode', 'resource_limits'] as const) {
      if (body[key] === undefined)
        throw new InvalidSandboxError(key, 'is required to create a workload group', undefined);
    }
  } else if (body['name'] !== undefined) {
    throw new InvalidSandboxError('name', 'cannot be changed (the name is in the path)', body['name']);
  }
  if (body['name'] !== undefined) out['name'] = body['name'];
  if (body['resiliency_mode'] !== undefined) out['mode'] = modeOf(body['resiliency_mode']);
  if (body['resource_limits'] !== undefined)
    out['resourceConsumptionLimits'] = limitsOf(body['resource_limits'], create);
  const settings = searchSettingsOf(body['settings'], body['search_settings']);
  if (settings !== undefined && !(create && settings === null)) out['search_settings'] = settings;
  if (body['throttling'] !== undefined) Object.assign(out, capsOf(body['throttling'], create));
  if (body['parent_id'] !== undefined) out['parent_id'] = body['parent_id'];
  if (body['priority'] !== undefined) out['priority'] = body['priority'];
  else if (create) out['priority'] = defaultPriority(existing, body['parent_id']);
  return out;
}

/** `resiliency_mode`: any case, as OpenSearch's `ResiliencyMode.fromName` (the rule of common/option-checks.ts). */
function modeOf(raw: unknown): string {
  return sandboxChecks.oneOf('resiliency_mode', raw, Object.values(SandboxMode));
}

function limitsOf(raw: unknown, create: boolean): Record<string, unknown> {
  if (!isPlainObject(raw))
    throw new InvalidSandboxError('resource_limits', 'must be an object of resource to ratio', raw);
  const out: Record<string, unknown> = {};
  for (const [resource, value] of Object.entries(raw)) {
    const at = `resource_limits.${resource}`;
    if (!(RESOURCES as readonly string[]).includes(resource)) {
      throw new InvalidSandboxError(at, `is not a resource (expected one of ${RESOURCES.join(', ')})`, value);
    }
    if (value === null && !create) {
      out[resource] = null;
      continue;
    }
    if (typeof value !== 'number' || !(value > 0) || value > 1) {
      throw new InvalidSandboxError(at, 'must be a ratio greater than 0 and at most 1', value);
    }
    out[resource] = {
      low: round6(value * WLM_REJECTION_FRACTION),
      high: round6(value * WLM_CANCELLATION_FRACTION),
    };
  }
  if (create && Object.keys(out).length === 0) {
    throw new InvalidSandboxError('resource_limits', 'must hold at least one resource limit', raw);
  }
  return out;
}

/** `settings` (3.7) and `search_settings` (3.6) as one `search_settings` patch; undefined when neither is given. */
function searchSettingsOf(
  settings: unknown,
  searchSettings: unknown,
): Record<string, unknown> | null | undefined {
  if (settings === undefined && searchSettings === undefined) return undefined;
  if ((settings === null || isEmpty(settings)) && (searchSettings === null || isEmpty(searchSettings))) {
    return settings === null || searchSettings === null ? null : {};
  }
  const out: Record<string, unknown> = {};
  if (settings !== undefined && settings !== null) {
    if (!isPlainObject(settings))
      throw new InvalidSandboxError('settings', 'must be an object of setting to value', settings);
    for (const [key, value] of flatten(settings, '')) {
      const at = `settings.${key}`;
      const reason = UNSUPPORTED_SETTINGS[key];
      if (reason !== undefined) throw new InvalidSandboxError(at, `is not supported here (${reason})`, value);
      const native = SETTING_KEYS[key];
      if (native === undefined) {
        throw new InvalidSandboxError(
          at,
          `is not a workload group setting (expected one of ${Object.keys(SETTING_KEYS).join(', ')})`,
          value,
        );
      }
      out[native] = settingValue(native, value);
      checkSetting(at, native, out[native], value);
    }
  }
  if (searchSettings !== undefined && searchSettings !== null) {
    if (!isPlainObject(searchSettings)) {
      throw new InvalidSandboxError(
        'search_settings',
        'must be an object of setting to value',
        searchSettings,
      );
    }
    for (const [key, value] of Object.entries(searchSettings)) {
      if (Object.hasOwn(out, key)) {
        throw new InvalidSandboxError(
          `search_settings.${key}`,
          'must not be set in both settings and search_settings',
          value,
        );
      }
      out[key] = value;
    }
  }
  return out;
}

/**
 * Checks one translated setting with the sandbox's own parser, so that a refusal names the field as
 * the client sent it (`settings.search.default_search_timeout`), not its `search_settings` name.
 * `null` (remove the setting) is left to the merge.
 * @throws InvalidSandboxError naming `at` and the value as received.
 */
function checkSetting(at: string, native: string, translated: unknown, received: unknown): void {
  if (translated === null) return;
  try {
    parseSearchSettings({ [native]: translated }, 'settings');
  } catch (error) {
    if (!(error instanceof InvalidSandboxError)) throw error;
    throw new InvalidSandboxError(at, error.expectation, received);
  }
}

function isEmpty(value: unknown): boolean {
  return isPlainObject(value) && Object.keys(value).length === 0;
}

/** OpenSearch settings accept `{"search": {"default_search_timeout": ...}}` for `search.default_search_timeout`. */
function flatten(value: Record<string, unknown>, prefix: string): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  for (const [key, v] of Object.entries(value)) {
    if (isPlainObject(v)) out.push(...flatten(v, `${prefix}${key}.`));
    else out.push([`${prefix}${key}`, v]);
  }
  return out;
}

/** Settings arrive as strings (`"5"`, `"true"`) as OpenSearch stores them, or as JSON values. */
function settingValue(native: string, value: unknown): unknown {
  if (value === null || typeof value !== 'string') return value;
  if (native === 'max_concurrent_shard_requests' && /^\d+$/.test(value)) return Number(value);
  if (native === 'override_request_values' && (value === 'true' || value === 'false'))
    return value === 'true';
  return value;
}

function capsOf(raw: unknown, create: boolean): Record<string, unknown> {
  const cleared = create ? {} : { max_concurrent_tasks: null, max_concurrent_tasks_per_user: null };
  if (raw === null || isEmpty(raw)) return cleared;
  if (!isPlainObject(raw))
    throw new InvalidSandboxError('throttling', 'must be an object { node_limit, by? }', raw);
  for (const key of Object.keys(raw)) {
    if (key !== 'node_limit' && key !== 'by') {
      throw new InvalidSandboxError(
        `throttling.${key}`,
        'is not a throttle setting (expected node_limit, by)',
        raw[key],
      );
    }
  }
  const by = raw['by'];
  if (by !== undefined && by !== 'username') {
    throw new InvalidSandboxError(
      'throttling.by',
      by === 'role'
        ? 'cannot be role here (the runtime knows users, not roles); use username'
        : 'must be username when set',
      by,
    );
  }
  const limit = raw['node_limit'];
  if (limit === undefined)
    throw new InvalidSandboxError('throttling.node_limit', 'is required when throttling is set', undefined);
  if (
    limit !== null &&
    (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_CONCURRENT_TASKS)
  ) {
    // Checked here as well as by the sandbox, so that the message names the field the client sent.
    throw new InvalidSandboxError(
      'throttling.node_limit',
      `must be an integer in 1..${MAX_CONCURRENT_TASKS} (tasks running at once)`,
      limit,
    );
  }
  return by === 'username'
    ? { ...cleared, max_concurrent_tasks_per_user: limit }
    : { ...cleared, max_concurrent_tasks: limit };
}

/** The highest priority at or below the parent's that none of the parent's children has. */
function defaultPriority(existing: readonly Sandbox[], parentId: unknown): number {
  const parent = typeof parentId === 'string' ? parentId : ROOT_SANDBOX_ID;
  const taken = new Set(existing.filter((s) => (s.parentId ?? '') === parent).map((s) => s.priority));
  let p = existing.find((s) => s.id === parent)?.priority ?? 0;
  while (taken.has(p)) p--;
  return p;
}

/** A sandbox as a workload group (a fresh plain object). The root is not one (see `DEFAULT_WORKLOAD_GROUP`). */
export function toWorkloadGroup(s: Sandbox): Record<string, unknown> {
  const limits: Record<string, number> = {};
  for (const r of RESOURCES) {
    const limit = s.limits[r];
    if (limit !== undefined) limits[r] = Math.min(1, round6(limit.high / WLM_CANCELLATION_FRACTION));
  }
  // Values as strings and keys sorted, as OpenSearch writes a Settings object.
  const settings: Record<string, string> = {};
  const own = toSearchSettingsDocument(s.searchSettings);
  for (const [key, native] of Object.entries(SETTING_KEYS).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (own[native] !== undefined) settings[key] = String(own[native]);
  }
  const throttling =
    s.maxConcurrentTasks !== undefined
      ? { node_limit: s.maxConcurrentTasks }
      : s.maxConcurrentTasksPerUser !== undefined
        ? { node_limit: s.maxConcurrentTasksPerUser, by: 'username' }
        : undefined;
  return {
    _id: s.id,
    name: s.name,
    resiliency_mode: s.mode,
    resource_limits: limits,
    settings,
    ...(throttling !== undefined ? { throttling } : {}),
    // Both caps set: the per-user one has no OpenSearch word beside node_limit.
    ...(s.maxConcurrentTasks !== undefined && s.maxConcurrentTasksPerUser !== undefined
      ? { max_concurrent_tasks_per_user: s.maxConcurrentTasksPerUser }
      : {}),
    priority: s.priority,
    ...(s.parentId !== null && s.parentId !== ROOT_SANDBOX_ID ? { parent_id: s.parentId } : {}),
    updated_at: s.updatedAt,
  };
}
