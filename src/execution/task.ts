/**
 * A task on the request path, as plain data: queued (admitted, waiting in the scheduler) and running
 * (handed to a worker). Built by `admit.ts`, moved by `dispatch.ts`, ended by `settle.ts`.
 */
import type { AbortedError, TimedOutError } from '../errors.js';
import type { EngineRequest } from '../pool/engine-module.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import type { Hold } from '../scheduler/concurrency-caps.js';
import type { Dispatch, QueueTicket } from '../scheduler/task-scheduler.js';
import type { TrackedTask } from '../tracking/tracked-task.js';

/** An admitted task: its call's promise settles through `resolve` / `reject`, exactly once. */
export interface QueuedTask {
  readonly taskId: number;
  readonly sandbox: Sandbox;
  readonly user: string | undefined;
  readonly priority: number;
  /** When it was offered to the scheduler, ms (`performance.now()`). */
  readonly queuedAtMs: number;
  readonly request: EngineRequest;
  /** The request's own `cancel_after_time_interval`, ms (-1: none), undefined when not given. */
  readonly requestedCancelAfterMs: number | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
  /** Where its queue-wait bound comes from, for the 429's message. */
  readonly boundFrom: string;
  /** The call's `timeoutMs`, for TimedOutError. */
  readonly callTimeoutMs: number | undefined;
  /** Its place in the queue while it waits. */
  ticket: QueueTicket<QueuedTask> | undefined;
  /**
   * Set when its caller gave up while it ran: its call has settled with `error`; the task is being
   * cancelled (`terminated` once its worker was, after the grace).
   */
  abandoned: { readonly error: AbortedError | TimedOutError; terminated: boolean } | undefined;
}

/** A task handed to a worker: what it holds until it settles (slot, lane dispatch, cap hold, tracking). */
export interface RunningTask {
  readonly queued: QueuedTask;
  readonly dispatch: Dispatch<QueuedTask>;
  readonly tracked: TrackedTask;
  /** What it counts on for the concurrency caps. */
  readonly hold: Hold;
  /** The hard cancellation of a task whose caller gave up, after the grace period. */
  hardTimer: NodeJS.Timeout | undefined;
}
