/**
 * A sandbox as a JSON document in the seed-000 shape: what the store keeps and what the REST API
 * shows. Limits are ratios under `cpu` / `memory`; `parent_id` is absent for a child of the root.
 * `parseSandboxDefinitions` reads it back unchanged.
 */
import { ROOT_SANDBOX_ID, RESOURCES, type Sandbox } from './sandbox.js';
import { formatMaxQueueWait } from './sandbox-entry.js';
import { toSearchSettingsDocument } from './search-settings.js';

/**
 * The document of one sandbox (a fresh plain object). `search_settings`, `max_concurrent_tasks` and
 * `max_concurrent_tasks_per_user` appear only when set.
 */
export function toSandboxDocument(s: Sandbox): Record<string, unknown> {
  const settings = toSearchSettingsDocument(s.searchSettings);
  const withSettings = Object.keys(settings).length > 0 ? { search_settings: settings } : {};
  if (s.id === ROOT_SANDBOX_ID) {
    return {
      _id: s.id,
      priority: s.priority,
      ...(s.maxQueueWaitMs !== undefined ? { max_queue_wait: formatMaxQueueWait(s.maxQueueWaitMs) } : {}),
      ...(s.cancellationGraceMs !== undefined ? { cancellationGraceMs: s.cancellationGraceMs } : {}),
      ...withSettings,
      updated_at: s.updatedAt,
      version: s.version,
    };
  }
  const limits: Record<string, { low: number; high: number }> = {};
  for (const r of RESOURCES) {
    const limit = s.limits[r];
    if (limit !== undefined) limits[r] = { low: limit.low, high: limit.high };
  }
  const selectionAttributes: { name: string; value: string[] }[] = [];
  if (s.selectionAttributes.userPattern.length > 0) {
    selectionAttributes.push({ name: 'userPattern', value: [...s.selectionAttributes.userPattern] });
  }
  if (s.selectionAttributes.indicesPattern.length > 0) {
    selectionAttributes.push({ name: 'indicesPattern', value: [...s.selectionAttributes.indicesPattern] });
  }
  return {
    _id: s.id,
    name: s.name,
    ...(s.parentId !== null && s.parentId !== ROOT_SANDBOX_ID ? { parent_id: s.parentId } : {}),
    priority: s.priority,
    mode: s.mode,
    resourceConsumptionLimits: limits,
    selectionAttributes,
    tags: [...s.tags],
    ...(s.maxQueueWaitMs !== undefined ? { max_queue_wait: formatMaxQueueWait(s.maxQueueWaitMs) } : {}),
    ...(s.cancellationGraceMs !== undefined ? { cancellationGraceMs: s.cancellationGraceMs } : {}),
    ...withSettings,
    ...(s.maxConcurrentTasks !== undefined ? { max_concurrent_tasks: s.maxConcurrentTasks } : {}),
    ...(s.maxConcurrentTasksPerUser !== undefined
      ? { max_concurrent_tasks_per_user: s.maxConcurrentTasksPerUser }
      : {}),
    updated_at: s.updatedAt,
    version: s.version,
  };
}
