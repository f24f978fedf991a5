/**
 * The piscina wrapper of one lane: with `lane-pool.ts`, the only code that imports piscina. Starts a
 * fixed-size pool of workers running `worker-harness`, each of which first gives its own thread the
 * lane's OS scheduling weight and then loads the engine; waits until every worker has loaded; runs
 * one task per worker at a time, a busy worker holding at most one more, pipelined (`WorkerPool`).
 * A task is hard-cancelled by terminating the worker that runs it
 * (`terminateWorkerOf`): piscina rejects the task and starts a replacement in the same lane (which
 * sets the same weight and loads the engine again; its start-up is reported). Tasks carry no
 * AbortSignal: piscina's per-task signal handling cost about as much as a trivial task.
 */
import { BroadcastChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { ThreadWeight } from '../../native-shim/index.js';
import { compiledModuleUrl } from './compiled-module-url.js';
import { noteLaneWorker } from './helper-threads.js';
import type {
  HarnessWorkerData,
  RevokedOutcome,
  TaskEnvelope,
  TaskMessage,
  TaskOutcome,
  WorkerStartupReport,
} from './task-envelope.js';
import { allocateTaskSlotBuffers, type TaskSlotBuffers, TaskSlots } from './task-slots.js';

export interface WorkerPoolOptions {
  /** file: URL of the engine module. */
  readonly engineUrl: string;
  readonly engineOptions: Readonly<Record<string, unknown>>;
  /** Directory the engine may cache into. */
  readonly cacheDir: string;
  /** Number of workers, 1..1024 (fixed: min = max). */
  readonly threads: number;
  /**
   * Tasks run at once, at most, 1..threads (default `threads`): a lane's `workers`, the rest of its
   * threads being spares that stand in for workers gone or loading. A task handed over beyond it is
   * pipelined to a busy worker (see `WorkerPool`) or waits in piscina's queue.
   */
  readonly maxRunning?: number;
  /** Old-generation heap limit of each worker, MiB (`resourceLimits.maxOldGenerationSizeMb`). */
  readonly workerHeapMb: number;
  /** Task slots (tasks in flight plus queued), see `TaskSlots`; ignored when `slots` is given. */
  readonly slotCount: number;
  /** Slot buffers shared with other lanes; default: new ones of `slotCount` slots. */
  readonly slots?: TaskSlotBuffers;
  /** How long `start` waits for every worker to load its engine, ms. */
  readonly startTimeoutMs: number;
  /** The lane's name (for messages). Default `default`. */
  readonly name?: string;
  /** The OS scheduling weight of the lane's threads: nice 0..19 or `idle`. Default 0. */
  readonly weight?: ThreadWeight;
  /** Called when a worker that replaced a gone one has loaded the engine (not for the initial ones). */
  readonly onReplacement?: (report: WorkerStartupReport) => void;
}

let poolCounter = 0;

/** What piscina's `loadBalancer` is given of each worker (piscina's `PiscinaWorker`). */
interface PiscinaWorkerView {
  readonly id: number;
  readonly currentUsage: number;
}

/**
 * piscina's key for a task's queue options: its load balancer is given the task's value under it, so
 * each hand-over's message carries itself there (structured cloning skips symbol keys).
 */
const HAND_OVER: symbol = Piscina.queueOptionsSymbol;

/** A task given to `run`, until its outcome: handed to a worker once, or again when taken back. */
class PendingTask {
  /** The current hand-over; an answer to an earlier one is ignored. */
  current: HandOver | undefined;
  handOvers = 0;
  constructor(
    readonly envelope: TaskEnvelope,
    readonly resolve: (outcome: TaskOutcome) => void,
    readonly reject: (error: unknown) => void,
  ) {}
}

/** One hand-over of a task to piscina, numbered as `TaskSlots.offer` asks. */
class HandOver {
  /** threadId of the worker piscina gave it to; 0 while it waits in piscina's queue. */
  worker = 0;
  /** Given to a worker that was running another task (pipelined). */
  pipelined = false;
  constructor(
    readonly task: PendingTask,
    readonly dispatch: number,
  ) {}
}

let lastDispatch = 0;

/** A hand-over number, 1..2^31-1, unique among the hand-overs alive in the process. */
function nextDispatch(): number {
  lastDispatch = lastDispatch >= 0x7fff_ffff ? 1 : lastDispatch + 1;
  return lastDispatch;
}

/**
 * Hand-overs of one task at most: a task is handed over again when taken back from a worker that had
 * not begun it (stolen for an idle worker, or its worker went); a task whose workers keep going is
 * then failed with piscina's error rather than handed round for ever.
 */
const MAX_HAND_OVERS = 8;

/**
 * A busy worker takes a pipelined task back from another only once that one's current task has run
 * at least this long, ms: a wait behind a shorter task is not worth a hand-over. Without it, trivial
 * tasks (tens of µs) moved on scheduling hiccups: 65,014 of 214,411 pipelined ones in one overhead
 * run (`--round-seconds 10`), 726 of 14,147 with it (a standard run).
 */
const STEAL_AFTER_MS = 2;

/** How many start-up reports are kept for stats. */
const KEPT_STARTUPS = 64;

/**
 * Makes piscina hand out one view object per worker instead of a new one each time; true when the
 * worker's view is pinned (now or before), false when piscina's shape is not the one this expects
 * (piscina 5.x), which leaves it as it is.
 *
 * piscina builds its load balancer's view of every worker (`PiscinaWorker`: an object with six
 * accessors, which V8 cannot make from a template) afresh on each `run` that finds its queue empty and
 * each time a worker frees with tasks queued: all of a pool's workers each time, 3-4 µs apiece here. The
 * accessors read the worker as it is when called, so one view per worker answers the same: it is set
 * as the worker's own `interface`, shadowing piscina's getter, for this pool's workers only.
 */
export function pinWorkerView(view: object): boolean {
  const keys = Object.getOwnPropertySymbols(view);
  if (keys.length !== 1) return false;
  const worker: unknown = (view as Record<symbol, unknown>)[keys[0]!];
  if (
    worker === null ||
    typeof worker !== 'object' ||
    typeof (worker as { postTask?: unknown }).postTask !== 'function'
  ) {
    return false;
  }
  if (Object.hasOwn(worker, 'interface')) return true;
  const getter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(worker) as object, 'interface')?.get;
  if (getter === undefined) return false;
  Object.defineProperty(worker, 'interface', { value: view, configurable: true, writable: true });
  return true;
}

/**
 * One lane's piscina pool. A task handed over while every worker the lane may run is busy (a lane's
 * prefetch) is **pipelined**: posted to a busy worker whose current task has begun, it starts the
 * moment that one ends, on the worker itself, without the round trip through the main thread that
 * bare piscina makes between two tasks (about 100 µs here: docs/lanes.md, "Prefetch"). A worker
 * holds at most one such task. It must claim the task before running it (`TaskSlots.claim`), so the
 * main thread can still take it back (`TaskSlots.revoke`): when another worker of the pool goes idle
 * while it waits (its worker is still on a long task), it is handed to that one instead; and before a
 * worker is terminated for hard cancellation. A pipelined task whose worker goes before it began is
 * handed over again, not failed.
 */
export class WorkerPool {
  readonly slots: TaskSlots;
  readonly threads: number;
  /** Tasks run at once, at most (`WorkerPoolOptions.maxRunning`). */
  readonly maxRunning: number;
  readonly name: string;
  readonly weight: ThreadWeight;
  readonly #piscina: Piscina<TaskMessage, TaskOutcome | RevokedOutcome>;
  /** Each live worker's piscina view, by threadId. */
  readonly #views = new Map<number, PiscinaWorkerView>();
  /** The last hand-over piscina gave each worker, by threadId: with one task on it, its current one. */
  readonly #lastOn = new Map<number, HandOver>();
  /** Pipelined hand-overs not yet known to have begun: what an idle worker may take. */
  readonly #pipelined = new Set<HandOver>();
  /** When each busy worker began its current task, about (performance.now(), ms), by threadId. */
  readonly #since = new Map<number, number>();
  #pipelinedTotal = 0;
  #stolenTotal = 0;
  readonly #channel: BroadcastChannel;
  readonly #startups: WorkerStartupReport[] = [];
  /** threadIds of workers that reported ready and have not exited. */
  readonly #ready = new Set<number>();
  #readyCount = 0;
  /**
   * `readyWorkers` as last counted; undefined once a worker reported ready, started or went (piscina's
   * `workerCreate` / `workerDestroy`, emitted as it adds or removes one). Read on every dispatch: the
   * count walks piscina's worker list, so it is kept between changes.
   */
  #readyCached: number | undefined;
  #failure: string | undefined;
  #onChange: (() => void) | undefined;
  readonly #onReplacement: ((report: WorkerStartupReport) => void) | undefined;
  #closed = false;
  #viewsPinned = 0;

  private constructor(options: WorkerPoolOptions) {
    const buffers = options.slots ?? allocateTaskSlotBuffers(options.slotCount);
    this.slots = new TaskSlots(buffers);
    this.threads = options.threads;
    this.maxRunning = Math.min(options.maxRunning ?? options.threads, options.threads);
    this.name = options.name ?? 'default';
    this.weight = options.weight ?? 0;
    this.#onReplacement = options.onReplacement;
    const channelName = `query-sandbox:pool:${process.pid}:${++poolCounter}`;
    this.#channel = new BroadcastChannel(channelName);
    // Kept open for the start-up reports of replacements, but it must not keep the process alive:
    // an embedding that forgets close() exits once its last task is done, as with bare piscina.
    this.#channel.unref();
    this.#channel.onmessage = (event: unknown) =>
      this.#onReport((event as { data: WorkerStartupReport }).data);
    const workerData: HarnessWorkerData = {
      engineUrl: options.engineUrl,
      engineOptions: options.engineOptions,
      cacheDir: options.cacheDir,
      slots: buffers,
      channelName,
      weight: this.weight,
    };
    this.#piscina = new Piscina<TaskMessage, TaskOutcome | RevokedOutcome>({
      filename: compiledModuleUrl('./worker-harness.js', import.meta.url),
      minThreads: options.threads,
      maxThreads: options.threads,
      idleTimeout: Number.MAX_SAFE_INTEGER,
      // One running and one pipelined; the balancer below decides which worker takes what.
      concurrentTasksPerWorker: 2,
      loadBalancer: (task, workers) => this.#pick(task as unknown as Record<symbol, unknown>, workers),
      resourceLimits: { maxOldGenerationSizeMb: options.workerHeapMb },
      workerData,
    });
    const forget = (view: PiscinaWorkerView): void => {
      this.#readyCached = undefined;
      this.#views.delete(view.id);
      this.#lastOn.delete(view.id);
      this.#since.delete(view.id);
    };
    this.#piscina.on('workerCreate', (view: PiscinaWorkerView) => {
      this.#readyCached = undefined;
      if (pinWorkerView(view)) this.#viewsPinned++;
      this.#views.set(view.id, view);
    });
    this.#piscina.on('workerDestroy', forget);
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

  /**
   * piscina's load balancer: at most `maxRunning` tasks run at once, on idle workers, one that has
   * reported its engine loaded first; the spares only stand in for workers that are gone or loading.
   * A task handed over beyond that (a lane's prefetch) is pipelined to a loaded worker that runs one
   * task, begun; with none, it waits in piscina's queue, and piscina gives it to the next worker that
   * frees in the same turn in which it takes that worker's result.
   */
  #pick<W extends PiscinaWorkerView>(task: Record<symbol, unknown>, workers: readonly W[]): W | null {
    let running = 0;
    let loaded: W | null = null;
    let other: W | null = null;
    let pipe: W | null = null;
    for (const worker of workers) {
      const usage = worker.currentUsage;
      if (usage > 0) {
        running++;
        if (usage === 1 && pipe === null && this.#pipeable(worker.id)) pipe = worker;
      } else if (loaded === null && this.#ready.has(worker.id)) loaded = worker;
      else other ??= worker;
    }
    const chosen = running < this.maxRunning ? (loaded ?? other) : pipe;
    const handOver = task[HAND_OVER];
    if (chosen !== null && handOver instanceof HandOver) {
      handOver.worker = chosen.id;
      this.#lastOn.set(chosen.id, handOver);
      if (chosen === pipe) {
        handOver.pipelined = true;
        this.#pipelined.add(handOver);
        this.#pipelinedTotal++;
      } else {
        this.#since.set(chosen.id, performance.now());
      }
    }
    return chosen;
  }

  /**
   * Whether worker `id`, running one task, may be given the next: it is loaded and has begun that
   * task (claimed it), so the new one cannot reach it in the same read as the current one (piscina's
   * worker would run both before posting the first's outcome).
   */
  #pipeable(id: number): boolean {
    const last = this.#lastOn.get(id);
    return (
      last !== undefined &&
      last.task.current === last &&
      this.#ready.has(id) &&
      this.slots.taken(last.task.envelope.slot, last.dispatch)
    );
  }

  #handOver(task: PendingTask): void {
    const dispatch = nextDispatch();
    const handOver = new HandOver(task, dispatch);
    task.current = handOver;
    task.handOvers++;
    const { taskId, slot, request } = task.envelope;
    this.slots.offer(slot, dispatch);
    const message: TaskMessage = { taskId, slot, request, dispatch, [HAND_OVER]: handOver };
    this.#piscina.run(message).then(
      (outcome) => this.#onOutcome(handOver, outcome),
      (error: unknown) => this.#onError(handOver, error),
    );
  }

  /**
   * Takes `handOver` back from its worker, if no worker has begun it (`TaskSlots.revoke`), and hands
   * its task over again under a new number. @returns false when a worker has begun it.
   */
  #takeBack(handOver: HandOver): boolean {
    if (!this.slots.revoke(handOver.task.envelope.slot, handOver.dispatch)) return false;
    if (handOver.pipelined) this.#pipelined.delete(handOver);
    this.#handOver(handOver.task);
    return true;
  }

  #onOutcome(handOver: HandOver, outcome: TaskOutcome | RevokedOutcome): void {
    // A revoked hand-over's task runs elsewhere (its worker ran nothing), but the worker may be idle now.
    if ((outcome as RevokedOutcome).revoked === true) {
      if (this.#pipelined.size > 0) this.#steal(handOver.worker, Number.NaN);
      return;
    }
    if (handOver.pipelined) this.#pipelined.delete(handOver);
    const worker = handOver.worker;
    const endedSince = this.#since.get(worker) ?? 0;
    // The task pipelined to this worker, if any, began as this one ended.
    const next = this.#lastOn.get(worker);
    if (next !== undefined && next !== handOver && next.task.current === next) {
      this.#since.set(worker, performance.now());
    } else {
      this.#since.delete(worker);
    }
    if (this.#pipelined.size > 0) this.#steal(worker, endedSince);
    handOver.task.resolve(outcome as TaskOutcome);
  }

  #onError(handOver: HandOver, error: unknown): void {
    const { task } = handOver;
    if (task.current !== handOver) return;
    // Its worker went before it began the task (terminated for another task, or crashed): hand it on.
    if (!this.#closed && task.handOvers < MAX_HAND_OVERS && this.#takeBack(handOver)) return;
    if (handOver.pipelined) this.#pipelined.delete(handOver);
    task.reject(error);
  }

  /**
   * After a task of worker `thief` ended (it had begun at `endedSince`; NaN: it ran nothing, so only
   * an idle `thief` takes anything): takes back one pipelined
   * task that no worker has begun and hands it over again, if `thief` is now idle, or if the task
   * waits on a worker whose current task has run more than twice as long as the one that just ended
   * did, and at least `STEAL_AFTER_MS` (a long task holding it up while this worker gets through short
   * ones). Between workers of like tasks nothing moves.
   */
  #steal(thief: number, endedSince: number): void {
    const idle = this.#views.get(thief)?.currentUsage === 0;
    const now = performance.now();
    // A victim's current task must have begun before this: run more than twice as long as the thief's.
    const before = now - Math.max(2 * (now - endedSince), STEAL_AFTER_MS);
    for (const handOver of this.#pipelined) {
      const slot = handOver.task.envelope.slot;
      if (this.slots.taken(slot, handOver.dispatch)) {
        this.#pipelined.delete(handOver); // begun: nothing to take back
        continue;
      }
      if (handOver.worker === thief) continue;
      // (Written so that a NaN `before` moves nothing.)
      if (!idle && !((this.#since.get(handOver.worker) ?? Number.POSITIVE_INFINITY) < before)) continue;
      if (this.#takeBack(handOver)) {
        this.#stolenTotal++;
        return;
      }
      this.#pipelined.delete(handOver);
    }
  }

  #onReport(report: WorkerStartupReport): void {
    this.#readyCached = undefined;
    if (report.kind === 'ready') {
      noteLaneWorker(report.tid);
      this.#readyCount++;
      this.#ready.add(report.threadId);
      this.#startups.push(report);
      if (this.#startups.length > KEPT_STARTUPS) this.#startups.shift();
      if (this.#readyCount > this.threads) this.#onReplacement?.(report);
    } else {
      this.#failure ??= report.error ?? 'unknown error';
    }
    this.#onChange?.();
  }

  /**
   * Runs one task. Resolves with the harness's outcome; rejects when the worker running it exits
   * (terminated by `terminateWorkerOf`, out of memory, or crashed) with piscina's error. A task whose
   * worker exits before it began is handed to another worker, up to 8 hand-overs.
   */
  run(envelope: TaskEnvelope): Promise<TaskOutcome> {
    return new Promise((resolve, reject) => this.#handOver(new PendingTask(envelope, resolve, reject)));
  }

  /** Tasks pipelined to a busy worker since the pool started (see `WorkerPool`). */
  get tasksPipelined(): number {
    return this.#pipelinedTotal;
  }

  /** Pipelined tasks taken back from a busy worker and handed to an idle one since the pool started. */
  get tasksStolen(): number {
    return this.#stolenTotal;
  }

  /**
   * Hard cancellation: terminates the worker running task `taskId` in `slot`, if the task has begun
   * there (its slot names the worker's thread). piscina then rejects the task and replaces the worker.
   * A task handed to that worker after it (pipelined, or from piscina's queue once it ended) is taken
   * back first and handed over again; when the worker has begun that one, `taskId` has ended and
   * nothing is terminated. @returns false when the task has not begun, has ended that way, or has gone.
   */
  terminateWorkerOf(slot: number, taskId: number): boolean {
    if (this.slots.taskId(slot) !== taskId) return false;
    const threadId = this.slots.threadId(slot);
    if (threadId === 0) return false;
    const next = this.#lastOn.get(threadId);
    if (next !== undefined && next.task.current === next && next.task.envelope.taskId !== taskId) {
      if (!this.#takeBack(next)) return false;
    }
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

  /** Workers whose piscina view is pinned (`pinWorkerView`): all of them with piscina 5.x. */
  get workerViewsPinned(): number {
    return this.#viewsPinned;
  }

  /** Workers that finished starting since the pool was made (initial ones and replacements). */
  get workersStarted(): number {
    return this.#readyCount;
  }

  /** Workers alive and loaded (taking tasks); `loadingWorkers` are the others alive. */
  get liveWorkers(): number {
    return this.readyWorkers;
  }

  /** Workers alive and loaded (ready for tasks). Forgets workers that have gone. */
  get readyWorkers(): number {
    if (this.#readyCached !== undefined) return this.#readyCached;
    const live = new Set<number>();
    for (const worker of this.#piscina.threads) live.add(worker.threadId);
    let ready = 0;
    for (const id of this.#ready) {
      if (live.has(id)) ready++;
      else this.#ready.delete(id);
    }
    this.#readyCached = ready;
    return ready;
  }

  /** Workers alive but still loading their engine (replacements, mostly). */
  get loadingWorkers(): number {
    return Math.max(0, this.#piscina.threads.length - this.readyWorkers);
  }

  /** Stops every worker; running tasks are rejected. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#channel.close();
    await this.#piscina.destroy();
  }
}
