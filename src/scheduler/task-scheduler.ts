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
  readonly busy: number;
  readonly queued: number;
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

interface Waiting<T> {
  readonly item: T;
  readonly sandboxId: string;
}

const { default: Float64Histogram } = createRequire(import.meta.url)(
  'hdr-histogram-js/dist/Float64Histogram.js',
) as typeof Float64HistogramModule;

class LevelCounters {
  dequeued = 0;
  evicted = 0;
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

  constructor(spec: ResolvedLane, aging: number) {
    this.spec = spec;
    this.workers = spec.workers;
    this.queue = new AgingPriorityQueue(aging);
  }
}

export class TaskScheduler<T> {
  readonly #lanes: LaneState<T>[];
  readonly #specs: readonly ResolvedLane[];
  readonly #maxQueuedTasks: number;
  readonly #defaultAging: number;
  readonly #fifo: boolean;
  readonly #mayStart: ((item: Waiting<T>) => boolean) | undefined;
  #config: QueryPriorityConfig;
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
    this.#maxQueuedTasks = options.maxQueuedTasks;
    this.#defaultAging = options.agingMsPerPriority;
    this.#fifo = options.fifo ?? false;
    this.#config = options.config;
    const mayStart = options.mayStart;
    this.#mayStart = mayStart === undefined ? undefined : (w) => mayStart(w.item);
    this.#specs = lanes;
    const aging = this.#aging();
    this.#lanes = lanes.map((spec) => new LaneState<T>(spec, aging));
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
   */
  offer(item: T, sandboxId: string, priority: number, nowMs: number): OfferResult<T> {
    const evicted: Eviction<T>[] = [];
    const lane = this.#lanes[this.laneOf(priority)]!;
    // A task a free worker takes at once does not wait: no bound applies to it. One held back by its
    // sandbox's concurrency cap waits, and counts against the bounds.
    const runsNow = this.#groupFor(lane, priority) >= 0 && (this.#mayStart?.({ item, sandboxId }) ?? true);
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
      evicted.push(
        this.#evict(
          victim,
          'sandbox_queue_full',
          `rejected: evicted from sandbox [${sandboxId}]'s full queue (${sandboxLimit} tasks waiting) by a task of ` +
            `higher priority (${priority} > ${victim.entry.priority})`,
        ),
      );
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
      evicted.push(
        this.#evict(
          victim,
          'queue_full',
          `rejected: evicted from the full queue (${this.#maxQueuedTasks} tasks waiting) by a task of higher ` +
            `priority (sandbox [${sandboxId}], ${priority} > ${victim.entry.priority})`,
        ),
      );
    }
    lane.queue.push({ item, sandboxId }, priority, nowMs);
    this.#queued++;
    this.#queuedPerSandbox.set(sandboxId, (this.#queuedPerSandbox.get(sandboxId) ?? 0) + 1);
    return { accepted: true, evicted };
  }

  /**
   * The next task for a free worker of any lane (the highest band first), or undefined when no lane
   * has a free worker with a task it may take. The caller runs it in `dispatch.lane` and calls
   * `release` when it ends.
   */
  next(nowMs: number): Dispatch<T> | undefined {
    for (let i = 0; i < this.#lanes.length; i++) {
      const dispatch = this.#nextIn(i, nowMs);
      if (dispatch !== undefined) return dispatch;
    }
    return undefined;
  }

  #nextIn(laneIndex: number, nowMs: number): Dispatch<T> | undefined {
    const lane = this.#lanes[laneIndex]!;
    if (lane.queue.length === 0) return undefined;
    const groups = lane.plan.groups;
    let floor = Number.POSITIVE_INFINITY;
    for (let i = 0; i < groups.length; i++) {
      if (lane.busy[i]! < groups[i]!.workers && groups[i]!.minPriority < floor) floor = groups[i]!.minPriority;
    }
    if (floor === Number.POSITIVE_INFINITY) return undefined;
    const mayStart = this.#mayStart;
    let entry = lane.queue.peek(floor, mayStart);
    let group = -1;
    let lent = false;
    if (entry !== undefined) {
      group = this.#groupFor(lane, entry.priority);
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
    lane.queue.remove(entry);
    this.#queued--;
    this.#decrementQueued(entry.item.sandboxId);
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
        queued: lane.queue.length,
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
      ? { groups: [{ minPriority: Number.NEGATIVE_INFINITY, workers: lane.workers }], reserved: 0, suspended: undefined }
      : planReservations(this.#config, lane.workers, lane.spec);
    const groups = lane.plan.groups;
    lane.busy = groups.map(() => 0);
    const laneIndex = this.#lanes.indexOf(lane);
    const running = [...this.#running].filter((d) => d.lane === laneIndex).sort((a, b) => b.priority - a.priority);
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
    this.#queued--;
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
