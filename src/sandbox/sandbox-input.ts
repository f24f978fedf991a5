/**
 * The shapes callers write sandboxes in: the body of `SandboxRegistry.create` (and of
 * `PUT /_sandbox`), of `SandboxRegistry.update` (a partial change), and of a sandbox file
 * (`createRuntime({ sandboxes })`). Types only: every value is still checked at run time
 * (`parseSandboxDefinitions`), since bodies come from HTTP and files from disk; the types let a
 * TypeScript caller find a misspelt field before that.
 */
import type { SandboxMode } from './sandbox.js';

/** One limit: `{ low?, high }` ratios in (0, 1] (`low` defaults to 80 % of `high`), or `high` alone. */
export type ResourceLimitInput = number | { readonly low?: number; readonly high: number };

/** `search_settings` as written (see `search-settings.ts`): time values like `"500ms"`, `"30s"` or `"-1"` (none). */
export interface SearchSettingsInput {
  readonly timeout?: string;
  readonly cancel_after_time_interval?: string;
  /** Integer 1..65536. */
  readonly max_concurrent_shard_requests?: number;
  /** Default false: the request's values win over the sandbox's. */
  readonly override_request_values?: boolean;
}

/** A percent limit of the seed's form: `{ low?, high }` or `high`, in (0, 100], numbers or numeric strings. */
export type PercentLimitInput =
  | number
  | string
  | { readonly low?: number | string; readonly high: number | string };

/**
 * `resourceConsumptionLimits`: `cpu` / `memory` as ratios, or the seed's `cpuUsageLimit` /
 * `jvmUsageLimit` (memory) in percent; not both forms for one resource.
 */
export interface ResourceLimitsInput {
  readonly cpu?: ResourceLimitInput;
  readonly memory?: ResourceLimitInput;
  readonly cpuUsageLimit?: PercentLimitInput;
  readonly jvmUsageLimit?: PercentLimitInput;
}

/** One selection attribute: a pattern (`*` the only wildcard) or up to 10 of them, OR-ed. */
export interface SelectionAttributeInput {
  readonly name: 'userPattern' | 'indicesPattern';
  readonly value: string | readonly string[];
}

/** The body of `SandboxRegistry.create` (`_id`, `version`, `updated_at` are the server's). */
export interface SandboxInput {
  /** 1..50 characters of `[A-Za-z0-9_-]`, unique. */
  readonly name: string;
  /** Integer, higher = more important, unique among siblings. */
  readonly priority: number;
  /** `_id` of the parent; absent or `null`: a child of the root. At most 3 levels below the root. */
  readonly parent_id?: string | null;
  /** Default `enforced`. */
  readonly mode?: SandboxMode;
  readonly resourceConsumptionLimits?: ResourceLimitsInput;
  readonly selectionAttributes?: readonly SelectionAttributeInput[];
  /** 1..100 characters each. */
  readonly tags?: readonly string[];
  /** ms from soft to hard cancellation, integer 0..3600000, or `never`; absent: inherited. */
  readonly cancellationGraceMs?: number | 'never';
  /**
   * The longest a task may wait in the queue: an Elasticsearch time value (`"5s"`, `"500ms"`; 1 ms to
   * 1 day) or `-1` (or `"-1"`) for no bound; absent: inherited (docs/overload.md).
   */
  readonly max_queue_wait?: string | number;
  /** Search defaults of the sandbox, each inherited when absent. */
  readonly search_settings?: SearchSettingsInput;
  /** Tasks of the subtree that run at once, integer 1..100000; absent: no cap. */
  readonly max_concurrent_tasks?: number;
  /** Tasks of one user in the subtree that run at once, integer 1..100000; absent: no cap. */
  readonly max_concurrent_tasks_per_user?: number;
}

/**
 * The body of `SandboxRegistry.update`: the fields to change. `resourceConsumptionLimits` merges per
 * resource (`null` removes one); `parent_id: null` moves the sandbox under the root;
 * `cancellationGraceMs: null` and `max_queue_wait: null` make it inherit again.
 */
export interface SandboxPatch {
  readonly name?: string;
  readonly priority?: number;
  readonly parent_id?: string | null;
  readonly mode?: SandboxMode;
  readonly resourceConsumptionLimits?: {
    readonly [K in keyof ResourceLimitsInput]?: ResourceLimitsInput[K] | null;
  };
  readonly selectionAttributes?: readonly SelectionAttributeInput[];
  readonly tags?: readonly string[];
  readonly cancellationGraceMs?: number | 'never' | null;
  readonly max_queue_wait?: string | number | null;
  /** Merged per key; a key set to `null` (or the whole field `null`) inherits again. */
  readonly search_settings?:
    | { readonly [K in keyof SearchSettingsInput]?: SearchSettingsInput[K] | null }
    | null;
  readonly max_concurrent_tasks?: number | null;
  readonly max_concurrent_tasks_per_user?: number | null;
}

/** An entry of a sandbox file: a sandbox, with the store's fields where it has them. */
export interface SandboxFileEntry extends SandboxInput {
  /** Default: the name. 1..100 characters of `[A-Za-z0-9_-]`, unique. */
  readonly _id?: string;
  /** ms since the epoch. */
  readonly updated_at?: number;
  /** >= 1. */
  readonly version?: number;
}

/** The root's entry: only its priority, maximum queue wait, cancellation grace and search settings (the node-wide defaults) can be set. */
export interface RootSandboxFileEntry {
  readonly _id: '_root';
  readonly priority: number;
  readonly cancellationGraceMs?: number | 'never';
  readonly max_queue_wait?: string | number;
  readonly search_settings?: SearchSettingsInput;
  readonly updated_at?: number;
  readonly version?: number;
}

/** A sandbox file (`createRuntime({ sandboxes })`, `--sandboxes`): at most `maxSandboxes` entries besides the root's. */
export interface SandboxFileDocument {
  /** The store's version of the whole set, >= 0. */
  readonly version?: number;
  readonly sandboxes: readonly (SandboxFileEntry | RootSandboxFileEntry)[];
}
