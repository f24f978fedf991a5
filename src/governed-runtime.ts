/**
 * `Runtime` as `createRuntime` returns it: wires the request path's steps (`execution/`: admit,
 * dispatch, settle) to the governor, the usage tracking and the node samplers, and answers the public
 * API with their state. Every submitted task settles exactly once: a result, a `RejectedError`, a
 * `CancelledError`, an `AbortedError` / `TimedOutError` (its caller gave up), or an engine error.
 */
import diagnostics_channel from 'node:diagnostics_channel';
import { NodeUsageAverages, type NodeUsageSnapshot } from './admission/node-usage-averages.js';
import { createIoUsageSampler } from './tracking/io-usage-sampler.js';
import { SandboxClassifier } from './classify/sandbox-classifier.js';
import { ChannelName, type EventSource, publishSandboxStates, type TaskEndedEvent } from './diagnostics.js';
import { InvalidArgumentError, NotRunningError } from './errors.js';
import { admit } from './execution/admit.js';
import { cancelQueued, hardCancel, softCancel } from './execution/cancel.js';
import { pump, rejectEvicted, updateLanes } from './execution/dispatch.js';
import { EngineChecks } from './execution/engine-checks.js';
import { PrefetchPolicy } from './execution/prefetch.js';
import { checkSearchCallOptions, type SearchCallOptions } from './execution/search-call.js';
import type { QueuedTask } from './execution/task.js';
import { TaskExecution } from './execution/task-execution.js';
import type { EnforcementMode } from './governor/decide.js';
import { DuressDetector } from './governor/duress-detector.js';
import { Governor, type GovernorSnapshot, type GovernorStats } from './governor/governor.js';
import { enforcementModeOf, type NodeModeWord } from './governor/node-mode.js';
import { SandboxCounterTable } from './governor/sandbox-counters.js';
import type { WritableIndices } from './indices/writable-indices.js';
import { DecisionLog } from './observability/decision-log.js';
import type { EngineDescription, EngineModule } from './pool/engine-module.js';
import type { LanePool } from './pool/lane-pool.js';
import { SlotAllocator } from './pool/task-slots.js';
import type { CloseOptions, NodeStats, Runtime, SandboxStats, SearchRequest } from './runtime-api.js';
import type { RuntimeLogger } from './runtime-logger.js';
import type { ResolvedRuntimeOptions } from './runtime-options.js';
import { removeDir } from './runtime-start.js';
import { nodeStatsOf, sandboxStatsOf, workersHeapOf } from './runtime-stats.js';
import { ROOT_SANDBOX_ID, type Sandbox } from './sandbox/sandbox.js';
import type { SandboxRegistry } from './sandbox/sandbox-registry.js';
import { ConcurrencyCaps } from './scheduler/concurrency-caps.js';
import {
  parseQueryPriority,
  type QueryPriorityDocument,
  type QueryPriorityInput,
} from './scheduler/query-priority.js';
import type { QueryPriorityStore } from './scheduler/query-priority-store.js';
import { type SchedulerStats, TaskScheduler } from './scheduler/task-scheduler.js';
import { checkReservations } from './scheduler/worker-reservations.js';
import { NodeUsageSampler } from './tracking/node-usage-sampler.js';
import { UsageTracker } from './tracking/usage-tracker.js';
import type { WorkerHeapProbe } from '../native-shim/index.js';

/** `CloseOptions.timeoutMs` by default, ms. */
const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

/** What `createRuntime` hands over once the engine, the stores and the workers are up. */
export interface RuntimeParts {
  readonly runtimeId: number;
  readonly options: ResolvedRuntimeOptions;
  readonly engine: EngineModule;
  readonly description: EngineDescription;
  readonly registry: SandboxRegistry;
  readonly pool: LanePool;
  readonly log: RuntimeLogger;
  readonly heapProbe: WorkerHeapProbe | undefined;
  readonly priorityStore: QueryPriorityStore;
  readonly writable: WritableIndices | undefined;
  /** The temporary directory of writable indices without a dataDir, removed at close. */
  readonly ephemeralDir: string | undefined;
}

export class GovernedRuntime<Result, Body> implements Runtime<Result, Body> {
  readonly options: ResolvedRuntimeOptions;
  readonly runtimeId: number;
  readonly sandboxRegistry: SandboxRegistry;
  readonly indices: WritableIndices | undefined;
  readonly engineDescription: EngineDescription;
  readonly #parts: RuntimeParts;
  readonly #x: TaskExecution;
  readonly #engine: EngineChecks;
  // Swapped whole on every accepted sandbox change (see #applySandboxes); never mutated in place.
  #sandboxes: readonly Sandbox[];
  #classifier: SandboxClassifier;
  readonly #tracker: UsageTracker;
  readonly #nodeSampler: NodeUsageSampler;
  readonly #usageAverages: NodeUsageAverages;
  readonly #governor: Governor;
  /** Query-priority changes, one at a time: validate, save, apply. */
  #priorityChanges: Promise<unknown> = Promise.resolve();
  /** False once `close` was called: new searches are refused. */
  #accepting = true;
  #closing: Promise<void> | undefined;
  #unsubscribeTaskEnd: (() => void) | undefined;

  constructor(parts: RuntimeParts) {
    const { options, pool, log, registry, heapProbe, runtimeId } = parts;
    this.#parts = parts;
    this.runtimeId = runtimeId;
    this.options = options;
    this.indices = parts.writable;
    this.engineDescription = parts.description;
    this.sandboxRegistry = registry;
    this.#engine = new EngineChecks(parts.engine, parts.description.indices, parts.writable, log);
    const sandboxes = registry.list();
    const caps = new ConcurrencyCaps(sandboxes);
    const scheduler = new TaskScheduler<QueuedTask>({
      lanes: options.lanes,
      maxQueuedTasks: options.maxQueuedTasks,
      agingMsPerPriority: options.agingMsPerPriority,
      fifo: options.queueOrder === 'fifo',
      config: options.queryPriority,
      agingOvertakeEvery: options.agingOvertakeEvery,
      overload: {
        intervalMs: options.standingQueueMs,
        targetMs: options.controlledDelayMs,
        lifo: options.adaptiveLifo,
      },
      // A task held back by its sandbox's concurrency cap waits; the tasks behind it go ahead.
      mayStart: (q) => !caps.active || caps.mayStart(q.sandbox.id, q.user),
    });
    this.#sandboxes = sandboxes;
    this.#classifier = new SandboxClassifier(sandboxes);
    this.#tracker = new UsageTracker({
      slots: pool.slots,
      cores: options.cores,
      memoryBudgetBytes: options.memoryBudgetBytes,
      // A deleted sandbox's running tasks count under the root until they finish.
      parentOf: (id) => (id === ROOT_SANDBOX_ID ? null : (this.#x.byId.get(id)?.parentId ?? ROOT_SANDBOX_ID)),
      ...(heapProbe !== undefined ? { heapProbe, staleCheckpointMs: 2 * options.intervalMs } : {}),
    });
    const counters = new SandboxCounterTable();
    const source: EventSource = Object.freeze({ runtimeId, nodeId: options.nodeId });
    this.#governor = new Governor(
      {
        intervalMs: options.intervalMs,
        graceIntervals: options.graceIntervals,
        enforcement: options.enforcement,
        selection: options.selection,
        cancellationRatePerSecond: options.cancellation.ratePerSecond,
        cancellationRatio: options.cancellation.ratio,
        cancellationBurst: options.cancellation.burst,
        boostPriority: options.boost.priority,
        boostHalfLifeMs: options.boost.halfLifeMs,
        duressShedding: options.duressShedding,
      },
      {
        sampleUsage: () => this.#tracker.sample(),
        sampleNode: () => this.#nodeSampler.sample(),
        sandboxes: () => this.#sandboxes,
        duress: new DuressDetector(options.duress),
        counters,
        softCancel: (taskId, resource) => softCancel(this.#x, taskId, resource),
        hardCancel: (taskId, resource) => hardCancel(this.#x, taskId, resource),
        graceMsOf: (taskId) => this.#x.graceMsOf(taskId),
        publishStateChanges: (before, after) =>
          publishSandboxStates(source, before.verdicts, after.verdicts, after.usage),
        cancelAfterMs: (taskId) => this.#x.cancelAfterOf(taskId)?.ms,
        schedule: (callback, delayMs) => {
          const timer = setTimeout(callback, delayMs);
          timer.unref();
          return () => clearTimeout(timer);
        },
        nowMs: () => performance.now(),
        standingQueue: () => {
          const now = performance.now();
          return scheduler.lanes.some((_, i) => scheduler.overloaded(i, now));
        },
        // State changes and cancellations, at info, rate-limited (observability/decision-log.ts).
        decisions: new DecisionLog(log),
      },
    );
    this.#x = new TaskExecution({
      scheduler,
      caps,
      allocator: new SlotAllocator(pool.slots.slotCount),
      pool,
      tracker: this.#tracker,
      counters,
      governor: this.#governor,
      source,
      laneNames: options.lanes.map((l) => l.name),
      log,
      settings: {
        maxQueueWaitMs: options.maxQueueWaitMs,
        defaultGraceMs: options.graceIntervals * options.intervalMs,
        workerHeapMb: options.workerHeapMb,
        standingQueueMs: options.standingQueueMs,
        duressRejectThreshold: options.duress.rejectThreshold,
      },
      sandboxes,
      // A node that queues nothing refuses a task no worker takes at once: it prefetches nothing either.
      prefetch: new PrefetchPolicy(
        options.lanes.length,
        options.maxQueuedTasks === 0 ? 0 : options.prefetchTasks,
        options.prefetchBelowMs,
      ),
    });
    registry.onChange((list) => this.#applySandboxes(list));
    // A shared store (etcd) hands over the rules other nodes saved: applied here, not saved again.
    parts.priorityStore.watch?.((document) => this.#applyStoredQueryPriority(document));
    // A replacement that has loaded takes the tasks held back while its lane had no free live worker.
    pool.onWorkerReady(() => pump(this.#x));
    // The one node sampler: the governor calls it once per interval; duress, the node stats and the
    // Resource_Usage_Stats averages all read its samples.
    this.#nodeSampler = new NodeUsageSampler({
      cores: options.cores,
      intervalMs: options.intervalMs,
      ioIntervalMs: options.resourceUsage.ioIntervalMs,
      io: createIoUsageSampler(),
      workersHeap: () => workersHeapOf(this.#x, pool, options.workerHeapMb),
    });
    this.#usageAverages = new NodeUsageAverages(
      { ...options.resourceUsage, cores: options.cores },
      options.intervalMs,
      this.#nodeSampler.ioSource,
    ).attach(this.#nodeSampler);
    this.#governor.start();
    if (options.onTaskEnd !== undefined) this.#subscribeTaskEnd(options.onTaskEnd);
  }

  /** `onTaskEnd`: a thin subscriber of `task:ended`, for this runtime's tasks that ran. */
  #subscribeTaskEnd(onTaskEnd: NonNullable<ResolvedRuntimeOptions['onTaskEnd']>): void {
    const listener = (message: unknown): void => {
      const event = message as TaskEndedEvent;
      if (event.runtimeId !== this.runtimeId || !event.ran) return;
      try {
        onTaskEnd(event);
      } catch (error) {
        this.#parts.log.warn({ error: String(error) }, 'onTaskEnd threw');
      }
    };
    diagnostics_channel.subscribe(ChannelName.TASK_ENDED, listener);
    this.#unsubscribeTaskEnd = () => diagnostics_channel.unsubscribe(ChannelName.TASK_ENDED, listener);
  }

  /** Takes a new sandbox list: classification uses it from the next request on. */
  #applySandboxes(sandboxes: readonly Sandbox[]): void {
    const classifier = new SandboxClassifier(sandboxes);
    this.#sandboxes = sandboxes;
    this.#x.setSandboxes(sandboxes);
    this.#classifier = classifier;
    this.#x.caps.setSandboxes(sandboxes);
    this.#parts.log.info(
      { sandboxes: sandboxes.map((s) => s.id), version: this.sandboxRegistry.version },
      'sandboxes changed',
    );
    // A raised or removed concurrency cap may let waiting tasks start.
    pump(this.#x);
  }

  resourceUsage(): NodeUsageSnapshot {
    return this.#usageAverages.snapshot();
  }

  search(request: SearchRequest<Body>, options?: SearchCallOptions): Promise<Result> {
    try {
      const control = checkSearchCallOptions(options);
      if (!this.#accepting) throw new NotRunningError();
      return admit(this.#x, this.#engine, this.#classifier, request, control) as Promise<Result>;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  sandboxes(): readonly Sandbox[] {
    return this.#sandboxes;
  }

  sandboxStats(): ReadonlyMap<string, SandboxStats> {
    return sandboxStatsOf(this.#x, this.#sandboxes);
  }

  nodeStats(): NodeStats {
    return nodeStatsOf(
      this.#x,
      this.#parts.pool,
      this.options,
      this.engineDescription.indices,
      this.#governor.enforcement,
      this.#nodeSampler.last,
    );
  }

  governorSnapshot(): GovernorSnapshot {
    return this.#governor.snapshot;
  }

  governorStats(options?: { readonly resetTickCost?: boolean }): GovernorStats {
    return this.#governor.stats(options);
  }

  setEnforcement(mode: EnforcementMode | NodeModeWord): void {
    this.#governor.enforcement = enforcementModeOf(mode, 'enforcement');
  }

  queryPriority(): QueryPriorityDocument {
    return this.#x.scheduler.config.document;
  }

  setQueryPriority(document: QueryPriorityInput): Promise<QueryPriorityDocument> {
    const change = this.#priorityChanges.then(() => this.#changeQueryPriority(document));
    this.#priorityChanges = change.catch(() => undefined);
    return change;
  }

  async #changeQueryPriority(document: unknown): Promise<QueryPriorityDocument> {
    if (this.#x.closed) throw new NotRunningError();
    // Validate everything, then save: a refused document or a failed save changes nothing.
    const config = parseQueryPriority(document, 'body');
    checkReservations(config, this.options.lanes, 'body');
    await this.#parts.priorityStore.save(config.document);
    if (this.#x.closed) throw new NotRunningError();
    const dropped = this.#x.scheduler.configure(config);
    this.#parts.log.info(
      { rules: config.rules.length, enabled: config.enabled, dropped: dropped.length },
      'query priority changed',
    );
    rejectEvicted(this.#x, dropped);
    // Lanes may have opened (fewer reservations, lending on): hand out what they may take now.
    pump(this.#x);
    return config.document;
  }

  /** Rules another node saved in the shared store: applied in turn with local changes, not saved. */
  #applyStoredQueryPriority(document: unknown): void {
    const change = this.#priorityChanges.then(() => {
      if (this.#x.closed) return;
      let config: ReturnType<typeof parseQueryPriority>;
      try {
        config = parseQueryPriority(document);
      } catch (error) {
        this.#parts.log.warn(
          { error: (error as Error).message },
          'query priority from the shared store refused; the rules in force stay',
        );
        return;
      }
      const dropped = this.#x.scheduler.configure(config);
      this.#parts.log.info(
        { rules: config.rules.length, enabled: config.enabled, dropped: dropped.length },
        'query priority changed by another node',
      );
      rejectEvicted(this.#x, dropped);
      pump(this.#x);
    });
    this.#priorityChanges = change.catch(() => undefined);
  }

  schedulerStats(): SchedulerStats {
    updateLanes(this.#x);
    return this.#x.scheduler.stats();
  }

  close(options: CloseOptions = {}): Promise<void> {
    if (typeof options !== 'object' || options === null) {
      return Promise.reject(new InvalidArgumentError('options', 'must be an object', options));
    }
    const drain = options.drain ?? false;
    const timeoutMs = options.timeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
    if (typeof drain !== 'boolean') {
      return Promise.reject(new InvalidArgumentError('options.drain', 'must be a boolean', drain));
    }
    if (typeof timeoutMs !== 'number' || !(timeoutMs >= 0)) {
      return Promise.reject(
        new InvalidArgumentError(
          'options.timeoutMs',
          'must be a number of ms >= 0 (Infinity: no bound)',
          timeoutMs,
        ),
      );
    }
    if (this.#closing !== undefined) {
      // A close at once cuts short a drain under way.
      if (!drain) this.#x.endDrain?.();
      return this.#closing;
    }
    this.#accepting = false;
    this.#closing = (async () => {
      if (drain) await this.#drained(timeoutMs);
      await this.#shutdown();
    })();
    return this.#closing;
  }

  /** Resolves once nothing is queued or running, or after `timeoutMs`, or when a close at once comes. */
  #drained(timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer =
        timeoutMs === Number.POSITIVE_INFINITY
          ? undefined
          : setTimeout(() => this.#x.endDrain?.(), timeoutMs);
      timer?.unref();
      this.#x.endDrain = () => {
        if (timer !== undefined) clearTimeout(timer);
        this.#x.endDrain = undefined;
        resolve();
      };
      pump(this.#x);
    });
  }

  async #shutdown(): Promise<void> {
    this.#governor.stop();
    cancelQueued(this.#x);
    await this.#parts.pool.close();
    this.#unsubscribeTaskEnd?.();
    this.#tracker.close();
    this.#parts.heapProbe?.close();
    await this.indices?.close();
    await removeDir(this.#parts.ephemeralDir);
  }
}
