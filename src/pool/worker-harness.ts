/**
 * Runs inside every pool worker. Loads the engine once (module import + `init`), reports its kernel
 * tid and start-up time on a BroadcastChannel, then runs tasks: for each, it records the start CPU
 * and heap in the task's shared slot, hands the engine an AbortSignal and a `checkpoint()` that
 * records memory and observes soft cancellation, and records the end CPU. It never throws: every
 * outcome is a `TaskOutcome`.
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
  SerializedError,
  TaskEnvelope,
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
 * How often an async handler's cancel flag and memory are polled while its event loop is free, ms.
 * 25 ms keeps the checkpoint fresh (the main thread probes after two governor intervals, 200 ms) and
 * adds at most 25 ms to a soft cancellation. At 5 ms, 256 waiting workers on 2 cores woke 51,000
 * times a second and starved the main thread: governor ticks took 220 ms instead of 1.4 ms
 * (`npm run bench`, governor tick).
 */
const ASYNC_POLL_MS = 25;

function cancelMessage(code: number): string {
  switch (code) {
    case CancelReason.CPU:
      return 'task cancelled: its sandbox is above its high cpu limit';
    case CancelReason.MEMORY:
      return 'task cancelled: its sandbox is above its high memory limit';
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
let weight: ThreadWeightResult = { applied: false, nice: undefined, reason: 'the kernel thread id is unknown' };
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

/** The piscina task handler. */
export default async function runTask(envelope: TaskEnvelope): Promise<TaskOutcome> {
  const { taskId, slot } = envelope;
  // The task's CPU window opens where the previous task's closed: the worker's CPU between two tasks
  // (piscina receiving this task, posting the previous result, waking up) is per-task overhead that
  // the handler alone does not show; an idle worker blocks in Atomics.wait and adds nothing. So the
  // clock (a /proc read, a few µs) is read once per task, at its end, except for the first.
  const startCpuNs = lastEndCpuNs > 0 ? lastEndCpuNs : currentThreadCpuTimeNs();
  slots.begin(slot, taskId, tid, startCpuNs, heapNow(), threadId);
  // The AbortController is made only when the engine reads `signal` or a cancellation arrives:
  // most tasks need neither, and making one costs about as much as a trivial task.
  let controller: AbortController | undefined;
  const signalOf = (): AbortController => {
    controller ??= new AbortController();
    return controller;
  };
  const abortIfRequested = (): void => {
    if (controller?.signal.aborted === true) return;
    const code = slots.cancelCode(slot, taskId);
    if (code !== 0)
      signalOf().abort(Object.assign(new Error(cancelMessage(code)), { name: 'AbortError', code }));
  };
  const context: TaskContext = {
    get signal() {
      abortIfRequested();
      return signalOf().signal;
    },
    taskId,
    checkpoint() {
      const code = slots.checkpoint(slot, taskId, heapNow());
      if (code !== 0) {
        abortIfRequested();
        controller?.signal.throwIfAborted();
      }
    },
  };
  let poll: NodeJS.Timeout | undefined;
  try {
    abortIfRequested();
    controller?.signal.throwIfAborted();
    const pending = engine.handle(envelope.request, context);
    let result: unknown;
    if (pending !== null && typeof (pending as Promise<unknown>)?.then === 'function') {
      // While an async handler waits, its event loop is free: keep its memory checkpoint fresh (so the
      // main thread need not probe it) and watch for a soft cancellation.
      poll = setInterval(() => {
        slots.checkpoint(slot, taskId, heapNow());
        abortIfRequested();
      }, ASYNC_POLL_MS);
      result = await pending;
    } else {
      result = pending;
    }
    return { ok: true, result };
  } catch (error) {
    const code = controller?.signal.aborted === true ? slots.cancelCode(slot, taskId) || CancelReason.SHUTDOWN : 0;
    return { ok: false, error: serializeError(error), cancelCode: code };
  } finally {
    if (poll !== undefined) clearInterval(poll);
    lastEndCpuNs = currentThreadCpuTimeNs();
    slots.end(slot, taskId, lastEndCpuNs, heapNow());
  }
}
