/**
 * The caller's control over a call (`SearchCallOptions`: `signal`, `timeoutMs`): when the caller
 * gives up, the call rejects at once; a queued task is removed without running, a running one is
 * cancelled, softly (its slot's cancel word) and, still running after its sandbox's grace, by
 * terminating its worker. Its worker's answer then settles only the accounting (`settle.ts`).
 */
import { AbortedError, TimedOutError } from '../errors.js';
import { CancelReason } from '../pool/task-slots.js';
import { pump } from './dispatch.js';
import type { SearchCallOptions } from './search-call.js';
import type { QueuedTask } from './task.js';
import { publishQueuedEnd } from './task-events.js';
import type { TaskExecution } from './task-execution.js';

/** Follows the caller's `signal` and `timeoutMs` until the call settles. */
export function watchCall(
  x: TaskExecution,
  task: QueuedTask,
  settled: Promise<unknown>,
  control: SearchCallOptions,
): void {
  const signal = control.signal;
  const onAbort = signal === undefined ? undefined : () => abandon(x, task, 'aborted', signal.reason);
  if (onAbort !== undefined) signal!.addEventListener('abort', onAbort, { once: true });
  const timer =
    control.timeoutMs === undefined
      ? undefined
      : setTimeout(() => abandon(x, task, 'timed_out'), control.timeoutMs);
  timer?.unref();
  const dispose = () => {
    if (onAbort !== undefined) signal!.removeEventListener('abort', onAbort);
    if (timer !== undefined) clearTimeout(timer);
  };
  settled.then(dispose, dispose);
}

/**
 * The caller gave up (`signal`, `timeoutMs`, a closed HTTP connection): the call rejects at once. A
 * queued task is removed without running; a running one is cancelled, softly (its signal) and, if it
 * is still running after the grace period, by terminating its worker. Nothing once the call settled.
 */
export function abandon(
  x: TaskExecution,
  task: QueuedTask,
  why: 'aborted' | 'timed_out',
  cause?: unknown,
): void {
  const counters = x.counters.of(task.sandbox.id);
  const error = (queued: boolean) =>
    why === 'aborted'
      ? new AbortedError(
          task.sandbox.id,
          queued,
          queued
            ? 'search aborted by its caller while queued: the task was removed without running'
            : 'search aborted by its caller while running: the task is being cancelled',
          { cause },
        )
      : new TimedOutError(
          task.sandbox.id,
          task.callTimeoutMs ?? 0,
          queued,
          `search timed out after ${task.callTimeoutMs} ms (timeoutMs) ` +
            (queued
              ? 'while queued: the task was removed without running'
              : 'while running: the task is being cancelled'),
        );
  if (task.ticket !== undefined && x.scheduler.remove(task.ticket)) {
    if (why === 'aborted') counters.aborted++;
    else counters.callTimeouts++;
    const failure = error(true);
    publishQueuedEnd(x, task, failure);
    task.reject(failure);
    // A drain under way may have been waiting for this one.
    pump(x);
    return;
  }
  const running = x.running.get(task.taskId);
  if (running === undefined || task.abandoned !== undefined) return;
  const failure = error(false);
  const abandoned = { error: failure, terminated: false };
  task.abandoned = abandoned;
  if (why === 'aborted') counters.aborted++;
  else counters.callTimeouts++;
  task.reject(failure);
  x.pool.slots.requestCancel(running.tracked.slot, CancelReason.ABORTED);
  // Its sandbox's grace (cancellationGraceMs), as for the governor's cancellations; "never": none.
  const graceMs = x.graceMsOf(task.taskId);
  if (!Number.isFinite(graceMs)) return;
  running.hardTimer = setTimeout(() => {
    running.hardTimer = undefined;
    if (x.running.get(task.taskId) === running) {
      abandoned.terminated = true;
      x.pool.terminateWorkerOf(running.dispatch.lane, running.tracked.slot, task.taskId);
    }
  }, graceMs);
  running.hardTimer.unref();
}
