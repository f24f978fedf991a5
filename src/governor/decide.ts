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
 */
import { RESOURCES, type Resource, type Sandbox } from '../sandbox/sandbox.js';

export const EnforcementMode = {
  ENABLED: 'enabled',
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

export interface DecisionInput {
  readonly enforcement: EnforcementMode;
  readonly duress: DuressLevel;
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
}

export interface Cancellation {
  readonly taskId: number;
  /** The sandbox whose limit was breached (the task's own or an ancestor). */
  readonly sandboxId: string;
  readonly resource: Resource;
}

export interface Decision {
  readonly verdicts: ReadonlyMap<string, SandboxVerdict>;
  readonly cancellations: readonly Cancellation[];
}

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
  if (input.enforcement !== EnforcementMode.ENABLED) return false;
  if (sandbox.mode === 'enforced') return true;
  if (sandbox.mode === 'soft') return input.duress !== 'none';
  return false;
}

function actsOnCancel(sandbox: Sandbox, input: DecisionInput): boolean {
  if (input.enforcement !== EnforcementMode.ENABLED) return false;
  if (sandbox.mode === 'enforced') return true;
  if (sandbox.mode === 'soft') return input.duress === 'cancel';
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
    return { verdicts, cancellations: [] };
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
  if (input.duress === 'cancel' && input.enforcement === EnforcementMode.ENABLED) {
    for (const t of input.tasks) {
      if (!t.cancelling && !byId.has(t.sandboxId)) {
        picked.add(t.taskId);
        cancellations.push({
          taskId: t.taskId,
          sandboxId: t.sandboxId,
          resource: input.duressResource ?? 'cpu',
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
  if (breaching.length === 0) return { verdicts, cancellations };

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
  return { verdicts, cancellations };
}
