/**
 * The periodic governor. Every interval it samples usage (tracker, node sampler), feeds duress, calls
 * the pure `decide`, publishes the verdicts that the request path reads, and cancels tasks: soft
 * first (the task's cancel flag, seen by its AbortSignal), then hard (its worker is terminated) when
 * it is still running its grace later (its sandbox's `cancellationGraceMs`, by default
 * `graceIntervals` intervals; never, for a sandbox that says so). At every tick the wall-clock
 * watchdog (`wall-clock-watchdog.ts`) also picks the tasks that ran past their
 * `cancel_after_time_interval`; they are cancelled the same way, soft then hard, without the token
 * buckets, and counted apart.
 */
import { createHistogram } from 'node:perf_hooks';
import type { NodeUsage } from '../tracking/node-usage-sampler.js';
import type { SandboxUsage, UsageSample } from '../tracking/usage-tracker.js';
import type { Resource, Sandbox } from '../sandbox/sandbox.js';
import {
  type Cancellation,
  type Decision,
  type DuressLevel,
  decide,
  type EnforcementMode,
  type SandboxVerdict,
  type SelectionStrategy,
  type TaskUsageView,
} from './decide.js';
import type { DuressDetector } from './duress-detector.js';
import type { GovernorDecisionListener } from './governor-decisions.js';
import type { SandboxCounterTable } from './sandbox-counters.js';
import { TokenBucket } from './token-bucket.js';
import { dueWithin, overdueTasks, type WallClockCancellation } from './wall-clock-watchdog.js';

/** What a task is cancelled for: usage over a high limit, or its run time past its cancel-after. */
export type AnyCancellation = Cancellation | WallClockCancellation;

/** What the governor needs from the rest of the runtime (wired by the composition root). */
export interface GovernorDeps {
  sampleUsage(): UsageSample;
  sampleNode(): NodeUsage;
  sandboxes(): readonly Sandbox[];
  readonly duress: DuressDetector;
  readonly counters: SandboxCounterTable;
  /** Soft cancellation: raise the task's cancel flag (`time`: it ran past its cancel-after). */
  softCancel(taskId: number, resource: Resource | 'time'): void;
  /** Hard cancellation: terminate the task's worker. */
  hardCancel(taskId: number, resource: Resource | 'time'): void;
  /**
   * The grace of a task picked now, ms from its soft to its hard cancellation (`Infinity`: never
   * hard-cancel); its sandbox's `cancellationGraceMs`. Default: `graceIntervals × intervalMs` for all.
   */
  graceMsOf?(taskId: number): number;
  /** Called at every tick with the previous and the new snapshot (for state-change events); must be cheap. */
  publishStateChanges?(before: GovernorSnapshot, after: GovernorSnapshot): void;
  /**
   * The `cancel_after_time_interval` in force for a running task, ms (> 0), or undefined for none
   * (read at every tick). Default: none for every task (no watchdog).
   */
  cancelAfterMs?(taskId: number): number | undefined;
  /**
   * Runs `callback` after `delayMs` (a real timer, unref'ed); returns a function that cancels it. With
   * it, the watchdog cancels a task due before the next tick at its limit. Default: none (ticks only).
   */
  schedule?(callback: () => void, delayMs: number): () => void;
  /** Clock, ms. */
  nowMs(): number;
  /** Whether some lane has a standing queue now (for shedding in CPU duress). Default: always true. */
  standingQueue?(): boolean;
  /** Told of state changes and cancellations (decision logs). Optional: nothing is built without it. */
  readonly decisions?: GovernorDecisionListener | undefined;
}

export interface GovernorOptions {
  /** Interval between ticks, ms, 10..60000. Default 100. */
  readonly intervalMs: number;
  /** Intervals between soft and hard cancellation, >= 1. Default 2. */
  readonly graceIntervals: number;
  readonly enforcement: EnforcementMode;
  /** How tasks are picked within a breaching sandbox. Default `largest_usage`. */
  readonly selection: SelectionStrategy;
  /** Cancellation tokens added per second of time. Default 3. */
  readonly cancellationRatePerSecond: number;
  /** Cancellation tokens added per completed task. Default 0.1. */
  readonly cancellationRatio: number;
  /** Most tokens each bucket holds (the most cancellations at once). Default 5. */
  readonly cancellationBurst: number;
  /** Priority added to a sandbox just cut back, decaying by half every `boostHalfLifeMs`. Default 10. */
  readonly boostPriority: number;
  /** Default 5000 ms. */
  readonly boostHalfLifeMs: number;
  /**
   * Shedding in duress when nobody breaches a limit (see `decide.ts`): intervals a shed sandbox waits
   * before its running tasks are cancelled, and the usage its own tasks must reach to count. Absent: off.
   */
  readonly duressShedding?: { readonly cancelAfterIntervals: number; readonly minUsage: number } | undefined;
}

/** Governor counters, a plain snapshot. */
export interface GovernorStats {
  /** Usage-based cancellations (over a high limit, or orphans in duress): soft, then hard. */
  readonly softCancellations: number;
  readonly hardCancellations: number;
  /** Wall-clock watchdog: tasks cancelled for running past their cancel-after (soft), and of those, hard. */
  readonly wallClockCancellations: number;
  readonly wallClockHardCancellations: number;
  /**
   * Tasks whose cancellation the token buckets held back at least once (each counted once; they are
   * picked again at later intervals while still needed).
   */
  readonly rateLimited: number;
  /** Tokens left in the time bucket and the completion bucket. */
  readonly tokens: { readonly time: number; readonly completions: number };
  /** Ticks so far. */
  readonly ticks: number;
  /** Ticks whose cost the figures below describe: all of them, or those since the last reset. */
  readonly tickCostSamples: number;
  /** Cost of a tick (sample, decide, publish, act), µs. */
  readonly tickMedianUs: number;
  readonly tickP99Us: number;
}

interface PendingCancellation {
  readonly cancellation: AnyCancellation;
  readonly softAtMs: number;
  /** ms after `softAtMs` at which it is cancelled hard; `Infinity`: never. */
  readonly graceMs: number;
  hard: boolean;
}

/** A plain snapshot of the last interval, for stats. */
export interface GovernorSnapshot {
  readonly atMs: number;
  readonly ticks: number;
  readonly duress: boolean;
  readonly duressLevel: DuressLevel;
  readonly enforcement: EnforcementMode;
  readonly node: NodeUsage;
  readonly usage: ReadonlyMap<string, SandboxUsage>;
  readonly verdicts: ReadonlyMap<string, SandboxVerdict>;
  /** Sandboxes shed in duress (id -> intervals shed so far); empty outside duress. */
  readonly shed: ReadonlyMap<string, number>;
}

const ALLOW: SandboxVerdict = Object.freeze({
  state: 'ok',
  resource: undefined,
  rejectNew: false,
  rejectedBy: undefined,
  rejectResource: undefined,
  wouldReject: false,
  wouldCancel: false,
});

export class Governor {
  readonly #deps: GovernorDeps;
  readonly #intervalMs: number;
  readonly #graceMs: number;
  #enforcement: EnforcementMode;
  #timer: NodeJS.Timeout | undefined;
  readonly #pending = new Map<number, PendingCancellation>();
  #snapshot: GovernorSnapshot;
  #lastDecision: Decision | undefined;
  readonly #options: GovernorOptions;
  readonly #timeBucket: TokenBucket;
  readonly #completionBucket: TokenBucket;
  /** Sandboxes cut back recently: when, for the priority boost. */
  readonly #cutAtMs = new Map<string, number>();
  #lastTickMs: number;
  #softCancellations = 0;
  #hardCancellations = 0;
  #wallClockCancellations = 0;
  #wallClockHardCancellations = 0;
  #rateLimited = 0;
  /** Timers armed for tasks whose cancel-after falls before the next tick (see `wall-clock-watchdog.ts`). */
  readonly #wallClockTimers = new Map<number, () => void>();
  /** Tasks held back by the rate limit and not yet settled (so each is counted once). */
  readonly #heldBack = new Set<number>();
  readonly #tickNs = createHistogram();
  #ticks = 0;

  constructor(options: GovernorOptions, deps: GovernorDeps) {
    this.#deps = deps;
    this.#intervalMs = options.intervalMs;
    this.#graceMs = options.intervalMs * options.graceIntervals;
    this.#enforcement = options.enforcement;
    this.#options = options;
    this.#timeBucket = new TokenBucket(options.cancellationRatePerSecond / 1000, options.cancellationBurst);
    this.#completionBucket = new TokenBucket(options.cancellationRatio, options.cancellationBurst);
    this.#lastTickMs = deps.nowMs();
    this.#snapshot = {
      atMs: deps.nowMs(),
      ticks: 0,
      duress: false,
      duressLevel: 'none',
      enforcement: this.#enforcement,
      node: { cpu: 0, memory: 0 },
      usage: new Map(),
      verdicts: new Map(),
      shed: new Map(),
    };
  }

  /** Starts ticking every interval (timer unref'ed). */
  start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => this.tick(), this.#intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    for (const cancel of this.#wallClockTimers.values()) cancel();
    this.#wallClockTimers.clear();
  }

  get enforcement(): EnforcementMode {
    return this.#enforcement;
  }

  /** Changes the enforcement mode; takes effect at the next tick. */
  set enforcement(mode: EnforcementMode) {
    this.#enforcement = mode;
  }

  /** Request path: the published verdict for a sandbox (allow when unknown). */
  verdict(sandboxId: string): SandboxVerdict {
    return this.#snapshot.verdicts.get(sandboxId) ?? ALLOW;
  }

  get snapshot(): GovernorSnapshot {
    return this.#snapshot;
  }

  /** The last decision's cancellations (for tests and diagnostics). */
  get lastCancellations(): readonly Cancellation[] {
    return this.#lastDecision?.cancellations ?? [];
  }

  /** True when the task was picked for cancellation and not yet forgotten. */
  cancellationOf(
    taskId: number,
  ): { readonly cancellation: AnyCancellation; readonly hard: boolean } | undefined {
    return this.#pending.get(taskId);
  }

  /** The task settled: stop tracking its cancellation. */
  forget(taskId: number): void {
    this.#pending.delete(taskId);
    this.#heldBack.delete(taskId);
    const timer = this.#wallClockTimers.get(taskId);
    if (timer !== undefined) {
      timer();
      this.#wallClockTimers.delete(taskId);
    }
  }

  /** A wall-clock cancellation: soft now, hard after the grace period (at a later tick). */
  #cancelForTime(c: WallClockCancellation, nowMs: number): void {
    if (this.#pending.has(c.taskId)) return;
    this.#pending.set(c.taskId, {
      cancellation: c,
      softAtMs: nowMs,
      graceMs: this.#deps.graceMsOf?.(c.taskId) ?? this.#graceMs,
      hard: false,
    });
    this.#wallClockCancellations++;
    this.#deps.softCancel(c.taskId, 'time');
    const listener = this.#deps.decisions;
    if (listener !== undefined) reportWallClockCancellation(listener, c, 'soft');
  }

  /** A task completed normally: adds to the completion bucket. */
  onTaskCompleted(): void {
    this.#completionBucket.refill(1);
  }

  /**
   * The counters and the tick cost. `resetTickCost`: start the tick-cost figures afresh after this
   * reading (a benchmark measures a steady state that way).
   */
  stats(options?: { readonly resetTickCost?: boolean }): GovernorStats {
    const stats: GovernorStats = {
      softCancellations: this.#softCancellations,
      hardCancellations: this.#hardCancellations,
      wallClockCancellations: this.#wallClockCancellations,
      wallClockHardCancellations: this.#wallClockHardCancellations,
      rateLimited: this.#rateLimited,
      tokens: { time: this.#timeBucket.tokens, completions: this.#completionBucket.tokens },
      ticks: this.#ticks,
      tickCostSamples: this.#tickNs.count,
      tickMedianUs: this.#tickNs.count === 0 ? 0 : this.#tickNs.percentile(50) / 1000,
      tickP99Us: this.#tickNs.count === 0 ? 0 : this.#tickNs.percentile(99) / 1000,
    };
    if (options?.resetTickCost === true) this.#tickNs.reset();
    return stats;
  }

  /** The decaying boosts of sandboxes cut back recently; forgets ones that have decayed away. */
  #boosts(nowMs: number): Map<string, number> {
    const boosts = new Map<string, number>();
    for (const [id, at] of this.#cutAtMs) {
      const boost = this.#options.boostPriority * 0.5 ** ((nowMs - at) / this.#options.boostHalfLifeMs);
      if (boost < 0.01) this.#cutAtMs.delete(id);
      else boosts.set(id, boost);
    }
    return boosts;
  }

  /** One interval: sample, decide, publish, act. Its cost is recorded (`stats().tickMedianUs`). */
  tick(): void {
    const started = process.hrtime.bigint();
    try {
      this.#tick();
    } finally {
      this.#tickNs.record(Math.max(1, Number(process.hrtime.bigint() - started)));
      this.#ticks++;
    }
  }

  #tick(): void {
    const deps = this.#deps;
    const nowMs = deps.nowMs();
    const sample = deps.sampleUsage();
    const node = deps.sampleNode();
    const duressLevel = deps.duress.update(node.cpu, node.memory);
    const sandboxes = deps.sandboxes();
    this.#timeBucket.refill(nowMs - this.#lastTickMs);
    this.#lastTickMs = nowMs;

    const tasks: TaskUsageView[] = sample.tasks.map((t) => ({
      taskId: t.taskId,
      sandboxId: t.sandboxId,
      cpuUsage: t.cpuUsage,
      memoryUsage: t.memoryUsage,
      cancelling: this.#pending.has(t.taskId),
      startedAtMs: t.dispatchedAtMs,
    }));
    const shedding = this.#options.duressShedding;
    const duressResource = deps.duress.resource;
    const decision = decide({
      enforcement: this.#enforcement,
      duress: duressLevel,
      duressResource,
      duressShedding:
        shedding === undefined
          ? undefined
          : {
              shed: this.#snapshot.shed,
              cancelAfterIntervals: shedding.cancelAfterIntervals,
              minUsage: shedding.minUsage,
              excess: Math.max(
                0,
                (duressResource === 'memory' ? node.memory : node.cpu) - deps.duress.threshold,
              ),
              standingQueue: deps.standingQueue?.() ?? true,
            },
      priorityBoost: this.#boosts(nowMs),
      selection: this.#options.selection,
      sandboxes,
      usage: sample.sandboxes,
      tasks,
    });
    this.#lastDecision = decision;
    const before = this.#snapshot;
    const previous = this.#snapshot.verdicts;
    this.#snapshot = {
      atMs: nowMs,
      ticks: this.#snapshot.ticks + 1,
      duress: duressLevel !== 'none',
      duressLevel,
      enforcement: this.#enforcement,
      node,
      usage: sample.sandboxes,
      verdicts: decision.verdicts,
      shed: decision.shed,
    };
    deps.publishStateChanges?.(before, this.#snapshot);

    const listener = deps.decisions;
    if (listener !== undefined) reportStateChanges(listener, previous, decision.verdicts, sandboxes, sample);

    for (const [id, v] of decision.verdicts) {
      if (v.wouldCancel) {
        const s = sandboxes.find((x) => x.id === id);
        const r = s !== undefined ? breachedHigh(s, sample.sandboxes.get(id)) : undefined;
        if (r !== undefined) deps.counters.of(id)[r].wouldCancel++;
      }
    }

    // Hard cancellation of tasks still running after the grace period.
    for (const [taskId, p] of this.#pending) {
      if (!p.hard && nowMs - p.softAtMs >= p.graceMs) {
        p.hard = true;
        if (p.cancellation.resource === 'time') this.#wallClockHardCancellations++;
        else this.#hardCancellations++;
        deps.hardCancel(taskId, p.cancellation.resource);
        if (listener !== undefined) reportCancellation(listener, p.cancellation, 'hard', sandboxes, sample);
      }
    }
    // The wall-clock watchdog: whatever their usage, tasks past their cancel-after (not rate limited).
    if (deps.cancelAfterMs !== undefined) {
      const cancelAfterMs = deps.cancelAfterMs;
      for (const c of overdueTasks(tasks, nowMs, (taskId) => cancelAfterMs(taskId)))
        this.#cancelForTime(c, nowMs);
      const schedule = deps.schedule;
      if (schedule !== undefined) {
        for (const due of dueWithin(tasks, nowMs, this.#intervalMs, (taskId) => cancelAfterMs(taskId))) {
          if (this.#wallClockTimers.has(due.taskId)) continue;
          const startedAtMs = nowMs + due.inMs - due.cancelAfterMs;
          const cancel = schedule(() => {
            this.#wallClockTimers.delete(due.taskId);
            const at = deps.nowMs();
            // The limit may have changed since; the next tick sees a task that is not due yet.
            const limit = cancelAfterMs(due.taskId);
            if (limit === undefined || at - startedAtMs < limit - 1) return;
            this.#cancelForTime(
              {
                taskId: due.taskId,
                sandboxId: due.sandboxId,
                cancelAfterMs: limit,
                ranMs: at - startedAtMs,
                resource: 'time',
              },
              at,
            );
          }, due.inMs);
          this.#wallClockTimers.set(due.taskId, cancel);
        }
      }
    }
    // New cancellations, in the decision's order, while either bucket has a token (as OpenSearch's
    // search backpressure does: it stops only when both are empty).
    const cancellations = decision.cancellations;
    for (let i = 0; i < cancellations.length; i++) {
      const c = cancellations[i]!;
      // Picked by the watchdog in this tick already.
      if (this.#pending.has(c.taskId)) continue;
      const byTime = this.#timeBucket.tryTake();
      const byCompletions = this.#completionBucket.tryTake();
      if (!byTime && !byCompletions) {
        for (let j = i; j < cancellations.length; j++) {
          const taskId = cancellations[j]!.taskId;
          if (!this.#heldBack.has(taskId)) {
            this.#heldBack.add(taskId);
            this.#rateLimited++;
          }
        }
        break;
      }
      const graceMs = deps.graceMsOf?.(c.taskId) ?? this.#graceMs;
      this.#pending.set(c.taskId, { cancellation: c, softAtMs: nowMs, graceMs, hard: false });
      this.#softCancellations++;
      this.#cutAtMs.set(c.sandboxId, nowMs);
      deps.softCancel(c.taskId, c.resource);
      if (listener !== undefined) reportCancellation(listener, c, 'soft', sandboxes, sample);
    }
  }
}

/** Tells `listener` of every sandbox whose published state differs from the last interval's. */
function reportStateChanges(
  listener: GovernorDecisionListener,
  previous: ReadonlyMap<string, SandboxVerdict>,
  verdicts: ReadonlyMap<string, SandboxVerdict>,
  sandboxes: readonly Sandbox[],
  sample: UsageSample,
): void {
  for (const [id, v] of verdicts) {
    const from = previous.get(id)?.state ?? 'ok';
    if (from === v.state) continue;
    const resource = v.state === 'ok' ? undefined : v.resource;
    const limit = resource === undefined ? undefined : sandboxes.find((s) => s.id === id)?.limits[resource];
    listener.stateChanged({
      sandboxId: id,
      from,
      to: v.state,
      resource,
      usage: resource === undefined ? undefined : sample.sandboxes.get(id)?.[resource],
      lowLimit: limit?.low,
      highLimit: limit?.high,
    });
  }
}

function reportCancellation(
  listener: GovernorDecisionListener,
  c: AnyCancellation,
  kind: 'soft' | 'hard',
  sandboxes: readonly Sandbox[],
  sample: UsageSample,
): void {
  if (c.resource === 'time') {
    reportWallClockCancellation(listener, c, kind);
    return;
  }
  const task = sample.tasks.find((t) => t.taskId === c.taskId);
  listener.cancelled({
    taskId: c.taskId,
    sandboxId: task?.sandboxId,
    breachedSandboxId: c.sandboxId,
    reason: c.reason ?? 'limit',
    resource: c.resource,
    kind,
    usage: sample.sandboxes.get(c.sandboxId)?.[c.resource],
    highLimit: sandboxes.find((s) => s.id === c.sandboxId)?.limits[c.resource]?.high,
    taskUsage: task === undefined ? undefined : c.resource === 'cpu' ? task.cpuUsage : task.memoryUsage,
  });
}

/** A wall-clock cancellation for `listener`: no usage figures, the limit the task ran past. */
function reportWallClockCancellation(
  listener: GovernorDecisionListener,
  c: WallClockCancellation,
  kind: 'soft' | 'hard',
): void {
  listener.cancelled({
    taskId: c.taskId,
    sandboxId: c.sandboxId,
    breachedSandboxId: c.sandboxId,
    resource: 'time',
    kind,
    usage: undefined,
    highLimit: undefined,
    taskUsage: undefined,
    cancelAfterMs: c.cancelAfterMs,
  });
}

function breachedHigh(s: Sandbox, usage: SandboxUsage | undefined): Resource | undefined {
  if (usage === undefined) return undefined;
  if (s.limits.cpu !== undefined && usage.cpu > s.limits.cpu.high) return 'cpu';
  if (s.limits.memory !== undefined && usage.memory > s.limits.memory.high) return 'memory';
  return undefined;
}
