/**
 * What crosses the thread boundary for one task: the envelope in, the outcome out, and the start-up
 * report every worker broadcasts once. Plain structured-cloneable data only.
 */
import type { EngineRequest } from './engine-module.js';
import type { ThreadWeight } from '../../native-shim/index.js';
import type { TaskSlotBuffers } from './task-slots.js';

/** Sent to the worker for one task. */
export interface TaskEnvelope {
  readonly taskId: number;
  readonly slot: number;
  readonly request: EngineRequest;
}

/**
 * What the worker is posted for one hand-over of a task: the envelope and the hand-over's number
 * (`TaskSlots.offer`). A task taken back from a worker that had not begun it is posted again, to
 * another, under a new number.
 */
export interface TaskMessage extends TaskEnvelope {
  readonly dispatch: number;
}

/** A worker's answer to a hand-over it found revoked: it did not run the task. Never leaves `WorkerPool`. */
export interface RevokedOutcome {
  readonly ok: false;
  readonly revoked: true;
}

/** An error as it crosses threads: enough to rebuild a typed error in the main thread. */
export interface SerializedError {
  readonly name: string;
  readonly message: string;
  /** OpenSearch-style type from the engine (`parsing_exception`), when it gave one. */
  readonly type: string | undefined;
  /** 4xx from the engine for a refused request; undefined for a failure. */
  readonly statusCode: number | undefined;
  readonly stack: string | undefined;
}

/** Returned by the worker for one task (the harness never throws). */
export type TaskOutcome =
  | { readonly ok: true; readonly result: unknown }
  | { readonly ok: false; readonly error: SerializedError; readonly cancelCode: number };

/** `workerData` of every worker in the pool. */
export interface HarnessWorkerData {
  /** file: URL of the engine module. */
  readonly engineUrl: string;
  readonly engineOptions: Readonly<Record<string, unknown>>;
  readonly cacheDir: string;
  readonly slots: TaskSlotBuffers;
  /** BroadcastChannel name on which each worker reports `WorkerStartupReport` once. */
  readonly channelName: string;
  /** The OS scheduling weight the worker gives its own thread before it loads the engine (its lane's). */
  readonly weight: ThreadWeight;
}

/** Broadcast by each worker once its engine is loaded, or once its start-up failed. */
export interface WorkerStartupReport {
  readonly kind: 'ready' | 'failed';
  /** Kernel thread id (0 where it cannot be had). */
  readonly tid: number;
  /** worker_threads threadId. */
  readonly threadId: number;
  /** From the harness module's first line to the engine's init resolving, ms. */
  readonly startupMs: number;
  /** Heap + external of the worker's isolate after start-up, bytes. */
  readonly heapBytes: number;
  readonly heapLimitBytes: number;
  readonly error: string | undefined;
  /** True when the worker's thread runs at the weight its lane asked for. */
  readonly weightApplied: boolean;
  /** The thread's nice after start-up (`undefined` where it cannot be read). */
  readonly nice: number | undefined;
  /** Why the weight was not applied, when it was not. */
  readonly weightReason: string | undefined;
}
