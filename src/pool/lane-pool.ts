/**
 * The pool as a set of lanes (see `scheduler/lanes.ts`): one `WorkerPool` per lane, each with its own
 * workers (plus spares) at the lane's OS scheduling weight, all sharing one set of task slots so the
 * usage tracker reads every task the same way. A hard-cancelled worker is replaced inside its own
 * lane (same weight), and the lane's spares keep its capacity while the replacement loads.
 */
import type { ThreadWeight } from '../../native-shim/index.js';
import type { TaskEnvelope, TaskOutcome, WorkerStartupReport } from './task-envelope.js';
import { allocateTaskSlotBuffers, type TaskSlots } from './task-slots.js';
import { WorkerPool } from './worker-pool.js';

/** One lane as the pool starts it. */
export interface PoolLane {
  readonly name: string;
  readonly weight: ThreadWeight;
  /** Tasks the lane runs at once, >= 1. */
  readonly workers: number;
  /** Loaded workers beyond `workers`, >= 0. */
  readonly spareWorkers: number;
}

export interface LanePoolOptions {
  /** file: URL of the engine module. */
  readonly engineUrl: string;
  readonly engineOptions: Readonly<Record<string, unknown>>;
  readonly cacheDir: string;
  /** Old-generation heap limit of each worker, MiB. */
  readonly workerHeapMb: number;
  /** How long `start` waits for every worker of every lane to load its engine, ms. */
  readonly startTimeoutMs: number;
  /** The lanes, in the scheduler's order (highest band first). */
  readonly lanes: readonly PoolLane[];
  /** Tasks handed to piscina per worker at most (slots are sized for it). */
  readonly depthPerWorker: number;
  /** Tasks each worker of a lane may be handed beyond the one it runs (`prefetchTasks`; slots are sized for it). Default 0. */
  readonly prefetchTasks?: number;
  /** Called when a replacement worker of lane `lane` (its index) has loaded the engine. */
  readonly onReplacement?: (lane: number, report: WorkerStartupReport) => void;
}

/** One lane's workers, a plain snapshot. */
export interface PoolLaneStats {
  readonly name: string;
  /** The weight asked for: nice 0..19 or `idle`. */
  readonly weight: ThreadWeight;
  /**
   * True when every worker that started in the lane runs at that weight. False where setting it
   * failed (not Linux, EPERM...): the lane's threads then compete at the creating thread's weight.
   */
  readonly weighted: boolean;
  /** The nice value the lane's workers report (the last one started). */
  readonly nice: number | undefined;
  /** Why the weight was not applied, when it was not. */
  readonly weightReason: string | undefined;
  readonly workers: number;
  readonly spareWorkers: number;
  /** Workers loaded and taking tasks. */
  readonly liveWorkers: number;
  /** Workers alive but still loading the engine (replacements): not in `liveWorkers`. */
  readonly loadingWorkers: number;
  /** Workers started since start-up beyond the lane's initial ones (replacements). */
  readonly replacedWorkers: number;
  /** Tasks pipelined to a busy worker of the lane since start-up (prefetch: `WorkerPool`). */
  readonly pipelinedTasks: number;
  /** Of those, taken back before they began and handed to a worker that went idle. */
  readonly stolenTasks: number;
}

export class LanePool {
  readonly slots: TaskSlots;
  readonly #lanes: readonly WorkerPool[];
  readonly #specs: readonly PoolLane[];
  #onWorkerReady: (() => void) | undefined;

  private constructor(lanes: readonly WorkerPool[], specs: readonly PoolLane[]) {
    this.#lanes = lanes;
    this.#specs = specs;
    this.slots = lanes[0]!.slots;
  }

  /**
   * Starts every lane at once and resolves when all of their workers have loaded the engine.
   * @throws Error naming the lane when one fails to start or times out; every lane is closed then.
   */
  static async start(options: LanePoolOptions): Promise<LanePool> {
    if (options.lanes.length === 0) throw new RangeError('a pool needs at least one lane');
    let made: LanePool | undefined;
    const slotCount = options.lanes.reduce(
      (sum, l) =>
        sum + (l.workers + l.spareWorkers) * options.depthPerWorker + (options.prefetchTasks ?? 0) * l.workers,
      0,
    );
    const slots = allocateTaskSlotBuffers(slotCount);
    const started = await Promise.allSettled(
      options.lanes.map((lane, index) =>
        WorkerPool.start({
          onReplacement: (report: WorkerStartupReport) => {
            options.onReplacement?.(index, report);
            if (made !== undefined) made.#onWorkerReady?.();
          },
          engineUrl: options.engineUrl,
          engineOptions: options.engineOptions,
          cacheDir: options.cacheDir,
          threads: lane.workers + lane.spareWorkers,
          maxRunning: lane.workers,
          workerHeapMb: options.workerHeapMb,
          slotCount,
          slots,
          startTimeoutMs: options.startTimeoutMs,
          name: lane.name,
          weight: lane.weight,
        }),
      ),
    );
    const failed = started.findIndex((r) => r.status === 'rejected');
    if (failed >= 0) {
      await Promise.all(started.map((r) => (r.status === 'fulfilled' ? r.value.close() : undefined)));
      const reason = (started[failed] as PromiseRejectedResult).reason as Error;
      throw new Error(
        options.lanes.length === 1
          ? reason.message
          : `lane [${options.lanes[failed]!.name}]: ${reason.message}`,
        { cause: reason },
      );
    }
    made = new LanePool(
      started.map((r) => (r as PromiseFulfilledResult<WorkerPool>).value),
      options.lanes,
    );
    return made;
  }

  /**
   * `listener` is called each time a replacement worker of any lane has loaded the engine (after
   * `onReplacement`), so that tasks held back for want of a live worker are handed out. One listener;
   * a second call replaces it.
   */
  onWorkerReady(listener: () => void): void {
    this.#onWorkerReady = listener;
  }

  /** Workers of lane `lane` loaded and taking tasks, spares included (0 for no such lane). */
  readyWorkersOf(lane: number): number {
    return this.#lanes[lane]?.readyWorkers ?? 0;
  }

  /** Number of lanes. */
  get laneCount(): number {
    return this.#lanes.length;
  }

  /** Runs one task on a worker of lane `lane` (see `WorkerPool.run`). */
  run(lane: number, envelope: TaskEnvelope): Promise<TaskOutcome> {
    return this.#lanes[lane]!.run(envelope);
  }

  /** Terminates the worker of lane `lane` that runs task `taskId` in `slot` (see `WorkerPool.terminateWorkerOf`). */
  terminateWorkerOf(lane: number, slot: number, taskId: number): boolean {
    return this.#lanes[lane]?.terminateWorkerOf(slot, taskId) ?? false;
  }

  /** Start-up reports of every lane's most recent workers, lane by lane. */
  get startups(): readonly WorkerStartupReport[] {
    return this.#lanes.flatMap((l) => l.startups);
  }

  /** Start-up reports of the initial workers, lane by lane. */
  initialStartups(): readonly WorkerStartupReport[] {
    return this.#lanes.flatMap((l) => l.startups.slice(0, l.threads));
  }

  /** The most recent replacement's start-up report over every lane, if any. */
  lastReplacement(): WorkerStartupReport | undefined {
    let last: WorkerStartupReport | undefined;
    for (const l of this.#lanes) {
      if (l.workersStarted > l.threads) last = l.startups[l.startups.length - 1];
    }
    return last;
  }

  /** Workers of every lane, spares included (the threads the pool keeps alive). */
  get threads(): number {
    return this.#lanes.reduce((sum, l) => sum + l.threads, 0);
  }

  get workersStarted(): number {
    return this.#lanes.reduce((sum, l) => sum + l.workersStarted, 0);
  }

  get liveWorkers(): number {
    return this.#lanes.reduce((sum, l) => sum + l.liveWorkers, 0);
  }

  get loadingWorkers(): number {
    return this.#lanes.reduce((sum, l) => sum + l.loadingWorkers, 0);
  }

  /** Per-lane figures, a plain snapshot. */
  laneStats(): readonly PoolLaneStats[] {
    return this.#lanes.map((pool, i) => {
      const spec = this.#specs[i]!;
      const reports = pool.startups;
      const refused = reports.find((r) => !r.weightApplied);
      return {
        name: spec.name,
        weight: spec.weight,
        weighted: refused === undefined,
        nice: reports[reports.length - 1]?.nice,
        weightReason: refused?.weightReason,
        workers: spec.workers,
        spareWorkers: spec.spareWorkers,
        liveWorkers: pool.liveWorkers,
        loadingWorkers: pool.loadingWorkers,
        replacedWorkers: Math.max(0, pool.workersStarted - pool.threads),
        pipelinedTasks: pool.tasksPipelined,
        stolenTasks: pool.tasksStolen,
      };
    });
  }

  /** Stops every lane. Idempotent. */
  async close(): Promise<void> {
    await Promise.all(this.#lanes.map((l) => l.close()));
  }
}
