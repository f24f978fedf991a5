/**
 * Options of `createRuntime`, validated once into a frozen resolved object; the hot path never
 * re-validates. Messages name the option and the received value
 * (`options.threads must be an integer in 1..1024; received 0`).
 */
import { nearName } from './common/near-name.js';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { availableCores } from '../native-shim/index.js';
import { resolveNodeUsageAveragesOptions } from './admission/node-usage-averages.js';
import { InvalidArgumentError } from './errors.js';
import { EnforcementMode, SelectionStrategy } from './governor/decide.js';
import type { RuntimeLogger } from './runtime-logger.js';
import type { TaskEndedEvent } from './diagnostics.js';
import { enforcementModeOf, type NodeModeWord } from './governor/node-mode.js';
import type { SandboxStore } from './sandbox/sandbox-store.js';

/**
 * What `onTaskEnd` receives about one task that ran: the `query-sandbox:task:ended` event (see
 * `diagnostics.ts`), with the outcome, soft or hard, the cancellation's reason, CPU, wait and run.
 */
export type TaskEndEvent = TaskEndedEvent;
import type { IndexMetadataStore } from './indices/index-metadata-store.js';
import type { QueryPriorityStore } from './scheduler/query-priority-store.js';
import {
  DEFAULT_QUERY_PRIORITY,
  MAX_AGING_MS,
  parseQueryPriority,
  type QueryPriorityConfig,
} from './scheduler/query-priority.js';
import { checkReservations } from './scheduler/worker-reservations.js';
import { type LaneOptions, type ResolvedLane, resolveLanes } from './scheduler/lanes.js';
import { optionChecks } from './common/option-checks.js';

/** Default old-generation heap cap of each worker, MiB (see `RuntimeOptions.workerHeapMb` for why 2,048). */
export const DEFAULT_WORKER_HEAP_MB = 2048;
/** Memory budget per worker, MiB, unless the worker heap cap is smaller (see `RuntimeOptions.memoryBudgetBytes`). */
export const DEFAULT_BUDGET_PER_WORKER_MB = 1024;

export interface RuntimeOptions {
  /**
   * The engine: absolute or cwd-relative path, or file: URL, of an ES module implementing
   * `EngineModule` (see `src/pool/engine-module.ts`). Default: the built-in MiniSearch engine over
   * the SpamAssassin corpus.
   */
  engine?: string | URL;
  /** Passed unchanged to the engine's `prepare` and `init`. Default `{}`. */
  engineOptions?: Record<string, unknown>;
  /**
   * Sandboxes: the path of a sandbox file, or its parsed content (`{ "sandboxes": [...] }`, see
   * `parseSandboxDefinitions`). Default: the root sandbox alone.
   */
  sandboxes?: string | { readonly sandboxes: readonly unknown[] };
  /**
   * Where sandbox definitions are kept. Default: in memory (changes are lost at exit). The CLI uses a
   * `FileSandboxStore` in the data directory. An empty store is seeded from `sandboxes`.
   */
  sandboxStore?: SandboxStore;
  /**
   * Where the query-priority configuration is kept across restarts (default: in memory). A document
   * found there wins over `queryPriority`, which then only seeds an empty store.
   */
  queryPriorityStore?: QueryPriorityStore;
  /**
   * A data node's writable-index metadata kept in the cluster state (etcd: see
   * `cluster/etcd-index-metadata.ts`) instead of `<dataDir>/indices/metadata.json`. Default: the file.
   */
  indexMetadataStore?: IndexMetadataStore;
  /**
   * Called on the main thread once for every task that ran (not for ones refused before running),
   * when it ends: its figures, for logs, billing or checks. A thin subscriber of the
   * `query-sandbox:task:ended` channel (`diagnostics.ts`), filtered to this runtime's tasks that ran.
   * It must be cheap; what it throws is logged and ignored.
   */
  onTaskEnd?: (event: TaskEndEvent) => void;
  /** Most sandboxes besides the root (creates beyond it answer 429), integer 0..10000. Default 100. */
  maxSandboxes?: number;
  /**
   * Loaded workers beyond each lane's `workers`, integer 0..64 (a lane may set its own). Default 1:
   * when a hard cancellation terminates a worker, a spare of the same lane takes its place at once
   * while piscina starts the replacement, which loads the engine again (0.7 to 0.9 s with the full
   * default corpus, `npm run bench:replacement`). Costs one worker's memory per lane (about 130 MB
   * with the default corpus).
   */
  spareWorkers?: number;
  /**
   * Prefetch (as a message queue's per-consumer prefetch count): tasks a lane hands its pool beyond
   * its free workers, per worker of the lane, integer 0..64. The first of each worker's is pipelined
   * to it (`WorkerPool`): it starts on that worker the moment its current task ends, without a round
   * trip through the main thread, unless another worker goes idle first and takes it; any more wait in
   * piscina's queue for the next worker that frees. Only while the lane's tasks end less than
   * `prefetchBelowMs` apart and the last ended less than that ago (so a prefetched task waits about
   * that long, past the queue's reordering and queue-wait bounds), while it has every worker loaded;
   * never in a lane with reserved workers, nor with `maxQueuedTasks: 0`. Default 1; 0: off. Trivial
   * and 1 ms tasks: see docs/benchmarks.md (overhead).
   */
  prefetchTasks?: number;
  /**
   * A lane prefetches (`prefetchTasks`) only while the moving average of the time between two of its
   * tasks' ends is below this, ms, 0.01..60000. Default 5: lanes of expensive queries (tens of ms each)
   * never prefetch; lanes of ms-long tasks under load do.
   */
  prefetchBelowMs?: number;
  /**
   * The pool's lanes (see `scheduler/lanes.ts` and docs/lanes.md): each a set of workers with its
   * own OS scheduling weight and a band of priorities. Default `DEFAULT_LANES`: `foreground`
   * (priority >= 11, nice 0) and `background` (every lower priority, nice 19), each of `threads`
   * workers plus `spareWorkers`, so the pool is oversubscribed 2x and the kernel preempts background
   * work for foreground work. `false`: one lane of `threads` workers at nice 0 for every priority
   * (no kernel isolation: the pool before lanes).
   */
  lanes?: readonly LaneOptions[] | false;
  /**
   * Nice value, integer 0..19, given once at start to the process's helper threads: every thread but
   * the main one and the lanes' workers, that is V8's platform workers (which run part of every
   * isolate's GC), its delayed-task thread and libuv's threadpool (see `pool/helper-threads.ts`).
   * Background isolates' GC work then stops competing with foreground workers at full weight; the
   * foreground's own GC helpers and the threadpool's fs work run at that nice too. Default: left
   * alone. docs/lanes.md has the measurement.
   */
  helperThreadWeight?: number;
  /**
   * Probe the heap of a task that stopped checkpointing (none for `2 × intervalMs`) through the
   * in-process inspector, so an engine stuck in code without checkpoints still shows its memory.
   * Default true.
   */
  heapProbe?: boolean;
  /**
   * Run V8's garbage collector on each isolate's own thread (`--single-threaded-gc`), so that a
   * task's GC work shows in its worker's thread clock instead of on shared helper threads that no
   * sandbox is charged for, and so that a background lane's GC runs at the lane's weight. Process-wide,
   * set before the first worker starts; costs GC throughput (measured by `bench/gc-blind-spot`).
   * Prefer `node --single-threaded-gc` at start: set at run time, after the main isolate has begun a
   * concurrent marking cycle, it aborted the process here (a V8 check). Default false.
   */
  singleThreadedGc?: boolean;
  /**
   * Workers of each lane that does not set its own, integer 1..1024 (with `lanes: false`, of the one
   * pool). Default: the node's cores (cgroup quota aware), at least 1.
   */
  threads?: number;
  /**
   * Old-generation heap limit of each worker, MiB, 64..65536 (`resourceLimits.maxOldGenerationSizeMb`).
   * Default 2048: below 2,048 MiB V8 lets a heap grow by at most about 2x between full collections
   * (4x at or above; `BaseControllerTrait::kMaxSize` in V8's src/heap/heap-controller.h, 1,024 MiB
   * times the 64-bit heap-limit multiplier), and with the engine's ~150 MiB of live index per worker
   * a 1,024 MiB cap cost the expensive queries about 20 % of their throughput (closed loop, bare
   * piscina with and without the cap: 0.80x at 1,024, 0.82x at 2,047, 0.94x at 2,048, 1.00x at 4,096).
   */
  workerHeapMb?: number;
  /**
   * Bytes that count as 100 % memory usage. Default: the lanes' workers (spares excluded) ×
   * min(workerHeapMb, 1,024) MiB: 1 GiB per worker, or the cap where it is smaller (the cap is set
   * above the budget for the collector's sake, see `workerHeapMb`; a cap says how far one worker may
   * grow, the budget what the governor calls full).
   */
  memoryBudgetBytes?: number;
  /**
   * Order of tasks waiting for a worker: `priority` (default; the sandbox's priority with bounded
   * aging, FIFO within a priority) or `fifo` (arrival order, the baseline).
   */
  queueOrder?: 'priority' | 'fifo';
  /**
   * With `priority` order: ms of waiting worth one priority point, in (0, 86400000] (`Infinity`:
   * strict priority).
   * A waiting task is served before any higher-priority task that arrives more than
   * `(difference in priority) × agingMsPerPriority` after it. Default 100.
   */
  agingMsPerPriority?: number;
  /**
   * Query-priority rules, reserved workers, lending and per-sandbox queue bounds: a document as
   * described in `scheduler/query-priority.ts` (Cortex's `query_priority` shape). Default: enabled,
   * no rules (every task at its sandbox's priority), no reservations. Changeable at runtime with
   * `runtime.setQueryPriority`.
   */
  queryPriority?: unknown;
  /** Tasks waiting for a worker, beyond which new ones are rejected (429), 0..1e6. Default 1000. */
  maxQueuedTasks?: number;
  /**
   * The longest a task may wait in the queue, ms, an integer in 1..86400000 or Infinity (no bound):
   * past it the task is rejected (429 `rejected_execution_exception`, reason `queue_wait`) instead of
   * running late. The default for every sandbox that sets no `max_queue_wait` of its own and inherits
   * none; a request's `timeout` wins when smaller. Default 5000. See docs/overload.md.
   */
  maxQueueWaitMs?: number;
  /**
   * A lane whose queue has not been empty for this long has a *standing queue* (it is not keeping
   * up), ms, integer 1..60000. What controlled delay, adaptive LIFO and shedding in CPU duress act on.
   * Default 1000.
   */
  standingQueueMs?: number;
  /**
   * Controlled delay (Facebook's server queues, "Fail at Scale", 2015): while a lane has a standing
   * queue, a task that waited longer than this is rejected (429, reason `controlled_delay`), ms,
   * integer 1..60000. Default: off (each task's own queue-wait bound only): it sheds bursts of long
   * tasks too (docs/overload.md has the measurements).
   */
  controlledDelayMs?: number;
  /**
   * Adaptive LIFO: while a lane has a standing queue, each priority is served newest first; otherwise
   * FIFO. Default false.
   */
  adaptiveLifo?: boolean;
  /**
   * Aging's cap: at most one dispatch in this many of a lane may go to a task that aging lifted over
   * a waiting task of higher priority, integer 1..1000 (1: plain aging). Default 4: a queue full of
   * older low-priority work keeps at most a quarter of a lane's dispatches, and low priority, once
   * aged, still gets at least that.
   */
  agingOvertakeEvery?: number;
  /**
   * Shedding in duress when no sandbox breaches a limit (see `governor/decide.ts`): while the node is
   * in duress, new work of the lowest-priority sandbox using the duress resource (the root included;
   * not monitor sandboxes) is rejected, and after `cancelAfterIntervals` (integer 1..1000, default 3)
   * intervals of duress its running tasks are cancelled too, within the cancellation rate limit, until
   * the node leaves duress. `false`: off. Default on.
   */
  duressShedding?: { cancelAfterIntervals?: number; minUsage?: number } | false;
  /** Governor interval, ms, 10..60000. Default 100. */
  intervalMs?: number;
  /**
   * Intervals between soft and hard cancellation, integer 1..1000, for tasks of sandboxes that set no
   * `cancellationGraceMs` (nor any ancestor does). Default 2 (200 ms at the default interval). A hard
   * cancellation terminates the task's worker: its replacement runs the engine's `init` again.
   */
  graceIntervals?: number;
  /**
   * `enforced` (act; OpenSearch's `enabled` is the same), `monitor_only` (count what would be done),
   * `disabled`. Default: act (reported as `enabled`).
   */
  enforcement?: EnforcementMode | NodeModeWord;
  /**
   * Node duress: node CPU or memory usage above `rejectThreshold` (default 0.8) for
   * `consecutiveIntervals` (default 3) turns `soft` sandboxes' low limits on; above `cancelThreshold`
   * (default 0.9) their high limits too, and tasks of deleted sandboxes are cancelled.
   */
  duress?: { rejectThreshold?: number; cancelThreshold?: number; consecutiveIntervals?: number };
  /**
   * Rate limit on new cancellations: two token buckets, one refilled by time (`ratePerSecond`,
   * default 3) and one by completed tasks (`ratio` per completion, default 0.1), each holding at most
   * `burst` (default 5). A cancellation goes ahead while either bucket has a token (as OpenSearch's
   * search backpressure: 0.003/ms, 0.1, burst 10 per shard). Hard cancellation of a task already
   * picked is not limited.
   */
  cancellation?: { ratePerSecond?: number; ratio?: number; burst?: number };
  /** Boost for a sandbox just cut back: `priority` (default 10) decaying by half every `halfLifeMs` (default 5000). */
  boost?: { priority?: number; halfLifeMs?: number };
  /** Which tasks of a breaching sandbox go first: `largest_usage` (default) or `oldest_first`. */
  selection?: SelectionStrategy;
  /**
   * Directory for state: the shard logs of writable indices (`<dataDir>/indices`), and the default
   * `cacheDir` (`<dataDir>/cache`). Resolved against the cwd. Default: none, and the runtime creates
   * nothing in the working directory: writable indices then live in a temporary directory removed at
   * `close()` (like the default in-memory sandbox store, they do not outlive the runtime). The CLI
   * passes `./.query-sandbox` (`--data-dir`).
   */
  dataDir?: string;
  /**
   * Directory for the engine's caches (the built index), created if missing. Default
   * `<dataDir>/cache`, or without `dataDir` the user's cache directory: `$XDG_CACHE_HOME/query-sandbox`,
   * else `~/.cache/query-sandbox` (`<tmpdir>/query-sandbox-cache` when there is no home). Nodes on
   * one machine may share one (writes are atomic), so a loopback cluster builds the index once.
   */
  cacheDir?: string;
  /** This node's id in stats. Default `node-<pid>`. */
  nodeId?: string;
  /**
   * Cores this node counts as its CPU capacity: every CPU usage ratio (tasks, sandboxes, node duress,
   * the resource usage stats sent to a coordinator) divides by it, and `threads` defaults to it
   * (rounded, at least 1). A number > 0 and at most 4096; fractions are allowed, as a cgroup quota
   * gives them. Default: the cgroup CPU quota or `os.availableParallelism()`. A loopback cluster gives
   * each data node its share of the machine.
   */
  cores?: number;
  /**
   * The moving averages behind the `Resource_Usage_Stats` header that data nodes send a cluster
   * coordinator (see `admission/node-usage-averages.ts`): CPU and heap recorded every `intervalMs`
   * (integer 1..60000, default 500; rounded to a whole number of governor intervals, at least one)
   * and averaged over `windowMs` (default 30000), IO every `ioIntervalMs` (default 5000) over
   * `ioWindowMs` (default 120000): OpenSearch's `node.resource.tracker.*` defaults. They average the
   * one node sampler's samples (taken once per governor interval), the figures duress reads.
   */
  resourceUsage?: { intervalMs?: number; windowMs?: number; ioIntervalMs?: number; ioWindowMs?: number };
  /** How long start-up waits for every worker to load the engine, ms. Default 300000. */
  startTimeoutMs?: number;
  /**
   * What this node is for writable indices (engines that declare `writableIndices`, as the built-in
   * one does): `single` (default) owns index metadata and templates and serves the index and bulk
   * APIs; `data` is a cluster data node whose coordinator owns them and sends it shard bulks.
   */
  nodeRole?: 'single' | 'data';
  /**
   * Shard-log durability of writable indices (Elasticsearch `index.translog.durability`): `request`
   * (default) fsyncs each bulk's records before it is acknowledged (concurrent bulks share an fsync);
   * `async` acknowledges once written and fsyncs every `translogSyncIntervalMs`, so a machine crash may
   * lose that window (a killed process loses nothing: the bytes are in the page cache).
   */
  translogDurability?: 'request' | 'async';
  /** fsync period with `translogDurability: 'async'`, ms, integer 1..3600000. Default 5000. */
  translogSyncIntervalMs?: number;
  /**
   * Indexing pressure: most bulk bytes in flight on this node before new bulks are refused with 429
   * `es_rejected_execution_exception` (Elasticsearch `indexing_pressure.memory.limit`). Integer >= 1.
   * Default: 10 % of the main thread's heap limit.
   */
  indexingPressureBytes?: number;
  /**
   * Shard bulks this node holds at once (writable indices' primaries) before a shard's items are refused
   * with 429 `es_rejected_execution_exception`, the other items standing: Elasticsearch's `write` thread
   * pool bound (`thread_pool.write.queue_size`), see `indices/write-queue.ts`. Integer >= 1. Default 10000.
   */
  writeQueueSize?: number;
  /** A logger: a pino logger, or anything with pino's `info` / `warn` / `error` (`RuntimeLogger`). Default: silent. */
  logger?: RuntimeLogger;
}

export interface ResolvedRuntimeOptions {
  readonly engineUrl: string | undefined;
  readonly engineOptions: Readonly<Record<string, unknown>>;
  readonly sandboxes: string | { readonly sandboxes: readonly unknown[] } | undefined;
  readonly maxSandboxes: number;
  /** Workers per lane by default (`options.threads`). */
  readonly threads: number;
  readonly spareWorkers: number;
  /** The lanes, highest band first, defaults filled in. */
  readonly lanes: readonly ResolvedLane[];
  /** `undefined`: helper threads are left alone. */
  readonly helperThreadWeight: number | undefined;
  readonly heapProbe: boolean;
  readonly queueOrder: 'priority' | 'fifo';
  readonly agingMsPerPriority: number;
  readonly singleThreadedGc: boolean;
  readonly prefetchTasks: number;
  readonly prefetchBelowMs: number;
  readonly workerHeapMb: number;
  readonly memoryBudgetBytes: number;
  readonly maxQueuedTasks: number;
  /** ms; Infinity: no bound. */
  readonly maxQueueWaitMs: number;
  readonly standingQueueMs: number;
  /** undefined: controlled delay off. */
  readonly controlledDelayMs: number | undefined;
  readonly adaptiveLifo: boolean;
  readonly agingOvertakeEvery: number;
  /** undefined: off. */
  readonly duressShedding: { readonly cancelAfterIntervals: number; readonly minUsage: number } | undefined;
  readonly queryPriority: QueryPriorityConfig;
  readonly onTaskEnd: ((event: TaskEndEvent) => void) | undefined;
  readonly intervalMs: number;
  readonly graceIntervals: number;
  readonly enforcement: EnforcementMode;
  readonly duress: {
    readonly rejectThreshold: number;
    readonly cancelThreshold: number;
    readonly consecutiveIntervals: number;
  };
  readonly cancellation: { readonly ratePerSecond: number; readonly ratio: number; readonly burst: number };
  readonly boost: { readonly priority: number; readonly halfLifeMs: number };
  readonly selection: SelectionStrategy;
  /** `options.dataDir`, resolved; `undefined` when not given (see `RuntimeOptions.dataDir`). */
  readonly dataDir: string | undefined;
  /** `options.cacheDir`, resolved; default `<dataDir>/cache` or the user's cache directory. */
  readonly cacheDir: string;
  readonly nodeId: string;
  readonly startTimeoutMs: number;
  readonly cores: number;
  readonly nodeRole: 'single' | 'data';
  readonly translogDurability: 'request' | 'async';
  readonly translogSyncIntervalMs: number;
  /** `undefined`: 10 % of the heap limit. */
  readonly indexingPressureBytes: number | undefined;
  readonly writeQueueSize: number;
  /** The node usage averages' intervals and windows, ms (defaults filled in). */
  readonly resourceUsage: {
    readonly intervalMs: number;
    readonly windowMs: number;
    readonly ioIntervalMs: number;
    readonly ioWindowMs: number;
  };
}

// The option checks (common/option-checks.ts), with this module's `options.` path prefix.
const integer = (name: string, value: unknown, min: number, max: number, fallback: number): number =>
  optionChecks.integerIn(`options.${name}`, value, min, max, fallback);
const number = (name: string, value: unknown, min: number, max: number, fallback: number): number =>
  optionChecks.numberIn(`options.${name}`, value, min, max, fallback);
const ratio = (name: string, value: unknown, fallback: number): number =>
  optionChecks.ratio(`options.${name}`, value, fallback);

function objectOption<T extends object>(name: string, value: T | undefined): Partial<T> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(`options.${name}`, 'must be an object', value);
  }
  return value;
}

/**
 * The user's cache directory for this package: `$XDG_CACHE_HOME/query-sandbox` (an absolute path,
 * as the XDG base directory specification requires), else `~/.cache/query-sandbox`, else
 * `<tmpdir>/query-sandbox-cache`.
 */
export function userCacheDir(env: NodeJS.ProcessEnv): string {
  const xdg = env['XDG_CACHE_HOME'];
  if (xdg !== undefined && path.isAbsolute(xdg)) return path.join(xdg, 'query-sandbox');
  let home = '';
  try {
    home = os.homedir();
  } catch {
    // No home directory (a system user): fall back to the temporary directory.
  }
  return home !== ''
    ? path.join(home, '.cache', 'query-sandbox')
    : path.join(os.tmpdir(), 'query-sandbox-cache');
}

/** Validates and fills defaults. @throws InvalidArgumentError naming the option and value. */
/** Every key of `RuntimeOptions` (the compiler checks the list is complete and has nothing else). */
const RUNTIME_OPTION_KEYS = {
  engine: true,
  engineOptions: true,
  sandboxes: true,
  sandboxStore: true,
  queryPriorityStore: true,
  indexMetadataStore: true,
  onTaskEnd: true,
  maxSandboxes: true,
  spareWorkers: true,
  prefetchTasks: true,
  prefetchBelowMs: true,
  lanes: true,
  helperThreadWeight: true,
  heapProbe: true,
  singleThreadedGc: true,
  threads: true,
  workerHeapMb: true,
  memoryBudgetBytes: true,
  queueOrder: true,
  agingMsPerPriority: true,
  queryPriority: true,
  maxQueuedTasks: true,
  maxQueueWaitMs: true,
  standingQueueMs: true,
  controlledDelayMs: true,
  adaptiveLifo: true,
  agingOvertakeEvery: true,
  duressShedding: true,
  intervalMs: true,
  graceIntervals: true,
  enforcement: true,
  duress: true,
  cancellation: true,
  boost: true,
  selection: true,
  dataDir: true,
  cacheDir: true,
  nodeId: true,
  cores: true,
  resourceUsage: true,
  startTimeoutMs: true,
  nodeRole: true,
  translogDurability: true,
  translogSyncIntervalMs: true,
  indexingPressureBytes: true,
  writeQueueSize: true,
  logger: true,
} as const satisfies Record<keyof RuntimeOptions, true>;

/**
 * Refuses a key that is not an option, so that a misspelt one (`workerHeapMB`) is not silently
 * ignored: names it and, where one option differs only in case or by one character, suggests it.
 * @throws InvalidArgumentError naming `options.<key>`.
 */
function checkOptionKeys(options: object): void {
  for (const key of Object.keys(options)) {
    if (Object.hasOwn(RUNTIME_OPTION_KEYS, key)) continue;
    const near = nearName(key, Object.keys(RUNTIME_OPTION_KEYS));
    throw new InvalidArgumentError(
      `options.${key}`,
      `is not an option of createRuntime${near === undefined ? '' : `; did you mean ${near}?`}`,
      (options as Record<string, unknown>)[key],
    );
  }
}

export function resolveRuntimeOptions(options: RuntimeOptions = {}): ResolvedRuntimeOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'must be an object', options);
  }
  checkOptionKeys(options);
  const cores = options.cores ?? availableCores();
  if (typeof cores !== 'number' || !(cores > 0 && cores <= 4096)) {
    throw new InvalidArgumentError('options.cores', 'must be a number in (0, 4096]', options.cores);
  }
  let engineUrl: string | undefined;
  if (options.engine !== undefined) {
    const engine = options.engine instanceof URL ? options.engine.href : options.engine;
    if (
      typeof engine !== 'string' ||
      engine.length === 0 ||
      (options.engine instanceof URL && !engine.startsWith('file:'))
    ) {
      throw new InvalidArgumentError('options.engine', 'must be a module path or file: URL', engine);
    }
    engineUrl = engine.startsWith('file:') ? engine : pathToFileURL(path.resolve(engine)).href;
  }
  const engineOptions = options.engineOptions ?? {};
  if (typeof engineOptions !== 'object' || engineOptions === null || Array.isArray(engineOptions)) {
    throw new InvalidArgumentError('options.engineOptions', 'must be an object', engineOptions);
  }
  if (
    options.sandboxes !== undefined &&
    typeof options.sandboxes !== 'string' &&
    (typeof options.sandboxes !== 'object' || options.sandboxes === null)
  ) {
    throw new InvalidArgumentError(
      'options.sandboxes',
      'must be a file path or a sandbox file object',
      options.sandboxes,
    );
  }
  const threads = integer('threads', options.threads, 1, 1024, Math.max(1, Math.round(cores)));
  const spareWorkers = integer('spareWorkers', options.spareWorkers, 0, 64, 1);
  const lanes = resolveLanes(options.lanes, { workers: threads, spareWorkers });
  const queryPriority =
    options.queryPriority === undefined
      ? DEFAULT_QUERY_PRIORITY
      : parseQueryPriority(options.queryPriority, 'options.queryPriority');
  checkReservations(queryPriority, lanes, 'options.queryPriority');
  const workerHeapMb = integer('workerHeapMb', options.workerHeapMb, 64, 65536, DEFAULT_WORKER_HEAP_MB);
  const budgetPerWorkerMb = Math.min(workerHeapMb, DEFAULT_BUDGET_PER_WORKER_MB);
  const memoryBudgetBytes = integer(
    'memoryBudgetBytes',
    options.memoryBudgetBytes,
    1,
    Number.MAX_SAFE_INTEGER,
    lanes.reduce((sum, lane) => sum + lane.workers, 0) * budgetPerWorkerMb * 1024 * 1024,
  );
  const enforcement =
    options.enforcement === undefined
      ? EnforcementMode.ENFORCED
      : enforcementModeOf(options.enforcement, 'options.enforcement');
  const duress = options.duress ?? {};
  if (typeof duress !== 'object' || duress === null) {
    throw new InvalidArgumentError('options.duress', 'must be an object', duress);
  }
  const rejectThreshold = ratio('duress.rejectThreshold', duress.rejectThreshold, 0.8);
  const cancelThreshold = ratio('duress.cancelThreshold', duress.cancelThreshold, 0.9);
  if (cancelThreshold < rejectThreshold) {
    throw new InvalidArgumentError(
      'options.duress.cancelThreshold',
      `must be at least duress.rejectThreshold (${rejectThreshold})`,
      cancelThreshold,
    );
  }
  const consecutiveIntervals = integer(
    'duress.consecutiveIntervals',
    duress.consecutiveIntervals,
    1,
    1000,
    3,
  );
  const cancellation = objectOption('cancellation', options.cancellation);
  const boost = objectOption('boost', options.boost);
  const selection = options.selection ?? SelectionStrategy.LARGEST_USAGE;
  if (!Object.values(SelectionStrategy).includes(selection)) {
    throw new InvalidArgumentError(
      'options.selection',
      `must be one of ${Object.values(SelectionStrategy).join(', ')}`,
      selection,
    );
  }
  const queueOrder = options.queueOrder ?? 'priority';
  if (queueOrder !== 'priority' && queueOrder !== 'fifo') {
    throw new InvalidArgumentError('options.queueOrder', 'must be one of priority, fifo', queueOrder);
  }
  const agingMsPerPriority = options.agingMsPerPriority ?? 100;
  if (
    typeof agingMsPerPriority !== 'number' ||
    !(agingMsPerPriority > 0) ||
    (agingMsPerPriority > MAX_AGING_MS && agingMsPerPriority !== Number.POSITIVE_INFINITY)
  ) {
    throw new InvalidArgumentError(
      'options.agingMsPerPriority',
      `must be a number in (0, ${MAX_AGING_MS}], or Infinity for strict priority`,
      agingMsPerPriority,
    );
  }
  const nodeId = options.nodeId ?? `node-${process.pid}`;
  if (typeof nodeId !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(nodeId)) {
    throw new InvalidArgumentError('options.nodeId', 'must be 1..64 characters of [A-Za-z0-9_.-]', nodeId);
  }
  if (
    options.dataDir !== undefined &&
    (typeof options.dataDir !== 'string' || options.dataDir.length === 0)
  ) {
    throw new InvalidArgumentError('options.dataDir', 'must be a directory path', options.dataDir);
  }
  if (
    options.cacheDir !== undefined &&
    (typeof options.cacheDir !== 'string' || options.cacheDir.length === 0)
  ) {
    throw new InvalidArgumentError('options.cacheDir', 'must be a directory path', options.cacheDir);
  }
  if (options.onTaskEnd !== undefined && typeof options.onTaskEnd !== 'function') {
    throw new InvalidArgumentError('options.onTaskEnd', 'must be a function', options.onTaskEnd);
  }
  const dataDir = options.dataDir === undefined ? undefined : path.resolve(options.dataDir);
  const nodeRole = options.nodeRole ?? 'single';
  if (nodeRole !== 'single' && nodeRole !== 'data') {
    throw new InvalidArgumentError('options.nodeRole', 'must be one of single, data', nodeRole);
  }
  const translogDurability = options.translogDurability ?? 'request';
  if (translogDurability !== 'request' && translogDurability !== 'async') {
    throw new InvalidArgumentError(
      'options.translogDurability',
      'must be one of request, async',
      translogDurability,
    );
  }
  const maxQueueWaitMs =
    options.maxQueueWaitMs === Number.POSITIVE_INFINITY
      ? Number.POSITIVE_INFINITY
      : integer('maxQueueWaitMs', options.maxQueueWaitMs, 1, 86_400_000, 5000);
  const controlledDelayMs =
    options.controlledDelayMs === undefined
      ? undefined
      : integer('controlledDelayMs', options.controlledDelayMs, 1, 60_000, 0);
  if (options.adaptiveLifo !== undefined && typeof options.adaptiveLifo !== 'boolean') {
    throw new InvalidArgumentError('options.adaptiveLifo', 'must be a boolean', options.adaptiveLifo);
  }
  const shedding =
    options.duressShedding === false ? false : objectOption('duressShedding', options.duressShedding);
  const duressShedding =
    shedding === false
      ? undefined
      : Object.freeze({
          cancelAfterIntervals: integer(
            'duressShedding.cancelAfterIntervals',
            shedding.cancelAfterIntervals,
            1,
            1000,
            3,
          ),
          minUsage: number('duressShedding.minUsage', shedding.minUsage, 0, 1, 0.05),
        });
  const usage = objectOption('resourceUsage', options.resourceUsage);
  const tracker = resolveNodeUsageAveragesOptions({ ...usage, cores }, 'options.resourceUsage');
  return Object.freeze({
    engineUrl,
    engineOptions: Object.freeze({ ...engineOptions }),
    sandboxes: options.sandboxes,
    maxSandboxes: integer('maxSandboxes', options.maxSandboxes, 0, 10_000, 100),
    threads,
    spareWorkers,
    lanes,
    helperThreadWeight:
      options.helperThreadWeight === undefined
        ? undefined
        : integer('helperThreadWeight', options.helperThreadWeight, 0, 19, 0),
    heapProbe: options.heapProbe ?? true,
    queueOrder,
    agingMsPerPriority,
    singleThreadedGc: options.singleThreadedGc ?? false,
    prefetchTasks: integer('prefetchTasks', options.prefetchTasks, 0, 64, 1),
    prefetchBelowMs: number('prefetchBelowMs', options.prefetchBelowMs, 0.01, 60_000, 5),
    workerHeapMb,
    memoryBudgetBytes,
    maxQueuedTasks: integer('maxQueuedTasks', options.maxQueuedTasks, 0, 1_000_000, 1000),
    maxQueueWaitMs,
    standingQueueMs: integer('standingQueueMs', options.standingQueueMs, 1, 60_000, 1000),
    controlledDelayMs,
    adaptiveLifo: options.adaptiveLifo ?? false,
    agingOvertakeEvery: integer('agingOvertakeEvery', options.agingOvertakeEvery, 1, 1000, 4),
    duressShedding,
    queryPriority,
    onTaskEnd: options.onTaskEnd,
    intervalMs: integer('intervalMs', options.intervalMs, 10, 60_000, 100),
    graceIntervals: integer('graceIntervals', options.graceIntervals, 1, 1000, 2),
    enforcement,
    duress: Object.freeze({ rejectThreshold, cancelThreshold, consecutiveIntervals }),
    cancellation: Object.freeze({
      ratePerSecond: number('cancellation.ratePerSecond', cancellation.ratePerSecond, 0, 1e6, 3),
      ratio: number('cancellation.ratio', cancellation.ratio, 0, 1e6, 0.1),
      burst: number('cancellation.burst', cancellation.burst, 1, 1e6, 5),
    }),
    boost: Object.freeze({
      priority: number('boost.priority', boost.priority, 0, 1e9, 10),
      halfLifeMs: number('boost.halfLifeMs', boost.halfLifeMs, 1, 3.6e6, 5000),
    }),
    selection,
    dataDir,
    cacheDir:
      options.cacheDir !== undefined
        ? path.resolve(options.cacheDir)
        : dataDir !== undefined
          ? path.join(dataDir, 'cache')
          : userCacheDir(process.env),
    nodeId,
    startTimeoutMs: integer('startTimeoutMs', options.startTimeoutMs, 1000, 3_600_000, 300_000),
    cores,
    nodeRole,
    translogDurability,
    translogSyncIntervalMs: integer(
      'translogSyncIntervalMs',
      options.translogSyncIntervalMs,
      1,
      3_600_000,
      5000,
    ),
    indexingPressureBytes:
      options.indexingPressureBytes === undefined
        ? undefined
        : integer('indexingPressureBytes', options.indexingPressureBytes, 1, Number.MAX_SAFE_INTEGER, 1),
    writeQueueSize: integer('writeQueueSize', options.writeQueueSize, 1, 1_000_000, 10_000),
    resourceUsage: Object.freeze({
      intervalMs: tracker.intervalMs,
      windowMs: tracker.windowMs,
      ioIntervalMs: tracker.ioIntervalMs,
      ioWindowMs: tracker.ioWindowMs,
    }),
  });
}
