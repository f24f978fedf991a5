/**
 * The scheduler in front of the pool: routes each task to the lane whose band holds its priority
 * (see `lanes.ts`), queues it there by priority (bounded aging, stable), hands tasks to free workers
 * of their lane (reserved workers take only tasks at or above their priority, unless they lend
 * themselves for one task while nothing eligible waits), keeps a global and a per-sandbox bound that
 * shed the lowest priority first across every lane, and counts per priority.
 *
 * A task never runs outside its lane: a background task does not take an idle foreground worker
 * (it would then hold it against the next foreground task, which is what lanes exist to prevent).
 *
 * Overload (docs/overload.md): each task may carry a queue-wait bound; `expire` removes the tasks past
 * theirs (a deadline heap). A lane whose queue has not been empty for `overload.intervalMs` is
 * *overloaded*; while it is, tasks that waited more than `overload.targetMs` are shed too (controlled
 * delay) and, with `overload.lifo`, each priority is served newest first (adaptive LIFO). Aging is
 * capped by a share (`agingOvertakeEvery`, see `aging-priority-queue.ts`).
 *
 * Single-threaded and synchronous: every method runs to completion on the event loop, so a
 * reconfiguration is one atomic swap (there is no lock to block in). A task is in exactly one place:
 * queued, running (holds a `Dispatch` until `release`), or handed back as evicted / dropped so the
 * caller can settle it.
 */
// hdr-histogram-js's index loads its WebAssembly build and pako too (46 modules); the one histogram
// class used here is 10 (`npm run bench:import` times the runtime entry). Loaded with require: its
// CommonJS `exports.default` reads the same under Node and under vitest.
import { createRequire } from 'node:module';
import type Float64HistogramModule from 'hdr-histogram-js/dist/Float64Histogram.js';
import { AgingPriorityQueue, type QueueEntry } from './aging-priority-queue.js';
import { type Deadlined, DeadlineHeap } from './deadline-heap.js';
import { laneOf, type ResolvedLane, singleLane } from './lanes.js';
import type { QueryPriorityConfig } from './query-priority.js';
import { planReservations, type ReservationPlan } from './worker-reservations.js';

export interface TaskSchedulerOptions<T = unknown> {
  /**
   * The lanes, as `resolveLanes` returns them (highest band first). Default: one lane of `capacity`
   * workers taking every priority.
   */
  readonly lanes?: readonly ResolvedLane[];
  /** Tasks that run at once when `lanes` is not given, >= 1. */
  readonly capacity?: number;
  /** Global bound on waiting tasks over every lane, >= 0 (0: a task runs at once or is refused). */
  readonly maxQueuedTasks: number;
  /** ms of waiting worth one priority point when the config does not say; default 100. */
  readonly agingMsPerPriority: number;
  /** FIFO baseline: arrival order only (within each lane), no reservations (for comparisons). Default false. */
  readonly fifo?: boolean;
  readonly config: QueryPriorityConfig;
  /**
   * Whether a waiting task may start now (its sandbox under its concurrency caps, see
   * `concurrency-caps.ts`). A task it refuses stays queued, and the tasks behind it, in its lane and
   * level, are handed out past it. Default: every task may start.
   */
  readonly mayStart?: (item: T) => boolean;
  /**
   * At most one dispatch in this many of a lane may be an aged overtake (a lower priority served
   * before a waiting higher one because it waited longer), integer >= 1; 1: plain aging. Default 4.
   */
  readonly agingOvertakeEvery?: number;
  /** What a lane does under a standing queue (see `OverloadPolicy`). Default: none of it. */
  readonly overload?: OverloadPolicy;
}

/**
 * A lane is *overloaded* while its queue has held at least one task for `intervalMs` without
 * emptying (Facebook's controlled delay, "Fail at Scale", 2015: a queue that never empties is a
 * standing queue, not a burst). While overloaded:
 * - `targetMs` (controlled delay): a task that has waited longer than it is shed (429 with reason
 *   `controlled_delay`), so the queue holds at most about `targetMs` of waiting; undefined: off;
 * - `lifo` (adaptive LIFO): each priority is served newest first, so the tasks served are the ones
 *   whose clients are least likely to have given up.
 * Not overloaded, the queue is FIFO within a priority and only each task's own bound applies.
 */
export interface OverloadPolicy {
  /** ms, > 0. */
  readonly intervalMs: number;
  /** ms, > 0, or undefined (no controlled delay). */
  readonly targetMs: number | undefined;
  readonly lifo: boolean;
}

/** A running task's hold on a worker of its lane; give it back with `release`. */
export interface Dispatch<T> {
  readonly item: T;
  readonly sandboxId: string;
  readonly priority: number;
  /** ms the task waited. */
  readonly waitMs: number;
  /** True when a reserved worker took it below its priority (lending). */
  readonly lent: boolean;
  /** Index of the lane it runs in (the order of `lanes`). */
  readonly lane: number;
  /** @internal the reservation group of its lane that it holds. */
  group: number;
}

/** Why a task left the queue without running. */
export type EvictionReason = 'queue_full' | 'sandbox_queue_full' | 'limit_lowered';

/** A task that waited past its bound (`queue_wait`) or past the controlled-delay target of its overloaded lane. */
export interface Expiry<T> {
  readonly item: T;
  readonly sandboxId: string;
  readonly priority: number;
  readonly reason: 'queue_wait' | 'controlled_delay';
  /** ms it waited. */
  readonly waitedMs: number;
  /** The bound it passed, ms: its own, or the lane's controlled-delay target. */
  readonly boundMs: number;
  /** Name of its lane. */
  readonly lane: string;
}

/** A queued task's handle, for `remove` (a caller that gave up). */
export interface QueueTicket<T> {
  readonly item: T;
  /** True while it waits. */
  readonly queued: boolean;
}

export interface Eviction<T> {
  readonly item: T;
  readonly sandboxId: string;
  readonly priority: number;
  readonly reason: EvictionReason;
  /** A sentence for the task's 429. */
  readonly message: string;
}

/** What `offer` returns as `evicted` when it evicted nothing: one shared empty list. */
const NO_EVICTIONS: readonly Eviction<never>[] = Object.freeze([]);

export type OfferResult<T> =
  | {
      readonly accepted: true;
      readonly evicted: readonly Eviction<T>[];
      readonly ticket: QueueTicket<T>;
      /**
       * Every worker of the task's lane was busy when it was queued: the dispatch loop has nothing
       * new to hand out until a task ends (or a worker, a cap or a rule changes, which run it anyway).
       */
      readonly laneFull: boolean;
    }
  | { readonly accepted: false; readonly reason: EvictionReason; readonly message: string };

/** Per-priority figures. Wait times in ms. */
export interface PriorityLevelStats {
  readonly priority: number;
  readonly queued: number;
  readonly dequeued: number;
  readonly evicted: number;
  /** Left the queue past their queue-wait bound or the controlled-delay target. */
  readonly expired: number;
  /** Removed because their caller gave up (aborted, timed out). */
  readonly removed: number;
  /** Dispatches of this priority onto a reserved worker lent below its priority. */
  readonly lent: number;
  readonly waitMs: {
    readonly count: number;
    readonly mean: number;
    readonly p50: number;
    readonly p99: number;
    readonly max: number;
  };
}

/** One reservation group of a lane. */
export interface ReservationStats {
  /** `null` for the lane's general group. */
  readonly minPriority: number | null;
  readonly workers: number;
  readonly busy: number;
}

/** One lane as the scheduler sees it. */
export interface LaneSchedulerStats {
  readonly name: string;
  /** Lowest priority the lane takes; `null` for the lowest lane (everything below the others). */
  readonly minPriority: number | null;
  readonly workers: number;
  /** Tasks handed to the lane's workers, running or prefetched: up to `workers + prefetch`. */
  readonly busy: number;
  /** Tasks the lane may hand out now beyond its workers, to wait for the next that frees (`setPrefetch`). */
  readonly prefetch: number;
  readonly queued: number;
  /** Its queue has not been empty for the overload interval (see `OverloadPolicy`). */
  readonly overloaded: boolean;
  readonly reservations: readonly ReservationStats[];
  readonly reservationsSuspended: ReservationPlan['suspended'];
}

export interface SchedulerStats {
  /** `priority`, or `fifo` (the baseline: arrival order, reservations off). */
  readonly queueOrder: 'priority' | 'fifo';
  readonly queued: number;
  readonly running: number;
  /** Workers over every lane (tasks that can run at once). */
  readonly capacity: number;
  readonly lanes: readonly LaneSchedulerStats[];
  readonly lending: boolean;
  readonly agingMsPerPriority: number;
  /** Highest priority first. */
  readonly priorities: readonly PriorityLevelStats[];
}

/** What a lane's queue holds per task: the caller's item, its sandbox, lane and deadline. */
class Waiting<T> implements Deadlined, QueueTicket<T> {
  readonly item: T;
  readonly sandboxId: string;
  readonly lane: number;
  /** arrival + bound, ms; Infinity: no bound. */
  readonly deadlineMs: number;
  readonly boundMs: number;
  entry!: QueueEntry<Waiting<T>>;

  constructor(item: T, sandboxId: string, lane: number, arrivalMs: number, boundMs: number) {
    this.item = item;
    this.sandboxId = sandboxId;
    this.lane = lane;
    this.boundMs = boundMs;
    this.deadlineMs = arrivalMs + boundMs;
  }

  get queued(): boolean {
    return this.entry.queued;
  }

  get seq(): number {
    return this.entry.seq;
  }
}

const { default: Float64Histogram } = createRequire(import.meta.url)(
  'hdr-histogram-js/dist/Float64Histogram.js',
) as typeof Float64HistogramModule;

class LevelCounters {
  dequeued = 0;
  evicted = 0;
  expired = 0;
  removed = 0;
  lent = 0;
  // What hdr.build({ bitBucketSize: 64, autoResize: true, ... }) makes, without the package's index.
  readonly wait = Object.assign(new Float64Histogram(1, 3_600_000_000, 2), { autoResize: true });
}

/** A lane's queue, reservation plan and busy workers per reservation group. */
class LaneState<T> {
  readonly spec: ResolvedLane;
  readonly queue: AgingPriorityQueue<Waiting<T>>;
  workers: number;
  plan!: ReservationPlan;
  busy!: number[];
  /** When its queue last went from empty to holding a task, ms. */
  nonEmptySinceMs = 0;
  /**
   * Workers of the lane loaded and taking tasks (see `setLiveWorkers`); Infinity: not told, as many
   * as `workers`. Fewer than `workers` while hard-cancelled workers' replacements load and the spares
   * are used up: the lane then takes no more tasks than it has live workers.
   */
  live = Number.POSITIVE_INFINITY;
  /**
   * Tasks the lane may hand out beyond its free workers, to wait inside the pool for the next worker
   * that frees (see `setPrefetch`); used only in a lane without reservations.
   */
  prefetch = 0;

  /** `prefetch` where it applies: a lane split into reservation groups prefetches nothing. */
  get extra(): number {
    return this.plan.groups.length === 1 ? this.prefetch : 0;
  }

  get busyTotal(): number {
    let n = 0;
    for (const b of this.busy) n += b;
    return n;
  }

  constructor(spec: ResolvedLane, aging: number, overtakeEvery: number) {
    this.spec = spec;
    this.workers = spec.workers;
    this.queue = new AgingPriorityQueue(aging, overtakeEvery);
  }
}

export class TaskScheduler<T> {
  readonly #lanes: LaneState<T>[];
  readonly #specs: readonly ResolvedLane[];
  readonly #maxQueuedTasks: number;
  readonly #defaultAging: number;
  readonly #fifo: boolean;
  readonly #overload: OverloadPolicy | undefined;
  readonly #deadlines = new DeadlineHeap<Waiting<T>>();
  readonly #mayStartItem: ((item: T) => boolean) | undefined;
  readonly #mayStart: ((item: Waiting<T>) => boolean) | undefined;
  #config: QueryPriorityConfig;
  /** The latest clock reading seen (offer, next, expire), for `stats`. */
  #lastNowMs = 0;
  #queued = 0;
  readonly #running = new Set<Dispatch<T>>();
  readonly #queuedPerSandbox = new Map<string, number>();
  readonly #levels = new Map<number, LevelCounters>();

  /** @throws RangeError for a capacity below 1, no lanes, or a negative bound. */
  constructor(options: TaskSchedulerOptions<T>) {
    const lanes =
      options.lanes ?? (options.capacity === undefined ? undefined : [singleLane(options.capacity, 0)]);
    if (lanes === undefined || lanes.length === 0) throw new RangeError('lanes or capacity must be given');
    for (const lane of lanes) {
      if (!(lane.workers >= 1)) throw new RangeError(`capacity must be >= 1; received ${lane.workers}`);
    }
    if (!(options.maxQueuedTasks >= 0))
      throw new RangeError(`maxQueuedTasks must be >= 0; received ${options.maxQueuedTasks}`);
    const overtakeEvery = options.agingOvertakeEvery ?? 4;
    if (!Number.isInteger(overtakeEvery) || overtakeEvery < 1)
      throw new RangeError(`agingOvertakeEvery must be an integer >= 1; received ${overtakeEvery}`);
    const overload = options.overload;
    if (overload !== undefined) {
      if (!(overload.intervalMs > 0))
        throw new RangeError(`overload.intervalMs must be > 0; received ${overload.intervalMs}`);
      if (overload.targetMs !== undefined && !(overload.targetMs > 0))
        throw new RangeError(`overload.targetMs must be > 0; received ${overload.targetMs}`);
    }
    this.#overload = overload;
    this.#maxQueuedTasks = options.maxQueuedTasks;
    this.#defaultAging = options.agingMsPerPriority;
    this.#fifo = options.fifo ?? false;
    this.#config = options.config;
    const mayStart = options.mayStart;
    this.#mayStartItem = mayStart;
    this.#mayStart = mayStart === undefined ? undefined : (w) => mayStart(w.item);
    this.#specs = lanes;
    const aging = this.#aging();
    this.#lanes = lanes.map((spec) => new LaneState<T>(spec, aging, this.#fifo ? 1 : overtakeEvery));
    for (const lane of this.#lanes) this.#replan(lane);
  }

  get config(): QueryPriorityConfig {
    return this.#config;
  }

  /** Tasks waiting, over every lane. */
  get length(): number {
    return this.#queued;
  }

  get running(): number {
    return this.#running.size;
  }

  /** The lanes, highest band first (as given). */
  get lanes(): readonly ResolvedLane[] {
    return this.#specs;
  }

  /** Index of the lane that takes tasks of `priority`. */
  laneOf(priority: number): number {
    return laneOf(this.#specs, priority);
  }

  /**
   * Queues a task of `priority` for `sandboxId` in its lane. When the sandbox's bound or the global
   * bound is reached, the newest of the lowest-priority waiting tasks (of that sandbox, for its
   * bound; of any lane) makes room if its priority is lower; else the incoming task is refused.
   * Evicted tasks are returned for the caller to settle; they are no longer queued.
   *
   * `maxWaitMs` (> 0 or Infinity, default Infinity) is the task's queue-wait bound: `expire` hands it
   * back once it has waited that long. The `ticket` lets a caller that gives up `remove` it.
   */
  offer(
    item: T,
    sandboxId: string,
    priority: number,
    nowMs: number,
    maxWaitMs = Number.POSITIVE_INFINITY,
  ): OfferResult<T> {
    this.#lastNowMs = nowMs;
    let evicted: readonly Eviction<T>[] = NO_EVICTIONS;
    const laneIndex = this.laneOf(priority);
    const lane = this.#lanes[laneIndex]!;
    // A task a free worker takes at once does not wait: no bound applies to it. One held back by its
    // sandbox's concurrency cap waits, and counts against the bounds.
    const extra = lane.extra;
    const laneFull = lane.busyTotal >= lane.live + extra || lane.busyTotal >= lane.workers + extra;
    const runsNow =
      !laneFull && (extra > 0 || this.#groupFor(lane, priority) >= 0) && (this.#mayStartItem?.(item) ?? true);
    const sandboxLimit = this.#sandboxLimit(sandboxId);
    if (
      !runsNow &&
      sandboxLimit !== undefined &&
      (this.#queuedPerSandbox.get(sandboxId) ?? 0) >= sandboxLimit
    ) {
      const victim = this.#newestBelow(priority, (w) => w.sandboxId === sandboxId);
      if (victim === undefined) {
        return {
          accepted: false,
          reason: 'sandbox_queue_full',
          message:
            `rejected: sandbox [${sandboxId}] has ${sandboxLimit} tasks waiting (its queue bound), ` +
            `none of lower priority than ${priority}`,
        };
      }
      evicted = [
        this.#evict(
          victim,
          'sandbox_queue_full',
          `rejected: evicted from sandbox [${sandboxId}]'s full queue (${sandboxLimit} tasks waiting) by a task of ` +
            `higher priority (${priority} > ${victim.entry.priority})`,
        ),
      ];
    }
    if (!runsNow && this.#queued >= this.#maxQueuedTasks) {
      const victim = this.#newestBelow(priority);
      if (victim === undefined) {
        // Put back nothing: a sandbox eviction above already freed a place, so this cannot happen then.
        return {
          accepted: false,
          reason: 'queue_full',
          message:
            `rejected: the queue is full (${this.#maxQueuedTasks} tasks waiting, none of lower priority ` +
            `than ${priority}, sandbox [${sandboxId}])`,
        };
      }
      evicted = [
        ...evicted,
        this.#evict(
          victim,
          'queue_full',
          `rejected: evicted from the full queue (${this.#maxQueuedTasks} tasks waiting) by a task of higher ` +
            `priority (sandbox [${sandboxId}], ${priority} > ${victim.entry.priority})`,
        ),
      ];
    }
    if (lane.queue.length === 0) lane.nonEmptySinceMs = nowMs;
    const waiting = new Waiting(item, sandboxId, laneIndex, nowMs, maxWaitMs);
    waiting.entry = lane.queue.push(waiting, priority, nowMs);
    if (Number.isFinite(waiting.deadlineMs)) this.#deadlines.push(waiting);
    this.#queued++;
    this.#queuedPerSandbox.set(sandboxId, (this.#queuedPerSandbox.get(sandboxId) ?? 0) + 1);
    return { accepted: true, evicted, ticket: waiting, laneFull };
  }

  /**
   * Removes a queued task whose caller gave up (it never runs). False when it no longer waits
   * (dispatched, evicted, expired or removed already).
   */
  remove(ticket: QueueTicket<T>): boolean {
    const waiting = ticket as Waiting<T>;
    if (!waiting.queued) return false;
    const lane = this.#lanes[waiting.lane]!;
    lane.queue.remove(waiting.entry);
    this.#left(waiting);
    this.#countersOf(waiting.entry.priority).removed++;
    return true;
  }

  /**
   * Removes and returns the tasks that must not wait any longer at `nowMs`: those past their own
   * bound (`queue_wait`, earliest deadline first), then, in each overloaded lane with a controlled-delay
   * target, those that waited longer than the target (`controlled_delay`). Call it before `next` so
   * that nothing past its bound is dispatched, and again at `nextExpiryMs`.
   */
  expire(nowMs: number): Expiry<T>[] {
    this.#lastNowMs = nowMs;
    const out: Expiry<T>[] = [];
    for (const waiting of this.#deadlines.popDue(nowMs)) {
      const entry = waiting.entry;
      this.#lanes[waiting.lane]!.queue.remove(entry);
      this.#left(waiting, false);
      this.#countersOf(entry.priority).expired++;
      out.push({
        item: waiting.item,
        sandboxId: waiting.sandboxId,
        priority: entry.priority,
        reason: 'queue_wait',
        waitedMs: nowMs - entry.arrivalMs,
        boundMs: waiting.boundMs,
        lane: this.#lanes[waiting.lane]!.spec.name,
      });
    }
    const target = this.#overload?.targetMs;
    if (target === undefined) return out;
    for (const lane of this.#lanes) {
      if (!this.#overloaded(lane, nowMs)) continue;
      for (const entry of lane.queue.removeArrivedBy(nowMs - target)) {
        const waiting = entry.item;
        this.#left(waiting);
        this.#countersOf(entry.priority).expired++;
        out.push({
          item: waiting.item,
          sandboxId: waiting.sandboxId,
          priority: entry.priority,
          reason: 'controlled_delay',
          waitedMs: nowMs - entry.arrivalMs,
          boundMs: target,
          lane: lane.spec.name,
        });
      }
    }
    return out;
  }

  /**
   * When `expire` next has something to do if nothing else changes, ms on the caller's clock; undefined
   * when no queued task has a bound and no lane can become overloaded. May be in the past.
   */
  nextExpiryMs(): number | undefined {
    let next = this.#deadlines.nextDeadlineMs();
    const overload = this.#overload;
    if (overload?.targetMs !== undefined) {
      for (const lane of this.#lanes) {
        const oldest = lane.queue.oldestArrivalMs();
        if (oldest === undefined) continue;
        const at = Math.max(lane.nonEmptySinceMs + overload.intervalMs, oldest + overload.targetMs);
        if (next === undefined || at < next) next = at;
      }
    }
    return next;
  }

  /** True while lane `lane`'s queue has not been empty for the overload interval. */
  overloaded(lane: number, nowMs: number): boolean {
    const state = this.#lanes[lane];
    return state !== undefined && this.#overloaded(state, nowMs);
  }

  #overloaded(lane: LaneState<T>, nowMs: number): boolean {
    const overload = this.#overload;
    return (
      overload !== undefined && lane.queue.length > 0 && nowMs - lane.nonEmptySinceMs >= overload.intervalMs
    );
  }

  /** Book-keeping for a task that left its lane's queue without being dispatched. */
  #left(waiting: Waiting<T>, inHeap = Number.isFinite(waiting.deadlineMs)): void {
    this.#queued--;
    this.#decrementQueued(waiting.sandboxId);
    if (inHeap) this.#deadlines.forgetOne();
  }

  /**
   * The next task for a free worker of any lane (the highest band first), or undefined when no lane
   * has a free worker with a task it may take. The caller runs it in `dispatch.lane` and calls
   * `release` when it ends.
   */
  next(nowMs: number): Dispatch<T> | undefined {
    this.#lastNowMs = nowMs;
    for (let i = 0; i < this.#lanes.length; i++) {
      const dispatch = this.#nextIn(i, nowMs);
      if (dispatch !== undefined) return dispatch;
    }
    return undefined;
  }

  #nextIn(laneIndex: number, nowMs: number): Dispatch<T> | undefined {
    const lane = this.#lanes[laneIndex]!;
    // A prefetching lane (one group: every priority) hands out `extra` tasks beyond its workers.
    const extra = lane.extra;
    if (lane.queue.length === 0 || lane.busyTotal >= lane.live + extra) return undefined;
    const groups = lane.plan.groups;
    let floor = Number.POSITIVE_INFINITY;
    for (let i = 0; i < groups.length; i++) {
      if (lane.busy[i]! < groups[i]!.workers + extra && groups[i]!.minPriority < floor)
        floor = groups[i]!.minPriority;
    }
    if (floor === Number.POSITIVE_INFINITY) return undefined;
    if (this.#overload?.lifo === true) lane.queue.lifo = this.#overloaded(lane, nowMs);
    const mayStart = this.#mayStart;
    let entry = lane.queue.peek(floor, mayStart);
    let group = -1;
    let lent = false;
    if (entry !== undefined) {
      group = this.#groupFor(lane, entry.priority);
      if (group < 0 && extra > 0) group = 0;
    } else if (this.#config.lending) {
      // Nothing a free (reserved) worker may take waits: lend the least valuable one for this task.
      entry = lane.queue.peek(Number.NEGATIVE_INFINITY, mayStart);
      for (let i = groups.length - 1; i >= 1; i--) {
        if (lane.busy[i]! < groups[i]!.workers) {
          group = i;
          break;
        }
      }
      lent = true;
    }
    if (entry === undefined || group < 0) return undefined;
    lane.queue.take(entry);
    this.#queued--;
    this.#decrementQueued(entry.item.sandboxId);
    if (Number.isFinite(entry.item.deadlineMs)) this.#deadlines.forgetOne();
    lane.busy[group]!++;
    const waitMs = Math.max(0, nowMs - entry.arrivalMs);
    const counters = this.#countersOf(entry.priority);
    counters.dequeued++;
    if (lent) counters.lent++;
    counters.wait.recordValue(Math.max(1, Math.round(waitMs * 1000)));
    const dispatch: Dispatch<T> = {
      item: entry.item.item,
      sandboxId: entry.item.sandboxId,
      priority: entry.priority,
      waitMs,
      lent,
      lane: laneIndex,
      group,
    };
    this.#running.add(dispatch);
    return dispatch;
  }

  /** Gives back the worker a task held. Idempotent. */
  release(dispatch: Dispatch<T>): void {
    if (!this.#running.delete(dispatch)) return;
    this.#lanes[dispatch.lane]!.busy[dispatch.group]!--;
  }

  /**
   * Swaps in a new configuration (already validated, including `checkReservations`). Queued tasks keep
   * the priority (and lane) they were given; aging, reservations, lending and bounds apply from now
   * on. Where a sandbox's lowered bound leaves more tasks waiting than it allows, the newest excess
   * (lowest priority first) is dropped and returned for the caller to refuse.
   */
  configure(config: QueryPriorityConfig): Eviction<T>[] {
    this.#config = config;
    const aging = this.#aging();
    for (const lane of this.#lanes) {
      lane.queue.agingMsPerPriority = aging;
      this.#replan(lane);
    }
    const dropped: Eviction<T>[] = [];
    for (const [sandboxId, count] of [...this.#queuedPerSandbox]) {
      const limit = this.#sandboxLimit(sandboxId);
      if (limit === undefined || count <= limit) continue;
      for (let excess = count - limit; excess > 0; excess--) {
        const victim = this.#newestBelow(Number.POSITIVE_INFINITY, (w) => w.sandboxId === sandboxId)!;
        dropped.push(
          this.#evict(
            victim,
            'limit_lowered',
            `rejected: sandbox [${sandboxId}]'s queue bound was lowered to ${limit} while ${count} tasks waited; ` +
              'the newest of the lowest priority were dropped',
          ),
        );
      }
    }
    return dropped;
  }

  /**
   * Changes the workers of lane `lane` (default 0; >= 1); fractional reservations are recomputed and
   * the lane's running tasks placed again.
   */
  setCapacity(capacity: number, lane = 0): void {
    if (!(capacity >= 1)) throw new RangeError(`capacity must be >= 1; received ${capacity}`);
    const state = this.#lanes[lane];
    if (state === undefined) throw new RangeError(`no lane ${lane}`);
    state.workers = capacity;
    this.#replan(state);
  }

  /**
   * Tells how many workers of lane `lane` are loaded and taking tasks (integer >= 0; Infinity: no
   * limit beyond `workers`). The lane hands out no more tasks than that at once: a task handed to a
   * pool with no free live worker would wait inside the pool, past every queue-wait bound and
   * unseen as waiting, until a replacement loads (a large index: seconds). Here it waits in the
   * queue, where its bound applies. @throws RangeError for a negative or fractional count.
   */
  setLiveWorkers(lane: number, live: number): void {
    if (!(live === Number.POSITIVE_INFINITY || (Number.isInteger(live) && live >= 0)))
      throw new RangeError(`live workers must be an integer >= 0; received ${live}`);
    const state = this.#lanes[lane];
    if (state === undefined) throw new RangeError(`no lane ${lane}`);
    state.live = live;
  }

  /**
   * Lets lane `lane` hand out up to `tasks` (integer >= 0; 0: none) tasks beyond its free live
   * workers, which wait inside the pool and start on the next worker that frees, in the same turn of
   * the event loop that takes the last task's result instead of a round trip through this queue
   * later (piscina distributes its own queue synchronously). The dispatch loop sets it per lane (see
   * `execution/prefetch.ts`). A lane split into reservation groups prefetches nothing: a reserved
   * worker must not start a task of the general group. @throws RangeError for a negative or
   * fractional count, or no such lane.
   */
  setPrefetch(lane: number, tasks: number): void {
    if (!(Number.isInteger(tasks) && tasks >= 0))
      throw new RangeError(`prefetch must be an integer >= 0; received ${tasks}`);
    const state = this.#lanes[lane];
    if (state === undefined) throw new RangeError(`no lane ${lane}`);
    state.prefetch = tasks;
  }

  /** Removes and returns every queued task (at shutdown). */
  drain(): T[] {
    const out: T[] = [];
    for (const lane of this.#lanes) {
      for (let e = lane.queue.peek(); e !== undefined; e = lane.queue.peek()) {
        lane.queue.remove(e);
        out.push(e.item.item);
      }
    }
    this.#queued = 0;
    this.#queuedPerSandbox.clear();
    this.#deadlines.clear();
    return out;
  }

  /** Queued tasks per sandbox id. */
  queuedBySandbox(): ReadonlyMap<string, number> {
    return this.#queuedPerSandbox;
  }

  /** Every waiting task, lane by lane (for stats; not on the dispatch path). */
  *queuedItems(): IterableIterator<T> {
    for (const lane of this.#lanes) for (const w of lane.queue) yield w.item;
  }

  stats(): SchedulerStats {
    const queuedByPriority = new Map<number, number>();
    for (const lane of this.#lanes) {
      for (const l of lane.queue.levelLengths()) {
        queuedByPriority.set(l.priority, (queuedByPriority.get(l.priority) ?? 0) + l.length);
      }
    }
    const priorities = new Set([...this.#levels.keys(), ...queuedByPriority.keys()]);
    return {
      queueOrder: this.#fifo ? 'fifo' : 'priority',
      queued: this.#queued,
      running: this.#running.size,
      capacity: this.#lanes.reduce((sum, lane) => sum + lane.workers, 0),
      lanes: this.#lanes.map((lane) => ({
        name: lane.spec.name,
        minPriority: Number.isFinite(lane.spec.minPriority) ? lane.spec.minPriority : null,
        workers: lane.workers,
        busy: lane.busy.reduce((sum, n) => sum + n, 0),
        prefetch: lane.extra,
        queued: lane.queue.length,
        overloaded: this.#overloaded(lane, this.#lastNowMs),
        reservations: lane.plan.groups.map((group, i) => ({
          minPriority: Number.isFinite(group.minPriority) ? group.minPriority : null,
          workers: group.workers,
          busy: lane.busy[i]!,
        })),
        reservationsSuspended: lane.plan.suspended,
      })),
      lending: this.#config.lending,
      agingMsPerPriority: this.#aging(),
      priorities: [...priorities]
        .sort((a, b) => b - a)
        .map((priority) => {
          const c = this.#levels.get(priority);
          const h = c?.wait;
          const count = h?.totalCount ?? 0;
          // hdr percentiles are bucket edges, a little above the value recorded: never above the max.
          const max = count === 0 ? 0 : h!.maxValue / 1000;
          const at = (p: number) => (count === 0 ? 0 : Math.min(max, h!.getValueAtPercentile(p) / 1000));
          return {
            priority,
            queued: queuedByPriority.get(priority) ?? 0,
            dequeued: c?.dequeued ?? 0,
            evicted: c?.evicted ?? 0,
            expired: c?.expired ?? 0,
            removed: c?.removed ?? 0,
            lent: c?.lent ?? 0,
            waitMs: {
              count,
              mean: count === 0 ? 0 : h!.mean / 1000,
              p50: at(50),
              p99: at(99),
              max,
            },
          };
        }),
    };
  }

  #aging(): number {
    if (this.#fifo) return 0;
    return this.#config.agingMsPerPriority ?? this.#defaultAging;
  }

  /** Recomputes a lane's reservation groups and places its running tasks in them again. */
  #replan(lane: LaneState<T>): void {
    lane.plan = this.#fifo
      ? {
          groups: [{ minPriority: Number.NEGATIVE_INFINITY, workers: lane.workers }],
          reserved: 0,
          suspended: undefined,
        }
      : planReservations(this.#config, lane.workers, lane.spec);
    const groups = lane.plan.groups;
    lane.busy = groups.map(() => 0);
    const laneIndex = this.#lanes.indexOf(lane);
    const running = [...this.#running]
      .filter((d) => d.lane === laneIndex)
      .sort((a, b) => b.priority - a.priority);
    for (const dispatch of running) {
      let group = this.#groupFor(lane, dispatch.priority);
      if (group < 0) group = groups.findIndex((g, i) => lane.busy[i]! < g.workers);
      // Over capacity after a shrink: count it in the general group until it ends.
      dispatch.group = Math.max(group, 0);
      lane.busy[dispatch.group]!++;
    }
  }

  /** The free group of `lane` with the highest `minPriority` that takes `priority`, or -1. */
  #groupFor(lane: LaneState<T>, priority: number): number {
    const groups = lane.plan.groups;
    let best = -1;
    for (let i = 0; i < groups.length; i++) {
      const group = groups[i]!;
      if (lane.busy[i]! >= group.workers || group.minPriority > priority) continue;
      if (best < 0 || group.minPriority > groups[best]!.minPriority) best = i;
    }
    return best;
  }

  /** The newest of the lowest-priority waiting tasks over every lane (accepted by `filter`) below `priority`. */
  #newestBelow(
    priority: number,
    filter?: (w: Waiting<T>) => boolean,
  ): { readonly lane: LaneState<T>; readonly entry: QueueEntry<Waiting<T>> } | undefined {
    let best: { lane: LaneState<T>; entry: QueueEntry<Waiting<T>> } | undefined;
    for (const lane of this.#lanes) {
      const entry = lane.queue.newestBelow(priority, filter);
      if (entry === undefined) continue;
      if (
        best === undefined ||
        entry.priority < best.entry.priority ||
        (entry.priority === best.entry.priority && entry.seq > best.entry.seq)
      ) {
        best = { lane, entry };
      }
    }
    return best;
  }

  #sandboxLimit(sandboxId: string): number | undefined {
    return this.#config.sandboxQueueLimits.get(sandboxId) ?? this.#config.maxQueuedPerSandbox;
  }

  #evict(
    victim: { readonly lane: LaneState<T>; readonly entry: QueueEntry<Waiting<T>> },
    reason: EvictionReason,
    message: string,
  ): Eviction<T> {
    const { lane, entry } = victim;
    lane.queue.remove(entry);
    this.#left(entry.item);
    this.#countersOf(entry.priority).evicted++;
    return {
      item: entry.item.item,
      sandboxId: entry.item.sandboxId,
      priority: entry.priority,
      reason,
      message,
    };
  }

  #decrementQueued(sandboxId: string): void {
    const n = (this.#queuedPerSandbox.get(sandboxId) ?? 0) - 1;
    if (n <= 0) this.#queuedPerSandbox.delete(sandboxId);
    else this.#queuedPerSandbox.set(sandboxId, n);
  }

  #countersOf(priority: number): LevelCounters {
    let c = this.#levels.get(priority);
    if (c === undefined) {
      c = new LevelCounters();
      this.#levels.set(priority, c);
    }
    return c;
  }
}
