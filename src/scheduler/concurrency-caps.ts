/**
 * Concurrency caps: `max_concurrent_tasks` (tasks of a sandbox and its descendants that run at once)
 * and `max_concurrent_tasks_per_user` (the same for one user), the proactive tier before usage-based
 * rejection (OpenSearch's workload-group `throttling` with `node_limit` and `by: username`).
 *
 * Unlike OpenSearch, which answers 429 above the limit, a task beyond a cap here waits in the queue
 * (the queue's own bounds still refuse work when it is full): the scheduler passes it over
 * (`TaskSchedulerOptions.mayStart`) and hands out the tasks behind it, and it starts as soon as a task
 * of its subtree ends.
 *
 * Counting: a started task counts on its sandbox and every ancestor (a sandbox's count is its
 * subtree's), and on the per-user count of every sandbox on that chain that has a per-user cap. The
 * chain is taken when the task starts and given back whole when it ends (`Hold`), so a change of the
 * tree while it runs cannot unbalance the counts. A task without a user counts as the user `""`.
 * A deleted sandbox (tasks still running, or queued) has no caps and counts under the root.
 *
 * Main thread only; `mayStart` costs a few map reads per ancestor and answers true at once while no
 * sandbox has a cap.
 */
import { ROOT_SANDBOX_ID, type Sandbox } from '../sandbox/sandbox.js';

/** One sandbox of a task's chain, with its caps. */
interface Link {
  readonly id: string;
  readonly cap: number | undefined;
  readonly perUserCap: number | undefined;
}

/** What a started task counted on; hand it back to `ended`. */
export interface Hold {
  /** Its chain at start (shared, precomputed per sandbox: nothing is allocated per task). */
  readonly chain: readonly { readonly id: string }[];
  readonly userKeys: readonly string[];
}

const NO_KEYS: readonly string[] = Object.freeze([]);

/** Per sandbox: tasks of its subtree running now and the most seen at once. */
export interface CapCounts {
  readonly running: number;
  readonly peak: number;
}

function userKey(sandboxId: string, user: string | undefined): string {
  return `${sandboxId}\u0000${user ?? ''}`;
}

export class ConcurrencyCaps {
  #chains = new Map<string, readonly Link[]>();
  #rootChain: readonly Link[] = [{ id: ROOT_SANDBOX_ID, cap: undefined, perUserCap: undefined }];
  #anyCap = false;
  readonly #running = new Map<string, number>();
  readonly #peak = new Map<string, number>();
  readonly #byUser = new Map<string, number>();

  /** @param sandboxes the whole tree, parents before children. */
  constructor(sandboxes: readonly Sandbox[]) {
    this.setSandboxes(sandboxes);
  }

  /** Takes a new tree: caps apply from the next `mayStart`; running tasks keep the chain they hold. */
  setSandboxes(sandboxes: readonly Sandbox[]): void {
    const chains = new Map<string, readonly Link[]>();
    let anyCap = false;
    for (const s of sandboxes) {
      const link: Link = { id: s.id, cap: s.maxConcurrentTasks, perUserCap: s.maxConcurrentTasksPerUser };
      if (link.cap !== undefined || link.perUserCap !== undefined) anyCap = true;
      const parent = s.parentId === null ? undefined : chains.get(s.parentId);
      chains.set(s.id, parent === undefined ? [link] : [link, ...parent]);
    }
    this.#chains = chains;
    this.#rootChain = chains.get(ROOT_SANDBOX_ID) ?? this.#rootChain;
    this.#anyCap = anyCap;
  }

  /** True while some sandbox has a cap. */
  get active(): boolean {
    return this.#anyCap;
  }

  #chainOf(sandboxId: string): readonly Link[] {
    return (
      this.#chains.get(sandboxId) ?? [
        { id: sandboxId, cap: undefined, perUserCap: undefined },
        ...this.#rootChain,
      ]
    );
  }

  /** The sandbox whose cap holds back a task of `sandboxId` and `user` now, or undefined when it may start. */
  blockedBy(sandboxId: string, user: string | undefined): string | undefined {
    if (!this.#anyCap) return undefined;
    for (const link of this.#chainOf(sandboxId)) {
      if (link.cap !== undefined && (this.#running.get(link.id) ?? 0) >= link.cap) return link.id;
      if (
        link.perUserCap !== undefined &&
        (this.#byUser.get(userKey(link.id, user)) ?? 0) >= link.perUserCap
      ) {
        return link.id;
      }
    }
    return undefined;
  }

  /** Whether a task of `sandboxId` and `user` may start now. */
  mayStart(sandboxId: string, user: string | undefined): boolean {
    return this.blockedBy(sandboxId, user) === undefined;
  }

  /** Counts a task that starts now; returns what to give back when it ends. */
  started(sandboxId: string, user: string | undefined): Hold {
    const chain = this.#chainOf(sandboxId);
    let userKeys = NO_KEYS;
    for (const link of chain) {
      const n = (this.#running.get(link.id) ?? 0) + 1;
      this.#running.set(link.id, n);
      if (n > (this.#peak.get(link.id) ?? 0)) this.#peak.set(link.id, n);
      if (link.perUserCap !== undefined) {
        const key = userKey(link.id, user);
        this.#byUser.set(key, (this.#byUser.get(key) ?? 0) + 1);
        userKeys = userKeys === NO_KEYS ? [key] : [...userKeys, key];
      }
    }
    return { chain, userKeys };
  }

  /** Gives back what `started` counted. */
  ended(hold: Hold): void {
    for (const { id } of hold.chain) {
      const n = (this.#running.get(id) ?? 0) - 1;
      if (n <= 0) this.#running.delete(id);
      else this.#running.set(id, n);
    }
    for (const key of hold.userKeys) {
      const n = (this.#byUser.get(key) ?? 0) - 1;
      if (n <= 0) this.#byUser.delete(key);
      else this.#byUser.set(key, n);
    }
  }

  /** Tasks of `sandboxId`'s subtree running now and the most seen at once since the start. */
  counts(sandboxId: string): CapCounts {
    return { running: this.#running.get(sandboxId) ?? 0, peak: this.#peak.get(sandboxId) ?? 0 };
  }
}
