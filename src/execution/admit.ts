/**
 * Admit: one search request becomes a queued task, or is refused before anything is queued. Resolves
 * the index expression, lets the engine validate the body, binds the request to a sandbox, reads the
 * governor's published verdict (no sampling here), takes the search settings and the priority in
 * force, and offers the task to the scheduler (which may push out a less important one). The call's
 * promise settles later, exactly once, through `dispatch.ts` / `settle.ts` / `call-control.ts`.
 */
import type { SandboxClassifier } from '../classify/sandbox-classifier.js';
import { resolveIndexExpressionCached } from '../classify/index-expression.js';
import { publishTaskQueued, publishTaskRejected } from '../diagnostics.js';
import { AbortedError, InvalidArgumentError, RejectedError } from '../errors.js';
import type { EngineRequest } from '../pool/engine-module.js';
import type { SearchRequest } from '../runtime-api.js';
import { watchCall } from './call-control.js';
import { armExpiry, pump, rejectEvicted } from './dispatch.js';
import type { EngineChecks } from './engine-checks.js';
import type { SearchCallOptions } from './search-call.js';
import { requestedParameters, timeoutOf } from './search-parameters.js';
import type { QueuedTask } from './task.js';
import type { TaskExecution } from './task-execution.js';
import { checkVerdict } from './verdict-check.js';

/**
 * Admits one request; returns the call's promise.
 * @throws AbortedError (signal already aborted), InvalidArgumentError (index, shards), the engine's
 *   request errors, RejectedError (verdict, full queue) — before anything is queued.
 */
export function admit(
  x: TaskExecution,
  engine: EngineChecks,
  classifier: SandboxClassifier,
  request: SearchRequest,
  control: SearchCallOptions | undefined,
): Promise<unknown> {
  if (control?.signal?.aborted === true) {
    throw new AbortedError(undefined, true, 'search aborted by its caller before it was queued', {
      cause: control.signal.reason,
    });
  }
  if (typeof request.index !== 'string')
    throw new InvalidArgumentError('index', 'must be a string', request.index);
  const indices = resolveIndexExpressionCached(request.index, engine.searchableIndices());
  const requested = requestedParameters(request);
  const body = requested.body;
  let engineRequest: EngineRequest =
    request.shards === undefined
      ? { indices, body }
      : { indices, body, shards: checkShards(request.shards, indices) };
  engine.validate(engineRequest);
  const attributes = { user: request.user, indices };
  const sandbox =
    request.sandboxId !== undefined
      ? classifier.resolveExplicit(request.sandboxId, attributes)
      : classifier.classify(attributes);
  checkVerdict(x, sandbox, undefined);
  const timeout = timeoutOf(requested.timeoutMs, x.settingsOf(sandbox.id));
  if (timeout !== undefined) engineRequest = { ...engineRequest, timeoutMs: timeout.ms };
  const priority = engine.priorityOf(x.scheduler.config, engineRequest, request.user, sandbox);
  // The search's `timeout` in force (the request's, or its sandbox's search_settings) bounds its wait too.
  const bound = x.queueWaitBound(sandbox.id, timeout);
  let task!: QueuedTask;
  const queuedAtMs = performance.now();
  const settled = new Promise((resolve, reject) => {
    task = {
      taskId: x.nextTaskId++,
      sandbox,
      user: request.user,
      priority,
      queuedAtMs,
      request: engineRequest,
      requestedCancelAfterMs: requested.cancelAfterMs,
      resolve,
      reject,
      boundFrom: bound.from,
      callTimeoutMs: control?.timeoutMs,
      ticket: undefined,
      abandoned: undefined,
    };
  });
  // Full bounds shed the lowest priority first: the newest of the lowest-priority waiting tasks
  // makes room for a more important one; if the incoming task is itself the lowest, it is refused.
  const offered = x.scheduler.offer(task, sandbox.id, priority, queuedAtMs, bound.ms);
  if (!offered.accepted) {
    x.counters.countRejection(sandbox.id, 'queue');
    const error = new RejectedError(sandbox.id, 'queue', offered.message, offered.reason);
    publishTaskRejected(x.source, task.taskId, priority, error, sandbox.id, offered.reason, false);
    throw error;
  }
  task.ticket = offered.ticket;
  publishTaskQueued(x.source, task.taskId, sandbox.id, priority, x.laneNames[x.scheduler.laneOf(priority)]!);
  if (control !== undefined) watchCall(x, task, settled, control);
  rejectEvicted(x, offered.evicted);
  // Into a lane whose every worker is busy, the task only waits: nothing else became dispatchable
  // (each change that can free a worker runs the loop itself), but its queue-wait bound may be the
  // nearest, so the expiry timer is armed for it.
  if (offered.laneFull) armExpiry(x);
  else pump(x);
  return settled;
}

/**
 * Checks `SearchRequest.shards` against the resolved indices; returns a frozen copy.
 * @throws InvalidArgumentError naming `shards`, `shards.<index>` or `shards.<index>[i]` and the value.
 */
export function checkShards(
  shards: unknown,
  indices: readonly string[],
): Readonly<Record<string, readonly number[]>> {
  if (typeof shards !== 'object' || shards === null || Array.isArray(shards)) {
    throw new InvalidArgumentError('shards', 'must be an object of index name to shard numbers', shards);
  }
  const out: Record<string, readonly number[]> = {};
  for (const [index, list] of Object.entries(shards)) {
    const path = `shards.${index}`;
    if (!indices.includes(index)) {
      throw new InvalidArgumentError(path, 'must name an index the request resolves to', list);
    }
    if (!Array.isArray(list) || list.length === 0) {
      throw new InvalidArgumentError(path, 'must be a non-empty array of shard numbers', list);
    }
    for (const [i, n] of list.entries()) {
      if (!Number.isInteger(n) || n < 0 || n > 1023) {
        throw new InvalidArgumentError(`${path}[${i}]`, 'must be an integer in 0..1023', n);
      }
      if (list.indexOf(n) !== i)
        throw new InvalidArgumentError(`${path}[${i}]`, 'must not repeat a shard', n);
    }
    out[index] = Object.freeze([...(list as number[])]);
  }
  return Object.freeze(out);
}
