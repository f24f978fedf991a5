/**
 * Coordinator admission control from piggy-backed node stats: before fanning a request out, refuse it
 * when some shard has no copy on a node below its limits, so the caller can answer 429
 * `rejected_execution_exception` at once instead of sending work to nodes that would refuse it or
 * fall over.
 *
 * Model (OpenSearch admission control, `org.opensearch.ratelimitting.admissioncontrol`):
 * - Modes `disabled` | `monitor_only` | `enforced` (`AdmissionControlMode`); default `disabled`
 *   (`admission_control.transport.mode`). `monitor_only` counts what it would have refused and
 *   admits; `enforced` refuses.
 * - Per action type (`search`, `bulk`, as `AdmissionControlActionType.SEARCH` / `INDEXING`) limits on
 *   CPU and heap, ratios. A node is over a limit when usage >= limit, as
 *   `CpuBasedAdmissionController.isLimitsBreached` compares.
 * - CPU default 0.95: `admission_control.search.cpu_usage.limit` and
 *   `admission_control.indexing.cpu_usage.limit` both default to 95 (percent)
 *   (`CpuBasedAdmissionControllerSettings.Defaults.CPU_USAGE_LIMIT`).
 * - Heap default 0.9: OpenSearch has no heap admission controller (its controllers are CPU, IO and
 *   native memory). 0.9 is the heap bar of OpenSearch workload management's node duress; search
 *   backpressure uses a stricter 0.7 (`search_backpressure.node_duress.heap_threshold`) to start
 *   cancelling, which is a different action from refusing at the door.
 *
 * Unlike OpenSearch, which checks the local node on the data node, this runs on the coordinator over
 * every copy's stats: a shard blocks the request only when every eligible copy is on a node over a
 * limit (a copy elsewhere can serve it). Nodes without fresh stats are unknown and never refused on
 * stats; a shard with no eligible copies is not this module's business (not refused here).
 */
import type { ResourceStatsSource } from './stats-collector.js';
import type { NodeResourceStats } from './stats-header.js';
import { admissionModeOf } from '../governor/node-mode.js';
import { optionChecks } from '../common/option-checks.js';

export const AdmissionMode = {
  DISABLED: 'disabled',
  MONITOR_ONLY: 'monitor_only',
  ENFORCED: 'enforced',
} as const;
export type AdmissionMode = (typeof AdmissionMode)[keyof typeof AdmissionMode];

/** Action types with their own limits. */
export const ADMISSION_ACTIONS = Object.freeze(['search', 'bulk'] as const);
export type AdmissionAction = (typeof ADMISSION_ACTIONS)[number];

/** Limits for one action type: usage ratios in (0, 1]; a node at or above one refuses. */
export interface AdmissionLimits {
  /** CPU usage limit. @default 0.95 */
  readonly cpu: number;
  /** Heap usage limit. @default 0.9 */
  readonly heap: number;
}

export interface AdmissionControllerOptions {
  /** @default 'disabled' */
  readonly mode?: AdmissionMode;
  /** Per action type; missing fields take the defaults. */
  readonly limits?: { readonly [A in AdmissionAction]?: Partial<AdmissionLimits> };
}

/** Why a request is (or in `monitor_only` would be) refused. */
export interface AdmissionRejection {
  readonly action: AdmissionAction;
  /** Index into `candidateCopiesPerShard` of the first shard whose copies all refuse. */
  readonly shardIndex: number;
  /** The first copy's node (all copies' nodes are in `nodeIds`). */
  readonly nodeId: string;
  readonly nodeIds: readonly string[];
  /** The resource over its limit on `nodeId` (CPU is checked first). */
  readonly resource: 'cpu' | 'heap';
  /** `nodeId`'s usage of `resource`, ratio. */
  readonly usage: number;
  /** The limit it is at or above, ratio. */
  readonly limit: number;
  /** HTTP status to answer with. */
  readonly status: 429;
  /** OpenSearch error type for the body. */
  readonly type: 'rejected_execution_exception';
  /** Human-readable reason naming the node and resource. */
  readonly reason: string;
}

/** `admitted: false` only in `enforced` mode; in `monitor_only` `wouldReject` says what would have been. */
export type AdmissionDecision =
  | { readonly admitted: true; readonly wouldReject: AdmissionRejection | undefined }
  | { readonly admitted: false; readonly rejection: AdmissionRejection };

/** Counters per action type. */
export interface AdmissionActionCounters {
  /** Decisions taken while not disabled. */
  readonly evaluated: number;
  /** Refused in `enforced` mode, by resource. */
  readonly rejected: { readonly cpu: number; readonly heap: number };
  /** Would have been refused in `monitor_only` mode, by resource. */
  readonly wouldReject: { readonly cpu: number; readonly heap: number };
}

export type AdmissionCounters = { readonly mode: AdmissionMode } & {
  readonly [A in AdmissionAction]: AdmissionActionCounters;
};

const DEFAULT_LIMITS: AdmissionLimits = Object.freeze({ cpu: 0.95, heap: 0.9 });
const ADMITTED: AdmissionDecision = Object.freeze({ admitted: true, wouldReject: undefined });

/** `enforced` (or OpenSearch's `enabled`), `monitor_only`, `disabled` (see `governor/node-mode.ts`). */
function checkMode(mode: unknown, path: string): AdmissionMode {
  return admissionModeOf(mode, path);
}

const ratio = optionChecks.ratio;

interface MutableCounters {
  evaluated: number;
  rejectedCpu: number;
  rejectedHeap: number;
  wouldCpu: number;
  wouldHeap: number;
}

/** Decides admission per request from the copies' node stats (see module doc). */
export class AdmissionController {
  #mode: AdmissionMode;
  readonly #limits: { readonly [A in AdmissionAction]: AdmissionLimits };
  readonly #counters: { readonly [A in AdmissionAction]: MutableCounters };

  /** @throws InvalidArgumentError for an unknown mode or a limit outside (0, 1]. */
  constructor(options: AdmissionControllerOptions = {}) {
    this.#mode =
      options.mode === undefined ? AdmissionMode.DISABLED : checkMode(options.mode, 'options.mode');
    const limits = options.limits ?? {};
    const resolve = (action: AdmissionAction): AdmissionLimits =>
      Object.freeze({
        cpu: ratio(`options.limits.${action}.cpu`, limits[action]?.cpu, DEFAULT_LIMITS.cpu),
        heap: ratio(`options.limits.${action}.heap`, limits[action]?.heap, DEFAULT_LIMITS.heap),
      });
    this.#limits = Object.freeze({ search: resolve('search'), bulk: resolve('bulk') });
    const zero = (): MutableCounters => ({
      evaluated: 0,
      rejectedCpu: 0,
      rejectedHeap: 0,
      wouldCpu: 0,
      wouldHeap: 0,
    });
    this.#counters = { search: zero(), bulk: zero() };
  }

  get mode(): AdmissionMode {
    return this.#mode;
  }

  /** Changes the mode at run time (OpenSearch's mode setting is dynamic). @throws InvalidArgumentError */
  setMode(mode: AdmissionMode): void {
    this.#mode = checkMode(mode, 'mode');
  }

  /** The resolved limits of an action type (frozen). */
  limits(action: AdmissionAction): AdmissionLimits {
    return this.#limits[action];
  }

  /**
   * Decides one request.
   * @param action the action type, whose limits apply.
   * @param candidateCopiesPerShard for each shard the request needs, the node ids of its eligible
   *   copies (started, allowed by preference). Not validated (hot path).
   * @param stats fresh node stats (`StatsCollector`, or any `{ get(nodeId) }` such as a Map);
   *   `undefined` from it means unknown, and an unknown node never refuses.
   * @returns admit (in `disabled` always, without looking at stats), or in `enforced` mode a refusal
   *   naming the first shard whose every copy is on a node at or above a limit. Never throws.
   */
  decide(
    action: AdmissionAction,
    candidateCopiesPerShard: readonly (readonly string[])[],
    stats: ResourceStatsSource,
  ): AdmissionDecision {
    if (this.#mode === AdmissionMode.DISABLED) return ADMITTED;
    const counters = this.#counters[action];
    const limits = this.#limits[action];
    counters.evaluated++;
    for (let shard = 0; shard < candidateCopiesPerShard.length; shard++) {
      const copies = candidateCopiesPerShard[shard]!;
      if (copies.length === 0) continue;
      let allReject = true;
      let first: NodeResourceStats | undefined;
      for (const nodeId of copies) {
        const s = stats.get(nodeId);
        if (s === undefined || (s.cpu < limits.cpu && s.heap < limits.heap)) {
          allReject = false;
          break;
        }
        first ??= s;
      }
      if (!allReject || first === undefined) continue;
      const rejection = this.#rejection(action, shard, copies, first, limits);
      if (this.#mode === AdmissionMode.ENFORCED) {
        if (rejection.resource === 'cpu') counters.rejectedCpu++;
        else counters.rejectedHeap++;
        return { admitted: false, rejection };
      }
      if (rejection.resource === 'cpu') counters.wouldCpu++;
      else counters.wouldHeap++;
      return { admitted: true, wouldReject: rejection };
    }
    return ADMITTED;
  }

  #rejection(
    action: AdmissionAction,
    shardIndex: number,
    copies: readonly string[],
    s: NodeResourceStats,
    limits: AdmissionLimits,
  ): AdmissionRejection {
    const nodeId = copies[0]!;
    const resource = s.cpu >= limits.cpu ? 'cpu' : 'heap';
    const usage = resource === 'cpu' ? s.cpu : s.heap;
    const limit = limits[resource];
    const copiesText = copies.length === 1 ? 'its only copy is' : `all ${copies.length} copies are`;
    return Object.freeze({
      action,
      shardIndex,
      nodeId,
      nodeIds: Object.freeze([...copies]),
      resource,
      usage,
      limit,
      status: 429 as const,
      type: 'rejected_execution_exception' as const,
      reason:
        `rejected ${action} request: ${copiesText} on nodes over their limits for shard [${shardIndex}]; ` +
        `node [${nodeId}] ${resource} usage ${usage.toFixed(3)} >= limit ${limit}`,
    });
  }

  /** The counters (a plain snapshot). */
  counters(): AdmissionCounters {
    const view = (c: MutableCounters): AdmissionActionCounters => ({
      evaluated: c.evaluated,
      rejected: { cpu: c.rejectedCpu, heap: c.rejectedHeap },
      wouldReject: { cpu: c.wouldCpu, heap: c.wouldHeap },
    });
    return { mode: this.#mode, search: view(this.#counters.search), bulk: view(this.#counters.bulk) };
  }
}
