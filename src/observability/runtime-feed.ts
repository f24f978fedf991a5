/**
 * Where the metrics endpoint and the dashboard get a runtime's figures: the one feeding module.
 *
 * Two sources, both off the request path:
 * - **Snapshots** the runtime already publishes (`sandboxStats()`, `nodeStats()`, `schedulerStats()`,
 *   `governorStats()`, `governorSnapshot()`, `resourceUsage()`), read together by `snapshot()` when a
 *   scrape or a dashboard frame asks, and kept for `maxAgeMs` so that one scrape reads one snapshot.
 * - **Task ends**, from the runtime's `onTaskEnd` option: pass `feed.onTaskEnd` to `createRuntime`.
 *   Each event is handed to the subscribers (`onTask`): the per-sandbox histograms and the
 *   dashboard's latency windows. A runtime created without it still has every snapshot figure; only
 *   the per-task histograms and latencies stay empty (`receivesTaskEnds` says which).
 *
 * When the runtime gains `diagnostics_channel` events (task queued/started/ended, rejections,
 * governor state changes, worker replaced), this is the module that subscribes to them instead.
 */
import type { GovernorSnapshot, GovernorStats } from '../governor/governor.js';
import type { NodeUsageSnapshot } from '../admission/node-usage-averages.js';
import type { NodeStats, Runtime, SandboxStats } from '../runtime.js';
import type { RuntimeOptions, TaskEndEvent } from '../runtime-options.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import type { SchedulerStats } from '../scheduler/task-scheduler.js';

/** Every figure of one reading of the runtime, plain data. */
export interface RuntimeSnapshot {
  /** `performance.now()` when it was read, ms. */
  readonly atMs: number;
  /** Wall clock when it was read, ms since the epoch. */
  readonly timeMs: number;
  /** The sandboxes, root first. */
  readonly sandboxes: readonly Sandbox[];
  readonly sandboxStats: ReadonlyMap<string, SandboxStats>;
  readonly node: NodeStats;
  readonly scheduler: SchedulerStats;
  readonly governor: GovernorStats;
  readonly governorSnapshot: GovernorSnapshot;
  readonly resourceUsage: NodeUsageSnapshot;
  /** The governor's interval, ms. */
  readonly intervalMs: number;
}

export interface RuntimeFeedOptions {
  /** How long one snapshot serves later readers, ms, >= 0. @default 100 */
  readonly maxAgeMs?: number;
}

/**
 * `options` with `feed.onTaskEnd` as its `onTaskEnd` (called before one the options already had).
 */
export function withTaskEnds(options: RuntimeOptions, feed: RuntimeFeed): RuntimeOptions {
  const own = options.onTaskEnd;
  return {
    ...options,
    onTaskEnd:
      own === undefined
        ? feed.onTaskEnd
        : (event: TaskEndEvent) => {
            feed.onTaskEnd(event);
            own(event);
          },
  };
}

/** A task-end subscriber: called on the main thread for every task that ran; must be cheap. */
export type TaskEndListener = (event: TaskEndEvent, sandboxName: string) => void;

export class RuntimeFeed {
  readonly #maxAgeMs: number;
  readonly #listeners: TaskEndListener[] = [];
  #runtime: Runtime | undefined;
  #last: RuntimeSnapshot | undefined;
  #namesOf: readonly Sandbox[] | undefined;
  #names = new Map<string, string>();
  #taskEnds = 0;
  #receivesTaskEnds = false;

  /** The handler to pass as `createRuntime({ onTaskEnd })`. Bound; never throws. */
  readonly onTaskEnd = (event: TaskEndEvent): void => {
    this.#taskEnds++;
    const name = this.#nameOf(event.sandboxId);
    for (const listener of this.#listeners) listener(event, name);
  };

  constructor(options: RuntimeFeedOptions = {}) {
    const maxAgeMs = options.maxAgeMs ?? 100;
    if (!(maxAgeMs >= 0)) throw new RangeError(`maxAgeMs must be >= 0; received ${maxAgeMs}`);
    this.#maxAgeMs = maxAgeMs;
  }

  /**
   * The runtime to read. `receivesTaskEnds`: whether it was created with the feed's `onTaskEnd`
   * (default: whether its options hold this feed's handler itself; pass true after `withTaskEnds`
   * chained it to another).
   */
  attach(runtime: Runtime, receivesTaskEnds?: boolean): this {
    this.#runtime = runtime;
    this.#receivesTaskEnds = receivesTaskEnds ?? runtime.options.onTaskEnd === this.onTaskEnd;
    return this;
  }

  get runtime(): Runtime {
    if (this.#runtime === undefined) throw new Error('RuntimeFeed: attach(runtime) first');
    return this.#runtime;
  }

  /** Whether task-end events reach this feed (else histograms and latencies stay empty). */
  get receivesTaskEnds(): boolean {
    return this.#receivesTaskEnds;
  }

  /** Task ends seen so far. */
  get taskEnds(): number {
    return this.#taskEnds;
  }

  /** Adds a task-end subscriber. */
  onTask(listener: TaskEndListener): void {
    this.#listeners.push(listener);
  }

  /** One reading of every figure; a reading younger than `maxAgeMs` is returned again. */
  snapshot(): RuntimeSnapshot {
    const nowMs = performance.now();
    const last = this.#last;
    if (last !== undefined && nowMs - last.atMs <= this.#maxAgeMs) return last;
    const runtime = this.runtime;
    const snapshot: RuntimeSnapshot = {
      atMs: nowMs,
      timeMs: Date.now(),
      sandboxes: runtime.sandboxes(),
      sandboxStats: runtime.sandboxStats(),
      node: runtime.nodeStats(),
      scheduler: runtime.schedulerStats(),
      governor: runtime.governorStats(),
      governorSnapshot: runtime.governorSnapshot(),
      resourceUsage: runtime.resourceUsage(),
      intervalMs: runtime.options.intervalMs,
    };
    this.#last = snapshot;
    return snapshot;
  }

  /** A sandbox's name (its id when unknown, e.g. deleted): the map is rebuilt when the list changes. */
  #nameOf(sandboxId: string): string {
    const list = this.#runtime?.sandboxes();
    if (list !== undefined && list !== this.#namesOf) {
      this.#namesOf = list;
      this.#names = new Map(list.map((s) => [s.id, s.name]));
    }
    return this.#names.get(sandboxId) ?? sandboxId;
  }
}
