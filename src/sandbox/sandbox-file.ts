import { readFile } from 'node:fs/promises';
import { InvalidSandboxError } from '../errors.js';
import { isPlainObject } from '../common/is-plain-object.js';
import { describeJsonError, jsonErrorPosition } from '../common/json-error-position.js';
import type { ParsedResourceLimit } from './resource-limits.js';
import {
  createRootSandbox,
  RESOURCES,
  ROOT_SANDBOX_ID,
  type Resource,
  type ResourceLimit,
  type Sandbox,
} from './sandbox.js';
import { parseSandboxEntry, type RootEntry, type SandboxEntry } from './sandbox-entry.js';
import { selectionAttributesKey } from './selection-attributes.js';

/** A sandbox file holds at most this many sandboxes besides the root. */
export const MAX_SANDBOXES = 100;
/** Sandboxes nest at most this many levels below the root (a top-level sandbox is at depth 1). */
export const MAX_SANDBOX_DEPTH = 3;

/** Options of `parseSandboxDefinitions`. */
export interface ParseOptions {
  /** Most sandboxes besides the root, >= 0. Default 100 (`MAX_SANDBOXES`). */
  readonly maxSandboxes?: number;
}

/**
 * Reads and checks a sandbox file (UTF-8 JSON; format: see `parseSandboxDefinitions`).
 *
 * @param path file path.
 * @returns the sandboxes, root first, parents before children.
 * @throws InvalidSandboxError for a file that cannot be read (the path is the file name), for invalid
 *   JSON (with line, column and an excerpt) and for any definition error (its path is the field, the
 *   message ends with `(in <file>)`).
 */
export async function loadSandboxFile(path: string): Promise<Sandbox[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new InvalidSandboxError(path, `must be a readable sandbox file (${reason})`, path);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw invalidJson(path, text, error as Error);
  }
  try {
    return parseSandboxDefinitions(json);
  } catch (error) {
    if (error instanceof InvalidSandboxError) error.message = `${error.message} (in ${path})`;
    throw error;
  }
}

/**
 * Checks a parsed sandbox file and builds the sandboxes.
 *
 * Shape: `{ "version"?: integer >= 0, "sandboxes": [entry, ...] }` with at most 100 entries besides
 * the root's. An entry: `_id` (optional, default: the name; unique), `name` (1..50 chars of
 * `[A-Za-z0-9_-]`, unique), `priority` (integer, higher = more important, unique among siblings),
 * `mode` (`enforced` | `soft` | `monitor`, default `enforced`), `parent_id` (optional `_id` of another
 * entry; at most 3 levels below the root, no cycles), `resourceConsumptionLimits` (`cpu` / `memory` as
 * ratios `{low, high}` in (0, 1], or the seed's `cpuUsageLimit` / `jvmUsageLimit` in percent; `low`
 * defaults to 80 % of `high`; a child's limits must not exceed its nearest limited ancestor's),
 * `selectionAttributes` (`[{ name: userPattern | indicesPattern, value: pattern | pattern[] }]`, at
 * most 10 patterns of 1..100 chars per attribute; two sandboxes may not name identical ones), `tags`
 * (strings), `max_queue_wait` (a time value such as `"5s"`, or -1 for no bound; absent: the parent's),
 * `cancellationGraceMs` (ms from a task's soft to its hard cancellation, an integer in
 * 0..3600000 or `"never"`; absent: inherited from the parent, see `cancellation-grace.ts`),
 * `search_settings` (see `search-settings.ts`), `max_concurrent_tasks` and
 * `max_concurrent_tasks_per_user` (integers 1..100000: tasks of the subtree, and of one user in it,
 * that run at once; a child's cap may not exceed its nearest capped ancestor's), and the store's `updated_at` (ms since the epoch, default 0) and `version` (>= 1,
 * default 1). Unknown keys are refused. An entry `{ "_id": "_root", "priority": n }` sets the root's
 * priority (default 0) and may set its `max_queue_wait`, `cancellationGraceMs` and `search_settings` (the node-wide
 * defaults); nothing else about the root can be set. `version` is the store's
 * compare-and-swap counter: checked here, not returned.
 *
 * Errors: the first one found is thrown (entries are checked in file order, then the checks across
 * entries run).
 *
 * @param options.maxSandboxes most entries besides the root's (default 100).
 * @returns frozen sandboxes, root first, then by depth, in file order within a depth.
 * @throws InvalidSandboxError whose `path` names the exact field, e.g. `sandboxes[2].priority`.
 */
export function parseSandboxDefinitions(json: unknown, options: ParseOptions = {}): Sandbox[] {
  const maxSandboxes = options.maxSandboxes ?? MAX_SANDBOXES;
  if (!isPlainObject(json))
    throw new InvalidSandboxError('(file)', 'must be an object { "sandboxes": [...] }', json);
  for (const key of Object.keys(json)) {
    if (key !== 'sandboxes' && key !== 'version') {
      throw new InvalidSandboxError(
        key,
        'is not allowed at the top level (expected sandboxes, version)',
        json[key],
      );
    }
  }
  const version = json['version'];
  if (
    version !== undefined &&
    (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0)
  ) {
    throw new InvalidSandboxError('version', 'must be an integer >= 0', version);
  }
  const list = json['sandboxes'];
  if (!Array.isArray(list))
    throw new InvalidSandboxError('sandboxes', 'must be a list of sandbox entries', list);

  let rootEntry: RootEntry | undefined;
  const entries: SandboxEntry[] = [];
  list.forEach((value: unknown, index) => {
    const entry = parseSandboxEntry(value, index);
    if ('id' in entry) {
      entries.push(entry);
    } else if (rootEntry === undefined) {
      rootEntry = entry;
    } else {
      throw new InvalidSandboxError(
        `${entry.path}._id`,
        `must be unique (${rootEntry.path} has it)`,
        ROOT_SANDBOX_ID,
      );
    }
  });
  if (entries.length > maxSandboxes) {
    throw new InvalidSandboxError(
      'sandboxes',
      `must hold at most ${maxSandboxes} sandboxes besides the root`,
      entries.length,
    );
  }

  const byId = checkUniqueIdsAndNames(entries);
  const depths = checkParents(entries, byId);
  checkSiblingPriorities(entries);
  checkLimitsWithinAncestors(entries, byId);
  checkCapsWithinAncestors(entries, byId);
  checkDistinctSelectionAttributes(entries);

  const ordered = entries
    .map((entry) => ({ entry, depth: depths.get(entry.id) ?? 1 }))
    .sort((a, b) => a.depth - b.depth || a.entry.index - b.entry.index)
    .map(({ entry }) => toSandbox(entry));
  return [
    createRootSandbox(
      rootEntry === undefined
        ? undefined
        : {
            priority: rootEntry.priority,
            updatedAt: rootEntry.updatedAt,
            version: rootEntry.version,
            maxQueueWaitMs: rootEntry.maxQueueWaitMs,
            cancellationGraceMs: rootEntry.cancellationGraceMs,
            searchSettings: rootEntry.searchSettings,
          },
    ),
    ...ordered,
  ];
}

function checkUniqueIdsAndNames(entries: readonly SandboxEntry[]): Map<string, SandboxEntry> {
  const byId = new Map<string, SandboxEntry>();
  const byName = new Map<string, SandboxEntry>();
  for (const entry of entries) {
    const sameName = byName.get(entry.name);
    if (entry.name === ROOT_SANDBOX_ID || sameName !== undefined) {
      const holder = sameName === undefined ? 'the root sandbox' : sameName.path;
      throw new InvalidSandboxError(`${entry.path}.name`, `must be unique (${holder} has it)`, entry.name);
    }
    byName.set(entry.name, entry);
    const sameId = byId.get(entry.id);
    if (sameId !== undefined) {
      const field = entry.idFromName ? 'name' : '_id';
      const detail = entry.idFromName ? 'gives an _id that must be unique' : 'must be unique';
      throw new InvalidSandboxError(`${entry.path}.${field}`, `${detail} (${sameId.path} has it)`, entry.id);
    }
    byId.set(entry.id, entry);
  }
  return byId;
}

/** Checks that parents exist, form no cycle and nest at most 3 deep; returns each entry's depth. */
function checkParents(
  entries: readonly SandboxEntry[],
  byId: ReadonlyMap<string, SandboxEntry>,
): Map<string, number> {
  for (const entry of entries) {
    if (entry.parentId === null) continue;
    if (entry.parentId === entry.id) {
      throw new InvalidSandboxError(
        `${entry.path}.parent_id`,
        'must name another sandbox, not itself',
        entry.parentId,
      );
    }
    if (!byId.has(entry.parentId)) {
      throw new InvalidSandboxError(
        `${entry.path}.parent_id`,
        'must be the _id of another sandbox',
        entry.parentId,
      );
    }
  }
  const depths = new Map<string, number>();
  for (const entry of entries) {
    const chain = [entry.id];
    let current = entry;
    while (current.parentId !== null) {
      const parent = byId.get(current.parentId)!;
      if (chain.includes(parent.id)) {
        chain.push(parent.id);
        throw new InvalidSandboxError(
          `${entry.path}.parent_id`,
          `must not form a cycle (${chain.join(' -> ')})`,
          entry.parentId,
        );
      }
      chain.push(parent.id);
      current = parent;
    }
    if (chain.length > MAX_SANDBOX_DEPTH) {
      throw new InvalidSandboxError(
        `${entry.path}.parent_id`,
        `must keep the sandbox at most ${MAX_SANDBOX_DEPTH} levels below the root (${[...chain, ROOT_SANDBOX_ID].join(' -> ')})`,
        entry.parentId,
      );
    }
    depths.set(entry.id, chain.length);
  }
  return depths;
}

function checkSiblingPriorities(entries: readonly SandboxEntry[]): void {
  const seen = new Map<string, SandboxEntry>();
  for (const entry of entries) {
    const key = `${entry.parentId ?? ROOT_SANDBOX_ID}\u0000${entry.priority}`;
    const sibling = seen.get(key);
    if (sibling !== undefined) {
      throw new InvalidSandboxError(
        `${entry.path}.priority`,
        `must be unique among the children of "${entry.parentId ?? ROOT_SANDBOX_ID}" (${sibling.path} "${sibling.id}" has it)`,
        entry.priority,
      );
    }
    seen.set(key, entry);
  }
}

/** A child's low and high limits must not exceed those of its nearest ancestor limiting the same resource. */
function checkLimitsWithinAncestors(
  entries: readonly SandboxEntry[],
  byId: ReadonlyMap<string, SandboxEntry>,
): void {
  for (const entry of entries) {
    for (const resource of RESOURCES) {
      const own = entry.limits[resource];
      if (own === undefined) continue;
      const ancestor = nearestLimitedAncestor(entry, resource, byId);
      if (ancestor === undefined) continue;
      const bound = ancestor.limits[resource]!;
      for (const level of ['low', 'high'] as const) {
        if (own[level] <= bound[level]) continue;
        const defaulted = level === 'low' && own.lowDefaulted ? ` (defaulted to 80 % of high)` : '';
        throw new InvalidSandboxError(
          `${own.path}.${level}`,
          `must not exceed the ${level} limit of parent sandbox "${ancestor.id}" (${show(bound[level], own)})${defaulted}`,
          show(own[level], own),
        );
      }
    }
  }
}

/**
 * A concurrency cap counts a sandbox's whole subtree, so a child's cap above its nearest capped
 * ancestor's could never be reached: refused, as a child's limits above its parent's are. A per-user
 * cap above the sandbox's own cap is refused for the same reason.
 */
function checkCapsWithinAncestors(
  entries: readonly SandboxEntry[],
  byId: ReadonlyMap<string, SandboxEntry>,
): void {
  for (const entry of entries) {
    const own = entry.maxConcurrentTasks;
    const perUser = entry.maxConcurrentTasksPerUser;
    if (perUser !== undefined && own !== undefined && perUser > own) {
      throw new InvalidSandboxError(
        `${entry.path}.max_concurrent_tasks_per_user`,
        `must not exceed the sandbox's max_concurrent_tasks (${own})`,
        perUser,
      );
    }
    if (own === undefined) continue;
    let parentId = entry.parentId;
    while (parentId !== null) {
      const parent = byId.get(parentId)!;
      if (parent.maxConcurrentTasks !== undefined) {
        if (own > parent.maxConcurrentTasks) {
          throw new InvalidSandboxError(
            `${entry.path}.max_concurrent_tasks`,
            `must not exceed the max_concurrent_tasks of parent sandbox "${parent.id}" (${parent.maxConcurrentTasks})`,
            own,
          );
        }
        break;
      }
      parentId = parent.parentId;
    }
  }
}

function nearestLimitedAncestor(
  entry: SandboxEntry,
  resource: Resource,
  byId: ReadonlyMap<string, SandboxEntry>,
): SandboxEntry | undefined {
  let parentId = entry.parentId;
  while (parentId !== null) {
    const parent = byId.get(parentId)!;
    if (parent.limits[resource] !== undefined) return parent;
    parentId = parent.parentId;
  }
  return undefined;
}

/** A ratio shown in the unit the entry was written in. */
function show(ratio: number, limit: ParsedResourceLimit): number {
  return limit.percent ? Math.round(ratio * 1e6) / 1e4 : ratio;
}

function checkDistinctSelectionAttributes(entries: readonly SandboxEntry[]): void {
  const seen = new Map<string, SandboxEntry>();
  for (const entry of entries) {
    const key = selectionAttributesKey(entry.selectionAttributes);
    if (key === '') continue;
    const same = seen.get(key);
    if (same !== undefined) {
      throw new InvalidSandboxError(
        `${entry.path}.selectionAttributes`,
        `must differ from those of every other sandbox (${same.path} "${same.id}" has the same)`,
        entry.selectionAttributes,
      );
    }
    seen.set(key, entry);
  }
}

function toSandbox(entry: SandboxEntry): Sandbox {
  const limits: Partial<Record<Resource, ResourceLimit>> = {};
  for (const resource of RESOURCES) {
    const limit = entry.limits[resource];
    if (limit !== undefined) limits[resource] = Object.freeze({ low: limit.low, high: limit.high });
  }
  return Object.freeze({
    id: entry.id,
    name: entry.name,
    parentId: entry.parentId ?? ROOT_SANDBOX_ID,
    priority: entry.priority,
    mode: entry.mode,
    limits: Object.freeze(limits),
    selectionAttributes: entry.selectionAttributes,
    tags: entry.tags,
    ...(entry.maxQueueWaitMs !== undefined ? { maxQueueWaitMs: entry.maxQueueWaitMs } : {}),
    ...(entry.cancellationGraceMs !== undefined ? { cancellationGraceMs: entry.cancellationGraceMs } : {}),
    searchSettings: entry.searchSettings,
    maxConcurrentTasks: entry.maxConcurrentTasks,
    maxConcurrentTasksPerUser: entry.maxConcurrentTasksPerUser,
    updatedAt: entry.updatedAt,
    version: entry.version,
  });
}

function invalidJson(path: string, text: string, error: Error): InvalidSandboxError {
  const position = jsonErrorPosition(text, error);
  return new InvalidSandboxError(
    path,
    `must hold valid JSON (${describeJsonError(error, text)})`,
    text.slice(Math.max(0, position - 20), position + 20),
  );
}
