/**
 * The runtime's public shapes: the stats snapshots and the `Runtime` interface itself (implemented by
 * `governed-runtime.ts`, built by `createRuntime` in `runtime.ts`), a `SearchService` as a cluster
 * coordinator is (the search request and response live in `execution/search-service.ts`).
 */
import type { NodeUsageSnapshot } from './admission/node-usage-averages.js';
import type { SearchCallOptions } from './execution/search-call.js';
import type { SearchRequest, SearchService } from './execution/search-service.js';
import type { EnforcementMode } from './governor/decide.js';
import type { GovernorSnapshot, GovernorStats } from './governor/governor.js';
import type { NodeModeWord } from './governor/node-mode.js';
import type { SandboxCounters } from './governor/sandbox-counters.js';
import type { WritableIndices } from './indices/writable-indices.js';
import type { EngineDescription } from './pool/engine-module.js';
import type { GcThreads } from './pool/helper-threads.js';
import type { PoolLaneStats } from './pool/lane-pool.js';
import type { ResolvedRuntimeOptions } from './runtime-options.js';
import type { QueryPriorityDocument, QueryPriorityInput } from './scheduler/query-priority.js';
import type { SchedulerStats } from './scheduler/task-scheduler.js';
import type { Sandbox } from './sandbox/sandbox.js';
import type { SandboxRegistry } from './sandbox/sandbox-registry.js';

/** One search request (the same for a runtime and a coordinator; see `execution/search-service.ts`). */
export type { SearchRequest } from './execution/search-service.js';

/** Per-sandbox stats, a plain snapshot. */
export interface SandboxStats {
  readonly running: number;
  readonly queued: number;
  /**
   * Concurrency of the sandbox's subtree: tasks running now, the most seen at once since the start,
   * and the sandbox's own queued tasks that wait because a concurrency cap (its own or an ancestor's,
   * or a per-user cap) is reached.
   */
  readonly concurrency: { readonly running: number; readonly peak: number; readonly waitingForCap: number };
  readonly counters: Readonly<SandboxCounters>;
  readonly usage: { readonly cpu: number; readonly memory: number };
  readonly state: 'ok' | 'rejecting' | 'cancelling';
}

/** One lane of the pool, a plain snapshot (see `scheduler/lanes.ts`). */
export interface LaneStats extends PoolLaneStats {
  /** Lowest priority the lane takes; `null` for the lowest lane (every priority below the others). */
  readonly minPriority: number | null;
  readonly busy: number;
  readonly queued: number;
}

/** Node stats, a plain snapshot. */
export interface NodeStats {
  readonly nodeId: string;
  readonly cores: number;
  /** Tasks that run at once, over every lane. */
  readonly threads: number;
  /** Workers beyond `threads`, loaded and idle, that keep the capacity while one is replaced (every lane's). */
  readonly spareWorkers: number;
  /** Workers loaded and taking tasks, every lane's (spares included). */
  readonly liveWorkers: number;
  /**
   * Workers alive but still loading the engine (replacements of terminated ones, mostly): not counted
   * in `liveWorkers`; the two add up to the workers alive.
   */
  readonly loadingWorkers: number;
  /**
   * What the lanes give: `weighted` (two or more lanes, each running at the OS weight it asked for:
   * the kernel preempts lower lanes for higher ones), `unweighted` (several lanes, but a weight could
   * not be set: the lanes only time-slice, see each lane's `weightReason`), `single_lane` (one lane:
   * nothing preempts a running task).
   */
  readonly isolation: 'weighted' | 'unweighted' | 'single_lane';
  /**
   * Where the isolates collect their garbage: `per_isolate` (`node --single-threaded-gc`: each
   * lane's GC runs on its own workers, at the lane's weight) or `shared` (V8's platform threads, at
   * nice 0 for every lane: a background flood's GC competes with the foreground). See docs/lanes.md.
   */
  readonly gcThreads: GcThreads;
  /** The lanes, highest band first, with their band and workers. */
  readonly lanes: readonly LaneStats[];
  readonly running: number;
  readonly queued: number;
  readonly duress: boolean;
  readonly enforcement: EnforcementMode;
  /** The node sampler's last interval, as duress read it: CPU and memory ratios (0..1). */
  readonly usage: { readonly cpu: number; readonly memory: number };
  /** From the same sample: the main isolate's live heap and the process's resident set, bytes. */
  readonly mainHeapUsedBytes: number;
  readonly rssBytes: number;
  readonly workersStarted: number;
  /** Start-up of the initial workers, ms (engine indices loaded). */
  readonly workerStartupMs: readonly number[];
  /** Start-up of the most recent replacement worker, ms, if any. */
  readonly lastReplacementStartupMs: number | undefined;
  readonly engineIndices: readonly string[] | undefined;
  readonly governorTicks: number;
}

/**
 * A running runtime. `Result` and `Body` are its engine's (`createRuntime<typeof import('./engine.js')>`):
 * `search` resolves with what the engine's `handle` returns (after the structured clone that
 * brings it from the worker: class instances arrive as plain objects, functions are refused).
 */
export interface Runtime<Result = unknown, Body = unknown> extends SearchService<Result, Body> {
  /**
   * Runs one search (`SearchService.search`). Rejects with the errors listed in `errors.ts`; with `options.signal` aborted, or
   * past `options.timeoutMs`, at once with `AbortedError` / `TimedOutError` (a queued task is removed
   * without running, a running one is cancelled: soft, then hard after its sandbox's grace).
   */
  search(request: SearchRequest<Body>, options?: SearchCallOptions): Promise<Result>;
  /** The sandboxes, the root first, parents before children. */
  sandboxes(): readonly Sandbox[];
  /**
   * Create, update and delete sandboxes at runtime (versioned, stored durably when the runtime was
   * given a durable store). A change applies to every request classified after it resolves; tasks
   * already bound keep their sandbox.
   */
  readonly sandboxRegistry: SandboxRegistry;
  /**
   * The node's writable indices (index APIs, bulk, real-time GET; see `indices/writable-indices.ts`),
   * when the engine declares `writableIndices` (the built-in one does); `undefined` otherwise. Searches
   * resolve index expressions over the engine's indices and these.
   */
  readonly indices: WritableIndices | undefined;
  /** What the engine's `prepare` reported (indices, shards, documents, mappings). */
  readonly engineDescription: EngineDescription;
  /** Per-sandbox stats keyed by sandbox id. */
  sandboxStats(): ReadonlyMap<string, SandboxStats>;
  nodeStats(): NodeStats;
  /**
   * This node's resource usage for a cluster coordinator (the `Resource_Usage_Stats` header): moving
   * averages of CPU (process / cores), heap (used / limit over the main isolate and the workers) and
   * IO, ratios 0..1, sampled on their own timer (`options.resourceUsage`). Costs nothing: returns
   * the last published frozen snapshot.
   */
  resourceUsage(): NodeUsageSnapshot;
  /** The governor's last published snapshot. */
  governorSnapshot(): GovernorSnapshot;
  /** The governor's counters and tick cost. */
  /**
   * The governor's counters and tick cost; `resetTickCost: true` starts the tick-cost figures afresh
   * after this reading.
   */
  governorStats(options?: { readonly resetTickCost?: boolean }): GovernorStats;
  /**
   * Changes the enforcement mode at runtime (takes effect at the next interval): `enforced` (or
   * OpenSearch's `enabled`), `monitor_only`, `disabled`. @throws InvalidArgumentError for another word.
   */
  setEnforcement(mode: EnforcementMode | NodeModeWord): void;
  /** The query-priority configuration in force (see `scheduler/query-priority.ts`). */
  queryPriority(): QueryPriorityDocument;
  /**
   * Replaces the query-priority configuration without a restart: validates it, saves it to the
   * query-priority store, then applies it to requests admitted after the promise resolves (changes
   * apply one at a time, in call order); queued tasks keep their priority. Where a lowered per-sandbox bound leaves too
   * many tasks waiting, the newest excess (lowest priority first) is rejected with a 429.
   * @returns the configuration now in force.
   * @throws InvalidArgumentError naming the field and the received value, or the store's error
   *   (nothing changes then).
   */
  setQueryPriority(document: QueryPriorityInput): Promise<QueryPriorityDocument>;
  /** Queue, lanes and per-priority figures of the scheduler. */
  schedulerStats(): SchedulerStats;
  readonly options: ResolvedRuntimeOptions;
  /** This runtime's id in the process, carried by every event it publishes (`diagnostics.ts`). */
  readonly runtimeId: number;
  /**
   * Stops the runtime. New searches are refused at once (`NotRunningError`, 503). Without `drain`
   * (the default), queued tasks are cancelled (`CancelledError`, resource `shutdown`) and running
   * ones with them as their workers stop. With `drain: true`, queued and running tasks first go on
   * to their end (the governor still acts) for up to `timeoutMs`; what is left then is cancelled as
   * above. A second call returns the first one's promise; a call without `drain` cuts a drain short.
   * The runtime holds nothing that keeps the process alive once its tasks are done, so a process that
   * never calls `close` still exits.
   * @throws InvalidArgumentError (the promise rejects) naming `options.drain` or `options.timeoutMs`.
   */
  close(options?: CloseOptions): Promise<void>;
}

/** Options of `Runtime.close`. */
export interface CloseOptions {
  /** Let queued and running tasks finish before stopping. Default false. */
  readonly drain?: boolean;
  /** With `drain`: the longest wait, ms, >= 0 (`Infinity`: no bound). Default 30000. */
  readonly timeoutMs?: number;
}
