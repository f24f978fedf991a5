/**
 * The state the request path's steps share (`admit.ts`, `dispatch.ts`, `settle.ts`, `call-control.ts`,
 * `cancel.ts`): the scheduler's queue, the running tasks, the task slots, the concurrency caps, the
 * usage tracking and the counters, over a pool and a governor given as narrow interfaces, so that the
 * steps run against a fake pool in tests (test/execution/).
 *
 * Every task that is admitted settles exactly once; a task that ran gives back, when it settles, its
 * slot (allocator and shared slot), its lane dispatch, its concurrency-cap hold, its usage tracking and
 * the governor's record of it.
 */
import type { EventSource } from '../diagnostics.js';
import type { SandboxVerdict } from '../governor/decide.js';
import type { AnyCancellation, GovernorSnapshot } from '../governor/governor.js';
import type { SandboxCounterTable } from '../governor/sandbox-counters.js';
import type { TaskEnvelope, TaskOutcome } from '../pool/task-envelope.js';
import type { SlotAllocator, TaskSlots } from '../pool/task-slots.js';
import type { RuntimeLogger } from '../runtime-logger.js';
import { effectiveCancellationGrace } from '../sandbox/cancellation-grace.js';
import { ROOT_SANDBOX_ID, type Sandbox } from '../sandbox/sandbox.js';
import { type EffectiveSearchSettings, effectiveSearchSettings } from '../sandbox/search-settings.js';
import type { ConcurrencyCaps } from '../scheduler/concurrency-caps.js';
import type { TaskScheduler } from '../scheduler/task-scheduler.js';
import type { UsageTracker } from '../tracking/usage-tracker.js';
import { cancelAfterOf, type TimeLimit } from './search-parameters.js';
import { PrefetchPolicy } from './prefetch.js';
import type { QueuedTask, RunningTask } from './task.js';

/** What the steps need of the worker pool (`LanePool`). */
export interface ExecutionPool {
  readonly slots: Pick<TaskSlots, 'assign' | 'release' | 'requestCancel' | 'heapBytes'>;
  /** Runs a task on a worker of `lane`; resolves with its outcome, rejects when its worker exits. */
  run(lane: number, envelope: TaskEnvelope): Promise<TaskOutcome>;
  /** Terminates the worker running `taskId` in `slot` (a hard cancellation); its `run` then rejects. */
  terminateWorkerOf(lane: number, slot: number, taskId: number): boolean;
  /** Workers of lane `lane` loaded and taking tasks, spares included. */
  readyWorkersOf(lane: number): number;
}

/** What the steps need of the governor (`Governor`). */
export interface ExecutionGovernor {
  verdict(sandboxId: string): SandboxVerdict;
  readonly snapshot: GovernorSnapshot;
  cancellationOf(
    taskId: number,
  ): { readonly cancellation: AnyCancellation; readonly hard: boolean } | undefined;
  /** The task settled: drop its record. */
  forget(taskId: number): void;
  onTaskCompleted(): void;
}

/** The node's settings the steps read. */
export interface ExecutionSettings {
  /** Default queue-wait bound, ms (`maxQueueWaitMs`). */
  readonly maxQueueWaitMs: number;
  /** Default cancellation grace, ms (`graceIntervals * intervalMs`). */
  readonly defaultGraceMs: number;
  /** For the memory cancellation's message, MiB. */
  readonly workerHeapMb: number;
  /** For the controlled-delay rejection's message, ms. */
  readonly standingQueueMs: number;
  /** For the duress rejection's message, a ratio. */
  readonly duressRejectThreshold: number;
}

export interface TaskExecutionParts {
  readonly scheduler: TaskScheduler<QueuedTask>;
  readonly caps: ConcurrencyCaps;
  readonly allocator: SlotAllocator;
  readonly pool: ExecutionPool;
  readonly tracker: Pick<UsageTracker, 'add' | 'complete'>;
  readonly counters: SandboxCounterTable;
  readonly governor: ExecutionGovernor;
  readonly source: EventSource;
  /** Lane names by lane index, for events. */
  readonly laneNames: readonly string[];
  readonly log: RuntimeLogger;
  readonly settings: ExecutionSettings;
  readonly sandboxes: readonly Sandbox[];
  /** When lanes prefetch (`prefetch.ts`); default: never. */
  readonly prefetch?: PrefetchPolicy;
}

/** A queue-wait bound and where it comes from, for the 429's message. */
export interface QueueWaitBound {
  readonly ms: number;
  readonly from: string;
}

export class TaskExecution {
  readonly scheduler: TaskScheduler<QueuedTask>;
  readonly caps: ConcurrencyCaps;
  readonly allocator: SlotAllocator;
  readonly pool: ExecutionPool;
  readonly tracker: Pick<UsageTracker, 'add' | 'complete'>;
  readonly counters: SandboxCounterTable;
  readonly governor: ExecutionGovernor;
  readonly source: EventSource;
  readonly laneNames: readonly string[];
  readonly log: RuntimeLogger;
  readonly settings: ExecutionSettings;
  readonly prefetch: PrefetchPolicy;
  /** Tasks handed to a worker and not settled, by task id. */
  readonly running = new Map<number, RunningTask>();
  // Swapped whole on every sandbox change (see setSandboxes); never mutated in place.
  byId: ReadonlyMap<string, Sandbox> = new Map();
  /** Each sandbox's effective `cancellationGraceMs` (Infinity: never). */
  graceMs: ReadonlyMap<string, number> = new Map();
  searchSettings: ReadonlyMap<string, EffectiveSearchSettings> = new Map();
  /** Per sandbox id: its queue-wait bound (own or inherited). */
  queueWaitBounds: ReadonlyMap<string, QueueWaitBound> = new Map();
  /** The timer that rejects queued tasks at their queue-wait deadline, and when it fires. */
  expiryTimer: NodeJS.Timeout | undefined;
  expiryAtMs = Number.POSITIVE_INFINITY;
  nextTaskId = 1;
  /** True once the workers are being stopped: nothing more is dispatched. */
  closed = false;
  /** Ends a drain under way (set while one is). */
  endDrain: (() => void) | undefined;

  constructor(parts: TaskExecutionParts) {
    this.scheduler = parts.scheduler;
    this.caps = parts.caps;
    this.allocator = parts.allocator;
    this.pool = parts.pool;
    this.tracker = parts.tracker;
    this.counters = parts.counters;
    this.governor = parts.governor;
    this.source = parts.source;
    this.laneNames = parts.laneNames;
    this.log = parts.log;
    this.settings = parts.settings;
    this.prefetch = parts.prefetch ?? new PrefetchPolicy(parts.laneNames.length, 0, 1);
    this.setSandboxes(parts.sandboxes);
  }

  /** Takes a new sandbox list (the caps are told by the caller). */
  setSandboxes(sandboxes: readonly Sandbox[]): void {
    this.byId = new Map(sandboxes.map((s) => [s.id, s]));
    this.queueWaitBounds = queueWaitBoundsOf(sandboxes, this.settings.maxQueueWaitMs);
    this.graceMs = effectiveCancellationGrace(sandboxes, this.settings.defaultGraceMs);
    this.searchSettings = effectiveSearchSettings(sandboxes);
  }

  /** The effective search settings of a sandbox; a deleted one's tasks run under the root's. */
  settingsOf(sandboxId: string): EffectiveSearchSettings {
    return this.searchSettings.get(sandboxId) ?? this.searchSettings.get(ROOT_SANDBOX_ID)!;
  }

  /** The grace of a running task: its sandbox's (a deleted sandbox's task: the root's). */
  graceMsOf(taskId: number): number {
    const sandboxId = this.running.get(taskId)?.queued.sandbox.id ?? ROOT_SANDBOX_ID;
    return this.graceMs.get(sandboxId) ?? this.graceMs.get(ROOT_SANDBOX_ID)!;
  }

  /** The `cancel_after_time_interval` in force for a running task now (its sandbox's may have changed). */
  cancelAfterOf(taskId: number): TimeLimit | undefined {
    const r = this.running.get(taskId);
    if (r === undefined) return undefined;
    return cancelAfterOf(r.queued.requestedCancelAfterMs, this.settingsOf(r.queued.sandbox.id));
  }

  /** The queue-wait bound of a task of `sandboxId`: its sandbox's (own or inherited), or the search timeout when smaller. */
  queueWaitBound(sandboxId: string, timeout: TimeLimit | undefined): QueueWaitBound {
    const own = this.queueWaitBounds.get(sandboxId) ?? {
      ms: this.settings.maxQueueWaitMs,
      from: "the node's default (maxQueueWaitMs)",
    };
    if (timeout !== undefined && timeout.ms > 0 && timeout.ms < own.ms) {
      return {
        ms: timeout.ms,
        from:
          timeout.source === 'sandbox'
            ? `sandbox [${timeout.sandboxId}]'s search_settings.timeout`
            : "the request's timeout",
      };
    }
    return own;
  }
}

/**
 * Each sandbox's queue-wait bound: its own `maxQueueWaitMs`, else its nearest ancestor's, else the
 * node's default; with where it comes from, for the 429's message.
 */
export function queueWaitBoundsOf(
  sandboxes: readonly Sandbox[],
  nodeDefaultMs: number,
): ReadonlyMap<string, QueueWaitBound> {
  const byId = new Map(sandboxes.map((s) => [s.id, s]));
  const out = new Map<string, QueueWaitBound>();
  for (const s of sandboxes) {
    let bound: QueueWaitBound = { ms: nodeDefaultMs, from: "the node's default (maxQueueWaitMs)" };
    let id: string | null = s.id;
    for (let depth = 0; id !== null && depth < 64; depth++) {
      const at: Sandbox | undefined = byId.get(id);
      if (at?.maxQueueWaitMs !== undefined) {
        bound = {
          ms: at.maxQueueWaitMs,
          from:
            at.id === s.id
              ? `sandbox [${s.id}]'s max_queue_wait`
              : `max_queue_wait of [${at.id}], inherited by [${s.id}]`,
        };
        break;
      }
      id = at?.parentId ?? null;
    }
    out.set(s.id, bound);
  }
  return out;
}
