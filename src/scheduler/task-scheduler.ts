/**
 * The scheduler in front of the pool: queues tasks by priority (bounded aging, stable), hands them to
 * free workers lane by lane (reserved workers take only tasks at or above their priority, unless they
 * lend themselves for one task while nothing eligible waits), keeps a global and a per-sandbox bound
 * that sheds the lowest priority first, and counts per priority.
 *
 * Single-threaded and synchronous: every method runs to completion on the event loop, so a
 * reconfiguration is one atomic swap (there is no lock to block in). A task is in exactly one place:
 * queued, running (holds a `Dispatch` until `release`), or handed back as evicted / dropped so the
 * caller can settle it.
 */
import * as hdr from 'hdr-histogram-js';
import { AgingPriorityQueue, type QueueEntry } from './aging-priority-queue.js';
import type { QueryPriorityConfig } from './query-priority.js';
import { type Lane, type LanePlan, planLanes } from './worker-reservations.js';

export interface TaskSchedulerOptions {
  /** Tasks that run at once (the pool's workers), >= 1. */
  readonly capacity: number;
  /** Global bound on waiting tasks, >= 0 (0: a task runs at once or is refused). */
  readonly maxQueuedTasks: number;
  /** ms of waiting worth one priority point when the config does not say; default 100. */
  readonly agingMsPerPriority: number;
  /** FIFO baseline: arrival order only, no reservations (for comparisons). Default false. */
  readonly fifo?: boolean;
  readonly config: QueryPriorityConfig;
}

/** A running task's hold on a lane; give it back with `release`. */
export interface Dispatch<T> {
  readonly item: T;
  readonly sandboxId: string;
  readonly priority: number;
  /** ms the task waited. */
  readonly waitMs: number;
  /** True when a reserved worker took it below its priority (lending). */
  readonly lent: boolean;
  /** @internal the lane index it holds. */
  lane: number;
}

/** Why a task left the queue without running. */
export type EvictionReason = 'queue_full' | 'sandbox_queue_full' | 'limit_lowered';

export interface Eviction<T> {
  readonly item: T;
  readonly sandboxId: string;
  readonly priority: number;
  readonly reason: EvictionReason;
  /** A sentence for the task's 429. */
  readonly message: string;
}

export type OfferResult<T> =
  | { readonly accepted: true; readonly evicted: readonly Eviction<T>[] }
  | { readonly accepted: false; readonly reason: EvictionReason; readonly message: string };

/** Per-priority figures. Wait times in ms. */
export interface PriorityLevelStats {
  readonly priority: number;
  readonly queued: number;
  readonly dequeued: number;
  readonly evicted: number;
  /** Dispatches of this priority onto a reserved worker lent below its priority. */
  readonly lent: number;
  readonly waitMs: { readonly count: number; readonly mean: number; readonly p50: number; readonly p99: number; readonly max: number };
}

export interface SchedulerStats {
  /** `priority`, or `fifo` (the baseline: arrival order, reservations off). */
  readonly queueOrder: 'priority' | 'fifo';
  readonly queued: number;
  readonly running: number;
  readonly capacity: number;
  readonly lanes: ReadonlyArray<{ readonly minPriority: number | null; readonly workers: number; readonly busy: number }>;
  readonly reservationsSuspended: LanePlan['suspended'];
  readonly lending: boolean;
  readonly agingMsPerPriority: number;
  /** Highest priority first. */
  readonly priorities: readonly PriorityLevelStats[];
}

interface Waiting<T> {
  readonly item: T;
  readonly sandboxId: string;
}

class LevelCounters {
  dequeued = 0;
  evicted = 0;
  lent = 0;
  readonly wait = hdr.build({
    bitBucketSize: 64,
    autoResize: true,
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 2,
  });
}

export class TaskScheduler<T> {
  readonly #queue: AgingPriorityQueue<Waiting<T>>;
  readonly #maxQueuedTasks: number;
  readonly #defaultAging: number;
  readonly #fifo: boolean;
  #config: QueryPriorityConfig;
  #capacity: number;
  #plan: LanePlan;
  #busy: number[];
  readonly #running = new Set<Dispatch<T>>();
  readonly #queuedPerSandbox = new Map<string, number>();
  readonly #levels = new Map<number, LevelCounters>();

  /** @throws RangeError for a capacity below 1 or a negative bound. */
  constructor(options: TaskSchedulerOptions) {
    if (!(options.capacity >= 1)) throw new RangeError(`capacity must be >= 1; received ${options.capacity}`);
    if (!(options.maxQueuedTasks >= 0))
      throw new RangeError(`maxQueuedTasks must be >= 0; received ${options.maxQueuedTasks}`);
    this.#maxQueuedTasks = options.maxQueuedTasks;
    this.#defaultAging = options.agingMsPerPriority;
    this.#fifo = options.fifo ?? false;
    this.#config = options.config;
    this.#capacity = options.capacity;
    this.#queue = new AgingPriorityQueue(this.#aging());
    this.#plan = this.#planFor(options.config, options.capacity);
    this.#busy = this.#plan.lanes.map(() => 0);
  }

  get config(): QueryPriorityConfig {
    return this.#config;
  }

  get length(): number {
    return this.#queue.length;
  }

  get running(): number {
    return this.#running.size;
  }

  /**
   * Queues a task of `priority` for `sandboxId`. When the sandbox's bound or the global bound is
   * reached, the newest of the lowest-priority waiting tasks (of that sandbox, for its bound) makes
   * room if its priority is lower; else the incoming task is refused. Evicted tasks are returned for
   * the caller to settle; they are no longer queued.
   */
  offer(item: T, sandboxId: string, priority: number, nowMs: number): OfferResult<T> {
    const evicted: Eviction<T>[] = [];
    // A task a free worker takes at once does not wait: no bound applies to it.
    const runsNow = this.#laneFor(priority) >= 0;
    const sandboxLimit = this.#sandboxLimit(sandboxId);
    if (
      !runsNow &&
      sandboxLimit !== undefined &&
      (this.#queuedPerSandbox.get(sandboxId) ?? 0) >= sandboxLimit
    ) {
      const victim = this.#queue.newestBelow(priority, (w) => w.sandboxId === sandboxId);
      if (victim === undefined) {
        return {
          accepted: false,
          reason: 'sandbox_queue_full',
          message:
            `rejected: sandbox [${sandboxId}] has ${sandboxLimit} tasks waiting (its queue bound), ` +
            `none of lower priority than ${priority}`,
        };
      }
      evicted.push(
        this.#evict(
          victim,
          'sandbox_queue_full',
          `rejected: evicted from sandbox [${sandboxId}]'s full queue (${sandboxLimit} tasks waiting) by a task of ` +
            `higher priority (${priority} > ${victim.priority})`,
        ),
      );
    }
    if (!runsNow && this.#queue.length >= this.#maxQueuedTasks) {
      const victim = this.#queue.newestBelow(priority);
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
      evicted.push(
        this.#evict(
          victim,
          'queue_full',
          `rejected: evicted from the full queue (${this.#maxQueuedTasks} tasks waiting) by a task of higher ` +
            `priority (sandbox [${sandboxId}], ${priority} > ${victim.priority})`,
        ),
      );
    }
    this.#queue.push({ item, sandboxId }, priority, nowMs);
    this.#queuedPerSandbox.set(sandboxId, (this.#queuedPerSandbox.get(sandboxId) ?? 0) + 1);
    return { accepted: true, evicted };
  }

  /**
   * The next task for a free worker, or undefined when no worker is free or nothing it may take
   * waits. The caller runs it and calls `release` when it ends.
   */
  next(nowMs: number): Dispatch<T> | undefined {
    const lanes = this.#plan.lanes;
    let floor = Number.POSITIVE_INFINITY;
    for (let i = 0; i < lanes.length; i++) {
      if (this.#busy[i]! < lanes[i]!.workers && lanes[i]!.minPriority < floor) floor = lanes[i]!.minPriority;
    }
    if (floor === Number.POSITIVE_INFINITY) return undefined;
    let entry = this.#queue.peek(floor);
    let lane = -1;
    let lent = false;
    if (entry !== undefined) {
      lane = this.#laneFor(entry.priority);
    } else if (this.#config.lending && this.#queue.length > 0) {
      // Nothing a free (reserved) worker may take waits: lend the least valuable one for this task.
      entry = this.#queue.peek();
      for (let i = lanes.length - 1; i >= 1; i--) {
        if (this.#busy[i]! < lanes[i]!.workers) {
          lane = i;
          break;
        }
      }
      lent = true;
    }
    if (entry === undefined || lane < 0) return undefined;
    this.#queue.remove(entry);
    this.#decrementQueued(entry.item.sandboxId);
    this.#busy[lane]!++;
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
      lane,
    };
    this.#running.add(dispatch);
    return dispatch;
  }

  /** Gives back the lane a task held. Idempotent. */
  release(dispatch: Dispatch<T>): void {
    if (!this.#running.delete(dispatch)) return;
    this.#busy[dispatch.lane]!--;
  }

  /**
   * Swaps in a new configuration (already validated, including `checkReservations`). Queued tasks keep
   * the priority they were given; aging, lanes, lending and bounds apply from now on. Where a sandbox's
   * lowered bound leaves more tasks waiting than it allows, the newest excess (lowest priority first) is
   * dropped and returned for the caller to refuse.
   */
  configure(config: QueryPriorityConfig): Eviction<T>[] {
    this.#config = config;
    this.#queue.agingMsPerPriority = this.#aging();
    this.#replan();
    const dropped: Eviction<T>[] = [];
    for (const [sandboxId, count] of [...this.#queuedPerSandbox]) {
      const limit = this.#sandboxLimit(sandboxId);
      if (limit === undefined || count <= limit) continue;
      for (let excess = count - limit; excess > 0; excess--) {
        const victim = this.#queue.newestBelow(Number.POSITIVE_INFINITY, (w) => w.sandboxId === sandboxId)!;
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

  /** Changes the pool's size (>= 1); fractional reservations are recomputed. */
  setCapacity(capacity: number): void {
    if (!(capacity >= 1)) throw new RangeError(`capacity must be >= 1; received ${capacity}`);
    this.#capacity = capacity;
    this.#replan();
  }

  /** Removes and returns every queued task (at shutdown). */
  drain(): T[] {
    const out: T[] = [];
    for (let e = this.#queue.peek(); e !== undefined; e = this.#queue.peek()) {
      this.#queue.remove(e);
      out.push(e.item.item);
    }
    this.#queuedPerSandbox.clear();
    return out;
  }

  /** Queued tasks per sandbox id. */
  queuedBySandbox(): ReadonlyMap<string, number> {
    return this.#queuedPerSandbox;
  }

  stats(): SchedulerStats {
    const queuedByPriority = new Map(this.#queue.levelLengths().map((l) => [l.priority, l.length]));
    const priorities = new Set([...this.#levels.keys(), ...queuedByPriority.keys()]);
    return {
      queueOrder: this.#fifo ? 'fifo' : 'priority',
      queued: this.#queue.length,
      running: this.#running.size,
      capacity: this.#capacity,
      lanes: this.#plan.lanes.map((lane, i) => ({
        minPriority: Number.isFinite(lane.minPriority) ? lane.minPriority : null,
        workers: lane.workers,
        busy: this.#busy[i]!,
      })),
      reservationsSuspended: this.#plan.suspended,
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

  #planFor(config: QueryPriorityConfig, capacity: number): LanePlan {
    if (this.#fifo)
      return { lanes: [{ minPriority: Number.NEGATIVE_INFINITY, workers: capacity }], reserved: 0, suspended: undefined };
    return planLanes(config, capacity);
  }

  /** Recomputes the lanes and places the running tasks in them again. */
  #replan(): void {
    this.#plan = this.#planFor(this.#config, this.#capacity);
    const lanes = this.#plan.lanes;
    this.#busy = lanes.map(() => 0);
    const running = [...this.#running].sort((a, b) => b.priority - a.priority);
    for (const dispatch of running) {
      let lane = this.#laneFor(dispatch.priority);
      if (lane < 0) lane = lanes.findIndex((l, i) => this.#busy[i]! < l.workers);
      // Over capacity after a shrink: count it in the general lane until it ends.
      dispatch.lane = Math.max(lane, 0);
      this.#busy[dispatch.lane]!++;
    }
  }

  /** The free lane with the highest `minPriority` that takes `priority`, or -1. */
  #laneFor(priority: number): number {
    const lanes = this.#plan.lanes;
    let best = -1;
    for (let i = 0; i < lanes.length; i++) {
      const lane: Lane = lanes[i]!;
      if (this.#busy[i]! >= lane.workers || lane.minPriority > priority) continue;
      if (best < 0 || lane.minPriority > lanes[best]!.minPriority) best = i;
    }
    return best;
  }

  #sandboxLimit(sandboxId: string): number | undefined {
    return this.#config.sandboxQueueLimits.get(sandboxId) ?? this.#config.maxQueuedPerSandbox;
  }

  #evict(entry: QueueEntry<Waiting<T>>, reason: EvictionReason, message: string): Eviction<T> {
    this.#queue.remove(entry);
    this.#decrementQueued(entry.item.sandboxId);
    this.#countersOf(entry.priority).evicted++;
    return { item: entry.item.item, sandboxId: entry.item.sandboxId, priority: entry.priority, reason, message };
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
