/**
 * The sandbox model: a node of the sandbox tree with a priority, limits per resource, a mode, the
 * selection attributes that bind requests to it, search settings and concurrency caps. Values of these types are plain, frozen data; the
 * file loader (`sandbox-file.ts`) is the place that validates them.
 */

import type { SearchSettings } from './search-settings.js';

/** Id (and name) of the root sandbox: the catch-all parent of every other sandbox. It has no limits. */
export const ROOT_SANDBOX_ID = '_root';

/**
 * How a sandbox's limits are applied.
 * - `enforced`: limits apply at all times.
 * - `soft`: limits apply only while the node is in duress.
 * - `monitor`: usage is counted and reported; nothing is rejected or cancelled.
 */
export const SandboxMode = { ENFORCED: 'enforced', SOFT: 'soft', MONITOR: 'monitor' } as const;
export type SandboxMode = (typeof SandboxMode)[keyof typeof SandboxMode];

/** A resource whose usage is tracked per sandbox. */
export type Resource = 'cpu' | 'memory';
/** Every resource, in a fixed order (`cpu`, then `memory`). */
export const RESOURCES: readonly Resource[] = Object.freeze(['cpu', 'memory'] as const);

/**
 * Limits of one sandbox for one resource, as usage ratios of the node's capacity.
 * `low`: above it new work is rejected; `high`: above it running work is cancelled.
 * Both are in (0, 1] and `low <= high`.
 */
export interface ResourceLimit {
  readonly low: number;
  readonly high: number;
}

/**
 * Patterns on request attributes. Each list holds wildcard patterns (`*` is the only special
 * character) that are OR-ed together; an empty list means the sandbox does not name that attribute.
 * A sandbox matches a request when every attribute it names matches.
 */
export interface SelectionAttributes {
  /** Patterns on the request's user name. */
  readonly userPattern: readonly string[];
  /** Patterns on the request's index names: every index of the request must match one of them. */
  readonly indicesPattern: readonly string[];
}

/** One node of the sandbox tree. */
export interface Sandbox {
  /** Unique id; `_root` for the root. */
  readonly id: string;
  /** Unique human name, 1..50 chars of `[A-Za-z0-9_-]`; `_root` for the root. */
  readonly name: string;
  /** Id of the parent sandbox; `null` only for the root. */
  readonly parentId: string | null;
  /** Integer; a higher number is more important (cancelled later under duress). */
  readonly priority: number;
  /** How the limits are applied. */
  readonly mode: SandboxMode;
  /** Limits per resource as usage ratios; a resource without an entry is not limited. The root has none. */
  readonly limits: Readonly<Partial<Record<Resource, ResourceLimit>>>;
  /** Patterns that bind requests to this sandbox implicitly. */
  readonly selectionAttributes: SelectionAttributes;
  /** Free-form labels for reporting. */
  readonly tags: readonly string[];
  /**
   * The longest a task of this sandbox may wait in the queue before it is rejected (429, reason
   * `queue_wait`), ms: an integer >= 1, or Infinity for no bound. Absent: its parent's, up to the
   * root's, and the node's `maxQueueWaitMs` when the root sets none. JSON: `max_queue_wait`, an
   * Elasticsearch time value (`"5s"`, `"500ms"`, `-1` for no bound). See docs/overload.md.
   */
  readonly maxQueueWaitMs?: number;
  /**
   * ms between a task's soft and hard cancellation, or `never` (see `cancellation-grace.ts`); absent:
   * inherited from the parent, up to the runtime's `graceIntervals × intervalMs`.
   */
  readonly cancellationGraceMs?: number | 'never';
  /** Search settings (timeout, cancel-after, shard fan-out), each inherited when absent; see `search-settings.ts`. */
  readonly searchSettings: SearchSettings;
  /**
   * Most tasks of this sandbox and its descendants that run at once (integer >= 1), or undefined for
   * no cap. Tasks beyond it wait in the queue.
   */
  readonly maxConcurrentTasks: number | undefined;
  /** Most tasks of one user in this sandbox and its descendants that run at once, or undefined. */
  readonly maxConcurrentTasksPerUser: number | undefined;
  /** When the definition last changed, ms since the epoch (0 when never changed through the API). */
  readonly updatedAt: number;
  /** Version of this sandbox's definition: 1 when created, +1 per update (`If-Match`). */
  readonly version: number;
}

const NO_PATTERNS: readonly string[] = Object.freeze([]);
const NO_SETTINGS: SearchSettings = Object.freeze({});

/**
 * The root sandbox: id and name `_root`, no parent, mode `enforced`, no limits, no selection
 * attributes, no tags, no caps; its search settings (when given) are the node-wide defaults. Requests that match no other sandbox land here.
 *
 * @param overrides.priority integer, default 0. Give it a value between those of the other sandboxes
 *   to rank unclassified work between them.
 * @returns a frozen sandbox.
 */
export function createRootSandbox(overrides?: {
  priority?: number;
  updatedAt?: number;
  version?: number;
  maxQueueWaitMs?: number | undefined;
  cancellationGraceMs?: number | 'never' | undefined;
  searchSettings?: SearchSettings;
}): Sandbox {
  return Object.freeze({
    ...(overrides?.maxQueueWaitMs !== undefined ? { maxQueueWaitMs: overrides.maxQueueWaitMs } : {}),
    ...(overrides?.cancellationGraceMs !== undefined
      ? { cancellationGraceMs: overrides.cancellationGraceMs }
      : {}),
    id: ROOT_SANDBOX_ID,
    name: ROOT_SANDBOX_ID,
    parentId: null,
    priority: overrides?.priority ?? 0,
    mode: SandboxMode.ENFORCED,
    limits: Object.freeze({}),
    selectionAttributes: Object.freeze({ userPattern: NO_PATTERNS, indicesPattern: NO_PATTERNS }),
    tags: NO_PATTERNS,
    searchSettings: overrides?.searchSettings ?? NO_SETTINGS,
    maxConcurrentTasks: undefined,
    maxConcurrentTasksPerUser: undefined,
    updatedAt: overrides?.updatedAt ?? 0,
    version: overrides?.version ?? 1,
  });
}
