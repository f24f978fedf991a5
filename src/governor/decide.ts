/**
 * The governor's decision for one interval: a pure function of (usage, sandboxes, node state).
 *
 * Per sandbox and resource: usage above the low limit makes the sandbox `rejecting` (new tasks are
 * refused), above the high limit `cancelling` (running tasks are cancelled until the excess is
 * covered). `enforced` sandboxes act always; `soft` ones reject while the node is in duress at the
 * reject level or above and cancel only at the cancel level; `monitor` ones never act but count what
 * they would have done. A sandbox's usage includes its descendants'; a task is refused when its
 * sandbox or any ancestor is rejecting.
 *
 * Cancellation: acting sandboxes above a high limit in ascending effective priority (priority plus a
 * decaying boost for sandboxes cut back recently, lowest first); within one, the running tasks of its
 * subtree that are not already being cancelled, lowest-priority child first, then by usage of the
 * breaching resource, descending (or oldest first), picked until their usage plus that of tasks
 * already being cancelled covers the excess (usage − high). Task and sandbox figures are both ratios
 * of the node. A task picked for one resource or sandbox counts for every other. The list is in the
 * order to apply it: the governor's rate limit takes a prefix.
 *
 * Orphans: a task whose sandbox was deleted while it ran finishes under the root's rules (no limits
 * of its own), and while the node is in duress it is cancelled first, before any breaching sandbox.
 *
 * Shedding in duress (`DecisionInput.duressShedding`; docs/overload.md): limits alone leave a node in
 * duress with nothing to act on when no sandbox breaches one (the root has no limits). While the node
 * is in duress, the sandbox of the lowest priority whose own tasks use at least `minUsage` of the
 * duress resource (the root included; monitor sandboxes never) is *shed*: its new tasks are refused
 * (`rejectNew`, `shedInDuress`) and, once it has been shed for `cancelAfterIntervals` intervals of
 * continued duress, its running tasks are cancelled, largest first, until their usage covers the
 * node's excess over the duress threshold (the rate limit applies as to every cancellation). CPU
 * duress starts (or widens) shedding only while some lane has a standing queue: a busy node that
 * keeps up is not shed (see `DuressSheddingInput.standingQueue`). Seed
 * 000's "pick the lowest priority sandbox", applied to the node's own breach: a shed sandbox stays
 * shed until the duress ends; when the shed ones no longer use the resource and the duress persists,
 * the next lowest is added. Only the sandbox's own tasks count and are shed, not its descendants'
 * (shedding the root must not shed its children). Ties go to the sandbox id, in code-unit order.
 */
import { RESOURCES, type Resource, type Sandbox, SandboxMode } from '../sandbox/sandbox.js';

export const EnforcementMode = {
  /** Acts on limits. Printed `enabled`, as OpenSearch's `wlm.workload_group.mode` (docs/governor.md). */
  ENFORCED: 'enabled',
  MONITOR_ONLY: 'monitor_only',
  DISABLED: 'disabled',
} as const;
export type EnforcementMode = (typeof EnforcementMode)[keyof typeof EnforcementMode];

export type SandboxState = 'ok' | 'rejecting' | 'cancelling';

/** Node duress: none, above the reject threshold, above the cancel threshold (for N intervals). */
export type DuressLevel = 'none' | 'reject' | 'cancel';

/** How tasks are picked within a breaching sandbox. */
export const SelectionStrategy = { LARGEST_USAGE: 'largest_usage', OLDEST_FIRST: 'oldest_first' } as const;
export type SelectionStrategy = (typeof SelectionStrategy)[keyof typeof SelectionStrategy];

/** A running task as the decision sees it. */
export interface TaskUsageView {
  readonly taskId: number;
  readonly sandboxId: string;
  readonly cpuUsage: number;
  readonly memoryUsage: number;
  /** Already picked in an earlier interval and not yet stopped. */
  readonly cancelling: boolean;
  /** When it was handed to a worker, ms (for the oldest-first strategy). */
  readonly startedAtMs: number;
}

/** Shedding in duress, as the governor hands it to `decide` each interval (see the module doc). */
export interface DuressSheddingInput {
  /** Sandboxes shed so far in this duress episode: id -> intervals it has been shed before this one. */
  readonly shed: ReadonlyMap<string, number>;
  /** Intervals a sandbox stays shed, the node still in duress, before its running tasks are cancelled, >= 1. */
  readonly cancelAfterIntervals: number;
  /** Usage of the duress resource (a ratio of the node) a sandbox's own tasks must reach to count as using it. */
  readonly minUsage: number;
  /** The node's usage of the duress resource minus its duress threshold (what cancellation must cover), >= 0. */
  readonly excess: number;
  /**
   * Some lane has a standing queue (its queue has not emptied for the overload interval). CPU duress
   * starts shedding only then: a work-conserving pool keeps the CPU near 1 whenever it has a backlog
   * of any size, and a node that is busy but keeps up needs nothing shed. Memory duress does not wait
   * for it. Default true.
   */
  readonly standingQueue?: boolean;
}

export interface DecisionInput {
  readonly enforcement: EnforcementMode;
  readonly duress: DuressLevel;
  /** Shedding in duress when nobody breaches a limit; undefined: off. */
  readonly duressShedding?: DuressSheddingInput | undefined;
  /** Added to a sandbox's priority when ordering breaching sandboxes (recently cut back). Default none. */
  readonly priorityBoost?: ReadonlyMap<string, number>;
  /** Default `largest_usage`. */
  readonly selection?: SelectionStrategy;
  /** The node resource over its threshold while in duress (for cancelling orphaned tasks). Default cpu. */
  readonly duressResource?: Resource | undefined;
  /** Every sandbox, the root included. */
  readonly sandboxes: readonly Sandbox[];
  /** Usage per sandbox id including descendants (missing: zero). */
  readonly usage: ReadonlyMap<string, { readonly cpu: number; readonly memory: number }>;
  readonly tasks: readonly TaskUsageView[];
}

/** What the governor publishes for one sandbox. */
export interface SandboxVerdict {
  /** Its own state from its own limits (acting ones only). */
  readonly state: SandboxState;
  /**
   * The resource over a limit of this sandbox (high before low, cpu before memory), whether or not the
   * sandbox acts on it: for a monitor sandbox it says what `wouldReject` / `wouldCancel` are about.
   */
  readonly resource: Resource | undefined;
  /** New tasks of this sandbox are refused: it or an ancestor is rejecting or cancelling. */
  readonly rejectNew: boolean;
  /** The sandbox whose limit refuses them (this one or an ancestor). */
  readonly rejectedBy: string | undefined;
  /** The resource of `rejectedBy` that is over its low limit. */
  readonly rejectResource: Resource | undefined;
  /** Monitor (or not acting): it would reject / cancel if it acted. */
  readonly wouldReject: boolean;
  readonly wouldCancel: boolean;
  /** True when new tasks are refused because the node is in duress and sheds this sandbox (and no limit refuses them). */
  readonly shedInDuress?: boolean;
}

export interface Cancellation {
  readonly taskId: number;
  /** The sandbox whose limit was breached (the task's own or an ancestor), or the one shed in duress. */
  readonly sandboxId: string;
  readonly resource: Resource;
  /** `limit` (a high limit), `duress` (shed in node duress, or an orphan in duress). Default `limit`. */
  readonly reason?: 'limit' | 'duress';
}

export interface Decision {
  readonly verdicts: ReadonlyMap<string, SandboxVerdict>;
  readonly cancellations: readonly Cancellation[];
  /** The sandboxes shed in duress after this interval (feed it back as `duressShedding.shed`); empty outside duress. */
  readonly shed: ReadonlyMap<string, number>;
}

const NONE_SHED: ReadonlyMap<string, number> = new Map();

const OK_VERDICT: SandboxVerdict = Object.freeze({
  state: 'ok',
  resource: undefined,
  rejectNew: false,
  rejectedBy: undefined,
  rejectResource: undefined,
  wouldReject: false,
  wouldCancel: false,
});

function actsOnReject(sandbox: Sandbox, input: DecisionInput): boolean {
  if (input.enforcement !== EnforcementMode.ENFORCED) return false;
  if (sandbox.mode === SandboxMode.ENFORCED) return true;
  if (sandbox.mode === SandboxMode.SOFT) return input.duress !== 'none';
  return false;
}

function actsOnCancel(sandbox: Sandbox, input: DecisionInput): boolean {
  if (input.enforcement !== EnforcementMode.ENFORCED) return false;
  if (sandbox.mode === SandboxMode.ENFORCED) return true;
  if (sandbox.mode === SandboxMode.SOFT) return input.duress === 'cancel';
  return false;
}

function usageOf(task: TaskUsageView, resource: Resource): number {
  return resource === 'cpu' ? task.cpuUsage : task.memoryUsage;
}

/** Computes the decision for one interval. Pure: same input, same output. */
export function decide(input: DecisionInput): Decision {
  const verdicts = new Map<string, SandboxVerdict>();
  if (input.enforcement === EnforcementMode.DISABLED) {
    for (const s of input.sandboxes) verdicts.set(s.id, OK_VERDICT);
    return { verdicts, cancellations: [], shed: NONE_SHED };
  }
  const byId = new Map<string, Sandbox>();
  for (const s of input.sandboxes) byId.set(s.id, s);

  // Own state per sandbox.
  const own = new Map<
    string,
    {
      state: SandboxState;
      resource: Resource | undefined;
      rejects: boolean;
      cancels: boolean;
      rejectResource: Resource | undefined;
    }
  >();
  for (const s of input.sandboxes) {
    const usage = input.usage.get(s.id);
    let state: SandboxState = 'ok';
    let resource: Resource | undefined;
    let rejectResource: Resource | undefined;
    for (const r of RESOURCES) {
      const limit = s.limits[r];
      if (limit === undefined || usage === undefined) continue;
      const u = usage[r];
      if (u > limit.high && state !== 'cancelling') {
        state = 'cancelling';
        resource = r;
      } else if (u > limit.low && state === 'ok') {
        state = 'rejecting';
        resource = r;
      }
      if (u > limit.low) rejectResource ??= r;
    }
    own.set(s.id, {
      state,
      resource,
      rejects: actsOnReject(s, input),
      cancels: actsOnCancel(s, input),
      rejectResource,
    });
  }

  // Verdicts: a sandbox refuses new tasks when it or an ancestor acts and is above low.
  for (const s of input.sandboxes) {
    const mine = own.get(s.id)!;
    let rejectedBy: string | undefined;
    let rejectResource: Resource | undefined;
    let id: string | null = s.id;
    for (let depth = 0; id !== null && depth < 64; depth++) {
      const o = own.get(id);
      if (o?.rejects && o.state !== 'ok') {
        rejectedBy = id;
        rejectResource = o.rejectResource;
        break;
      }
      id = byId.get(id)?.parentId ?? null;
    }
    const state: SandboxState =
      mine.state === 'cancelling' && mine.cancels
        ? 'cancelling'
        : mine.state !== 'ok' && mine.rejects
          ? 'rejecting'
          : 'ok';
    verdicts.set(s.id, {
      state,
      resource: mine.resource,
      rejectNew: rejectedBy !== undefined,
      rejectedBy,
      rejectResource,
      wouldReject: !mine.rejects && mine.state !== 'ok',
      wouldCancel: !mine.cancels && mine.state === 'cancelling',
    });
  }

  const picked = new Set<number>();
  const cancellations: Cancellation[] = [];
  if (input.duress === 'cancel' && input.enforcement === EnforcementMode.ENFORCED) {
    for (const t of input.tasks) {
      if (!t.cancelling && !byId.has(t.sandboxId)) {
        picked.add(t.taskId);
        cancellations.push({
          taskId: t.taskId,
          sandboxId: t.sandboxId,
          resource: input.duressResource ?? 'cpu',
          reason: 'duress',
        });
      }
    }
  }

  // Cancellation, lowest priority first.
  const effective = (s: Sandbox): number => s.priority + (input.priorityBoost?.get(s.id) ?? 0);
  const breaching = input.sandboxes
    .filter((s) => own.get(s.id)!.cancels && own.get(s.id)!.state === 'cancelling')
    .sort((a, b) => effective(a) - effective(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const oldestFirst = input.selection === SelectionStrategy.OLDEST_FIRST;
  if (breaching.length === 0) {
    return { verdicts, cancellations, shed: shedInDuress(input, byId, verdicts, picked, cancellations) };
  }

  const inSubtree = (taskSandboxId: string, rootId: string): boolean => {
    let id: string | null = taskSandboxId;
    for (let depth = 0; id !== null && depth < 64; depth++) {
      if (id === rootId) return true;
      id = byId.get(id)?.parentId ?? null;
    }
    return false;
  };
  const priorityOf = (sandboxId: string): number => byId.get(sandboxId)?.priority ?? 0;

  for (const s of breaching) {
    const usage = input.usage.get(s.id)!;
    for (const r of RESOURCES) {
      const limit = s.limits[r];
      if (limit === undefined || usage[r] <= limit.high) continue;
      const excess = usage[r] - limit.high;
      const subtree = input.tasks.filter((t) => inSubtree(t.sandboxId, s.id));
      let covered = 0;
      for (const t of subtree) if (t.cancelling || picked.has(t.taskId)) covered += usageOf(t, r);
      if (covered >= excess) continue;
      const candidates = subtree
        .filter((t) => !t.cancelling && !picked.has(t.taskId) && usageOf(t, r) > 0)
        // Lowest-priority child first, then the largest consumer (or the oldest task), then the older.
        .sort(
          (a, b) =>
            priorityOf(a.sandboxId) - priorityOf(b.sandboxId) ||
            (oldestFirst ? a.startedAtMs - b.startedAtMs : usageOf(b, r) - usageOf(a, r)) ||
            a.taskId - b.taskId,
        );
      for (const t of candidates) {
        if (covered >= excess) break;
        picked.add(t.taskId);
        covered += usageOf(t, r);
        cancellations.push({ taskId: t.taskId, sandboxId: s.id, resource: r });
      }
    }
  }
  // After the limits' cancellations: a sandbox over its high limit goes before one shed in duress.
  return { verdicts, cancellations, shed: shedInDuress(input, byId, verdicts, picked, cancellations) };
}

/**
 * Shedding in duress (see the module doc): updates `verdicts` of the shed sandboxes, appends their
 * cancellations, and returns the shed set for the next interval.
 */
function shedInDuress(
  input: DecisionInput,
  byId: ReadonlyMap<string, Sandbox>,
  verdicts: Map<string, SandboxVerdict>,
  picked: Set<number>,
  cancellations: Cancellation[],
): ReadonlyMap<string, number> {
  const shedding = input.duressShedding;
  if (shedding === undefined || input.duress === 'none' || input.enforcement !== EnforcementMode.ENFORCED) {
    return NONE_SHED;
  }
  const resource = input.duressResource ?? 'cpu';
  // Own usage: the sandbox's own tasks, not its descendants'.
  const own = new Map<string, number>();
  for (const t of input.tasks) {
    if (byId.has(t.sandboxId)) own.set(t.sandboxId, (own.get(t.sandboxId) ?? 0) + usageOf(t, resource));
  }
  const using = (id: string) => (own.get(id) ?? 0) >= shedding.minUsage;
  const shed = new Map<string, number>();
  for (const [id, intervals] of shedding.shed) if (byId.has(id)) shed.set(id, intervals + 1);
  // Add the lowest-priority user when none of the shed sandboxes uses the resource any more (for CPU,
  // only while work is piling up: see `standingQueue`).
  const piling = resource === 'memory' || shedding.standingQueue !== false;
  if (piling && ![...shed.keys()].some(using)) {
    let lowest: Sandbox | undefined;
    for (const s of input.sandboxes) {
      if (s.mode === SandboxMode.MONITOR || shed.has(s.id) || !using(s.id)) continue;
      if (
        lowest === undefined ||
        s.priority < lowest.priority ||
        (s.priority === lowest.priority && s.id < lowest.id)
      ) {
        lowest = s;
      }
    }
    if (lowest !== undefined) shed.set(lowest.id, 0);
  }
  for (const [id, intervals] of shed) {
    // A sandbox its own or an ancestor's limit refuses already keeps that reason.
    const v = verdicts.get(id) ?? OK_VERDICT;
    if (!v.rejectNew)
      verdicts.set(id, {
        ...v,
        rejectNew: true,
        rejectedBy: id,
        rejectResource: resource,
        shedInDuress: true,
      });
    if (intervals < shedding.cancelAfterIntervals) continue;
    const tasks = input.tasks.filter((t) => t.sandboxId === id);
    let covered = 0;
    for (const t of input.tasks) if (t.cancelling || picked.has(t.taskId)) covered += usageOf(t, resource);
    const oldestFirst = input.selection === SelectionStrategy.OLDEST_FIRST;
    const candidates = tasks
      .filter((t) => !t.cancelling && !picked.has(t.taskId) && usageOf(t, resource) > 0)
      .sort(
        (a, b) =>
          (oldestFirst ? a.startedAtMs - b.startedAtMs : usageOf(b, resource) - usageOf(a, resource)) ||
          a.taskId - b.taskId,
      );
    for (const t of candidates) {
      if (covered >= shedding.excess) break;
      picked.add(t.taskId);
      covered += usageOf(t, resource);
      cancellations.push({ taskId: t.taskId, sandboxId: id, resource, reason: 'duress' });
    }
  }
  return shed;
}
