/**
 * When a lane prefetches (`RuntimeOptions.prefetchTasks`, per worker): a task handed to the pool
 * beyond the lane's free workers is pipelined to a busy worker, to start there the moment its current
 * task ends (or on another worker that goes idle first: `WorkerPool`), or waits in piscina's queue for
 * the next worker that frees. That saves the round trip through the main thread between two tasks
 * (for trivial and 1 ms tasks, the runtime's per-task cost against bare piscina and more:
 * docs/benchmarks.md), but the prefetched task has left the queue: a more important task that arrives
 * after it cannot overtake it, and its queue-wait bound no longer applies. So a lane prefetches only
 * while its tasks end close together (the moving average of the time between two task ends is below
 * `prefetchBelowMs`, and so is the time since the last one): the wait of a prefetched task is about
 * that interval. A node that queues nothing (`maxQueuedTasks: 0`) prefetches nothing: a prefetched
 * task waits, and such a node refuses rather than lets a task wait. It also needs every
 * worker of the lane loaded (a task handed to a lane short of workers would wait for a replacement
 * to load), and the scheduler ignores it in a lane with reserved workers.
 */

/** Weight of the newest interval in the moving average (an exponentially weighted one). */
const SMOOTHING = 0.2;

export class PrefetchPolicy {
  readonly #tasks: number;
  readonly #belowMs: number;
  /** Per lane: when its last task ended, ms (performance.now); undefined before the first. */
  readonly #lastEndMs: (number | undefined)[];
  /** Per lane: moving average of the time between two task ends, ms (Infinity before two). */
  readonly #intervalMs: number[];

  /**
   * @param lanes number of lanes
   * @param tasks `prefetchTasks`, integer >= 0 (0: never)
   * @param belowMs `prefetchBelowMs`, ms > 0
   */
  constructor(lanes: number, tasks: number, belowMs: number) {
    this.#tasks = tasks;
    this.#belowMs = belowMs;
    this.#lastEndMs = new Array<number | undefined>(lanes).fill(undefined);
    this.#intervalMs = new Array<number>(lanes).fill(Number.POSITIVE_INFINITY);
  }

  /** A task of lane `lane` ended (any outcome) at `nowMs`. */
  ended(lane: number, nowMs: number): void {
    const last = this.#lastEndMs[lane];
    this.#lastEndMs[lane] = nowMs;
    if (last === undefined) return;
    const gap = Math.max(0, nowMs - last);
    const average = this.#intervalMs[lane]!;
    this.#intervalMs[lane] =
      average === Number.POSITIVE_INFINITY ? gap : average + SMOOTHING * (gap - average);
  }

  /**
   * Tasks each worker of lane `lane` may prefetch at `nowMs`: `prefetchTasks` while its tasks end less than
   * `prefetchBelowMs` apart on average, its last one ended less than that ago (a lane whose workers
   * all run long tasks stops at once, whatever its average), and it is `staffed` (every one of its
   * workers loaded); else 0.
   */
  tasksFor(lane: number, staffed: boolean, nowMs: number): number {
    if (!staffed || this.#tasks === 0) return 0;
    const last = this.#lastEndMs[lane];
    if (last === undefined || nowMs - last >= this.#belowMs) return 0;
    return this.#intervalMs[lane]! < this.#belowMs ? this.#tasks : 0;
  }

  /** The moving average of the time between two task ends of lane `lane`, ms (Infinity before two). */
  intervalMs(lane: number): number {
    return this.#intervalMs[lane]!;
  }
}
