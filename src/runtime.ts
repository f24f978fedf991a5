/**
 * The composition root: `createRuntime(options)` opens the sandbox and query-priority stores, loads
 * and prepares the engine, recovers the writable indices and starts the worker lanes, then hands them
 * to `GovernedRuntime` (governed-runtime.ts), which wires the governor and the request path.
 *
 * Request path (`execution/`): `admit.ts` (index expression, engine validation, sandbox, verdict,
 * priority, queue), `dispatch.ts` (free workers take queued tasks), `settle.ts` (outcome to result or
 * error, everything the task held given back). Every submitted task settles exactly once: a result,
 * a `RejectedError`, a `CancelledError`, an `AbortedError` / `TimedOutError`, or an engine error.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { type EventSource, nextRuntimeId, publishWorkerReplaced } from './diagnostics.js';
import { InvalidArgumentError } from './errors.js';
import { GovernedRuntime } from './governed-runtime.js';
import { WritableIndices } from './indices/writable-indices.js';
import { compiledModuleUrl } from './pool/compiled-module-url.js';
import {
  type EngineBody,
  type EngineDescription,
  type EngineModule,
  type EngineResult,
  type EngineShape,
  WRITABLE_INDICES_OPTION,
} from './pool/engine-module.js';
import { noteSingleThreadedGc, weighHelperThreads } from './pool/helper-threads.js';
import { LanePool } from './pool/lane-pool.js';
import type { Runtime } from './runtime-api.js';
import { SILENT_LOGGER } from './runtime-logger.js';
import { type RuntimeOptions, resolveRuntimeOptions } from './runtime-options.js';
import { checkWorkerHeapLimit, loadSandboxes, logLanes, removeDir } from './runtime-start.js';
import { SandboxRegistry } from './sandbox/sandbox-registry.js';
import { MemorySandboxStore, type SandboxStore } from './sandbox/sandbox-store.js';
import {
  MemoryQueryPriorityStore,
  openQueryPriority,
  type QueryPriorityStore,
} from './scheduler/query-priority-store.js';
import { WorkerHeapProbe } from '../native-shim/index.js';

export type { SearchCallOptions } from './execution/search-call.js';
export type {
  CloseOptions,
  LaneStats,
  NodeStats,
  Runtime,
  SandboxStats,
  SearchRequest,
} from './runtime-api.js';
export type { RuntimeOptions, TaskEndEvent } from './runtime-options.js';

/**
 * Tasks handed to piscina per worker. With 2, piscina holds the next task ready and the 1 ms task
 * benchmark gained about 7 % throughput, but that task then waits in piscina's FIFO, where the
 * governor can no longer reject it and a later, more important task cannot pass it (behind a 200 ms
 * fuzzy query). Work stays in the runtime's own queue until a worker is free.
 */
const DISPATCH_DEPTH_PER_WORKER = 1;

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
  if (!registry.seeded && typeof resolved.sandboxes === 'string') {
    // Not applied, as the store holds sandboxes; but a file that would be refused (missing, not JSON,
    // a bad sandbox) is most likely a mistake the operator wants to hear of.
    const file = resolved.sandboxes;
    const problem = await loadSandboxes(file).then(
      () => undefined,
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    if (problem !== undefined) {
      log.warn(
        { sandboxes: file, error: problem },
        `the sandbox file ${file} would be refused (${problem}); the sandboxes come from the store`,
      );
    }
  }
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
    log.warn(
      'singleThreadedGc is set at run time; start node with --single-threaded-gc instead (see docs/lanes.md)',
    );
    v8.setFlagsFromString('--single-threaded-gc');
    noteSingleThreadedGc();
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
    prefetchTasks: resolved.prefetchTasks,
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
  return new GovernedRuntime<EngineResult<Engine>, EngineBody<Engine>>({
    runtimeId,
    options: { ...resolved, queryPriority },
    engine,
    description,
    registry,
    pool,
    log,
    heapProbe,
    priorityStore,
    writable,
    ephemeralDir,
  });
}
