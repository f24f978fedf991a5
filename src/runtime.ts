/**
 * The composition root: `createRuntime(options)` wires the engine, the worker pool, the usage
 * tracker, the governor and the classifier, and exposes the public API that the HTTP server and CLI
 * sit on.
 *
 * Request path (`search`): resolve the index expression, let the engine validate the body, bind the
 * request to a sandbox, read the governor's published verdict (no sampling here), queue, and run on a
 * free worker. Every submitted task settles exactly once: a result, a `RejectedError`, a
 * `CancelledError`, or an engine error.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import diagnostics_channel from 'node:diagnostics_channel';
import { NodeUsageTracker, type HeapUsage, type NodeUsageSnapshot } from './admission/node-usage-tracker.js';
import { resolveIndexExpression } from './classify/index-expression.js';
import { SandboxClassifier } from './classify/sandbox-classifier.js';
import {
  AbortedError,
  CancelledError,
  EngineFailureError,
  EngineRequestError,
  clientErrorStatusOf,
  InvalidArgumentError,
  isQuerySandboxError,
  NotRunningError,
  type QuerySandboxError,
  RejectedError,
  TimedOutError,
} from './errors.js';
import { checkSearchCallOptions, type SearchCallOptions } from './execution/search-call.js';
import type { EnforcementMode } from './governor/decide.js';
import { DuressDetector } from './governor/duress-detector.js';
import { enforcementModeOf, type NodeModeWord } from './governor/node-mode.js';
import { Governor, type GovernorSnapshot, type GovernorStats } from './governor/governor.js';
import { SandboxCounterTable, } from './governor/sandbox-counters.js';
import {
  ChannelName,
  type EventSource,
  nextRuntimeId,
  publishSandboxStates,
  publishTaskCancelling,
  publishTaskEnded,
  publishTaskQueued,
  publishTaskRejected,
  publishTaskStarted,
  publishWorkerReplaced,
  type TaskEndedEvent,
} from './diagnostics.js';
import { compiledModuleUrl } from './pool/compiled-module-url.js';
import {
  type EngineBody,
  type EngineDescription,
  type EngineModule,
  type EngineRequest,
  type EngineResult,
  type EngineShape,
  WRITABLE_INDICES_OPTION,
} from './pool/engine-module.js';
import { WritableIndices } from './indices/writable-indices.js';
import type { TaskOutcome } from './pool/task-envelope.js';
import { CancelReason, SlotAllocator } from './pool/task-slots.js';
import {
  MAX_MATCH_TEXT,
  type PriorityAttributes,
  parseQueryPriority,
  priorityOf,
  type QueryPriorityDocument,
  type QueryPriorityInput,
} from './scheduler/query-priority.js';
import {
  type Dispatch,
  type Eviction,
  type Expiry,
  type QueueTicket,
  type SchedulerStats,
  TaskScheduler,
} from './scheduler/task-scheduler.js';
import { ConcurrencyCaps, type Hold } from './scheduler/concurrency-caps.js';
import {
  cancelAfterOf,
  describeLimit,
  requestedParameters,
  type TimeLimit,
  timeoutOf,
} from './execution/search-parameters.js';
import { type EffectiveSearchSettings, effectiveSearchSettings } from './sandbox/search-settings.js';
import type { AnyCancellation } from './governor/governor.js';
import { checkReservations } from './scheduler/worker-reservations.js';
import {
  MemoryQueryPriorityStore,
  openQueryPriority,
  type QueryPriorityStore,
} from './scheduler/query-priority-store.js';
import { weighHelperThreads } from './pool/helper-threads.js';
import { LanePool, } from './pool/lane-pool.js';
import { DecisionLog } from './observability/decision-log.js';
import {
  type ResolvedRuntimeOptions,
  type RuntimeOptions,
  resolveRuntimeOptions,
} from './runtime-options.js';
import { type RuntimeLogger, SILENT_LOGGER } from './runtime-logger.js';
import { effectiveCancellationGrace } from './sandbox/cancellation-grace.js';
import { ROOT_SANDBOX_ID, type Resource, type Sandbox } from './sandbox/sandbox.js';
import { SandboxRegistry } from './sandbox/sandbox-registry.js';
import { MemorySandboxStore, type SandboxStore } from './sandbox/sandbox-store.js';
import { NodeUsageSampler } from './tracking/node-usage-sampler.js';
import { newTrackedTask, type TrackedTask } from './tracking/tracked-task.js';
import { UsageTracker } from './tracking/usage-tracker.js';
import { sampleHeap, WorkerHeapProbe } from '../native-shim/index.js';

export type { RuntimeOptions, TaskEndEvent } from './runtime-options.js';
export type { SearchCallOptions } from './execution/search-call.js';
export type { CloseOptions, LaneStats, NodeStats, Runtime, SandboxStats, SearchRequest } from './runtime-api.js';
import type { CloseOptions, NodeStats, Runtime, SandboxStats, SearchRequest } from './runtime-api.js';
import { checkWorkerHeapLimit, isolationOf, loadSandboxes, logLanes, removeDir } from './runtime-start.js';


/** `CloseOptions.timeoutMs` by default, ms. */
const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

/**
 * Tasks handed to piscina per worker. With 2, piscina holds the next task ready and the 1 ms task
 * benchmark gained about 7 % throughput, but that task then waits in piscina's FIFO, where the
 * governor can no longer reject it and a later, more important task cannot pass it (behind a 200 ms
 * fuzzy query). Work stays in the runtime's own queue until a worker is free.
 */
const DISPATCH_DEPTH_PER_WORKER = 1;

interface QueuedTask {
  readonly taskId: number;
  readonly sandbox: Sandbox;
  readonly user: string | undefined;
  readonly priority: number;
  /** When it was offered to the scheduler, ms (`performance.now()`). */
  readonly queuedAtMs: number;
  readonly request: EngineRequest;
  /** The request's own `cancel_after_time_interval`, ms (-1: none), undefined when not given. */
  readonly requestedCancelAfterMs: number | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
  /** Where its queue-wait bound comes from, for the 429's message. */
  readonly boundFrom: string;
  /** The call's `timeoutMs`, for TimedOutError. */
  readonly callTimeoutMs: number | undefined;
  /** Its place in the queue while it waits. */
  ticket: QueueTicket<QueuedTask> | undefined;
  /**
   * Set when its caller gave up while it ran: its call has settled with `error`; the task is being
   * cancelled (`terminated` once its worker was, after the grace).
   */
  abandoned: { readonly error: AbortedError | TimedOutError; terminated: boolean } | undefined;
}

interface RunningTask {
  readonly queued: QueuedTask;
  readonly dispatch: Dispatch<QueuedTask>;
  readonly tracked: TrackedTask;
  /** What it counts on for the concurrency caps. */
  readonly hold: Hold;
  /** The hard cancellation of a task whose caller gave up, after the grace period. */
  hardTimer: NodeJS.Timeout | undefined;
}

/**
 * Checks `SearchRequest.shards` against the resolved indices; returns a frozen copy.
 * @throws InvalidArgumentError naming `shards`, `shards.<index>` or `shards.<index>[i]` and the value.
 */
function checkShards(
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
      if (list.indexOf(n) !== i) throw new InvalidArgumentError(`${path}[${i}]`, 'must not repeat a shard', n);
    }
    out[index] = Object.freeze([...(list as number[])]);
  }
  return Object.freeze(out);
}

function cancelResourceOf(code: number): Resource | 'time' | 'shutdown' {
  return code === CancelReason.CPU
    ? 'cpu'
    : code === CancelReason.MEMORY
      ? 'memory'
      : code === CancelReason.TIME
        ? 'time'
        : 'shutdown';
}


/**
 * Creates and starts a runtime: loads the sandboxes, prepares the engine in the main thread, starts
 * the workers and waits until each has loaded the engine, then starts the governor.
 *
 * The type parameter is the engine module's type, so that `search` is typed by it (the module is
 * loaded by URL, which TypeScript cannot follow):
 * ```ts
 * const runtime = await createRuntime<typeof import('./engine.js')>({
 *   engine: new URL('./engine.js', import.meta.url).href,
 * });
 * const result = await runtime.search({ index: 'products', body: { q: 'lamp' } }); // the handle()'s result
 * ```
 * Nothing checks at run time that the module given is of that type.
 * @throws InvalidArgumentError / InvalidSandboxError for bad options or a bad sandbox file;
 *   Error when the engine cannot be loaded or a worker fails to start.
 */
export async function createRuntime<Engine extends EngineShape = EngineModule>(
  options: RuntimeOptions = {},
): Promise<Runtime<EngineResult<Engine>, EngineBody<Engine>>> {
  const resolved = resolveRuntimeOptions(options);
  const log = options.logger ?? SILENT_LOGGER;
  const store: SandboxStore = options.sandboxStore ?? new MemorySandboxStore();
  const registry = await SandboxRegistry.open({
    store,
    // Read only when the store is empty: once it holds sandboxes, the seed file is not used.
    seed: () => loadSandboxes(resolved.sandboxes),
    maxSandboxes: resolved.maxSandboxes,
  });
  log.info(
    {
      store: store.location ?? 'memory',
      version: registry.version,
      sandboxes: registry.list().length - 1,
      seededFrom: registry.seeded
        ? typeof resolved.sandboxes === 'string'
          ? resolved.sandboxes
          : 'options'
        : null,
    },
    registry.seeded
      ? 'sandbox store was empty: seeded it from the sandbox file'
      : 'loaded sandboxes from the store (the sandbox file is not applied)',
  );
  const priorityStore: QueryPriorityStore = options.queryPriorityStore ?? new MemoryQueryPriorityStore();
  const opened = await openQueryPriority(
    priorityStore,
    options.queryPriority === undefined ? undefined : resolved.queryPriority,
    resolved.lanes,
  );
  const queryPriority = opened.config;
  log.info(
    { store: priorityStore.location ?? 'memory', source: opened.source, rules: queryPriority.rules.length },
    opened.source === 'store'
      ? 'query priority loaded from the store (a --query-priority file or queryPriority option is not applied)'
      : opened.source === 'seed'
        ? 'query-priority store was empty: seeded it from the given rules'
        : 'query priority: defaults (no rules)',
  );
  if (opened.warning !== undefined) log.warn(opened.warning);
  const engineUrl = resolved.engineUrl ?? compiledModuleUrl('./engine/minisearch-engine.js', import.meta.url);
  let engine: EngineModule;
  try {
    const imported = (await import(engineUrl)) as EngineModule & { default?: EngineModule };
    engine = typeof imported.handle === 'function' ? imported : (imported.default as EngineModule);
  } catch (error) {
    throw new InvalidArgumentError(
      'options.engine',
      `must be a loadable ES module (${(error as Error).message})`,
      engineUrl,
    );
  }
  if (engine === undefined || typeof engine.handle !== 'function') {
    throw new InvalidArgumentError('options.engine', 'must name a module that exports handle()', engineUrl);
  }
  const cacheDir = resolved.cacheDir;
  await fs.mkdir(cacheDir, { recursive: true });
  const prepareStarted = performance.now();
  const description: EngineDescription =
    (await engine.prepare?.({
      cacheDir,
      options: resolved.engineOptions,
      log: (message) => log.info({ engine: engineUrl }, message),
    })) ?? {};
  const prepareMs = performance.now() - prepareStarted;
  log.info({ prepareMs: Math.round(prepareMs), indices: description.indices }, 'engine prepared');
  // Writable indices: recovered from their shard logs before any worker starts, so every worker's
  // first look at the refresh board finds everything that was acknowledged.
  // Without a dataDir they live in a temporary directory, removed at close: nothing in the cwd.
  const ephemeralDir =
    engine.writableIndices === true && resolved.dataDir === undefined
      ? await fs.mkdtemp(path.join(os.tmpdir(), 'query-sandbox-'))
      : undefined;
  const writable =
    engine.writableIndices === true
      ? await WritableIndices.open({
          dir: path.join(resolved.dataDir ?? ephemeralDir!, 'indices'),
          nodeId: resolved.nodeId,
          role: resolved.nodeRole,
          readOnlyIndices: description.indices ?? [],
          durability: resolved.translogDurability,
          syncIntervalMs: resolved.translogSyncIntervalMs,
          indexingPressureBytes: resolved.indexingPressureBytes,
          writeQueueSize: resolved.writeQueueSize,
          metadataStore: options.indexMetadataStore,
          log,
        })
      : undefined;

  if (resolved.singleThreadedGc && !process.execArgv.includes('--single-threaded-gc')) {
    // Process-wide and only for isolates made after it: workers refuse it in execArgv. Given to node
    // at start it is safe; flipped here it can meet a concurrent marking cycle of the main isolate
    // (seen: V8 `Check failed: concurrent_marking_handle_ implies ...`, the process aborted).
    log.warn('singleThreadedGc is set at run time; start node with --single-threaded-gc instead (see docs/lanes.md)');
    v8.setFlagsFromString('--single-threaded-gc');
  }
  // Follows workers from their start, so a task that stops checkpointing can still be measured.
  const heapProbe = resolved.heapProbe ? new WorkerHeapProbe() : undefined;
  const runtimeId = nextRuntimeId();
  const source: EventSource = Object.freeze({ runtimeId, nodeId: resolved.nodeId });
  const pool = await LanePool.start({
    engineUrl,
    engineOptions:
      writable === undefined
        ? resolved.engineOptions
        : { ...resolved.engineOptions, [WRITABLE_INDICES_OPTION]: { board: writable.board } },
    cacheDir,
    // Each lane's spare workers keep its capacity while a hard-cancelled worker's replacement loads.
    lanes: resolved.lanes,
    workerHeapMb: resolved.workerHeapMb,
    // One slot per task handed to piscina; at most DISPATCH_DEPTH_PER_WORKER per worker.
    depthPerWorker: DISPATCH_DEPTH_PER_WORKER,
    startTimeoutMs: resolved.startTimeoutMs,
    onReplacement: (lane, report) =>
      publishWorkerReplaced(source, resolved.lanes[lane]!.name, report.threadId, report.startupMs),
  }).catch(async (error: unknown) => {
    heapProbe?.close();
    await writable?.close();
    await removeDir(ephemeralDir);
    throw error;
  });
  log.info({ startupMs: pool.startups.map((s) => Math.round(s.startupMs)) }, 'workers ready');
  logLanes(log, pool);
  if (resolved.helperThreadWeight !== undefined) {
    const helpers = weighHelperThreads(resolved.helperThreadWeight);
    const fields = { nice: resolved.helperThreadWeight, ...helpers };
    const message = `helper threads (V8 platform, libuv): ${helpers.weighted} of ${helpers.threads} at nice ${resolved.helperThreadWeight}`;
    if (helpers.weighted === helpers.threads) log.info(fields, message);
    else log.warn(fields, message);
  }
  try {
    await checkWorkerHeapLimit(pool, resolved.workerHeapMb);
  } catch (error) {
    heapProbe?.close();
    await writable?.close();
    await removeDir(ephemeralDir);
    throw error;
  }
  return new GovernedRuntime<EngineResult<Engine>, EngineBody<Engine>>(
    runtimeId,
    { ...resolved, queryPriority },
    engine,
    description,
    registry,
    pool,
    log,
    heapProbe,
    priorityStore,
    writable,
    ephemeralDir,
  );
}


class GovernedRuntime<Result, Body> implements Runtime<Result, Body> {
  readonly options: ResolvedRuntimeOptions;
  readonly #engine: EngineModule;
  readonly #indices: readonly string[] | undefined;
  readonly sandboxRegistry: SandboxRegistry;
  readonly indices: WritableIndices | undefined;
  readonly engineDescription: EngineDescription;
  // Swapped whole on every accepted sandbox change (see #applySandboxes); never mutated in place.
  #sandboxes: readonly Sandbox[];
  #byId: ReadonlyMap<string, Sandbox>;
  /** Each sandbox's effective `cancellationGraceMs` (Infinity: never), swapped with the set. */
  #graceMs: ReadonlyMap<string, number>;
  #settings: ReadonlyMap<string, EffectiveSearchSettings>;
  #classifier: SandboxClassifier;
  readonly #caps: ConcurrencyCaps;
  readonly #pool: LanePool;
  readonly #log: RuntimeLogger;
  readonly #allocator: SlotAllocator;
  readonly #tracker: UsageTracker;
  readonly #nodeSampler: NodeUsageSampler;
  readonly #usageTracker: NodeUsageTracker;
  readonly #counters = new SandboxCounterTable();
  readonly #governor: Governor;
  readonly #scheduler: TaskScheduler<QueuedTask>;
  readonly #running = new Map<number, RunningTask>();
  readonly #heapProbe: WorkerHeapProbe | undefined;
  readonly #priorityStore: QueryPriorityStore;
  /** `#searchableIndices()` for the writable indices' `names()` array `#searchableOf`. */
  #searchable: readonly string[] = [];
  #searchableOf: readonly string[] | undefined;
  /** Query-priority changes, one at a time: validate, save, apply. */
  #priorityChanges: Promise<unknown> = Promise.resolve();
  /** Per sandbox id: its queue-wait bound (own or inherited) and where it comes from. */
  #queueWaitBounds: ReadonlyMap<string, { readonly ms: number; readonly from: string }> = new Map();
  /** The timer that rejects queued tasks at their queue-wait deadline, and when it fires. */
  #expiryTimer: NodeJS.Timeout | undefined;
  #expiryAtMs = Number.POSITIVE_INFINITY;
  #nextTaskId = 1;
  /** False once `close` was called: new searches are refused. */
  #accepting = true;
  /** True once the workers are being stopped (after a drain, if any). */
  #closed = false;
  #closing: Promise<void> | undefined;
  /** Ends a drain under way (set while one is). */
  #endDrain: (() => void) | undefined;
  readonly runtimeId: number;
  /** This runtime as its events name it. */
  readonly #source: EventSource;
  /** Lane names by lane index, for events. */
  readonly #laneNames: readonly string[];
  #unsubscribeTaskEnd: (() => void) | undefined;
  /** The temporary directory of writable indices without a dataDir, removed at close. */
  readonly #ephemeralDir: string | undefined;

  constructor(
    runtimeId: number,
    options: ResolvedRuntimeOptions,
    engine: EngineModule,
    description: EngineDescription,
    registry: SandboxRegistry,
    pool: LanePool,
    log: RuntimeLogger,
    heapProbe: WorkerHeapProbe | undefined,
    priorityStore: QueryPriorityStore,
    writable: WritableIndices | undefined,
    ephemeralDir: string | undefined,
  ) {
    this.#ephemeralDir = ephemeralDir;
    this.runtimeId = runtimeId;
    this.#source = Object.freeze({ runtimeId, nodeId: options.nodeId });
    this.#laneNames = options.lanes.map((l) => l.name);
    this.indices = writable;
    this.#heapProbe = heapProbe;
    this.#priorityStore = priorityStore;
    this.options = options;
    this.#engine = engine;
    this.#indices = description.indices;
    this.engineDescription = description;
    this.sandboxRegistry = registry;
    const sandboxes = registry.list();
    this.#caps = new ConcurrencyCaps(sandboxes);
    this.#scheduler = new TaskScheduler<QueuedTask>({
      lanes: options.lanes,
      maxQueuedTasks: options.maxQueuedTasks,
      agingMsPerPriority: options.agingMsPerPriority,
      fifo: options.queueOrder === 'fifo',
      config: options.queryPriority,
      agingOvertakeEvery: options.agingOvertakeEvery,
      overload: { intervalMs: options.standingQueueMs, targetMs: options.controlledDelayMs, lifo: options.adaptiveLifo },
      // A task held back by its sandbox's concurrency cap waits; the tasks behind it go ahead.
      mayStart: (q) => !this.#caps.active || this.#caps.mayStart(q.sandbox.id, q.user),
    });
    this.#sandboxes = sandboxes;
    this.#byId = new Map(sandboxes.map((s) => [s.id, s]));
    this.#queueWaitBounds = queueWaitBoundsOf(sandboxes, options.maxQueueWaitMs);
    this.#graceMs = effectiveCancellationGrace(sandboxes, options.graceIntervals * options.intervalMs);
    this.#settings = effectiveSearchSettings(sandboxes);
    this.#classifier = new SandboxClassifier(sandboxes);
    registry.onChange((list) => this.#applySandboxes(list));
    // A shared store (etcd) hands over the rules other nodes saved: applied here, not saved again.
    priorityStore.watch?.((document) => this.#applyStoredQueryPriority(document));
    this.#pool = pool;
    this.#log = log;
    this.#allocator = new SlotAllocator(pool.slots.slotCount);
    this.#tracker = new UsageTracker({
      slots: pool.slots,
      cores: options.cores,
      memoryBudgetBytes: options.memoryBudgetBytes,
      // A deleted sandbox's running tasks count under the root until they finish.
      parentOf: (id) => (id === ROOT_SANDBOX_ID ? null : (this.#byId.get(id)?.parentId ?? ROOT_SANDBOX_ID)),
      ...(heapProbe !== undefined ? { heapProbe, staleCheckpointMs: 2 * options.intervalMs } : {}),
    });
    this.#nodeSampler = new NodeUsageSampler({ cores: options.cores });
    this.#usageTracker = new NodeUsageTracker({
      ...options.resourceUsage,
      cores: options.cores,
      heapUsage: () => this.#heapUsage(),
    });
    this.#usageTracker.start();
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
        sampleNode: () => this.#sampleNode(),
        sandboxes: () => this.#sandboxes,
        duress: new DuressDetector(options.duress),
        counters: this.#counters,
        softCancel: (taskId, resource) => this.#softCancel(taskId, resource),
        hardCancel: (taskId, resource) => this.#hardCancel(taskId, resource),
        graceMsOf: (taskId) => this.#graceMsOf(taskId),
        publishStateChanges: (before, after) => this.#publishStateChanges(before, after),
        cancelAfterMs: (taskId) => this.#cancelAfterOf(taskId)?.ms,
        schedule: (callback, delayMs) => {
          const timer = setTimeout(callback, delayMs);
          timer.unref();
          return () => clearTimeout(timer);
        },
        nowMs: () => performance.now(),
        standingQueue: () => {
          const now = performance.now();
          return this.#scheduler.lanes.some((_, i) => this.#scheduler.overloaded(i, now));
        },
        // State changes and cancellations, at info, rate-limited (observability/decision-log.ts).
        decisions: new DecisionLog(log),
      },
    );
    this.#governor.start();
    const onTaskEnd = options.onTaskEnd;
    if (onTaskEnd !== undefined) {
      // A thin subscriber of `task:ended`: this runtime's tasks that ran.
      const listener = (message: unknown): void => {
        const event = message as TaskEndedEvent;
        if (event.runtimeId !== runtimeId || !event.ran) return;
        try {
          onTaskEnd(event);
        } catch (error) {
          this.#log.warn({ error: String(error) }, 'onTaskEnd threw');
        }
      };
      diagnostics_channel.subscribe(ChannelName.TASK_ENDED, listener);
      this.#unsubscribeTaskEnd = () => diagnostics_channel.unsubscribe(ChannelName.TASK_ENDED, listener);
    }
  }

  /** `sandbox:state` for every sandbox whose published state changed at this tick, when anyone listens. */
  #publishStateChanges(before: GovernorSnapshot, after: GovernorSnapshot): void {
    publishSandboxStates(this.#source, before.verdicts, after.verdicts, after.usage);
  }

  /** Takes a new sandbox list: classification uses it from the next request on. */
  #applySandboxes(sandboxes: readonly Sandbox[]): void {
    const classifier = new SandboxClassifier(sandboxes);
    this.#sandboxes = sandboxes;
    this.#byId = new Map(sandboxes.map((s) => [s.id, s]));
    this.#queueWaitBounds = queueWaitBoundsOf(sandboxes, this.options.maxQueueWaitMs);
    this.#graceMs = effectiveCancellationGrace(sandboxes, this.options.graceIntervals * this.options.intervalMs);
    this.#settings = effectiveSearchSettings(sandboxes);
    this.#classifier = classifier;
    this.#caps.setSandboxes(sandboxes);
    this.#log.info(
      { sandboxes: sandboxes.map((s) => s.id), version: this.sandboxRegistry.version },
      'sandboxes changed',
    );
    // A raised or removed concurrency cap may let waiting tasks start.
    this.#pump();
  }

  /** The effective search settings of a sandbox; a deleted one's tasks run under the root's. */
  #settingsOf(sandboxId: string): EffectiveSearchSettings {
    return this.#settings.get(sandboxId) ?? this.#settings.get(ROOT_SANDBOX_ID)!;
  }

  /** The `cancel_after_time_interval` in force for a running task now (its sandbox's may have changed). */
  #cancelAfterOf(taskId: number) {
    const r = this.#running.get(taskId);
    if (r === undefined) return undefined;
    return cancelAfterOf(r.queued.requestedCancelAfterMs, this.#settingsOf(r.queued.sandbox.id));
  }

  #sampleNode() {
    const workers = this.#workersHeap();
    return this.#nodeSampler.sample(workers.usedBytes, workers.limitBytes);
  }

  /**
   * The workers' heap (live + external, bytes) from the running tasks' last checkpoints, with the idle
   * figure of a worker's start-up for the others, and their heap limits added up. No sampling: slot reads.
   */
  #workersHeap(): HeapUsage {
    const startups = this.#pool.startups;
    const last = startups[startups.length - 1];
    const idleHeap = last?.heapBytes ?? 0;
    const heapLimit = last?.heapLimitBytes ?? this.options.workerHeapMb * 1024 * 1024;
    let workersHeap = 0;
    for (const r of this.#running.values())
      workersHeap += this.#pool.slots.heapBytes(r.tracked.slot) || idleHeap;
    workersHeap += Math.max(0, this.#pool.threads - this.#running.size) * idleHeap;
    return { usedBytes: workersHeap, limitBytes: heapLimit * this.#pool.threads };
  }

  /** Heap over all isolates for the node usage tracker: the main isolate (heap + external) plus the workers. */
  #heapUsage(): HeapUsage {
    const main = sampleHeap();
    const workers = this.#workersHeap();
    return {
      usedBytes: main.usedHeapBytes + main.externalBytes + workers.usedBytes,
      limitBytes: main.heapLimitBytes + workers.limitBytes,
    };
  }

  resourceUsage(): NodeUsageSnapshot {
    return this.#usageTracker.snapshot();
  }

  search(request: SearchRequest<Body>, options?: SearchCallOptions): Promise<Result> {
    try {
      return this.#admit(request, checkSearchCallOptions(options)) as Promise<Result>;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #admit(request: SearchRequest, control: SearchCallOptions | undefined): Promise<unknown> {
    if (!this.#accepting) throw new NotRunningError();
    if (control?.signal?.aborted === true) {
      throw new AbortedError(undefined, true, 'search aborted by its caller before it was queued', {
        cause: control.signal.reason,
      });
    }
    if (typeof request.index !== 'string')
      throw new InvalidArgumentError('index', 'must be a string', request.index);
    const indices = resolveIndexExpression(request.index, this.#searchableIndices());
    const requested = requestedParameters(request);
    const body = requested.body;
    let engineRequest: EngineRequest =
      request.shards === undefined
        ? { indices, body }
        : { indices, body, shards: checkShards(request.shards, indices) };
    this.#validate(this.#engineOwned(engineRequest));
    const attributes = { user: request.user, indices };
    const sandbox =
      request.sandboxId !== undefined
        ? this.#classifier.resolveExplicit(request.sandboxId, attributes)
        : this.#classifier.classify(attributes);
    this.#checkVerdict(sandbox, undefined);
    const timeout = timeoutOf(requested.timeoutMs, this.#settingsOf(sandbox.id));
    if (timeout !== undefined) engineRequest = { ...engineRequest, timeoutMs: timeout.ms };
    const priority = this.#priorityOf(engineRequest, request.user, sandbox);
    // The search's `timeout` in force (the request's, or its sandbox's search_settings) bounds its wait too.
    const bound = this.#queueWaitBound(sandbox.id, timeout);
    let task!: QueuedTask;
    const queuedAtMs = performance.now();
    const settled = new Promise((resolve, reject) => {
      task = {
        taskId: this.#nextTaskId++,
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
    const offered = this.#scheduler.offer(task, sandbox.id, priority, queuedAtMs, bound.ms);
    if (!offered.accepted) {
      this.#counters.countRejection(sandbox.id, 'queue');
      const error = new RejectedError(sandbox.id, 'queue', offered.message, offered.reason);
      publishTaskRejected(this.#source, task.taskId, priority, error, sandbox.id, offered.reason, false);
      throw error;
    }
    task.ticket = offered.ticket;
    publishTaskQueued(this.#source, task.taskId, sandbox.id, priority, this.#laneNames[this.#scheduler.laneOf(priority)]!);
    if (control !== undefined) this.#watchCall(task, settled, control);
    this.#rejectEvicted(offered.evicted);
    this.#pump();
    return settled;
  }

  /** The queue-wait bound of a task of `sandboxId`: its sandbox's (own or inherited), or the request's timeout when smaller. */
  #queueWaitBound(sandboxId: string, timeout: TimeLimit | undefined): { readonly ms: number; readonly from: string } {
    const own = this.#queueWaitBounds.get(sandboxId) ?? {
      ms: this.options.maxQueueWaitMs,
      from: "the node's default (maxQueueWaitMs)",
    };
    if (timeout !== undefined && timeout.ms > 0 && timeout.ms < own.ms) {
      return {
        ms: timeout.ms,
        from: timeout.source === 'sandbox' ? `sandbox [${timeout.sandboxId}]'s search_settings.timeout` : "the request's timeout",
      };
    }
    return own;
  }

  /** Follows the caller's `signal` and `timeoutMs` until the call settles. */
  #watchCall(task: QueuedTask, settled: Promise<unknown>, control: SearchCallOptions): void {
    const signal = control.signal;
    const onAbort = signal === undefined ? undefined : () => this.#abandon(task, 'aborted', signal.reason);
    if (onAbort !== undefined) signal!.addEventListener('abort', onAbort, { once: true });
    const timer =
      control.timeoutMs === undefined ? undefined : setTimeout(() => this.#abandon(task, 'timed_out'), control.timeoutMs);
    timer?.unref();
    const dispose = () => {
      if (onAbort !== undefined) signal!.removeEventListener('abort', onAbort);
      if (timer !== undefined) clearTimeout(timer);
    };
    settled.then(dispose, dispose);
  }

  /**
   * The caller gave up (`signal`, `timeoutMs`, a closed HTTP connection): the call rejects at once. A
   * queued task is removed without running; a running one is cancelled, softly (its signal) and, if it
   * is still running after the grace period, by terminating its worker. Nothing once the call settled.
   */
  #abandon(task: QueuedTask, why: 'aborted' | 'timed_out', cause?: unknown): void {
    const counters = this.#counters.of(task.sandbox.id);
    const error = (queued: boolean) =>
      why === 'aborted'
        ? new AbortedError(
            task.sandbox.id,
            queued,
            queued
              ? 'search aborted by its caller while queued: the task was removed without running'
              : 'search aborted by its caller while running: the task is being cancelled',
            { cause },
          )
        : new TimedOutError(
            task.sandbox.id,
            task.callTimeoutMs ?? 0,
            queued,
            `search timed out after ${task.callTimeoutMs} ms (timeoutMs) ` +
              (queued ? 'while queued: the task was removed without running' : 'while running: the task is being cancelled'),
          );
    if (task.ticket !== undefined && this.#scheduler.remove(task.ticket)) {
      if (why === 'aborted') counters.aborted++;
      else counters.callTimeouts++;
      const failure = error(true);
      this.#publishQueuedEnd(task, failure);
      task.reject(failure);
      // A drain under way may have been waiting for this one.
      this.#pump();
      return;
    }
    const running = this.#running.get(task.taskId);
    if (running === undefined || task.abandoned !== undefined) return;
    const failure = error(false);
    const abandoned = { error: failure, terminated: false };
    task.abandoned = abandoned;
    if (why === 'aborted') counters.aborted++;
    else counters.callTimeouts++;
    task.reject(failure);
    this.#pool.slots.requestCancel(running.tracked.slot, CancelReason.ABORTED);
    // Its sandbox's grace (cancellationGraceMs), as for the governor's cancellations; "never": none.
    const graceMs = this.#graceMsOf(task.taskId);
    if (!Number.isFinite(graceMs)) return;
    running.hardTimer = setTimeout(() => {
      running.hardTimer = undefined;
      if (this.#running.get(task.taskId) === running) {
        abandoned.terminated = true;
        this.#pool.terminateWorkerOf(running.dispatch.lane, running.tracked.slot, task.taskId);
      }
    }, graceMs);
    running.hardTimer.unref();
  }

  /** Rejects the tasks that waited past their bound or their lane's controlled-delay target. */
  #rejectExpired(expired: readonly Expiry<QueuedTask>[]): void {
    for (const e of expired) {
      this.#counters.countRejection(e.sandboxId, 'queue');
      this.#counters.of(e.sandboxId).queueWaitRejections++;
      const waited = Math.round(e.waitedMs);
      const message =
        e.reason === 'queue_wait'
          ? `rejected: the task waited ${waited} ms in the queue, past its bound of ${e.boundMs} ms (${e.item.boundFrom})`
          : `rejected: lane [${e.lane}] has had a standing queue for ${this.options.standingQueueMs} ms, ` +
            `so a task may wait at most ${e.boundMs} ms there (controlled delay); this one waited ${waited} ms`;
      const error = new RejectedError(e.sandboxId, 'queue', message, e.reason);
      publishTaskRejected(this.#source, e.item.taskId, e.priority, error, e.sandboxId, e.reason, true);
      e.item.reject(error);
    }
  }

  /** Arms the timer for the scheduler's next expiry, unless one fires earlier already. */
  #armExpiry(): void {
    if (this.#closed) return;
    const next = this.#scheduler.nextExpiryMs();
    if (next === undefined || (this.#expiryTimer !== undefined && this.#expiryAtMs <= next)) return;
    if (this.#expiryTimer !== undefined) clearTimeout(this.#expiryTimer);
    this.#expiryAtMs = next;
    this.#expiryTimer = setTimeout(
      () => {
        this.#expiryTimer = undefined;
        this.#expiryAtMs = Number.POSITIVE_INFINITY;
        this.#pump();
      },
      Math.max(0, Math.ceil(next - performance.now())),
    );
    this.#expiryTimer.unref();
  }

  /** The engine's indices followed by the writable ones (`undefined`: the engine lists none). */
  #searchableIndices(): readonly string[] | undefined {
    const writable = this.indices?.names();
    if (writable === undefined || writable.length === 0) return this.#indices;
    // Read on every search: rebuilt only when the writable indices change (names() keeps its array).
    if (this.#searchableOf !== writable) {
      this.#searchable = [...(this.#indices ?? []), ...writable];
      this.#searchableOf = writable;
    }
    return this.#searchable;
  }

  /** The request as the engine's `validate` checks it: only the engine's own index names. */
  #engineOwned(request: EngineRequest): EngineRequest {
    const writable = this.indices;
    if (writable === undefined || !request.indices.some((name) => writable.has(name))) return request;
    return { ...request, indices: request.indices.filter((name) => !writable.has(name)) };
  }

  /** The task's priority: the first matching query-priority rule, else its sandbox's (see query-priority.ts). */
  #priorityOf(request: EngineRequest, user: string | undefined, sandbox: Sandbox): number {
    const config = this.#scheduler.config;
    const isRoot = sandbox.id === ROOT_SANDBOX_ID;
    if (!config.enabled || config.rules.length === 0)
      return isRoot && config.enabled ? config.defaultPriority : sandbox.priority;
    const nowMs = Date.now();
    let text: string | undefined;
    let timeRange: PriorityAttributes['timeRange'];
    try {
      const described = this.#engine.queryAttributes?.(request, nowMs);
      text = described?.text;
      timeRange = described?.timeRange;
    } catch (error) {
      // The hook must not throw for a validated request; if it does, rules see the raw body.
      this.#log.warn({ error: String(error) }, 'engine queryAttributes failed');
    }
    text ??= JSON.stringify(request.body ?? {}) ?? '';
    // Rules read a bounded prefix: matching runs here, on the main thread, for every request.
    if (text.length > MAX_MATCH_TEXT) text = text.slice(0, MAX_MATCH_TEXT);
    const attributes: PriorityAttributes = {
      text,
      timeRange,
      user,
      indices: request.indices,
      sandboxId: sandbox.id,
    };
    return priorityOf(config, attributes, sandbox.priority, isRoot, nowMs).priority;
  }

  #rejectEvicted(evicted: readonly Eviction<QueuedTask>[]): void {
    for (const e of evicted) {
      this.#counters.countRejection(e.sandboxId, 'queue');
      const error = new RejectedError(e.sandboxId, 'queue', e.message, e.reason);
      publishTaskRejected(this.#source, e.item.taskId, e.priority, error, e.sandboxId, e.reason, true);
      e.item.reject(error);
    }
  }

  /** Runs the engine's `validate`; a plain error tagged with a 4xx `statusCode` becomes an EngineRequestError. */
  #validate(request: EngineRequest): void {
    try {
      this.#engine.validate?.(request);
    } catch (error) {
      if (isQuerySandboxError(error)) throw error;
      const e = error as { type?: unknown; message?: unknown } | undefined;
      const status = clientErrorStatusOf(error);
      if (status !== undefined) {
        throw new EngineRequestError(
          typeof e?.type === 'string' ? e.type : 'illegal_argument_exception',
          String(e?.message),
          status,
        );
      }
      throw new EngineFailureError(`engine failure in validate: ${String(e?.message ?? error)}`, {
        cause: error,
      });
    }
  }

  /**
   * Throws RejectedError when the governor's published verdict refuses new tasks of `sandbox`.
   * `queued`: the waiting task being dispatched; undefined at admission, where a monitor sandbox's
   * `would_reject` is counted (once per request, not again at dispatch).
   */
  #checkVerdict(sandbox: Sandbox, queued: QueuedTask | undefined): void {
    const verdict = this.#governor.verdict(sandbox.id);
    if (queued === undefined && verdict.wouldReject && verdict.resource !== undefined) {
      this.#counters.of(sandbox.id)[verdict.resource].wouldReject++;
    }
    if (!verdict.rejectNew) return;
    const resource = verdict.rejectResource ?? 'cpu';
    if (verdict.shedInDuress === true) {
      const node = this.#governor.snapshot.node;
      this.#counters.countRejection(sandbox.id, resource);
      this.#counters.of(sandbox.id).duressRejections++;
      const shed = new RejectedError(
        sandbox.id,
        resource,
        `rejected: the node is in ${resource} duress (usage ${node[resource].toFixed(3)} > ${this.options.duress.rejectThreshold}) ` +
          `and sandbox [${sandbox.id}] is the lowest-priority sandbox using it; it takes new work again when the duress ends`,
        'duress',
      );
      publishTaskRejected(this.#source, queued?.taskId, queued?.priority, shed, sandbox.id, undefined, queued !== undefined);
      throw shed;
    }
    const by = verdict.rejectedBy ?? sandbox.id;
    const usage = this.#governor.snapshot.usage.get(by);
    const limit = this.#byId.get(by)?.limits[resource];
    this.#counters.countRejection(sandbox.id, resource);
    const error = new RejectedError(
      sandbox.id,
      resource,
      `rejected: sandbox [${by}] is above its low ${resource} limit` +
        (usage !== undefined && limit !== undefined
          ? ` (usage ${usage[resource].toFixed(3)} > low ${limit.low})`
          : '') +
        (by !== sandbox.id ? `; request bound to its child [${sandbox.id}]` : ''),
    );
    publishTaskRejected(
      this.#source,
      queued?.taskId,
      queued?.priority,
      error,
      by,
      undefined,
      queued !== undefined,
    );
    throw error;
  }

  /**
   * Hands queued tasks to free workers of their lanes, as the scheduler picks them. The scheduler
   * counts each lane's `workers` (not its spares): the spares only stand in for workers being replaced.
   */
  #pump(): void {
    this.#dispatchQueued();
    // A drain under way ends once nothing is queued or running.
    if (this.#endDrain !== undefined && this.#running.size === 0 && this.#scheduler.length === 0) this.#endDrain();
  }

  #dispatchQueued(): void {
    // Nothing past its queue-wait bound is dispatched, even when its timer has not fired yet.
    if (!this.#closed) {
      const expired = this.#scheduler.expire(performance.now());
      if (expired.length > 0) this.#rejectExpired(expired);
    }
    while (!this.#closed) {
      const dispatch = this.#scheduler.next(performance.now());
      if (dispatch === undefined) break;
      const queued = dispatch.item;
      // A task that waited is still new work: the verdict published since it was queued applies.
      try {
        this.#checkVerdict(queued.sandbox, queued);
      } catch (error) {
        this.#scheduler.release(dispatch);
        queued.reject(error);
        continue;
      }
      const slot = this.#allocator.acquire();
      if (slot < 0) {
        // Cannot happen while slots >= workers; refuse rather than lose the task.
        this.#scheduler.release(dispatch);
        queued.reject(new EngineFailureError('no free task slot'));
        continue;
      }
      this.#pool.slots.assign(slot, queued.taskId);
      const tracked = newTrackedTask(queued.taskId, queued.sandbox.id, slot, performance.now());
      const hold = this.#caps.started(queued.sandbox.id, queued.user);
      const running: RunningTask = { queued, dispatch, tracked, hold, hardTimer: undefined };
      this.#running.set(queued.taskId, running);
      this.#tracker.add(tracked);
      publishTaskStarted(
        this.#source,
        queued.taskId,
        queued.sandbox.id,
        queued.priority,
        this.#laneNames[dispatch.lane]!,
        dispatch.waitMs,
        dispatch.lent,
      );
      this.#pool.run(dispatch.lane, { taskId: queued.taskId, slot, request: queued.request }).then(
        (outcome) => this.#settle(running, outcome, undefined),
        (error: unknown) => this.#settle(running, undefined, error),
      );
    }
    this.#armExpiry();
  }

  #settle(running: RunningTask, outcome: TaskOutcome | undefined, thrown: unknown): void {
    const { queued, tracked } = running;
    this.#caps.ended(running.hold);
    this.#tracker.complete(tracked);
    this.#pool.slots.release(tracked.slot);
    this.#allocator.release(tracked.slot);
    this.#running.delete(queued.taskId);
    this.#scheduler.release(running.dispatch);
    const picked = this.#governor.cancellationOf(queued.taskId);
    this.#governor.forget(queued.taskId);
    const sandboxId = queued.sandbox.id;
    const counters = this.#counters.of(sandboxId);
    if (queued.abandoned !== undefined) {
      // Its caller gave up and its call has settled: only the worker's work is accounted for.
      if (running.hardTimer !== undefined) clearTimeout(running.hardTimer);
      if (outcome?.ok === true) this.#governor.onTaskCompleted();
      this.#publishTaskEnd(running, queued.abandoned.error, undefined, queued.abandoned.terminated);
      this.#pump();
      return;
    }
    try {
      let failure: QuerySandboxError;
      if (outcome?.ok === true) {
        counters.completions++;
        if ((outcome.result as { timed_out?: unknown } | null)?.timed_out === true) counters.timedOut++;
        this.#governor.onTaskCompleted();
        this.#publishTaskEnd(running, undefined, undefined);
        queued.resolve(outcome.result);
        return;
      }
      if (outcome !== undefined && outcome.cancelCode !== 0) {
        const resource = cancelResourceOf(outcome.cancelCode);
        this.#counters.countCancellation(sandboxId, resource, false);
        failure = this.#cancelledError(running, picked?.cancellation, resource, false);
      } else if (outcome !== undefined) {
        const e = outcome.error;
        counters.failures++;
        if (e.statusCode !== undefined) {
          failure = new EngineRequestError(e.type ?? 'illegal_argument_exception', e.message, e.statusCode);
        } else {
          this.#log.warn({ taskId: queued.taskId, error: e.message, stack: e.stack }, 'engine failure');
          failure = new EngineFailureError(`engine failure: ${e.message}`);
        }
      } else if (picked?.hard === true || this.#closed || picked?.cancellation.resource === 'time') {
        // The worker is gone: terminated by a hard cancellation or at shutdown. A worker whose task
        // the watchdog picked exits by itself when its handler stalls (worker-harness.ts).
        const resource: Resource | 'time' | 'shutdown' =
          picked?.hard === true || picked?.cancellation.resource === 'time' ? picked.cancellation.resource : 'shutdown';
        this.#counters.countCancellation(sandboxId, resource, true);
        failure = this.#cancelledError(running, picked?.cancellation, resource, true);
      } else if ((thrown as { code?: unknown } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
        // The worker's own heap cap (resourceLimits) stopped the task: a memory cancellation.
        this.#counters.countCancellation(sandboxId, 'memory', true);
        this.#log.warn({ taskId: queued.taskId, sandboxId }, 'task exhausted its worker heap');
        failure = new CancelledError(
          sandboxId,
          'memory',
          true,
          `task cancelled: it exhausted its worker's heap limit (${this.options.workerHeapMb} MiB, ` +
            'options.workerHeapMb); the worker was replaced',
        );
      } else {
        counters.failures++;
        this.#log.warn({ taskId: queued.taskId, sandboxId, error: String(thrown) }, 'worker lost');
        failure = new EngineFailureError(
          `engine failure: the worker running the task exited (${thrown instanceof Error ? thrown.message : String(thrown)}); it was replaced`,
          { cause: thrown },
        );
      }
      this.#publishTaskEnd(running, failure, picked?.cancellation.sandboxId);
      queued.reject(failure);
    } finally {
      this.#pump();
    }
  }

  /**
   * Publishes `task:ended` for a task that ran (`failure` undefined: it completed), when anyone
   * listens. Per-call control (a caller's signal or timeoutMs) ends its running tasks through here.
   */
  #publishTaskEnd(
    running: RunningTask,
    failure: QuerySandboxError | undefined,
    breachedBy: string | undefined,
    terminated?: boolean,
  ): void {
    const { queued, tracked, dispatch } = running;
    publishTaskEnded(
      this.#source,
      queued.taskId,
      queued.sandbox.id,
      queued.priority,
      this.#laneNames[dispatch.lane]!,
      failure,
      breachedBy,
      tracked.cpuTimeNs,
      dispatch.waitMs,
      tracked.dispatchedAtMs,
      terminated,
    );
  }

  /**
   * Publishes `task:ended` for a task that ends while still queued (the runtime closes). Per-call
   * control ends its queued tasks through here.
   */
  #publishQueuedEnd(task: QueuedTask, failure: CancelledError | AbortedError | TimedOutError): void {
    publishTaskEnded(
      this.#source,
      task.taskId,
      task.sandbox.id,
      task.priority,
      this.#laneNames[this.#scheduler.laneOf(task.priority)]!,
      failure,
      undefined,
      0,
      performance.now() - task.queuedAtMs,
      undefined,
    );
  }

  #cancelledError(
    running: RunningTask,
    cancellation: AnyCancellation | undefined,
    resource: Resource | 'time' | 'shutdown',
    hard: boolean,
  ): CancelledError {
    const sandbox = running.queued.sandbox;
    if (resource === 'shutdown') {
      return new CancelledError(sandbox.id, resource, hard, `task cancelled: the runtime is shutting down`);
    }
    if (cancellation?.resource !== 'time' && cancellation?.reason === 'duress' && resource !== 'time') {
      this.#counters.of(sandbox.id).duressCancellations++;
      return new CancelledError(
        sandbox.id,
        resource,
        hard,
        `task cancelled: the node is in ${resource} duress and ` +
          (cancellation.sandboxId === sandbox.id
            ? `sandbox [${sandbox.id}] is the lowest-priority sandbox using it`
            : `its sandbox [${cancellation.sandboxId}] was deleted while it ran`) +
          (hard ? '; its worker was terminated' : ''),
        'duress',
      );
    }
    if (resource === 'time') {
      const limit = cancelAfterOf(running.queued.requestedCancelAfterMs, this.#settingsOf(sandbox.id));
      const ranMs = Math.round(performance.now() - running.tracked.dispatchedAtMs);
      const after =
        limit !== undefined
          ? describeLimit(limit, 'cancel_after_time_interval')
          : `its cancel_after_time_interval${cancellation?.resource === 'time' ? ` [${cancellation.cancelAfterMs}ms]` : ''}`;
      return new CancelledError(
        sandbox.id,
        resource,
        hard,
        `task cancelled: it ran ${ranMs} ms, past ${after}` + (hard ? '; its worker was replaced' : ''),
      );
    }
    const by = cancellation?.sandboxId ?? sandbox.id;
    return new CancelledError(
      sandbox.id,
      resource,
      hard,
      `task cancelled: sandbox [${by}] is above its high ${resource} limit` +
        (by !== sandbox.id ? ` (task of its child [${sandbox.id}])` : '') +
        (hard ? '; its worker was terminated' : ''),
    );
  }

  #softCancel(taskId: number, resource: Resource | 'time'): void {
    const r = this.#running.get(taskId);
    if (r === undefined) return;
    this.#pool.slots.requestCancel(
      r.tracked.slot,
      resource === 'cpu' ? CancelReason.CPU : resource === 'memory' ? CancelReason.MEMORY : CancelReason.TIME,
    );
    this.#publishCancelling(r, resource, false);
  }

  #publishCancelling(r: RunningTask, resource: Resource | 'time', hard: boolean): void {
    publishTaskCancelling(
      this.#source,
      r.queued.taskId,
      r.queued.sandbox.id,
      r.queued.priority,
      this.#laneNames[r.dispatch.lane]!,
      hard,
      resource,
      this.#governor.cancellationOf(r.queued.taskId)?.cancellation.sandboxId ?? r.queued.sandbox.id,
      hard ? 0 : this.#graceMsOf(r.queued.taskId),
      r.tracked.dispatchedAtMs,
    );
  }

  /** The grace of a running task: its sandbox's (a deleted sandbox's task: the root's). */
  #graceMsOf(taskId: number): number {
    const sandboxId = this.#running.get(taskId)?.queued.sandbox.id ?? ROOT_SANDBOX_ID;
    return this.#graceMs.get(sandboxId) ?? this.#graceMs.get(ROOT_SANDBOX_ID)!;
  }

  #hardCancel(taskId: number, resource: Resource | 'time'): void {
    const r = this.#running.get(taskId);
    if (r === undefined) return;
    this.#publishCancelling(r, resource, true);
    this.#pool.terminateWorkerOf(r.dispatch.lane, r.tracked.slot, taskId);
  }

  sandboxes(): readonly Sandbox[] {
    return this.#sandboxes;
  }

  sandboxStats(): ReadonlyMap<string, SandboxStats> {
    const snapshot = this.#governor.snapshot;
    const running = new Map<string, number>();
    for (const r of this.#running.values()) {
      running.set(r.queued.sandbox.id, (running.get(r.queued.sandbox.id) ?? 0) + 1);
    }
    const queued = this.#scheduler.queuedBySandbox();
    const waitingForCap = new Map<string, number>();
    if (this.#caps.active) {
      for (const q of this.#scheduler.queuedItems()) {
        if (!this.#caps.mayStart(q.sandbox.id, q.user)) {
          waitingForCap.set(q.sandbox.id, (waitingForCap.get(q.sandbox.id) ?? 0) + 1);
        }
      }
    }
    const out = new Map<string, SandboxStats>();
    for (const s of this.#sandboxes) {
      const c = this.#counters.of(s.id);
      const usage = snapshot.usage.get(s.id);
      out.set(s.id, {
        running: running.get(s.id) ?? 0,
        queued: queued.get(s.id) ?? 0,
        concurrency: { ...this.#caps.counts(s.id), waitingForCap: waitingForCap.get(s.id) ?? 0 },
        counters: structuredClone(c),
        usage: { cpu: usage?.cpu ?? 0, memory: usage?.memory ?? 0 },
        state: snapshot.verdicts.get(s.id)?.state ?? 'ok',
      });
    }
    return out;
  }

  nodeStats(): NodeStats {
    const snapshot = this.#governor.snapshot;
    const poolLanes = this.#pool.laneStats();
    const scheduled = this.#scheduler.stats().lanes;
    const lanes = poolLanes.map((lane, i) => ({
      ...lane,
      minPriority: scheduled[i]?.minPriority ?? null,
      busy: scheduled[i]?.busy ?? 0,
      queued: scheduled[i]?.queued ?? 0,
    }));
    return {
      nodeId: this.options.nodeId,
      cores: this.options.cores,
      threads: this.options.lanes.reduce((sum, l) => sum + l.workers, 0),
      spareWorkers: this.options.lanes.reduce((sum, l) => sum + l.spareWorkers, 0),
      liveWorkers: this.#pool.liveWorkers,
      loadingWorkers: this.#pool.loadingWorkers,
      isolation: isolationOf(poolLanes),
      lanes,
      running: this.#running.size,
      queued: this.#scheduler.length,
      duress: snapshot.duress,
      enforcement: this.#governor.enforcement,
      usage: { cpu: snapshot.node.cpu, memory: snapshot.node.memory },
      workersStarted: this.#pool.workersStarted,
      workerStartupMs: this.#pool.initialStartups().map((s) => s.startupMs),
      lastReplacementStartupMs: this.#pool.lastReplacement()?.startupMs,
      engineIndices: this.#indices,
      governorTicks: snapshot.ticks,
    };
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
    return this.#scheduler.config.document;
  }

  setQueryPriority(document: QueryPriorityInput): Promise<QueryPriorityDocument> {
    const change = this.#priorityChanges.then(() => this.#changeQueryPriority(document));
    this.#priorityChanges = change.catch(() => undefined);
    return change;
  }

  async #changeQueryPriority(document: unknown): Promise<QueryPriorityDocument> {
    if (this.#closed) throw new NotRunningError();
    // Validate everything, then save: a refused document or a failed save changes nothing.
    const config = parseQueryPriority(document, 'body');
    checkReservations(config, this.options.lanes, 'body');
    await this.#priorityStore.save(config.document);
    if (this.#closed) throw new NotRunningError();
    const dropped = this.#scheduler.configure(config);
    this.#log.info(
      { rules: config.rules.length, enabled: config.enabled, dropped: dropped.length },
      'query priority changed',
    );
    this.#rejectEvicted(dropped);
    // Lanes may have opened (fewer reservations, lending on): hand out what they may take now.
    this.#pump();
    return config.document;
  }

  /** Rules another node saved in the shared store: applied in turn with local changes, not saved. */
  #applyStoredQueryPriority(document: unknown): void {
    const change = this.#priorityChanges.then(() => {
      if (this.#closed) return;
      let config: ReturnType<typeof parseQueryPriority>;
      try {
        config = parseQueryPriority(document);
      } catch (error) {
        this.#log.warn({ error: (error as Error).message }, 'query priority from the shared store refused; the rules in force stay');
        return;
      }
      const dropped = this.#scheduler.configure(config);
      this.#log.info({ rules: config.rules.length, enabled: config.enabled, dropped: dropped.length }, 'query priority changed by another node');
      this.#rejectEvicted(dropped);
      this.#pump();
    });
    this.#priorityChanges = change.catch(() => undefined);
  }

  schedulerStats(): SchedulerStats {
    return this.#scheduler.stats();
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
        new InvalidArgumentError('options.timeoutMs', 'must be a number of ms >= 0 (Infinity: no bound)', timeoutMs),
      );
    }
    if (this.#closing !== undefined) {
      // A close at once cuts short a drain under way.
      if (!drain) this.#endDrain?.();
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
        timeoutMs === Number.POSITIVE_INFINITY ? undefined : setTimeout(() => this.#endDrain?.(), timeoutMs);
      timer?.unref();
      this.#endDrain = () => {
        if (timer !== undefined) clearTimeout(timer);
        this.#endDrain = undefined;
        resolve();
      };
      this.#pump();
    });
  }

  async #shutdown(): Promise<void> {
    this.#closed = true;
    this.#endDrain = undefined;
    this.#governor.stop();
    this.#usageTracker.stop();
    if (this.#expiryTimer !== undefined) clearTimeout(this.#expiryTimer);
    for (const q of this.#scheduler.drain()) {
      this.#counters.countCancellation(q.sandbox.id, 'shutdown', false);
      const error = new CancelledError(q.sandbox.id, 'shutdown', false, 'task cancelled: the runtime is shutting down');
      this.#publishQueuedEnd(q, error);
      q.reject(error);
    }
    await this.#pool.close();
    this.#unsubscribeTaskEnd?.();
    this.#tracker.close();
    this.#heapProbe?.close();
    await this.indices?.close();
    await removeDir(this.#ephemeralDir);
  }
}

/**
 * Each sandbox's queue-wait bound: its own `maxQueueWaitMs`, else its nearest ancestor's, else the
 * node's default; with where it comes from, for the 429's message.
 */
function queueWaitBoundsOf(
  sandboxes: readonly Sandbox[],
  nodeDefaultMs: number,
): ReadonlyMap<string, { readonly ms: number; readonly from: string }> {
  const byId = new Map(sandboxes.map((s) => [s.id, s]));
  const out = new Map<string, { ms: number; from: string }>();
  for (const s of sandboxes) {
    let bound: { ms: number; from: string } = { ms: nodeDefaultMs, from: "the node's default (maxQueueWaitMs)" };
    let id: string | null = s.id;
    for (let depth = 0; id !== null && depth < 64; depth++) {
      const at: Sandbox | undefined = byId.get(id);
      if (at?.maxQueueWaitMs !== undefined) {
        bound = {
          ms: at.maxQueueWaitMs,
          from: at.id === s.id ? `sandbox [${s.id}]'s max_queue_wait` : `max_queue_wait of [${at.id}], inherited by [${s.id}]`,
        };
        break;
      }
      id = at?.parentId ?? null;
    }
    out.set(s.id, bound);
  }
  return out;
}