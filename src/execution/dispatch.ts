/**
 * Dispatch: hands queued tasks to free workers of their lanes as the scheduler picks them, after
 * rejecting those past their queue-wait bound and re-checking the governor's verdict (a task that
 * waited is still new work). The scheduler counts each lane's `workers` (not its spares): the spares
 * only stand in for workers being replaced. Each dispatched task settles through `settle.ts`, after
 * which the loop runs again.
 */
import { publishTaskRejected, publishTaskStarted } from '../diagnostics.js';
import { EngineFailureError, RejectedError } from '../errors.js';
import type { TaskOutcome } from '../pool/task-envelope.js';
import type { Eviction, Expiry } from '../scheduler/task-scheduler.js';
import { newTrackedTask } from '../tracking/tracked-task.js';
import { settle } from './settle.js';
import type { QueuedTask, RunningTask } from './task.js';
import type { TaskExecution } from './task-execution.js';
import { checkVerdict } from './verdict-check.js';

/** Runs the dispatch loop; ends a drain under way once nothing is queued or running. */
export function pump(x: TaskExecution): void {
  dispatchQueued(x);
  if (x.endDrain !== undefined && x.running.size === 0 && x.scheduler.length === 0) x.endDrain();
}

/** Settles a task, then runs the dispatch loop (even when settling threw). */
function settleAndPump(
  x: TaskExecution,
  running: RunningTask,
  outcome: TaskOutcome | undefined,
  thrown: unknown,
): void {
  try {
    settle(x, running, outcome, thrown);
  } finally {
    pump(x);
  }
}

/**
 * Tells the scheduler each lane's live workers and what it may prefetch now. Each lane hands out no
 * more tasks than it has live workers (with its spares used up by replacements still loading, a task
 * given to the pool would wait there, unbounded and unseen), plus, while its tasks end close
 * together, its prefetch (`prefetch.ts`). Before every dispatch, and before stats are read: an idle
 * lane's prefetch lapses with time, not with an event.
 */
export function updateLanes(x: TaskExecution): void {
  const nowMs = performance.now();
  for (let lane = 0; lane < x.laneNames.length; lane++) {
    const ready = x.pool.readyWorkersOf(lane);
    x.scheduler.setLiveWorkers(lane, ready);
    const workers = x.scheduler.lanes[lane]!.workers;
    // prefetchTasks is per worker (a consumer prefetch count): each busy worker may hold its next one.
    x.scheduler.setPrefetch(lane, x.prefetch.tasksFor(lane, ready >= workers, nowMs) * workers);
  }
}

function dispatchQueued(x: TaskExecution): void {
  // Nothing past its queue-wait bound is dispatched, even when its timer has not fired yet.
  if (!x.closed) {
    const expired = x.scheduler.expire(performance.now());
    if (expired.length > 0) rejectExpired(x, expired);
  }
  updateLanes(x);
  while (!x.closed) {
    const dispatch = x.scheduler.next(performance.now());
    if (dispatch === undefined) break;
    const queued = dispatch.item;
    // A task that waited is still new work: the verdict published since it was queued applies.
    try {
      checkVerdict(x, queued.sandbox, queued);
    } catch (error) {
      x.scheduler.release(dispatch);
      queued.reject(error);
      continue;
    }
    const slot = x.allocator.acquire();
    if (slot < 0) {
      // Cannot happen while slots >= workers; refuse rather than lose the task.
      x.scheduler.release(dispatch);
      queued.reject(new EngineFailureError('no free task slot'));
      continue;
    }
    x.pool.slots.assign(slot, queued.taskId);
    const tracked = newTrackedTask(queued.taskId, queued.sandbox.id, slot, performance.now());
    const hold = x.caps.started(queued.sandbox.id, queued.user);
    const running: RunningTask = { queued, dispatch, tracked, hold, hardTimer: undefined };
    x.running.set(queued.taskId, running);
    x.tracker.add(tracked);
    publishTaskStarted(
      x.source,
      queued.taskId,
      queued.sandbox.id,
      queued.priority,
      x.laneNames[dispatch.lane]!,
      dispatch.waitMs,
      dispatch.lent,
    );
    x.pool.run(dispatch.lane, { taskId: queued.taskId, slot, request: queued.request }).then(
      (outcome) => settleAndPump(x, running, outcome, undefined),
      (error: unknown) => settleAndPump(x, running, undefined, error),
    );
  }
  armExpiry(x);
}

/** Rejects the tasks that waited past their bound or their lane's controlled-delay target. */
function rejectExpired(x: TaskExecution, expired: readonly Expiry<QueuedTask>[]): void {
  for (const e of expired) {
    x.counters.countRejection(e.sandboxId, 'queue');
    x.counters.of(e.sandboxId).queueWaitRejections++;
    // Whole ms, unless rounding would make the wait look no longer than its bound (a 1 ms bound).
    const waited = Math.round(e.waitedMs) > e.boundMs ? Math.round(e.waitedMs) : e.waitedMs.toFixed(2);
    const message =
      e.reason === 'queue_wait'
        ? `rejected: the task waited ${waited} ms in the queue, past its bound of ${e.boundMs} ms (${e.item.boundFrom})`
        : `rejected: lane [${e.lane}] has had a standing queue for ${x.settings.standingQueueMs} ms, ` +
          `so a task may wait at most ${e.boundMs} ms there (controlled delay); this one waited ${waited} ms`;
    const error = new RejectedError(e.sandboxId, 'queue', message, e.reason);
    publishTaskRejected(x.source, e.item.taskId, e.priority, error, e.sandboxId, e.reason, true);
    e.item.reject(error);
  }
}

/** Rejects the tasks a full bound or a query-priority change pushed out of the queue. */
export function rejectEvicted(x: TaskExecution, evicted: readonly Eviction<QueuedTask>[]): void {
  for (const e of evicted) {
    x.counters.countRejection(e.sandboxId, 'queue');
    const error = new RejectedError(e.sandboxId, 'queue', e.message, e.reason);
    publishTaskRejected(x.source, e.item.taskId, e.priority, error, e.sandboxId, e.reason, true);
    e.item.reject(error);
  }
}

/** Arms the timer for the scheduler's next expiry, unless one fires earlier already. */
export function armExpiry(x: TaskExecution): void {
  if (x.closed) return;
  const next = x.scheduler.nextExpiryMs();
  if (next === undefined || (x.expiryTimer !== undefined && x.expiryAtMs <= next)) return;
  if (x.expiryTimer !== undefined) clearTimeout(x.expiryTimer);
  x.expiryAtMs = next;
  x.expiryTimer = setTimeout(
    () => {
      x.expiryTimer = undefined;
      x.expiryAtMs = Number.POSITIVE_INFINITY;
      pump(x);
    },
    Math.max(0, Math.ceil(next - performance.now())),
  );
  x.expiryTimer.unref();
}
