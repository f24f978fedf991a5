/**
 * The governor's published verdict applied to new work, at admission and again at dispatch (a task
 * that waited is still new work). Reads the verdict; samples nothing.
 */
import { publishTaskRejected } from '../diagnostics.js';
import { RejectedError } from '../errors.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import type { QueuedTask } from './task.js';
import type { TaskExecution } from './task-execution.js';

/**
 * Throws RejectedError when the governor's published verdict refuses new tasks of `sandbox`.
 * `queued`: the waiting task being dispatched; undefined at admission, where a monitor sandbox's
 * `would_reject` is counted (once per request, not again at dispatch).
 */
export function checkVerdict(x: TaskExecution, sandbox: Sandbox, queued: QueuedTask | undefined): void {
  const verdict = x.governor.verdict(sandbox.id);
  if (queued === undefined && verdict.wouldReject && verdict.resource !== undefined) {
    x.counters.of(sandbox.id)[verdict.resource].wouldReject++;
  }
  if (!verdict.rejectNew) return;
  const resource = verdict.rejectResource ?? 'cpu';
  if (verdict.shedInDuress === true) {
    const node = x.governor.snapshot.node;
    x.counters.countRejection(sandbox.id, resource);
    x.counters.of(sandbox.id).duressRejections++;
    const shed = new RejectedError(
      sandbox.id,
      resource,
      `rejected: the node is in ${resource} duress (usage ${node[resource].toFixed(3)} > ${x.settings.duressRejectThreshold}) ` +
        `and sandbox [${sandbox.id}] is the lowest-priority sandbox using it; it takes new work again when the duress ends`,
      'duress',
    );
    publishTaskRejected(
      x.source,
      queued?.taskId,
      queued?.priority,
      shed,
      sandbox.id,
      undefined,
      queued !== undefined,
    );
    throw shed;
  }
  const by = verdict.rejectedBy ?? sandbox.id;
  const usage = x.governor.snapshot.usage.get(by);
  const limit = x.byId.get(by)?.limits[resource];
  x.counters.countRejection(sandbox.id, resource);
  const error = new RejectedError(
    sandbox.id,
    resource,
    `rejected: sandbox [${by}] is above its low ${resource} limit` +
      (usage !== undefined && limit !== undefined
        ? ` (usage ${usage[resource].toFixed(3)} > low ${limit.low})`
        : '') +
      (by !== sandbox.id ? `; request bound to its child [${sandbox.id}]` : ''),
  );
  publishTaskRejected(x.source, queued?.taskId, queued?.priority, error, by, undefined, queued !== undefined);
  throw error;
}
