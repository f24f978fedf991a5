/**
 * The piscina wrapper: the only module that imports piscina. Starts a fixed-size pool of workers
 * running `worker-harness`, waits until every worker has loaded its engine, and runs one task per
 * worker at a time. A task is hard-cancelled by terminating the worker that runs it
 * (`terminateWorkerOf`): piscina rejects the task and starts a replacement (which loads the engine
 * again; its start-up is reported). Tasks carry no AbortSignal: piscina's per-task signal handling
 * cost about as much as a trivial task.
 */
import { BroadcastChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { compiledModuleUrl } from './compiled-module-url.js';
import type { HarnessWorkerData, TaskEnvelope, TaskOutcome, WorkerStartupReport } from './task-envelope.js';
import { allocateTaskSlotBuffers, TaskSlots } from './task-slots.js';

export interface WorkerPoolOptions {
  /** file: URL of the engine module. */
  readonly engineUrl: string;
  readonly engineOptions: Readonly<Record<string, unknown>>;
  /** Directory the engine may cache into. */
  readonly cacheDir: string;
  /** Number of workers, 1..1024 (fixed: min = max). */
  readonly threads: number;
  /** Old-generation heap limit of each worker, MiB (`resourceLimits.maxOldGenerationSizeMb`). */
  readonly workerHeapMb: number;
  /** Task slots (tasks in flight plus queued), see `TaskSlots`. */
  readonly slotCount: number;
  /** How long `start` waits for every worker to load its engine, ms. */
  readonly startTimeoutMs: number;
}

let poolCounter = 0;

/** How many start-up reports are kept for stats. */
const KEPT_STARTUPS = 64;

export class WorkerPool {
  readonly slots: TaskSlots;
  readonly threads: number;
  readonly #piscina: Piscina<TaskEnvelope, TaskOutcome>;
  readonly #channel: BroadcastChannel;
  readonly #startups: WorkerStartupReport[] = [];
  /** threadIds of workers that reported ready (pruned of exited ones in `loadingWorkers`). */
  readonly #ready = new Set<number>();
  #readyCount = 0;
  #failure: string | undefined;
  #onChange: (() => void) | undefined;
  #closed = false;

  private constructor(options: WorkerPoolOptions) {
    const buffers = allocateTaskSlotBuffers(options.slotCount);
    this.slots = new TaskSlots(buffers);
    this.threads = options.threads;
    const channelName = `query-sandbox:pool:${process.pid}:${++poolCounter}`;
    this.#channel = new BroadcastChannel(channelName);
    this.#channel.onmessage = (event: unknown) =>
      this.#onReport((event as { data: WorkerStartupReport }).data);
    const workerData: HarnessWorkerData = {
      engineUrl: options.engineUrl,
      engineOptions: options.engineOptions,
      cacheDir: options.cacheDir,
      slots: buffers,
      channelName,
    };
    this.#piscina = new Piscina<TaskEnvelope, TaskOutcome>({
      filename: compiledModuleUrl('./worker-harness.js', import.meta.url),
      minThreads: options.threads,
      maxThreads: options.threads,
      idleTimeout: Number.MAX_SAFE_INTEGER,
      concurrentTasksPerWorker: 1,
      resourceLimits: { maxOldGenerationSizeMb: options.workerHeapMb },
      workerData,
    });
    // A worker whose start-up throws surfaces here; the failed report carries the reason.
    this.#piscina.on('error', (error: unknown) => {
      this.#failure ??= error instanceof Error ? error.message : String(error);
      this.#onChange?.();
    });
  }

  /**
   * Starts the pool and resolves once `threads` workers have loaded the engine.
   * @throws Error when a worker fails to start (the engine's message) or on time-out; the pool is closed.
   */
  static async start(options: WorkerPoolOptions): Promise<WorkerPool> {
    const pool = new WorkerPool(options);
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`workers did not start within ${options.startTimeoutMs} ms`)),
          options.startTimeoutMs,
        );
        pool.#onChange = () => {
          if (pool.#failure !== undefined) {
            clearTimeout(timer);
            reject(new Error(`a worker failed to start: ${pool.#failure}`));
          } else if (pool.#readyCount >= options.threads) {
            clearTimeout(timer);
            resolve();
          }
        };
        pool.#onChange();
      });
    } catch (error) {
      await pool.close();
      throw error;
    } finally {
      pool.#onChange = undefined;
    }
    return pool;
  }

  #onReport(report: WorkerStartupReport): void {
    if (report.kind === 'ready') {
      this.#readyCount++;
      this.#ready.add(report.threadId);
      this.#startups.push(report);
      if (this.#startups.length > KEPT_STARTUPS) this.#startups.shift();
    } else {
      this.#failure ??= report.error ?? 'unknown error';
    }
    this.#onChange?.();
  }

  /**
   * Runs one task. Resolves with the harness's outcome; rejects when its worker exits (terminated by
   * `terminateWorkerOf`, out of memory, or crashed) with piscina's error.
   */
  run(envelope: TaskEnvelope): Promise<TaskOutcome> {
    return this.#piscina.run(envelope);
  }

  /**
   * Hard cancellation: terminates the worker running task `taskId` in `slot`, if the task has begun
   * there (its slot names the worker's thread). piscina then rejects the task and replaces the worker.
   * Safe against a task that just ended: the main thread has not yet handled its result, so piscina
   * has not handed that worker another task. @returns false when the task has not begun or has gone.
   */
  terminateWorkerOf(slot: number, taskId: number): boolean {
    if (this.slots.taskId(slot) !== taskId) return false;
    const threadId = this.slots.threadId(slot);
    if (threadId === 0) return false;
    for (const worker of this.#piscina.threads) {
      if (worker.threadId === threadId) {
        void worker.terminate();
        return true;
      }
    }
    return false;
  }

  /** Start-up reports of the most recent workers (the first `threads` are the initial ones). */
  get startups(): readonly WorkerStartupReport[] {
    return this.#startups;
  }

  /** Workers that finished starting since the pool was made (initial ones and replacements). */
  get workersStarted(): number {
    return this.#readyCount;
  }

  /** Workers alive now (includes ones still loading their engine). */
  get liveWorkers(): number {
    return this.#piscina.threads.length;
  }

  /** Workers alive that have not reported ready yet: starting, or loading their engine (a replacement). */
  get loadingWorkers(): number {
    const threads = this.#piscina.threads;
    let ready = 0;
    for (const worker of threads) if (this.#ready.has(worker.threadId)) ready++;
    if (this.#ready.size > 2 * threads.length + 8) {
      const alive = new Set(threads.map((worker) => worker.threadId));
      for (const id of this.#ready) if (!alive.has(id)) this.#ready.delete(id);
    }
    return threads.length - ready;
  }

  /** Stops every worker; running tasks are rejected. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#channel.close();
    await this.#piscina.destroy();
  }
}
