/**
 * Command-line and environment options of `query-sandbox serve` (and the demo), parsed and checked
 * into runtime options. Flags win over environment variables, which win over defaults.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { AdmissionMode } from '../admission/admission-controller.js';
import { type DataNodeAddress, parseDataNodeList } from '../cluster/cluster-spec.js';
import { parseEtcdEndpoints } from '../etcd/etcd-endpoints.js';
import { InvalidArgumentError } from '../errors.js';
import { admissionModeOf, enforcementModeOf } from '../governor/node-mode.js';
import type { RuntimeOptions } from '../runtime-options.js';
import { DEFAULT_BACKGROUND_WEIGHT, DEFAULT_FOREGROUND_MIN_PRIORITY } from '../scheduler/lanes.js';
import type { ConnectionLimits } from '../server/connection-limits.js';
import { packageRoot } from '../common/package-root.js';
import { argumentsError, joinNegativeValues, optionChecks, stringFlags } from '../common/option-checks.js';

/** `--role`: `single` (one node holding everything, the default), `data` or `coordinator` of a cluster. */
export type ServeRole = 'single' | 'data' | 'coordinator';

/** Settings of `--role coordinator` (see `cluster/coordinator.ts`). */
export interface CoordinatorServeOptions {
  /** `--node-id`. @default 'coordinator' */
  readonly nodeId: string;
  /** `--data-nodes`: addresses without ids; `undefined` when the cluster file lists them. */
  readonly dataNodes: readonly DataNodeAddress[] | undefined;
  /** `--admission-mode`. @default 'enforced' */
  readonly admissionMode: AdmissionMode;
  /** `--admission-cpu` / `--admission-heap`: search limits, ratios; `undefined`: 0.95 / 0.9. */
  readonly admissionCpu: number | undefined;
  readonly admissionHeap: number | undefined;
  /** `--duress-cpu` / `--duress-heap`: replica ranking's duress thresholds; `undefined`: 0.9 / 0.7. */
  readonly duressCpu: number | undefined;
  readonly duressHeap: number | undefined;
  /** `--stats-ttl-ms` (5000) and `--stats-refresh-ms` (1000). */
  readonly statsTtlMs: number | undefined;
  readonly statsRefreshMs: number | undefined;
  /** `--shard-timeout-ms` (30000). */
  readonly shardTimeoutMs: number | undefined;
  /** `--discovery-timeout-ms`: how long to wait at start for every data node to answer (60000). */
  readonly discoveryTimeoutMs: number | undefined;
  /** `--indexing-pressure-bytes`: bulk bytes in flight at the coordinator; `undefined`: 10 % of the heap. */
  readonly indexingPressureBytes: number | undefined;
}

export interface ServeOptions {
  readonly host: string;
  readonly port: number;
  readonly runtime: RuntimeOptions;
  readonly logLevel: string;
  /** `--query-priority`: a JSON file read at start (see `serve`). */
  readonly queryPriorityFile: string | undefined;
  /** `--role`. @default 'single' */
  readonly role: ServeRole;
  /** `--cluster FILE`: the cluster file (data nodes and coordinator). */
  readonly clusterFile: string | undefined;
  /** `--debug-routes`: a data node serves the CPU hog route. */
  readonly debugRoutes: boolean;
  /** With `--role coordinator`. */
  readonly coordinator: CoordinatorServeOptions | undefined;
  /**
   * `--etcd host:port,...`: cluster state in etcd (sandboxes, query-priority rules; on a cluster also
   * membership, index metadata and the shard table). `undefined`: this node's own files.
   */
  readonly etcd: readonly string[] | undefined;
  /** `--etcd-prefix`: key prefix of this cluster's state. @default '/query-sandbox' */
  readonly etcdPrefix: string | undefined;
  /** `--headers-timeout-ms`, `--request-timeout-ms`, `--max-connections` (undefined: the defaults). */
  readonly connectionLimits: ConnectionLimits;
  /** `--insecure-skip-auth`: reads, writes and admin routes open to everyone (loopback hosts only). */
  readonly insecureSkipAuth: boolean;
}

export const SERVE_USAGE = `query-sandbox serve [options]

  --host HOST            listen address (default 127.0.0.1; HOST)
  --port N               listen port, 0 for any (default 9200; PORT)
  --sandboxes FILE       sandbox file (default config/sandboxes.json; QUERY_SANDBOX_SANDBOXES)
  --data-dir DIR         caches and state (default ./.query-sandbox; QUERY_SANDBOX_DATA_DIR)
  --threads N            workers of each lane (default: cores)
  --lanes on|off         on (default): a foreground and a background lane, each of --threads workers;
                         off: one pool of --threads workers for every priority (no kernel isolation)
  --foreground-workers N / --background-workers N   workers of one lane (default --threads)
  --foreground-min-priority P  lowest priority the foreground lane takes (default 11)
  --background-weight W  nice 0..19 or idle (SCHED_IDLE) of the background lane's threads (default 19)
  --spare-workers N      loaded spare workers of each lane, 0..64 (default 1)
  --prefetch-tasks N     tasks each worker of a lane of short tasks is handed beyond the one it runs, 0..64
                         (default 1; 0: off; docs/lanes.md, "Prefetch")
  --helper-thread-weight N  nice 0..19 for V8's GC helper threads and libuv's pool (default: left alone)
  --engine MODULE        engine module path (default: built-in MiniSearch over SpamAssassin)
  --enforcement MODE     enforced (or enabled) | monitor_only | disabled (default enforced)
  --interval-ms N        governor interval (default 100)
  --max-sandboxes N      most sandboxes besides the root; creates beyond answer 429 (default 100)
  --max-docs N           index at most N mails per index (engine option maxDocumentsPerIndex)
  --query-priority FILE  query-priority rules (JSON) seeding DIR/query-priority.json when it is absent
  --queue-order ORDER    priority | fifo (the baseline: arrival order, no reservations; default priority)
  --max-queue-wait-ms N  longest a task may wait in the queue before a 429, for sandboxes that set no
                         max_queue_wait (default 5000; none or -1: no bound)
  --standing-queue-ms N  a lane whose queue has not emptied for N ms has a standing queue (default 1000)
  --controlled-delay-ms N  under a standing queue a task may wait at most N ms (default: off)
  --adaptive-lifo on|off newest first within a priority under a standing queue (default off)
  --duress-shedding on|off  in node duress, shed the lowest-priority sandbox using the resource (default on)
  --log-level LEVEL      pino level (default info; LOG_LEVEL)
  --cores N              cores this node counts as its CPU capacity (default: cgroup quota or all)
  --cache-dir DIR        index cache, shareable between nodes (default DIR/cache of --data-dir)
  --shards-per-index N   shards of every index, 1..64 (default 2; with --cluster: the file's)
  --usage-interval-ms N  node usage sampling for the stats sent to a coordinator (default 500)
  --usage-window-ms N    node usage averaging window (default 30000)
  --translog-durability D  writable indices: request (fsync before acknowledging, default) | async
  --translog-sync-interval-ms N  fsync period with async durability (default 5000)
  --indexing-pressure-bytes N    bulk bytes in flight before 429 (default 10 % of the heap limit)
  --write-queue-size N           shard bulks a node holds at once before their items get 429 (default 10000)

  security (docs/security.md):
  --headers-timeout-ms N   time for a request's headers, then 408 and close (default 30000)
  --request-timeout-ms N   time for a whole request, headers and body (default 30000)
  --max-connections N      open connections at most; more are closed at once (default 1024)
  --insecure-skip-auth     local experiments only: no token needed for writes and admin routes
                           (refused unless --host is a loopback address; logged at start)
  tokens come from the environment: QUERY_SANDBOX_ADMIN_TOKEN (else one is made and printed),
  QUERY_SANDBOX_WRITER_TOKEN (documents and _bulk only), QUERY_SANDBOX_CLUSTER_SECRET (required
  with --role data or coordinator)

  cluster roles:
  --role ROLE            single | data | coordinator (default single: one node with every shard)
  --node-id ID           this node's id (default node-<pid>; a coordinator's: coordinator)
  --cluster FILE         cluster file: shards_per_index, replicas, data_nodes [{id, url}]
  --debug-routes         data node: serve POST|DELETE /_internal/debug/cpu_hog (benchmarks)
  --data-nodes LIST      coordinator: host:port,... of the data nodes (instead of --cluster)
  --admission-mode MODE  coordinator: enforced (or enabled) | monitor_only | disabled (default enforced)
  --admission-cpu R      coordinator: refuse when every copy of a shard is at CPU >= R (default 0.95)
  --admission-heap R     coordinator: ... or at heap >= R (default 0.9)
  --duress-cpu R         coordinator: rank a node last at CPU >= R (default 0.9)
  --duress-heap R        coordinator: ... or at heap >= R (default 0.7)
  --stats-ttl-ms N       coordinator: node stats older than this are not used (default 5000)
  --stats-refresh-ms N   coordinator: take a node's stats at most this often (default 1000)
  --shard-timeout-ms N   coordinator: time a data node has to answer (default 30000)
  --discovery-timeout-ms N  coordinator: time at start for every data node to answer (default 60000)

  cluster state:
  --etcd LIST            etcd endpoints host:port,...: sandboxes and query-priority rules shared by every
                         node (and, on a cluster, membership leases, index metadata, failover); default:
                         this node's own files under --data-dir
  --etcd-prefix PREFIX   key prefix of this cluster's state (default /query-sandbox)
`;

function intFlag(
  name: string,
  text: string | undefined,
  min: number,
  max: number,
  label = `--${name}`,
): number | undefined {
  return optionChecks.integerText(label, text, min, max);
}

function ratioFlag(name: string, text: string | undefined): number | undefined {
  return optionChecks.ratioText(`--${name}`, text);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const ROLES: readonly ServeRole[] = ['single', 'data', 'coordinator'];
/** Flags that only a coordinator takes. */
const COORDINATOR_FLAGS = [
  'data-nodes',
  'admission-mode',
  'admission-cpu',
  'admission-heap',
  'duress-cpu',
  'duress-heap',
  'stats-ttl-ms',
  'stats-refresh-ms',
  'shard-timeout-ms',
  'discovery-timeout-ms',
];
/** Flags of a node that runs searches, which a coordinator does not. */
const RUNTIME_FLAGS = [
  'sandboxes',
  'threads',
  'lanes',
  'foreground-workers',
  'background-workers',
  'foreground-min-priority',
  'background-weight',
  'spare-workers',
  'prefetch-tasks',
  'helper-thread-weight',
  'engine',
  'enforcement',
  'interval-ms',
  'max-sandboxes',
  'max-docs',
  'query-priority',
  'queue-order',
  'max-queue-wait-ms',
  'standing-queue-ms',
  'controlled-delay-ms',
  'adaptive-lifo',
  'duress-shedding',
  'cores',
  'cache-dir',
  'shards-per-index',
  'usage-interval-ms',
  'usage-window-ms',
  'translog-durability',
  'translog-sync-interval-ms',
];

/** The command's flags, for parseArgs and for suggesting the one a misspelt flag meant. */
const SERVE_FLAGS = {
  ...stringFlags(
    ...COORDINATOR_FLAGS,
    ...RUNTIME_FLAGS,
    // and those every role takes:
    'host',
    'port',
    'data-dir',
    'log-level',
    'role',
    'node-id',
    'cluster',
    'indexing-pressure-bytes',
    'write-queue-size',
    'etcd',
    'etcd-prefix',
    'headers-timeout-ms',
    'request-timeout-ms',
    'max-connections',
  ),
  'debug-routes': { type: 'boolean' as const },
  'insecure-skip-auth': { type: 'boolean' as const },
};

/** Parses `argv` (after the sub-command) and `env`. @throws InvalidArgumentError naming the flag. */
export function parseServeOptions(argv: readonly string[], env: NodeJS.ProcessEnv): ServeOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: joinNegativeValues(argv),
      options: SERVE_FLAGS,
      strict: true,
      allowPositionals: false,
    }) as { values: Record<string, string | boolean | undefined> });
  } catch (error) {
    throw argumentsError(error, argv, SERVE_FLAGS);
  }
  const str = (k: string): string | undefined => values[k] as string | undefined;
  const role = (str('role') ?? 'single') as ServeRole;
  if (!ROLES.includes(role))
    throw new InvalidArgumentError('--role', `must be one of ${ROLES.join(', ')}`, role);
  const misplaced = (flags: readonly string[], where: string) => {
    const flag = flags.find((f) => values[f] !== undefined);
    if (flag !== undefined) throw new InvalidArgumentError(`--${flag}`, `is only for ${where}`, values[flag]);
  };
  if (role === 'coordinator') misplaced(RUNTIME_FLAGS, 'a node that runs searches (--role single or data)');
  else misplaced(COORDINATOR_FLAGS, '--role coordinator');
  if (role !== 'data' && values['debug-routes'] !== undefined) {
    throw new InvalidArgumentError('--debug-routes', 'is only for --role data', true);
  }
  if (role === 'single' && str('cluster') !== undefined) {
    throw new InvalidArgumentError('--cluster', 'is only for --role data or coordinator', str('cluster'));
  }
  if (str('cluster') !== undefined && str('shards-per-index') !== undefined) {
    throw new InvalidArgumentError(
      '--shards-per-index',
      'cannot be combined with --cluster (set shards_per_index in the cluster file)',
      str('shards-per-index'),
    );
  }
  const nodeId = str('node-id');
  if (nodeId !== undefined && !/^[A-Za-z0-9_.-]{1,64}$/.test(nodeId)) {
    throw new InvalidArgumentError('--node-id', 'must be 1..64 characters of [A-Za-z0-9_.-]', nodeId);
  }
  const port =
    str('port') !== undefined
      ? intFlag('port', str('port'), 0, 65535)!
      : (intFlag('port', env['PORT'], 0, 65535, 'PORT') ?? 9200);
  const threads = intFlag('threads', str('threads'), 1, 1024);
  const spareWorkers = intFlag('spare-workers', str('spare-workers'), 0, 64);
  const prefetchTasks = intFlag('prefetch-tasks', str('prefetch-tasks'), 0, 64);
  const helperThreadWeight = intFlag('helper-thread-weight', str('helper-thread-weight'), 0, 19);
  const lanes = laneFlags(str);
  const intervalMs = intFlag('interval-ms', str('interval-ms'), 10, 60_000);
  const maxDocs = intFlag('max-docs', str('max-docs'), 1, 1_000_000);
  const maxSandboxes = intFlag('max-sandboxes', str('max-sandboxes'), 0, 10_000);
  const shardsPerIndex = intFlag('shards-per-index', str('shards-per-index'), 1, 64);
  const usageIntervalMs = intFlag('usage-interval-ms', str('usage-interval-ms'), 1, 60_000);
  const usageWindowMs = intFlag('usage-window-ms', str('usage-window-ms'), 1, 3_600_000);
  if (usageWindowMs !== undefined && usageWindowMs < (usageIntervalMs ?? 500)) {
    throw new InvalidArgumentError(
      '--usage-window-ms',
      `must be at least the sampling interval (${usageIntervalMs ?? 500} ms)`,
      str('usage-window-ms'),
    );
  }
  const translogDurability = str('translog-durability');
  if (
    translogDurability !== undefined &&
    translogDurability !== 'request' &&
    translogDurability !== 'async'
  ) {
    throw new InvalidArgumentError(
      '--translog-durability',
      'must be one of request, async',
      translogDurability,
    );
  }
  const translogSyncIntervalMs = intFlag(
    'translog-sync-interval-ms',
    str('translog-sync-interval-ms'),
    1,
    3_600_000,
  );
  const indexingPressureBytes = intFlag(
    'indexing-pressure-bytes',
    str('indexing-pressure-bytes'),
    1,
    Number.MAX_SAFE_INTEGER,
  );
  const writeQueueSize = intFlag('write-queue-size', str('write-queue-size'), 1, 1_000_000);
  const coresText = str('cores');
  const cores = coresText === undefined ? undefined : Number(coresText);
  if (coresText !== undefined && (!/^\d*\.?\d+$/.test(coresText) || !(cores! > 0 && cores! <= 4096))) {
    throw new InvalidArgumentError('--cores', 'must be a number in (0, 4096]', coresText);
  }
  const engineOptions: Record<string, unknown> = {
    ...(maxDocs !== undefined ? { maxDocumentsPerIndex: maxDocs } : {}),
    ...(shardsPerIndex !== undefined ? { shardsPerIndex } : {}),
  };
  const enforcementWord = str('enforcement');
  const enforcement =
    enforcementWord === undefined ? undefined : enforcementModeOf(enforcementWord, '--enforcement');
  const queueOrder = str('queue-order');
  if (queueOrder !== undefined && queueOrder !== 'priority' && queueOrder !== 'fifo') {
    throw new InvalidArgumentError('--queue-order', 'must be one of priority, fifo', queueOrder);
  }
  const overload = overloadFlags(str);
  const logLevel = str('log-level') ?? env['LOG_LEVEL'] ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new InvalidArgumentError(
      str('log-level') !== undefined ? '--log-level' : 'LOG_LEVEL',
      `must be one of ${LOG_LEVELS.join(', ')}`,
      logLevel,
    );
  }
  const headersTimeoutMs = intFlag('headers-timeout-ms', str('headers-timeout-ms'), 1, 3_600_000);
  const requestTimeoutMs = intFlag('request-timeout-ms', str('request-timeout-ms'), 1, 3_600_000);
  if (requestTimeoutMs !== undefined && requestTimeoutMs < (headersTimeoutMs ?? 30_000)) {
    throw new InvalidArgumentError(
      '--request-timeout-ms',
      `must be at least --headers-timeout-ms (${headersTimeoutMs ?? 30_000}): the headers are part of the request`,
      str('request-timeout-ms'),
    );
  }
  const maxConnections = intFlag('max-connections', str('max-connections'), 1, 1_000_000);
  const host = str('host') ?? env['HOST'] ?? '127.0.0.1';
  const insecureSkipAuth = values['insecure-skip-auth'] === true;
  if (insecureSkipAuth && !isLoopbackHost(host)) {
    throw new InvalidArgumentError(
      '--insecure-skip-auth',
      'is only for local experiments: it needs --host to be a loopback address (127.0.0.1, ::1, localhost)',
      host,
    );
  }
  const runtime: RuntimeOptions = {
    sandboxes:
      str('sandboxes') ??
      env['QUERY_SANDBOX_SANDBOXES'] ??
      path.join(packageRoot(), 'config', 'sandboxes.json'),
    dataDir: str('data-dir') ?? env['QUERY_SANDBOX_DATA_DIR'] ?? '.query-sandbox',
    ...(threads !== undefined ? { threads } : {}),
    ...(spareWorkers !== undefined ? { spareWorkers } : {}),
    ...(prefetchTasks !== undefined ? { prefetchTasks } : {}),
    ...(helperThreadWeight !== undefined ? { helperThreadWeight } : {}),
    ...(lanes !== undefined ? { lanes } : {}),
    ...(intervalMs !== undefined ? { intervalMs } : {}),
    ...(maxSandboxes !== undefined ? { maxSandboxes } : {}),
    ...(str('engine') !== undefined ? { engine: str('engine')! } : {}),
    ...(enforcement !== undefined ? { enforcement } : {}),
    ...(Object.keys(engineOptions).length > 0 ? { engineOptions } : {}),
    ...(queueOrder !== undefined ? { queueOrder } : {}),
    ...overload,
    ...(role !== 'coordinator' && nodeId !== undefined ? { nodeId } : {}),
    ...(cores !== undefined ? { cores } : {}),
    ...(role === 'data' ? { nodeRole: 'data' as const } : {}),
    ...(translogDurability !== undefined
      ? { translogDurability: translogDurability as 'request' | 'async' }
      : {}),
    ...(translogSyncIntervalMs !== undefined ? { translogSyncIntervalMs } : {}),
    ...(indexingPressureBytes !== undefined && role !== 'coordinator' ? { indexingPressureBytes } : {}),
    ...(writeQueueSize !== undefined && role !== 'coordinator' ? { writeQueueSize } : {}),
    ...(str('cache-dir') !== undefined ? { cacheDir: str('cache-dir')! } : {}),
    ...(usageIntervalMs !== undefined || usageWindowMs !== undefined
      ? {
          resourceUsage: {
            ...(usageIntervalMs !== undefined ? { intervalMs: usageIntervalMs } : {}),
            ...(usageWindowMs !== undefined ? { windowMs: usageWindowMs } : {}),
          },
        }
      : {}),
  };
  const etcdPrefix = str('etcd-prefix');
  if (
    etcdPrefix !== undefined &&
    (!/^\/[A-Za-z0-9_.\-/]{1,200}$/.test(etcdPrefix) || etcdPrefix.endsWith('/'))
  ) {
    throw new InvalidArgumentError(
      '--etcd-prefix',
      'must be /name (1..200 characters of [A-Za-z0-9_.-/], no trailing /)',
      etcdPrefix,
    );
  }
  if (etcdPrefix !== undefined && str('etcd') === undefined) {
    throw new InvalidArgumentError('--etcd-prefix', 'needs --etcd', etcdPrefix);
  }
  return {
    etcd: str('etcd') === undefined ? undefined : parseEtcdEndpoints(str('etcd')!),
    etcdPrefix,
    queryPriorityFile: str('query-priority'),
    host,
    port,
    runtime,
    logLevel,
    role,
    clusterFile: str('cluster'),
    debugRoutes: values['debug-routes'] === true,
    coordinator:
      role === 'coordinator' ? { ...coordinatorOptions(str, nodeId), indexingPressureBytes } : undefined,
    connectionLimits: {
      ...(headersTimeoutMs !== undefined ? { headersTimeoutMs } : {}),
      ...(requestTimeoutMs !== undefined ? { requestTimeoutMs } : {}),
      ...(maxConnections !== undefined ? { maxConnections } : {}),
    },
    insecureSkipAuth,
  };
}

/** The overload flags as runtime options (only those given). @throws InvalidArgumentError naming the flag. */
function overloadFlags(str: (k: string) => string | undefined): Partial<RuntimeOptions> {
  const out: {
    maxQueueWaitMs?: number;
    standingQueueMs?: number;
    controlledDelayMs?: number;
    adaptiveLifo?: boolean;
    duressShedding?: false;
  } = {};
  const wait = str('max-queue-wait-ms');
  if (wait !== undefined) {
    out.maxQueueWaitMs =
      wait === '-1' || wait === 'none'
        ? Number.POSITIVE_INFINITY
        : intFlag('max-queue-wait-ms', wait, 1, 86_400_000, '--max-queue-wait-ms (or none for no bound)')!;
  }
  const standing = intFlag('standing-queue-ms', str('standing-queue-ms'), 1, 60_000);
  if (standing !== undefined) out.standingQueueMs = standing;
  const delay = intFlag('controlled-delay-ms', str('controlled-delay-ms'), 1, 60_000);
  if (delay !== undefined) out.controlledDelayMs = delay;
  const onOff = (flag: string): boolean | undefined => {
    const v = str(flag);
    if (v === undefined) return undefined;
    if (v !== 'on' && v !== 'off') throw new InvalidArgumentError(`--${flag}`, 'must be one of on, off', v);
    return v === 'on';
  };
  const lifo = onOff('adaptive-lifo');
  if (lifo !== undefined) out.adaptiveLifo = lifo;
  if (onOff('duress-shedding') === false) out.duressShedding = false;
  return out;
}

/** The lane flags as a `lanes` option, or undefined when none is given (the default lanes). */
function laneFlags(str: (k: string) => string | undefined): RuntimeOptions['lanes'] {
  const onOff = str('lanes');
  if (onOff !== undefined && onOff !== 'on' && onOff !== 'off') {
    throw new InvalidArgumentError('--lanes', 'must be one of on, off', onOff);
  }
  const perLane = [
    'foreground-workers',
    'background-workers',
    'foreground-min-priority',
    'background-weight',
  ];
  if (onOff === 'off') {
    const flag = perLane.find((f) => str(f) !== undefined);
    if (flag !== undefined) throw new InvalidArgumentError(`--${flag}`, 'needs --lanes on', str(flag));
    return false;
  }
  if (perLane.every((f) => str(f) === undefined)) return undefined;
  const foregroundWorkers = intFlag('foreground-workers', str('foreground-workers'), 1, 1024);
  const backgroundWorkers = intFlag('background-workers', str('background-workers'), 1, 1024);
  const minPriority =
    intFlag('foreground-min-priority', str('foreground-min-priority'), -1e9, 1e9) ??
    DEFAULT_FOREGROUND_MIN_PRIORITY;
  const weightText = str('background-weight');
  const weight =
    weightText === 'idle'
      ? ('idle' as const)
      : (intFlag('background-weight', weightText, 0, 19, '--background-weight (a nice value, or idle)') ??
        DEFAULT_BACKGROUND_WEIGHT);
  return [
    {
      name: 'foreground',
      minPriority,
      weight: 0,
      ...(foregroundWorkers !== undefined ? { workers: foregroundWorkers } : {}),
    },
    {
      name: 'background',
      weight,
      ...(backgroundWorkers !== undefined ? { workers: backgroundWorkers } : {}),
    },
  ];
}

/** True for an address only this machine can reach: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(host);
}

function coordinatorOptions(
  str: (k: string) => string | undefined,
  nodeId: string | undefined,
): Omit<CoordinatorServeOptions, 'indexingPressureBytes'> {
  const list = str('data-nodes');
  if (list === undefined && str('cluster') === undefined) {
    throw new InvalidArgumentError(
      '--role coordinator',
      'needs --cluster FILE or --data-nodes host:port,...',
      undefined,
    );
  }
  if (list !== undefined && str('cluster') !== undefined) {
    throw new InvalidArgumentError(
      '--data-nodes',
      'cannot be combined with --cluster (the file lists the data nodes)',
      list,
    );
  }
  const admissionMode = admissionModeOf(str('admission-mode') ?? 'enforced', '--admission-mode');
  return {
    nodeId: nodeId ?? 'coordinator',
    dataNodes: list === undefined ? undefined : parseDataNodeList(list),
    admissionMode: admissionMode as AdmissionMode,
    admissionCpu: ratioFlag('admission-cpu', str('admission-cpu')),
    admissionHeap: ratioFlag('admission-heap', str('admission-heap')),
    duressCpu: ratioFlag('duress-cpu', str('duress-cpu')),
    duressHeap: ratioFlag('duress-heap', str('duress-heap')),
    statsTtlMs: intFlag('stats-ttl-ms', str('stats-ttl-ms'), 1, 600_000),
    statsRefreshMs: intFlag('stats-refresh-ms', str('stats-refresh-ms'), 0, 600_000),
    shardTimeoutMs: intFlag('shard-timeout-ms', str('shard-timeout-ms'), 100, 600_000),
    discoveryTimeoutMs: intFlag('discovery-timeout-ms', str('discovery-timeout-ms'), 100, 3_600_000),
  };
}
