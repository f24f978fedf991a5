/**
 * Cancellations the governor orders (soft: the task's slot is asked to stop; hard: its worker is
 * terminated), and the cancellation of every queued task when the runtime shuts down.
 */
import { CancelledError } from '../errors.js';
import { CancelReason } from '../pool/task-slots.js';
import type { Resource } from '../sandbox/sandbox.js';
import { publishCancelling, publishQueuedEnd } from './task-events.js';
import type { TaskExecution } from './task-execution.js';

/** Asks a running task to stop (its slot's cancel word); nothing when it is not running. */
export function softCancel(x: TaskExecution, taskId: number, resource: Resource | 'time'): void {
  const r = x.running.get(taskId);
  if (r === undefined) return;
  x.pool.slots.requestCancel(
    r.tracked.slot,
    resource === 'cpu' ? CancelReason.CPU : resource === 'memory' ? CancelReason.MEMORY : CancelReason.TIME,
  );
  publishCancelling(x, r, resource, false);
}

/** Terminates the worker of a running task; its `run` rejects and the task settles as cancelled. */
export function hardCancel(x: TaskExecution, taskId: number, resource: Resource | 'time'): void {
  const r = x.running.get(taskId);
  if (r === undefined) return;
  publishCancelling(x, r, resource, true);
  x.pool.terminateWorkerOf(r.dispatch.lane, r.tracked.slot, taskId);
}

/** At shutdown: stops dispatching and rejects every queued task (`CancelledError`, resource `shutdown`). */
export function cancelQueued(x: TaskExecution): void {
  x.closed = true;
  x.endDrain = undefined;
  if (x.expiryTimer !== undefined) clearTimeout(x.expiryTimer);
  for (const q of x.scheduler.drain()) {
    x.counters.countCancellation(q.sandbox.id, 'shutdown', false);
    const error = new CancelledError(
      q.sandbox.id,
      'shutdown',
      false,
      'task cancelled: the runtime is shutting down',
    );
    publishQueuedEnd(x, q, error);
    q.reject(error);
  }
}
