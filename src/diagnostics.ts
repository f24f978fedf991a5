/**
 * The runtime's events: `node:diagnostics_channel` channels, every one declared here (as undici's
 * `lib/core/diagnostics.js` does), each published only while it has subscribers, so a runtime
 * nobody watches pays one `hasSubscribers` read per event (`npm run bench:events`).
 *
 * Subscribe by name from anywhere in the process, without a reference to the runtime:
 * ```ts
 * import diagnostics_channel from 'node:diagnostics_channel';
 * diagnostics_channel.subscribe('query-sandbox:task:ended', (message) => {
 *   const event = message as TaskEndedEvent;
 *   if (event.outcome === 'cancelled') console.log(event.sandboxId, event.cancellation);
 * });
 * ```
 * Every event is a fresh plain object (safe to keep), published synchronously on the main thread at
 * the moment it describes; a subscriber must be cheap and must not throw (Node reports a throwing
 * subscriber as an uncaught exception on the next tick). Every event carries `runtimeId` (unique in
 * the process, `Runtime.runtimeId`) and `nodeId`, since several runtimes may share a process.
 *
 * The life of a task, as the events tell it (each task id appears in exactly one of these paths):
 * - refused before it was queued: `task:rejected` (`queued: false`; `taskId` undefined when refused
 *   by its sandbox's verdict before it got one);
 * - queued, then refused while waiting (evicted by a more important task, or its sandbox went above
 *   a low limit before a worker was free): `task:queued`, `task:rejected` (`queued: true`);
 * - queued, then ended without running (the runtime closed): `task:queued`, `task:ended`
 *   (`ran: false`);
 * - ran: `task:queued`, `task:started`, any `task:cancelling` (soft, then maybe hard), `task:ended`.
 */
import diagnostics_channel from 'node:diagnostics_channel';
import {
  AbortedError,
  CancelledError,
  type QuerySandboxError,
  type RejectedError,
  TimedOutError,
} from './errors.js';
import type { SandboxState } from './governor/decide.js';
import type { Resource } from './sandbox/sandbox.js';

/** The channel names, for `diagnostics_channel.subscribe(name, fn)`. */
export const ChannelName = {
  TASK_QUEUED: 'query-sandbox:task:queued',
  TASK_STARTED: 'query-sandbox:task:started',
  TASK_CANCELLING: 'query-sandbox:task:cancelling',
  TASK_ENDED: 'query-sandbox:task:ended',
  TASK_REJECTED: 'query-sandbox:task:rejected',
  SANDBOX_STATE: 'query-sandbox:sandbox:state',
  WORKER_REPLACED: 'query-sandbox:worker:replaced',
} as const;
export type ChannelName = (typeof ChannelName)[keyof typeof ChannelName];

/** Fields every event has. */
export interface RuntimeEvent {
  /** The publishing runtime, unique in this process (`Runtime.runtimeId`). */
  readonly runtimeId: number;
  /** The runtime's `nodeId`. */
  readonly nodeId: string;
}

/** A task entered the queue (`query-sandbox:task:queued`). */
export interface TaskQueuedEvent extends RuntimeEvent {
  readonly taskId: number;
  /** The leaf sandbox the request was bound to. */
  readonly sandboxId: string;
  /** The priority the scheduler gave it (higher = more important). */
  readonly priority: number;
  /** The lane that will run it (`nodeStats().lanes[i].name`). */
  readonly lane: string;
}

/** A task was handed to a worker (`query-sandbox:task:started`). */
export interface TaskStartedEvent extends RuntimeEvent {
  readonly taskId: number;
  readonly sandboxId: string;
  readonly priority: number;
  readonly lane: string;
  /** Time it waited in the queue, ms. */
  readonly waitMs: number;
  /** True when a worker reserved for higher priorities took it (lending). */
  readonly lent: boolean;
}

/**
 * Why a task was cancelled: its sandbox (or an ancestor) above the high limit of a resource, or shed
 * in duress (`cpu` / `memory` too: `TaskCancellingEvent.breachedSandboxId` names the shed sandbox),
 * `time` (it ran past its `cancel_after_time_interval`, the wall-clock watchdog), the runtime shutting
 * down, or its caller giving up: `aborted` (`search`'s `signal`, an HTTP client that disconnected) or
 * `timed_out` (`search`'s `timeoutMs`); see docs/overload.md.
 */
export type CancellationReason = Resource | 'time' | 'shutdown' | 'aborted' | 'timed_out';

/** The governor asked a running task to stop (`query-sandbox:task:cancelling`). */
export interface TaskCancellingEvent extends RuntimeEvent {
  readonly taskId: number;
  readonly sandboxId: string;
  readonly priority: number;
  readonly lane: string;
  /** False: soft (the task's signal fires); true: hard (its worker is being terminated). */
  readonly hard: boolean;
  /** The resource whose high limit was breached, or `time`: past its `cancel_after_time_interval`. */
  readonly reason: Resource | 'time';
  /** The sandbox whose high limit was breached: the task's own or an ancestor (`time`: its own). */
  readonly breachedSandboxId: string;
  /** For a soft one: ms until the hard one, `Infinity` when its sandbox never hard-cancels. */
  readonly graceMs: number;
  /** Time since the task started, ms. */
  readonly runMs: number;
}

/** How a task ended. */
export type TaskEndOutcome = 'completed' | 'cancelled' | 'failed';

/** A task ended (`query-sandbox:task:ended`), once per task that was queued and not rejected. */
export interface TaskEndedEvent extends RuntimeEvent {
  readonly taskId: number;
  readonly sandboxId: string;
  readonly priority: number;
  readonly lane: string;
  /** False for a task that ended while still queued (the runtime closed, or its caller gave up). */
  readonly ran: boolean;
  /**
   * `completed` (a result), `cancelled` (see `cancellation`), `failed` (the engine threw: `errorCode`
   * `QS_ENGINE_REQUEST` for a refused request, `QS_ENGINE_FAILURE` otherwise, also when its worker
   * died).
   */
  readonly outcome: TaskEndOutcome;
  /** Set when `outcome` is `cancelled`. */
  readonly cancellation:
    | {
        /** True when its worker was terminated (the task did not stop within its grace, or died of its heap cap). */
        readonly hard: boolean;
        readonly reason: CancellationReason;
        /** The sandbox whose limit was breached; its own for a heap-cap death or a shutdown. */
        readonly breachedSandboxId: string;
      }
    | undefined;
  /** The error code the caller got (`QS_CANCELLED`, `QS_ENGINE_FAILURE`...); undefined when completed. */
  readonly errorCode: string | undefined;
  /** CPU time of its worker thread while it ran (from the end of the worker's previous task), ns. 0 if it did not run. */
  readonly cpuTimeNs: number;
  /** Time it waited in the queue, ms. */
  readonly waitMs: number;
  /** Time from dispatch to its end, ms (0 if it did not run). */
  readonly runMs: number;
}

/**
 * Why a task was refused: its sandbox (or an ancestor) above the low limit of `cpu` or `memory`, or
 * a queue bound (`queue`, with `queueReason`); `TaskRejectedEvent.rejectionReason` says which rule
 * refused it (a limit, duress shedding, a queue bound, the queue-wait bound: docs/overload.md).
 */
export type RejectionReason = Resource | 'queue';

/** A task was refused (`query-sandbox:task:rejected`): the caller got a `RejectedError` (429). */
export interface TaskRejectedEvent extends RuntimeEvent {
  /** Undefined when refused by its sandbox's verdict before it was given an id. */
  readonly taskId: number | undefined;
  readonly sandboxId: string;
  /** Undefined when refused before its priority was known. */
  readonly priority: number | undefined;
  readonly reason: RejectionReason;
  /**
   * For `queue`: the bound (`queue_full`, `sandbox_queue_full`, `limit_lowered`, `queue_wait`: it
   * waited past its queue-wait bound, `controlled_delay`).
   */
  readonly queueReason: string | undefined;
  /** The error's `rejection_reason`: `limit`, `duress` (the node sheds its sandbox), or the `queueReason`. */
  readonly rejectionReason: string;
  /** The sandbox whose limit refused it: the request's own or an ancestor (for `queue`: its own). */
  readonly rejectedBy: string;
  /** True when it had been queued (and left the queue now): a `task:queued` came before. */
  readonly queued: boolean;
}

/** A sandbox's published state changed at a governor tick (`query-sandbox:sandbox:state`). */
export interface SandboxStateEvent extends RuntimeEvent {
  readonly sandboxId: string;
  readonly from: SandboxState;
  readonly to: SandboxState;
  /** The resource over a limit in the new state (undefined for `ok`). */
  readonly resource: Resource | undefined;
  /** Its usage in that interval, ratios 0..1 of the node. */
  readonly usage: { readonly cpu: number; readonly memory: number };
}

/** A worker that replaced a gone one (hard cancellation, heap cap, crash) finished loading (`query-sandbox:worker:replaced`). */
export interface WorkerReplacedEvent extends RuntimeEvent {
  readonly lane: string;
  /** The new worker's `worker_threads` id. */
  readonly threadId: number;
  /** Its start-up: module import and the engine's `init`, ms. */
  readonly startupMs: number;
}

/** The channels, made once (a channel object with subscribers must stay referenced). */
export const channels = Object.freeze({
  taskQueued: diagnostics_channel.channel(ChannelName.TASK_QUEUED),
  taskStarted: diagnostics_channel.channel(ChannelName.TASK_STARTED),
  taskCancelling: diagnostics_channel.channel(ChannelName.TASK_CANCELLING),
  taskEnded: diagnostics_channel.channel(ChannelName.TASK_ENDED),
  taskRejected: diagnostics_channel.channel(ChannelName.TASK_REJECTED),
  sandboxState: diagnostics_channel.channel(ChannelName.SANDBOX_STATE),
  workerReplaced: diagnostics_channel.channel(ChannelName.WORKER_REPLACED),
});

let lastRuntimeId = 0;

/** A new process-unique runtime id (1, 2, ...). */
export function nextRuntimeId(): number {
  return ++lastRuntimeId;
}

/** Who publishes: made once per runtime. */
export interface EventSource {
  readonly runtimeId: number;
  readonly nodeId: string;
}

// The publishers the runtime calls. Each returns at once while its channel has no subscriber, so
// the request path builds no event object then; they take the figures as arguments for that reason.

export function publishTaskQueued(
  source: EventSource,
  taskId: number,
  sandboxId: string,
  priority: number,
  lane: string,
): void {
  if (!channels.taskQueued.hasSubscribers) return;
  const event: TaskQueuedEvent = {
    runtimeId: source.runtimeId,
    nodeId: source.nodeId,
    taskId,
    sandboxId,
    priority,
    lane,
  };
  channels.taskQueued.publish(event);
}

export function publishTaskStarted(
  source: EventSource,
  taskId: number,
  sandboxId: string,
  priority: number,
  lane: string,
  waitMs: number,
  lent: boolean,
): void {
  if (!channels.taskStarted.hasSubscribers) return;
  const event: TaskStartedEvent = {
    runtimeId: source.runtimeId,
    nodeId: source.nodeId,
    taskId,
    sandboxId,
    priority,
    lane,
    waitMs,
    lent,
  };
  channels.taskStarted.publish(event);
}

export function publishTaskCancelling(
  source: EventSource,
  taskId: number,
  sandboxId: string,
  priority: number,
  lane: string,
  hard: boolean,
  reason: Resource | 'time',
  breachedSandboxId: string,
  graceMs: number,
  startedAtMs: number,
): void {
  if (!channels.taskCancelling.hasSubscribers) return;
  const event: TaskCancellingEvent = {
    runtimeId: source.runtimeId,
    nodeId: source.nodeId,
    taskId,
    sandboxId,
    priority,
    lane,
    hard,
    reason,
    breachedSandboxId,
    graceMs,
    runMs: performance.now() - startedAtMs,
  };
  channels.taskCancelling.publish(event);
}

/**
 * `task:ended`. `failure`: the error the caller gets (undefined: completed); `breachedBy`: the sandbox
 * whose limit the cancellation is for (default: the error's own); `startedAtMs`: dispatch time
 * (`performance.now()`), or `undefined` for a task that never ran (then `waitMs` runs to now from
 * `queuedAtMs`).
 */
export function publishTaskEnded(
  source: EventSource,
  taskId: number,
  sandboxId: string,
  priority: number,
  lane: string,
  failure: QuerySandboxError | undefined,
  breachedBy: string | undefined,
  cpuTimeNs: number,
  waitMs: number,
  startedAtMs: number | undefined,
  terminated?: boolean,
): void {
  if (!channels.taskEnded.hasSubscribers) return;
  const cancelled = failure instanceof CancelledError ? failure : undefined;
  // A caller that gave up: its task is cancelled for it (`terminated`: its worker was, after the grace).
  const gaveUp = failure instanceof AbortedError || failure instanceof TimedOutError ? failure : undefined;
  const event: TaskEndedEvent = {
    runtimeId: source.runtimeId,
    nodeId: source.nodeId,
    taskId,
    sandboxId,
    priority,
    lane,
    ran: startedAtMs !== undefined,
    outcome:
      failure === undefined
        ? 'completed'
        : cancelled !== undefined || gaveUp !== undefined
          ? 'cancelled'
          : 'failed',
    cancellation:
      cancelled !== undefined
        ? {
            hard: cancelled.hard,
            reason: cancelled.resource,
            breachedSandboxId: breachedBy ?? cancelled.sandboxId,
          }
        : gaveUp !== undefined
          ? {
              hard: terminated === true,
              reason: gaveUp instanceof AbortedError ? 'aborted' : 'timed_out',
              breachedSandboxId: gaveUp.sandboxId ?? sandboxId,
            }
          : undefined,
    errorCode: failure?.code,
    cpuTimeNs,
    waitMs,
    runMs: startedAtMs === undefined ? 0 : performance.now() - startedAtMs,
  };
  channels.taskEnded.publish(event);
}

export function publishTaskRejected(
  source: EventSource,
  taskId: number | undefined,
  priority: number | undefined,
  error: RejectedError,
  rejectedBy: string,
  queueReason: string | undefined,
  queued: boolean,
): void {
  if (!channels.taskRejected.hasSubscribers) return;
  const event: TaskRejectedEvent = {
    runtimeId: source.runtimeId,
    nodeId: source.nodeId,
    taskId,
    sandboxId: error.sandboxId,
    priority,
    reason: error.resource,
    queueReason,
    rejectionReason: error.reason,
    rejectedBy,
    queued,
  };
  channels.taskRejected.publish(event);
}

/** `sandbox:state` for every sandbox whose published state differs between two governor snapshots. */
export function publishSandboxStates(
  source: EventSource,
  before: ReadonlyMap<string, { readonly state: SandboxState }>,
  after: ReadonlyMap<string, { readonly state: SandboxState; readonly resource: Resource | undefined }>,
  usage: ReadonlyMap<string, { readonly cpu: number; readonly memory: number }>,
): void {
  if (!channels.sandboxState.hasSubscribers) return;
  for (const [sandboxId, verdict] of after) {
    const from = before.get(sandboxId)?.state ?? 'ok';
    if (from === verdict.state) continue;
    const u = usage.get(sandboxId);
    const event: SandboxStateEvent = {
      runtimeId: source.runtimeId,
      nodeId: source.nodeId,
      sandboxId,
      from,
      to: verdict.state,
      resource: verdict.state === 'ok' ? undefined : verdict.resource,
      usage: { cpu: u?.cpu ?? 0, memory: u?.memory ?? 0 },
    };
    channels.sandboxState.publish(event);
  }
}

export function publishWorkerReplaced(
  source: EventSource,
  lane: string,
  threadId: number,
  startupMs: number,
): void {
  if (!channels.workerReplaced.hasSubscribers) return;
  const event: WorkerReplacedEvent = {
    runtimeId: source.runtimeId,
    nodeId: source.nodeId,
    lane,
    threadId,
    startupMs,
  };
  channels.workerReplaced.publish(event);
}
