/**
 * Runs inside every pool worker. Loads the engine once (module import + `init`), reports its kernel
 * tid and start-up time on a BroadcastChannel, then runs tasks: for each, it records the start CPU
 * and heap in the task's shared slot, hands the engine the cancellation contract of `TaskContext`
 * (`cancelled`, `throwIfCancelled()`, a `signal` that reads the slot, a `checkpoint()` that records
 * memory), and records the end CPU. It never throws: every outcome is a `TaskOutcome`.
 */
import { performance } from 'node:perf_hooks';
import { BroadcastChannel, threadId, workerData } from 'node:worker_threads';
import {
  applyThreadWeight,
  currentThreadCpuTimeNs,
  currentThreadTid,
  sampleHeap,
  threadNice,
  type ThreadWeightResult,
} from '../../native-shim/index.js';
import { clientErrorStatusOf } from '../errors.js';
import {
  type EngineModule,
  type TaskContext,
  WRITABLE_INDICES_OPTION,
  type WritableIndicesContext,
} from './engine-module.js';
import type {
  HarnessWorkerData,
  RevokedOutcome,
  SerializedError,
  TaskMessage,
  TaskOutcome,
  WorkerStartupReport,
} from './task-envelope.js';
import { CancelReason, TaskSlots } from './task-slots.js';

const startedAt = performance.now();
const data = workerData as HarnessWorkerData;
const slots = new TaskSlots(data.slots);

function heapNow(): number {
  const s = sampleHeap();
  return s.usedHeapBytes + s.externalBytes;
}

/**
 * How often an async handler's memory checkpoint is refreshed while its event loop is free, ms (a
 * cancellation wakes the wait at once: `TaskSlots.waitForCancel`). 25 ms keeps the checkpoint fresh
 * (the main thread probes after two governor intervals, 200 ms). At 5 ms, 256 waiting workers on 2 cores woke 51,000
 * times a second and starved the main thread: governor ticks took 220 ms instead of 1.4 ms
 * (`npm run bench`, governor tick).
 */
const ASYNC_POLL_MS = 25;

/**
 * An async handler still pending this long after its wall-clock cancellation (`CancelReason.TIME`)
 * was seen (and its signal fired) is given up: the worker records the task's end in its slot and exits, so that piscina fails the task
 * and starts a replacement (the handler's code may still be live: the worker must not take another
 * task). A handler that stalls (awaits forever, ignoring its signal) would otherwise hold its worker
 * until the governor's hard cancellation, `graceIntervals` later; a cooperative one settles well
 * within this. The main thread reads the exit of a worker whose task the watchdog picked as a hard
 * wall-clock cancellation.
 */
const ABANDON_AFTER_MS = 5;

function cancelMessage(code: number): string {
  switch (code) {
    case CancelReason.CPU:
      return 'task cancelled: its sandbox is above its high cpu limit';
    case CancelReason.MEMORY:
      return 'task cancelled: its sandbox is above its high memory limit';
    case CancelReason.TIME:
      return 'task cancelled: it ran past its cancel_after_time_interval';
    case CancelReason.ABORTED:
      return 'task cancelled: its caller gave up (aborted, timed out or disconnected)';
    default:
      return 'task cancelled: the runtime is shutting down';
  }
}

function serializeError(error: unknown): SerializedError {
  if (error instanceof Error) {
    const e = error as Error & { type?: unknown };
    const statusCode = clientErrorStatusOf(error);
    return {
      name: e.name,
      message: e.message,
      type: typeof e.type === 'string' ? e.type : undefined,
      statusCode,
      stack: e.stack,
    };
  }
  return { name: 'Error', message: String(error), type: undefined, statusCode: undefined, stack: undefined };
}

let tid = 0;
let engine: EngineModule;
let weight: ThreadWeightResult = {
  applied: false,
  nice: undefined,
  reason: 'the kernel thread id is unknown',
};
const channel = new BroadcastChannel(data.channelName);
try {
  tid = currentThreadTid();
  // The lane's weight first, so that a background worker loads its engine at background weight too
  // (a replacement loading beside foreground work must not compete with it).
  weight =
    data.weight === 0
      ? { applied: true, nice: threadNice(tid), reason: undefined }
      : applyThreadWeight(tid, data.weight);
  const imported = (await import(data.engineUrl)) as EngineModule & { default?: EngineModule };
  engine = typeof imported.handle === 'function' ? imported : (imported.default as EngineModule);
  if (engine === undefined || typeof engine.handle !== 'function') {
    throw new TypeError(`engine module ${data.engineUrl} exports no handle() function`);
  }
  // The runtime's writable-indices handle travels in a reserved engine option (see engine-module.ts).
  const { [WRITABLE_INDICES_OPTION]: writable, ...engineOptions } = data.engineOptions;
  await engine.init?.({
    cacheDir: data.cacheDir,
    options: engineOptions,
    ...(writable !== undefined ? { writableIndices: writable as WritableIndicesContext } : {}),
  });
  const heap = sampleHeap();
  const report: WorkerStartupReport = {
    kind: 'ready',
    tid,
    threadId,
    startupMs: performance.now() - startedAt,
    heapBytes: heap.usedHeapBytes + heap.externalBytes,
    heapLimitBytes: heap.heapLimitBytes,
    error: undefined,
    weightApplied: weight.applied,
    nice: weight.nice,
    weightReason: weight.reason,
  };
  channel.postMessage(report);
} catch (error) {
  const report: WorkerStartupReport = {
    kind: 'failed',
    tid,
    threadId,
    startupMs: performance.now() - startedAt,
    heapBytes: 0,
    heapLimitBytes: 0,
    error: error instanceof Error ? `${error.message}` : String(error),
    weightApplied: weight.applied,
    nice: weight.nice,
    weightReason: weight.reason,
  };
  channel.postMessage(report);
  throw error;
} finally {
  channel.close();
}

/** Thread CPU at the end of the previous task, ns (0 before the first). */
let lastEndCpuNs = 0;

const abortedOf = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')!.get!;
const reasonOf = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'reason')!.get!;
const throwIfAbortedOf = AbortSignal.prototype.throwIfAborted;
/** Per signal handed to an engine: looks at the task's slot and fires the signal when asked to stop. */
const observers = new WeakMap<AbortSignal, () => void>();

/**
 * The prototype of the signals handed to engines: `aborted`, `reason` and `throwIfAborted()` first
 * look at the task's shared slot (an atomic load) and fire the signal when the main thread has asked
 * the task to stop. So a signal an engine holds (`const { signal } = ctx`) is seen as aborted by a
 * synchronous loop that tests it, which no event could tell it: the worker's event loop does not run
 * until the handler yields.
 */
const ObservingSignal: AbortSignal = Object.create(AbortSignal.prototype, {
  aborted: {
    get(this: AbortSignal): boolean {
      observers.get(this)?.();
      return abortedOf.call(this) as boolean;
    },
  },
  reason: {
    get(this: AbortSignal): unknown {
      observers.get(this)?.();
      return reasonOf.call(this);
    },
  },
  throwIfAborted: {
    value(this: AbortSignal): void {
      observers.get(this)?.();
      throwIfAbortedOf.call(this);
    },
  },
});

/**
 * One task's cancellation contract (`TaskContext`), on a prototype rather than an object literal with
 * getters and per-task closures: made for every task, and a literal with accessors is several times
 * dearer to allocate than a trivial task (bench/overhead.ts).
 */
class HarnessTaskContext implements TaskContext {
  readonly taskId: number;
  readonly #slot: number;
  /** Made only when the engine reads `signal` or a cancellation arrives: most tasks need neither. */
  #controller: AbortController | undefined = undefined;
  /** Set once the task's end is recorded: later cancellation requests are ignored. */
  ended = false;

  constructor(taskId: number, slot: number) {
    this.taskId = taskId;
    this.#slot = slot;
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      Object.setPrototypeOf(this.#controller.signal, ObservingSignal);
      observers.set(this.#controller.signal, () => this.abortIfRequested());
      this.abortIfRequested();
    }
    return this.#controller.signal;
  }

  get cancelled(): boolean {
    return slots.cancelCode(this.#slot, this.taskId) !== 0;
  }

  /** Whether the signal handed out (if any) has fired. */
  get aborted(): boolean {
    return this.#controller !== undefined && abortedOf.call(this.#controller.signal) === true;
  }

  /** Fires the signal when the main thread has asked the task to stop (its slot's cancel code). */
  abortIfRequested(): void {
    if (this.ended || this.aborted) return;
    const code = slots.cancelCode(this.#slot, this.taskId);
    if (code === 0) return;
    this.#controller ??= new AbortController();
    this.#controller.abort(Object.assign(new Error(cancelMessage(code)), { name: 'AbortError', code }));
  }

  throwIfCancelled(): void {
    this.abortIfRequested();
    if (this.#controller !== undefined) throwIfAbortedOf.call(this.#controller.signal);
  }

  checkpoint(): void {
    if (slots.checkpoint(this.#slot, this.taskId, heapNow()) !== 0) this.throwIfCancelled();
  }
}

/** The outcome of a task whose handler threw (or whose promise rejected). */
function failedOutcome(context: HarnessTaskContext, slot: number, error: unknown): TaskOutcome {
  // A task asked to stop that then throws (its signal's reason, or its own error) was cancelled.
  const requested = slots.cancelCode(slot, context.taskId);
  const code = requested !== 0 ? requested : context.aborted ? CancelReason.SHUTDOWN : 0;
  return { ok: false, error: serializeError(error), cancelCode: code };
}

/** Records the task's end in its slot: the CPU window closes here and opens the next task's. */
function endTask(context: HarnessTaskContext, slot: number): void {
  context.ended = true;
  lastEndCpuNs = currentThreadCpuTimeNs();
  slots.end(slot, context.taskId, lastEndCpuNs, heapNow());
  active = false;
  // A task posted while an asynchronous one ran starts in a later turn, once piscina has posted this
  // one's outcome (starting it in this turn would hold that outcome back for its whole run).
  if (waiting.length > 0) setImmediate(startWaiting);
}

const REVOKED: RevokedOutcome = { ok: false, revoked: true };

/** True while a task runs on this thread (begun and not ended). */
let active = false;
/** Tasks posted while another ran (only behind an asynchronous handler): started in order, one at a time. */
const waiting: (() => void)[] = [];

function startWaiting(): void {
  if (!active) waiting.shift()?.();
}

/**
 * The piscina task handler. Returns the outcome at once for a synchronous engine handler (no promise
 * in between: piscina awaits whatever it gets) and a promise for an asynchronous one.
 */
export default function runTask(
  message: TaskMessage,
): TaskOutcome | RevokedOutcome | Promise<TaskOutcome | RevokedOutcome> {
  // The pool hands a busy worker its next task while it runs one (`WorkerPool`, "pipelining"); a
  // synchronous handler keeps the thread, so that task arrives after this one's end. Behind an
  // asynchronous handler it arrives at once and waits here, still revocable, until the thread is free.
  if (active) {
    return new Promise((resolve) => waiting.push(() => resolve(runTask(message))));
  }
  const { taskId, slot } = message;
  // Not claimed: the main thread took it back to run it elsewhere; this worker must not run it.
  if (!slots.claim(slot, message.dispatch)) {
    if (waiting.length > 0) setImmediate(startWaiting);
    return REVOKED;
  }
  active = true;
  // The task's CPU window opens where the previous task's closed: the worker's CPU between two tasks
  // (piscina receiving this task, posting the previous result, waking up) is per-task overhead that
  // the handler alone does not show; an idle worker blocks in Atomics.wait and adds nothing. So the
  // clock (a /proc read, a few µs) is read once per task, at its end, except for the first.
  const startCpuNs = lastEndCpuNs > 0 ? lastEndCpuNs : currentThreadCpuTimeNs();
  slots.begin(slot, taskId, tid, startCpuNs, heapNow(), threadId);
  const context = new HarnessTaskContext(taskId, slot);
  let pending: unknown;
  try {
    context.throwIfCancelled();
    pending = engine.handle(message.request, context);
  } catch (error) {
    const outcome = failedOutcome(context, slot, error);
    endTask(context, slot);
    return outcome;
  }
  if (pending === null || typeof (pending as Promise<unknown>)?.then !== 'function') {
    endTask(context, slot);
    return { ok: true, result: pending };
  }
  return awaitHandler(context, slot, pending as Promise<unknown>);
}

/**
 * An async handler: while it waits, its event loop is free, so the main thread's cancellation wakes
 * the wait at once (the signal fires at the handler's next await), and every ASYNC_POLL_MS the memory
 * checkpoint is refreshed, so the main thread need not probe it. A handler still pending
 * ABANDON_AFTER_MS after a wall-clock cancellation is given up on: the end is recorded and the worker
 * leaves, to be replaced.
 */
async function awaitHandler(
  context: HarnessTaskContext,
  slot: number,
  pending: Promise<unknown>,
): Promise<TaskOutcome> {
  const { taskId } = context;
  let abandonArmed = false;
  const armAbandon = (): void => {
    if (abandonArmed || slots.cancelCode(slot, taskId) !== CancelReason.TIME) return;
    abandonArmed = true;
    setTimeout(() => {
      if (context.ended) return;
      endTask(context, slot);
      process.exit(0);
    }, ABANDON_AFTER_MS);
  };
  const watch = (): void => {
    void slots.waitForCancel(slot, taskId, ASYNC_POLL_MS).then((woke) => {
      if (context.ended) return;
      if (woke === 'timed-out') {
        slots.checkpoint(slot, taskId, heapNow());
        watch();
      } else {
        context.abortIfRequested();
        armAbandon();
      }
    });
  };
  watch();
  let outcome: TaskOutcome;
  try {
    outcome = { ok: true, result: await pending };
  } catch (error) {
    outcome = failedOutcome(context, slot, error);
  }
  context.ended = true;
  slots.wakeCancelWaiter(slot);
  endTask(context, slot);
  return outcome;
}
