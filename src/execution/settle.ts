/**
 * Settle: a task's worker answered (an outcome) or was lost (a thrown error). Gives back everything
 * the task held (cap hold, usage tracking, shared slot, allocator slot, running entry, lane dispatch,
 * the governor's record), counts the outcome, publishes `task:ended` and settles the call: resolves
 * with the result, or rejects with the error the outcome maps to. A task whose caller gave up
 * (`abandoned`) has settled its call already; only its work is accounted for then.
 *
 * The caller runs the dispatch loop afterwards (`dispatch.ts`): a freed worker takes the next task.
 */
import { CancelledError, EngineFailureError, EngineRequestError, type QuerySandboxError } from '../errors.js';
import type { AnyCancellation } from '../governor/governor.js';
import type { TaskOutcome } from '../pool/task-envelope.js';
import { CancelReason } from '../pool/task-slots.js';
import type { Resource } from '../sandbox/sandbox.js';
import { cancelAfterOf, describeLimit } from './search-parameters.js';
import type { RunningTask } from './task.js';
import { publishRunEnd } from './task-events.js';
import type { TaskExecution } from './task-execution.js';

/** Ends a running task: `outcome` from its worker, or `thrown` when the worker was lost. Call once per task. */
export function settle(
  x: TaskExecution,
  running: RunningTask,
  outcome: TaskOutcome | undefined,
  thrown: unknown,
): void {
  const { queued, tracked } = running;
  x.caps.ended(running.hold);
  x.tracker.complete(tracked);
  x.pool.slots.release(tracked.slot);
  x.allocator.release(tracked.slot);
  x.running.delete(queued.taskId);
  x.scheduler.release(running.dispatch);
  x.prefetch.ended(running.dispatch.lane, performance.now());
  const picked = x.governor.cancellationOf(queued.taskId);
  x.governor.forget(queued.taskId);
  const sandboxId = queued.sandbox.id;
  const counters = x.counters.of(sandboxId);
  if (queued.abandoned !== undefined) {
    // Its caller gave up and its call has settled: only the worker's work is accounted for.
    if (running.hardTimer !== undefined) clearTimeout(running.hardTimer);
    if (outcome?.ok === true) x.governor.onTaskCompleted();
    publishRunEnd(x, running, queued.abandoned.error, undefined, queued.abandoned.terminated);
    return;
  }
  if (outcome?.ok === true) {
    counters.completions++;
    if ((outcome.result as { timed_out?: unknown } | null)?.timed_out === true) counters.timedOut++;
    x.governor.onTaskCompleted();
    publishRunEnd(x, running, undefined, undefined);
    queued.resolve(outcome.result);
    return;
  }
  const failure = failureOf(x, running, outcome, thrown, picked);
  publishRunEnd(x, running, failure, picked?.cancellation.sandboxId);
  queued.reject(failure);
}

/** The error a failed task's call rejects with, counted in its sandbox's counters. */
function failureOf(
  x: TaskExecution,
  running: RunningTask,
  outcome: Extract<TaskOutcome, { ok: false }> | undefined,
  thrown: unknown,
  picked: { readonly cancellation: AnyCancellation; readonly hard: boolean } | undefined,
): QuerySandboxError {
  const { queued } = running;
  const sandboxId = queued.sandbox.id;
  const counters = x.counters.of(sandboxId);
  if (outcome !== undefined && outcome.cancelCode !== 0) {
    const resource = cancelResourceOf(outcome.cancelCode);
    x.counters.countCancellation(sandboxId, resource, false);
    return cancelledError(x, running, picked?.cancellation, resource, false);
  }
  if (outcome !== undefined) {
    const e = outcome.error;
    counters.failures++;
    if (e.statusCode !== undefined) {
      return new EngineRequestError(e.type ?? 'illegal_argument_exception', e.message, e.statusCode);
    }
    x.log.warn({ taskId: queued.taskId, error: e.message, stack: e.stack }, 'engine failure');
    return new EngineFailureError(`engine failure: ${e.message}`);
  }
  if (picked?.hard === true || x.closed || picked?.cancellation.resource === 'time') {
    // The worker is gone: terminated by a hard cancellation or at shutdown. A worker whose task
    // the watchdog picked exits by itself when its handler stalls (worker-harness.ts).
    const resource: Resource | 'time' | 'shutdown' =
      picked?.hard === true || picked?.cancellation.resource === 'time'
        ? picked.cancellation.resource
        : 'shutdown';
    x.counters.countCancellation(sandboxId, resource, true);
    return cancelledError(x, running, picked?.cancellation, resource, true);
  }
  if ((thrown as { code?: unknown } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
    // The worker's own heap cap (resourceLimits) stopped the task: a memory cancellation.
    x.counters.countCancellation(sandboxId, 'memory', true);
    x.log.warn({ taskId: queued.taskId, sandboxId }, 'task exhausted its worker heap');
    return new CancelledError(
      sandboxId,
      'memory',
      true,
      `task cancelled: it exhausted its worker's heap limit (${x.settings.workerHeapMb} MiB, ` +
        'options.workerHeapMb); the worker was replaced',
    );
  }
  counters.failures++;
  x.log.warn({ taskId: queued.taskId, sandboxId, error: String(thrown) }, 'worker lost');
  return new EngineFailureError(
    `engine failure: the worker running the task exited (${thrown instanceof Error ? thrown.message : String(thrown)}); it was replaced`,
    { cause: thrown },
  );
}

/** The resource a worker's cancel code names. */
export function cancelResourceOf(code: number): Resource | 'time' | 'shutdown' {
  return code === CancelReason.CPU
    ? 'cpu'
    : code === CancelReason.MEMORY
      ? 'memory'
      : code === CancelReason.TIME
        ? 'time'
        : 'shutdown';
}

function cancelledError(
  x: TaskExecution,
  running: RunningTask,
  cancellation: AnyCancellation | undefined,
  resource: Resource | 'time' | 'shutdown',
  hard: boolean,
): CancelledError {
  const sandbox = running.queued.sandbox;
  if (resource === 'shutdown') {
    return new CancelledError(sandbox.id, resource, hard, `task cancelled: the runtime is shutting down`);
  }
  if (cancellation?.resource !== 'time' && cancellation?.reason === 'duress' && resource !== 'time') {
    x.counters.of(sandbox.id).duressCancellations++;
    return new CancelledError(
      sandbox.id,
      resource,
      hard,
      `task cancelled: the node is in ${resource} duress and ` +
        (cancellation.sandboxId === sandbox.id
          ? `sandbox [${sandbox.id}] is the lowest-priority sandbox using it`
          : `its sandbox [${cancellation.sandboxId}] was deleted while it ran`) +
        (hard ? '; its worker was terminated' : ''),
      'duress',
    );
  }
  if (resource === 'time') {
    const limit = cancelAfterOf(running.queued.requestedCancelAfterMs, x.settingsOf(sandbox.id));
    const ranMs = Math.round(performance.now() - running.tracked.dispatchedAtMs);
    const after =
      limit !== undefined
        ? describeLimit(limit, 'cancel_after_time_interval')
        : `its cancel_after_time_interval${cancellation?.resource === 'time' ? ` [${cancellation.cancelAfterMs}ms]` : ''}`;
    return new CancelledError(
      sandbox.id,
      resource,
      hard,
      `task cancelled: it ran ${ranMs} ms, past ${after}` + (hard ? '; its worker was replaced' : ''),
    );
  }
  const by = cancellation?.sandboxId ?? sandbox.id;
  return new CancelledError(
    sandbox.id,
    resource,
    hard,
    `task cancelled: sandbox [${by}] is above its high ${resource} limit` +
      (by !== sandbox.id ? ` (task of its child [${sandbox.id}])` : '') +
      (hard ? '; its worker was terminated' : ''),
  );
}
