/**
 * The request path's task events (`diagnostics.ts` channels, published only when someone listens):
 * `task:ended` for a task that ran or ended while queued, `task:cancelling` for a cancellation.
 */
import type { AbortedError, CancelledError, QuerySandboxError, TimedOutError } from '../errors.js';
import { publishTaskCancelling, publishTaskEnded } from '../diagnostics.js';
import type { Resource } from '../sandbox/sandbox.js';
import type { QueuedTask, RunningTask } from './task.js';
import type { TaskExecution } from './task-execution.js';

/**
 * `task:ended` for a task that ran (`failure` undefined: it completed). Per-call control (a caller's
 * signal or timeoutMs) ends its running tasks through here.
 */
export function publishRunEnd(
  x: TaskExecution,
  running: RunningTask,
  failure: QuerySandboxError | undefined,
  breachedBy: string | undefined,
  terminated?: boolean,
): void {
  const { queued, tracked, dispatch } = running;
  publishTaskEnded(
    x.source,
    queued.taskId,
    queued.sandbox.id,
    queued.priority,
    x.laneNames[dispatch.lane]!,
    failure,
    breachedBy,
    tracked.cpuTimeNs,
    dispatch.waitMs,
    tracked.dispatchedAtMs,
    terminated,
  );
}

/** `task:ended` for a task that ends while still queued (the runtime closes, its caller gives up). */
export function publishQueuedEnd(
  x: TaskExecution,
  task: QueuedTask,
  failure: CancelledError | AbortedError | TimedOutError,
): void {
  publishTaskEnded(
    x.source,
    task.taskId,
    task.sandbox.id,
    task.priority,
    x.laneNames[x.scheduler.laneOf(task.priority)]!,
    failure,
    undefined,
    0,
    performance.now() - task.queuedAtMs,
    undefined,
  );
}

/** `task:cancelling` for a soft or hard cancellation by the governor. */
export function publishCancelling(
  x: TaskExecution,
  r: RunningTask,
  resource: Resource | 'time',
  hard: boolean,
): void {
  publishTaskCancelling(
    x.source,
    r.queued.taskId,
    r.queued.sandbox.id,
    r.queued.priority,
    x.laneNames[r.dispatch.lane]!,
    hard,
    resource,
    x.governor.cancellationOf(r.queued.taskId)?.cancellation.sandboxId ?? r.queued.sandbox.id,
    hard ? 0 : x.graceMsOf(r.queued.taskId),
    r.tracked.dispatchedAtMs,
  );
}
