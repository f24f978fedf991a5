/**
 * `query-sandbox cluster` (`npm run cluster`): a real multi-process cluster on loopback. One
 * coordinator on `--base-port` (default 9200) and `--data-nodes` data nodes (default 3) on the next
 * ports, each a `query-sandbox serve` child process with its own runtime, governor and sandboxes. Every
 * index is split into `--shards-per-index` shards (default 3) by the Elasticsearch routing of the
 * document ids, with `--replicas` replicas (default 1), placed by `cluster/shard-layout.ts`.
 *
 * Start: takes the data directory's lock (`<data-dir>/cluster/launcher.lock`: a second launcher on the
 * same directory is refused), writes the cluster file (`<data-dir>/cluster/cluster.json`), builds the
 * shared index cache once when the built-in engine runs (the data nodes then only load their shards
 * from it), starts the data nodes, then the coordinator once they listen, and prints one ready line
 * with the URLs. A port that is taken is told before any node starts; each node says it listens over
 * its IPC channel, so a server of another process on its port is never taken for it. A node that
 * exits during start-up (a bad flag, a port taken meanwhile) stops the others at once and fails the
 * start with one line naming it and its reason.
 * Stop: SIGINT or SIGTERM, from the moment the first node exists, stops every child (SIGTERM, then
 * SIGKILL after 10 s) and exits; a child that dies stops the rest (exit 1). The children hold an IPC
 * channel to the launcher and stop by themselves when it goes away, even by SIGKILL and even while
 * they are still starting: no orphans.
 *
 * Credentials: one admin token for every node (`QUERY_SANDBOX_ADMIN_TOKEN`, else a random one kept in
 * `<data-dir>/cluster/admin-token`) and one cluster secret for their internal calls
 * (`QUERY_SANDBOX_CLUSTER_SECRET`, else a random one kept in `<data-dir>/cluster/cluster-secret`), both
 * files readable by their owner only and passed to the nodes in their environment.
 *
 * Each data node gets its share of the machine as its CPU capacity (`--node-cores`, default
 * `max(1, round(cores / data nodes))`), since on one machine the nodes compete for the same cores: a
 * node can then be saturated without saturating the machine, as a real node would be.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { availableCores } from '../../native-shim/index.js';
import { type ClusterSpec, formatClusterSpec } from '../cluster/cluster-spec.js';
import { parseEngineOptions } from '../engine/engine-options.js';
import { ensureIndexCache } from '../engine/index-cache.js';
import { parseEtcdEndpoints } from '../etcd/etcd-endpoints.js';
import { ETCD_INSTALL_HINT, findEtcdBinary, type LocalEtcd, startLocalEtcd } from '../cluster/local-etcd.js';
import { ClusterStartError, InvalidArgumentError } from '../errors.js';
import { isListeningMessage } from './node-lifecycle.js';
import { packageRoot } from '../common/package-root.js';
import { probePort } from './port-probe.js';
import { argumentsError, joinNegativeValues, optionChecks, stringFlags } from '../common/option-checks.js';

export const CLUSTER_USAGE = `query-sandbox cluster [options]   (npm run cluster -- [options])

  --base-port N          coordinator port; data nodes on N+1, N+2, ... (default 9200)
  --host HOST            listen address of every node (default 127.0.0.1)
  --data-nodes N         data nodes, 1..16 (default 3)
  --shards-per-index N   shards of every index, 1..64 (default 3)
  --replicas N           replicas of every shard, 0..data nodes − 1 (default 1, 0 with one data node)
  --node-cores N         CPU capacity of each data node (default max(1, round(cores / data nodes)))
  --threads N            worker threads per data node (default: its cores)
  --data-dir DIR         state; each node uses DIR/cluster/<id>, the index cache DIR/cache (default ./.query-sandbox);
                         one launcher per DIR: a second cluster needs its own
  --max-docs N           index at most N mails per index (quick starts)
  --engine MODULE        engine module for the data nodes (default: built-in MiniSearch)
  --log-level LEVEL      the nodes' pino level (default warn)
  --data-node-flags "…"  more serve flags for every data node (e.g. "--debug-routes --usage-window-ms 5000")
  --coordinator-flags "…" more serve flags for the coordinator (e.g. "--admission-mode monitor_only")
  --etcd LIST|none       cluster state: etcd endpoints host:port,... to use; default: a local etcd (the
                         etcd binary, apt-get install etcd-server) on ports N+data nodes+1 and +2, data in
                         DIR/cluster/etcd; none: no shared state (each node its own sandboxes, no failover)
`;

export interface ClusterOptions {
  readonly host: string;
  readonly basePort: number;
  readonly dataNodes: number;
  readonly shardsPerIndex: number;
  readonly replicas: number;
  /** CPU capacity of each data node (`--cores` of its serve). */
  readonly nodeCores: number;
  readonly threads: number | undefined;
  readonly dataDir: string;
  readonly maxDocs: number | undefined;
  readonly engine: string | undefined;
  readonly logLevel: string;
  readonly dataNodeArgs: readonly string[];
  readonly coordinatorArgs: readonly string[];
  /**
   * Cluster state: `local` (start an etcd for the cluster, the default), the endpoints of a running
   * one, or `none` (every node keeps its own sandboxes and rules; no membership, no failover).
   * The command's default is `local` (`parseClusterOptions`); a caller that omits it gets `none`.
   * @default 'none'
   */
  readonly etcd?: 'local' | 'none' | readonly string[] | undefined;
  /** How long to wait for every node to listen, ms. @default 300000 */
  readonly startTimeoutMs?: number;
  /** Where the children's output goes: the launcher's own stdout/stderr, line by line with a `[node]` prefix (default), or nowhere. */
  readonly output?: 'prefixed' | 'silent';
  /** With etcd: called when a data node exits on its own while the cluster goes on. */
  readonly onDataNodeExit?: (exit: { id: string; code: number | null; signal: string | null }) => void;
}

function intFlag(name: string, text: string | undefined, min: number, max: number, fallback: number): number {
  return optionChecks.integerText(`--${name}`, text, min, max) ?? fallback;
}

function splitFlags(text: string | undefined): string[] {
  return text === undefined ? [] : text.split(/\s+/).filter((part) => part.length > 0);
}

/** The command's flags, for parseArgs and for suggesting the one a misspelt flag meant. */
const CLUSTER_FLAGS = {
  ...stringFlags(
    'base-port',
    'host',
    'data-nodes',
    'shards-per-index',
    'replicas',
    'node-cores',
    'threads',
    'data-dir',
    'max-docs',
    'engine',
    'log-level',
    'data-node-flags',
    'coordinator-flags',
    'etcd',
  ),
};

/** Parses `argv` after the sub-command. @throws InvalidArgumentError naming the flag and the value. */
export function parseClusterOptions(argv: readonly string[], env: NodeJS.ProcessEnv): ClusterOptions {
  // The values of --data-node-flags and --coordinator-flags start with a dash, which parseArgs only
  // takes in the `--flag=value` form: join them so both forms work.
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if ((arg === '--data-node-flags' || arg === '--coordinator-flags') && i + 1 < argv.length) {
      args.push(`${arg}=${argv[++i]}`);
    } else {
      args.push(arg);
    }
  }
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({
      args: joinNegativeValues(args),
      options: CLUSTER_FLAGS,
      strict: true,
      allowPositionals: false,
    }) as { values: Record<string, string | undefined> });
  } catch (error) {
    throw argumentsError(error, argv, CLUSTER_FLAGS);
  }
  const dataNodes = intFlag('data-nodes', values['data-nodes'], 1, 16, 3);
  const basePort = intFlag('base-port', values['base-port'], 1, 65535 - dataNodes, 9200);
  const coresText = values['node-cores'];
  const nodeCores =
    coresText === undefined ? Math.max(1, Math.round(availableCores() / dataNodes)) : Number(coresText);
  if (coresText !== undefined && (!/^\d*\.?\d+$/.test(coresText) || !(nodeCores > 0 && nodeCores <= 4096))) {
    throw new InvalidArgumentError('--node-cores', 'must be a number in (0, 4096]', coresText);
  }
  // Each copy of a shard on its own node: more replicas than other nodes cannot be placed.
  const replicas = intFlag('replicas', values['replicas'], 0, 16, Math.min(1, dataNodes - 1));
  if (replicas > dataNodes - 1) {
    throw new InvalidArgumentError(
      '--replicas',
      `must be at most ${dataNodes - 1} with ${dataNodes} data node${dataNodes === 1 ? '' : 's'} (every copy of a shard is on its own node)`,
      values['replicas'],
    );
  }
  const logLevel = values['log-level'] ?? 'warn';
  const levels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
  if (!levels.includes(logLevel)) {
    throw new InvalidArgumentError('--log-level', `must be one of ${levels.join(', ')}`, logLevel);
  }
  return {
    host: values['host'] ?? env['HOST'] ?? '127.0.0.1',
    basePort,
    dataNodes,
    shardsPerIndex: intFlag('shards-per-index', values['shards-per-index'], 1, 64, 3),
    replicas,
    nodeCores,
    threads: values['threads'] === undefined ? undefined : intFlag('threads', values['threads'], 1, 1024, 1),
    dataDir: values['data-dir'] ?? env['QUERY_SANDBOX_DATA_DIR'] ?? '.query-sandbox',
    maxDocs:
      values['max-docs'] === undefined ? undefined : intFlag('max-docs', values['max-docs'], 1, 1_000_000, 1),
    engine: values['engine'],
    logLevel,
    dataNodeArgs: splitFlags(values['data-node-flags']),
    coordinatorArgs: splitFlags(values['coordinator-flags']),
    etcd:
      values['etcd'] === undefined
        ? 'local'
        : values['etcd'] === 'none'
          ? 'none'
          : parseEtcdEndpoints(values['etcd']),
  };
}

/** One started node. */
export interface ClusterNode {
  readonly id: string;
  readonly role: 'coordinator' | 'data';
  readonly url: string;
  readonly pid: number;
}

/** A started cluster. */
export interface RunningCluster {
  readonly coordinator: ClusterNode;
  readonly dataNodes: readonly ClusterNode[];
  readonly clusterFile: string;
  /** The etcd endpoints the nodes share (`--etcd`), or undefined without shared state. */
  readonly etcdEndpoints: readonly string[] | undefined;
  /** The admin token every node accepts (writes, index management, sandboxes). */
  readonly adminToken: string;
  /** The cluster secret of the nodes' internal routes (`/_internal/*` on the data nodes). */
  readonly clusterSecret: string;
  /**
   * Settles when the coordinator exits on its own (not through `stop`), or a data node does without
   * shared state: its id, code and signal. With etcd a data node that dies does not stop the cluster
   * (its primaries fail over): `onDataNodeExit` hears of it.
   */
  readonly unexpectedExit: Promise<{ id: string; code: number | null; signal: string | null }>;
  /**
   * Stops every node (SIGTERM, SIGKILL after 10 s), waits for them to exit and releases the data
   * directory. Idempotent.
   */
  stop(): Promise<void>;
  /**
   * Starts a node again with the same arguments after it exited (crash tests: SIGKILL a data node by
   * its `pid`, then restart it); resolves once it listens. Its exit does not count as unexpected.
   * @throws Error when the node is still running 5 s after the call; ClusterStartError when it exits
   *   before it listens or does not listen within `startTimeoutMs`.
   */
  restartNode(id: string): Promise<ClusterNode>;
}

export { ClusterStartError };

/** How a caller can stop `startCluster` while it waits for the nodes. */
export interface StartClusterControl {
  /** Aborting it stops the nodes started so far; `startCluster` then rejects with a ClusterStartError. */
  readonly signal?: AbortSignal;
}

/** The compiled `query-sandbox` command that the children run. */
function mainScript(): string {
  const here = fileURLToPath(import.meta.url);
  // Compiled: dist/src/cli/cluster.js next to main.js. From the TypeScript sources (tests): the build.
  return here.endsWith('.js')
    ? path.join(path.dirname(here), 'main.js')
    : path.join(packageRoot(), 'dist', 'src', 'cli', 'main.js');
}

/** The lock a launcher holds on its data directory: `<data-dir>/cluster/launcher.lock`, with its pid. */
export const LAUNCHER_LOCK_FILE = 'launcher.lock';
/** Lock files this process holds (a second cluster in the same process is refused as well). */
const heldLocks = new Set<string>();

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes the launcher lock of `clusterDir` for this process: created exclusively with this pid; a lock
 * left by a process that is gone (a launcher killed outright) is taken over.
 * @returns a function that releases it (idempotent).
 * @throws ClusterStartError when a live process holds it.
 */
export function lockClusterDir(clusterDir: string, dataDir: string): () => void {
  const file = path.join(clusterDir, LAUNCHER_LOCK_FILE);
  for (let attempt = 1; ; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
      heldLocks.add(file);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        heldLocks.delete(file);
        try {
          if (readFileSync(file, 'utf8').trim() === String(process.pid)) unlinkSync(file);
        } catch {
          // already gone
        }
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 5) throw error;
    }
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue; // released meanwhile
    }
    const pid = Number(text.trim());
    const live =
      Number.isInteger(pid) && pid > 0 && (pid === process.pid ? heldLocks.has(file) : isAlive(pid));
    if (live) {
      throw new ClusterStartError(
        `--data-dir ${dataDir} is in use by another cluster launcher (pid ${pid}; lock ${file}); ` +
          'pass a different --data-dir to run a second cluster',
      );
    }
    try {
      unlinkSync(file); // stale: its launcher is gone
    } catch {
      // someone else took it over meanwhile: try again
    }
  }
}

/**
 * Checks that every node's port can be listened on, before any node starts (the nodes check again).
 * @throws ClusterStartError naming the nodes whose ports are taken, or the host that cannot be used.
 */
async function checkPortsFree(
  host: string,
  ports: ReadonlyArray<{ id: string; port: number }>,
): Promise<void> {
  const failures = await Promise.all(ports.map(({ port }) => probePort(host, port)));
  const busy = ports.filter((_, i) => failures[i] === 'EADDRINUSE');
  if (busy.length > 0) {
    const list = busy.map((p) => `${p.port} (${p.id})`).join(', ');
    throw new ClusterStartError(
      `${busy.length === 1 ? 'port' : 'ports'} ${list} ${busy.length === 1 ? 'is' : 'are'} already in use on ${host}; choose another --base-port`,
      busy[0]!.id,
    );
  }
  const other = failures.find((f) => f !== undefined);
  if (other !== undefined) throw new ClusterStartError(`--host ${host} cannot be listened on (${other})`);
}

interface Child {
  readonly node: ClusterNode;
  readonly process: ChildProcess;
  readonly tail: string[];
  exited: boolean;
  listening: boolean;
  /** Resolves when the node says it listens; rejects (ClusterStartError) when it exits before. */
  readonly ready: Promise<void>;
}

/** Lines of each node's output kept for the reason of a failed start. */
const TAIL_LINES = 50;

function pipeLines(
  stream: NodeJS.ReadableStream | null,
  prefix: string,
  sink: NodeJS.WritableStream | undefined,
  tail: string[],
): void {
  if (stream === null) return;
  let rest = '';
  const take = (line: string) => {
    tail.push(line);
    if (tail.length > TAIL_LINES) tail.shift();
    sink?.write(`${prefix}${line}\n`);
  };
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) take(line);
  });
  stream.on('end', () => {
    if (rest !== '') take(rest);
    rest = '';
  });
}

/**
 * Why a node stopped, in one line, from its last output: the `query-sandbox: ...` line its command
 * prints for a failure (without that prefix), else its last line.
 */
function exitReason(tail: readonly string[]): string {
  for (let i = tail.length - 1; i >= 0; i--) {
    const line = tail[i]!.trim();
    if (line.startsWith('query-sandbox: ')) return line.slice('query-sandbox: '.length);
  }
  for (let i = tail.length - 1; i >= 0; i--) {
    const line = tail[i]!.trim();
    if (line !== '') return line;
  }
  return '(no output)';
}

/**
 * Starts the cluster (see module doc) and resolves once every node listens: the data nodes first,
 * then the coordinator, which then finds them all at once. A node is ready when it says so over its
 * IPC channel, so a server of another process answering on its port is never taken for it.
 *
 * Runs synchronously up to its check of the ports (lock, cluster file, index cache build), before
 * any node starts: a caller that installs signal handlers right after calling it has them in place
 * before the first node exists, while a signal during the build still ends the process at once.
 *
 * @throws ClusterStartError when another live launcher holds `<data-dir>/cluster`, a node's port is
 *   taken (before any node starts), when a node exits
 *   during start-up (naming it, with the reason from its last output: the others are stopped at once),
 *   does not listen within `startTimeoutMs`, or `control.signal` is aborted; the nodes already started
 *   are stopped first.
 */
export async function startCluster(
  options: ClusterOptions,
  log: (line: string) => void = () => {},
  control: StartClusterControl = {},
): Promise<RunningCluster> {
  const { signal } = control;
  if (signal?.aborted) throw new ClusterStartError(`stopped during start-up (${String(signal.reason)})`);
  const root = path.resolve(options.dataDir);
  const clusterDir = path.join(root, 'cluster');
  const cacheDir = path.join(root, 'cache');
  mkdirSync(clusterDir, { recursive: true });
  // Two launchers on one data dir would rewrite each other's cluster file, token and node state.
  const releaseLock = lockClusterDir(clusterDir, options.dataDir);
  const host = options.host;
  const urlOf = (port: number) => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const spec: ClusterSpec = {
    shardsPerIndex: options.shardsPerIndex,
    replicas: options.replicas,
    dataNodes: Array.from({ length: options.dataNodes }, (_, i) => ({
      id: `data-${i + 1}`,
      url: urlOf(options.basePort + 1 + i),
    })),
  };
  const clusterFile = path.join(clusterDir, 'cluster.json');
  const env = { ...process.env };
  try {
    writeFileSync(clusterFile, formatClusterSpec(spec));
    if (options.engine === undefined) {
      const engineOptions = parseEngineOptions({
        shardsPerIndex: options.shardsPerIndex,
        ...(options.maxDocs !== undefined ? { maxDocumentsPerIndex: options.maxDocs } : {}),
      });
      ensureIndexCache(cacheDir, engineOptions, (message) => log(message));
    }
    // One admin token and one cluster secret for every node, kept where docs/security.md says.
    for (const [name, file] of [
      ['QUERY_SANDBOX_ADMIN_TOKEN', 'admin-token'],
      ['QUERY_SANDBOX_CLUSTER_SECRET', 'cluster-secret'],
    ] as const) {
      if ((env[name] ?? '') !== '') continue;
      const token = randomBytes(24).toString('base64url');
      writeFileSync(path.join(clusterDir, file), `${token}\n`, { mode: 0o600 });
      env[name] = token;
    }
  } catch (error) {
    releaseLock();
    throw error;
  }
  const etcdPort = options.basePort + options.dataNodes + 1;
  const etcdOption = options.etcd ?? 'none';
  let localEtcd: LocalEtcd | undefined;
  try {
    if (etcdOption === 'local' && findEtcdBinary() === undefined) {
      throw new ClusterStartError(
        `etcd is not installed: the cluster keeps its sandboxes, membership and shard table in etcd; ${ETCD_INSTALL_HINT}, or --etcd none to run without shared state`,
      );
    }
    // Before any node starts: a taken port is told at once, naming its node.
    await checkPortsFree(host, [
      { id: 'coordinator', port: options.basePort },
      ...spec.dataNodes.map((n, i) => ({ id: n.id, port: options.basePort + 1 + i })),
      ...(etcdOption === 'local'
        ? [
            { id: 'etcd', port: etcdPort },
            { id: 'etcd (peer)', port: etcdPort + 1 },
          ]
        : []),
    ]);
    if (signal?.aborted) throw new ClusterStartError(`stopped during start-up (${String(signal.reason)})`);
    if (etcdOption === 'local') {
      localEtcd = await startLocalEtcd({
        dataDir: path.join(clusterDir, 'etcd'),
        host,
        clientPort: etcdPort,
        peerPort: etcdPort + 1,
      }).catch((error: unknown) => {
        throw new ClusterStartError(`etcd could not start: ${(error as Error).message}`, 'etcd');
      });
      log(
        `etcd for the cluster state: ${localEtcd.endpoints.join(',')} (data in ${path.join(clusterDir, 'etcd')})`,
      );
      if (signal?.aborted) throw new ClusterStartError(`stopped during start-up (${String(signal.reason)})`);
    }
  } catch (error) {
    await localEtcd?.stop();
    releaseLock();
    throw error;
  }
  const etcdEndpoints =
    etcdOption === 'none' ? undefined : etcdOption === 'local' ? localEtcd!.endpoints : etcdOption;
  const etcdArgs = etcdEndpoints === undefined ? [] : ['--etcd', etcdEndpoints.join(',')];
  const script = mainScript();
  const sink = options.output === 'silent' ? undefined : process.stdout;
  const errSink = options.output === 'silent' ? undefined : process.stderr;
  const startTimeoutMs = options.startTimeoutMs ?? 300_000;
  const children: Child[] = [];
  let stopping = false;
  let starting = true;
  let failStartup: (error: Error) => void = () => {};
  const startupFailed = new Promise<never>((_, reject) => {
    failStartup = reject;
  });
  startupFailed.catch(() => {}); // read through Promise.race; may settle after start-up
  let reportExit: (exit: { id: string; code: number | null; signal: string | null }) => void = () => {};
  const unexpectedExit = new Promise<{ id: string; code: number | null; signal: string | null }>(
    (resolve) => {
      reportExit = resolve;
    },
  );
  const restarting = new Set<string>();
  const launched = new Map<string, { role: 'coordinator' | 'data'; port: number; args: readonly string[] }>();
  const launch = (id: string, role: 'coordinator' | 'data', port: number, args: readonly string[]) => {
    launched.set(id, { role, port, args });
    const common = ['serve', '--role', role, '--node-id', id, '--host', host, '--port', String(port)];
    // Each node collects garbage where this process does (`node --single-threaded-gc`: per isolate, at
    // each lane's weight; docs/lanes.md).
    const gcFlags = process.execArgv.filter((a) => a === '--single-threaded-gc');
    const child = spawn(
      process.execPath,
      [...gcFlags, script, ...common, '--log-level', options.logLevel, ...args],
      {
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
        env,
      },
    );
    let markReady: () => void = () => {};
    let markFailed: (error: Error) => void = () => {};
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      markFailed = reject;
    });
    ready.catch(() => {}); // read by start-up and restarts only
    const entry: Child = {
      node: { id, role, url: urlOf(port), pid: child.pid ?? -1 },
      process: child,
      tail: [],
      exited: false,
      listening: false,
      ready,
    };
    pipeLines(child.stdout, `[${id}] `, sink, entry.tail);
    pipeLines(child.stderr, `[${id}] `, errSink, entry.tail);
    child.on('message', (message) => {
      if (isListeningMessage(message) && message.nodeId === id && message.port === port) {
        entry.listening = true;
        markReady();
      }
    });
    child.on('exit', (code, signal) => {
      entry.exited = true;
      if (starting || stopping || restarting.has(id)) return;
      // With shared state a data node's death is the cluster's to handle (failover), not the end.
      if (role === 'data' && etcdEndpoints !== undefined) options.onDataNodeExit?.({ id, code, signal });
      else reportExit({ id, code, signal });
    });
    const failed = (how: string) => {
      entry.exited = true;
      let reason = `${id} exited during start-up (${how}): ${exitReason(entry.tail)}`;
      if (reason.includes(`--port is already in use`) && reason.endsWith(`received ${port}`)) {
        reason += '; choose another --base-port';
      }
      const error = new ClusterStartError(reason, id);
      if (!entry.listening) markFailed(error);
      if (starting && !stopping) failStartup(error);
    };
    // 'close': the output is read to its end, so the reason is the node's last word.
    child.on('close', (code, signal) => failed(signal !== null ? `signal ${signal}` : `exit code ${code}`));
    child.on('error', (error) => failed(`cannot run it: ${error.message}`));
    children.push(entry);
    return entry;
  };

  const stop = async (): Promise<void> => {
    stopping = true;
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exited) return resolve();
            const kill = setTimeout(() => c.process.kill('SIGKILL'), 10_000);
            c.process.once('exit', () => {
              clearTimeout(kill);
              resolve();
            });
            c.process.kill('SIGTERM');
          }),
      ),
    );
    await localEtcd?.stop();
    releaseLock();
  };
  /** Waits for `targets` to listen, failing at once when any node exits or `deadline` passes. */
  const waitListening = async (targets: readonly Child[], extra: Promise<never>, timeoutMs: number) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const late = targets.filter((c) => !c.listening);
        reject(
          new ClusterStartError(
            `${late.map((c) => `${c.node.id} (${c.node.url})`).join(', ')} did not start listening within ${timeoutMs} ms`,
            late[0]?.node.id,
          ),
        );
      }, timeoutMs);
    });
    timeout.catch(() => {});
    try {
      await Promise.race([Promise.all(targets.map((c) => c.ready)), extra, timeout]);
    } finally {
      clearTimeout(timer);
    }
  };

  spec.dataNodes.forEach((node, i) => {
    launch(node.id, 'data', options.basePort + 1 + i, [
      '--cluster',
      clusterFile,
      '--data-dir',
      path.join(clusterDir, node.id),
      '--cache-dir',
      cacheDir,
      '--cores',
      String(options.nodeCores),
      ...etcdArgs,
      ...(options.threads !== undefined ? ['--threads', String(options.threads)] : []),
      ...(options.maxDocs !== undefined ? ['--max-docs', String(options.maxDocs)] : []),
      ...(options.engine !== undefined ? ['--engine', options.engine] : []),
      ...options.dataNodeArgs,
    ]);
  });
  const onAbort = () =>
    failStartup(new ClusterStartError(`stopped during start-up (${String(signal?.reason)})`));
  signal?.addEventListener('abort', onAbort, { once: true });
  const deadline = performance.now() + startTimeoutMs;
  try {
    await waitListening(children, startupFailed, startTimeoutMs);
    // The coordinator once the data nodes listen: its discovery then answers at once, and its
    // discovery time-out does not have to cover the data nodes' loading.
    launch('coordinator', 'coordinator', options.basePort, [
      '--cluster',
      clusterFile,
      '--data-dir',
      path.join(clusterDir, 'coordinator'),
      ...etcdArgs,
      ...options.coordinatorArgs,
    ]);
    await waitListening(
      children.slice(-1),
      startupFailed,
      Math.max(1, Math.round(deadline - performance.now())),
    );
  } catch (error) {
    await stop();
    throw error;
  } finally {
    starting = false;
    signal?.removeEventListener('abort', onAbort);
  }

  const restartNode = async (id: string): Promise<ClusterNode> => {
    const index = children.findIndex((c) => c.node.id === id);
    const old = children[index];
    const how = launched.get(id);
    if (old === undefined || how === undefined) throw new Error(`no node [${id}] in this cluster`);
    // A node just killed may not have been reaped yet: give it a moment.
    for (let waited = 0; !old.exited && waited < 5000; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (!old.exited) throw new Error(`node [${id}] is still running (pid ${old.node.pid})`);
    children.splice(index, 1);
    const child = launch(id, how.role, how.port, how.args);
    // Keep the coordinator last, as the ready line and the result expect.
    children.splice(children.indexOf(child), 1);
    children.splice(how.role === 'coordinator' ? children.length : index, 0, child);
    await waitListening([child], new Promise<never>(() => {}), startTimeoutMs);
    return child.node;
  };
  const [coordinator, ...dataNodes] = [children[children.length - 1]!, ...children.slice(0, -1)];
  return {
    coordinator: coordinator.node,
    dataNodes: dataNodes.map((c) => c.node),
    clusterFile,
    etcdEndpoints,
    adminToken: env['QUERY_SANDBOX_ADMIN_TOKEN']!,
    clusterSecret: env['QUERY_SANDBOX_CLUSTER_SECRET']!,
    unexpectedExit,
    stop,
    restartNode: async (id: string) => {
      restarting.add(id);
      try {
        return await restartNode(id);
      } finally {
        restarting.delete(id);
      }
    },
  };
}

/** Replicas a shard really gets: at most one copy per data node. */
function assignedReplicas(options: ClusterOptions): number {
  return Math.min(options.replicas, options.dataNodes - 1);
}

/** The one line printed once the cluster answers. */
export function readyLine(cluster: RunningCluster, options: ClusterOptions): string {
  const data = cluster.dataNodes.map((n) => `${n.id} ${n.url}`).join(', ');
  const replicas = assignedReplicas(options);
  return (
    `query-sandbox cluster ready: coordinator ${cluster.coordinator.url} | data nodes ${data} ` +
    `(${options.shardsPerIndex} shards per index, ${replicas} replica${replicas === 1 ? '' : 's'}; Ctrl-C stops all)\n` +
    `dashboard: ${cluster.coordinator.url}/_dashboard (each data node's at its URL + /_dashboard)\n`
  );
}

/**
 * `query-sandbox cluster`: starts the cluster, prints the ready line, runs until a signal or a node
 * dies. SIGINT and SIGTERM are handled from the moment the first node exists: during start-up they
 * stop the nodes started so far and exit 0, as they do once the cluster runs.
 */
export async function runCluster(options: ClusterOptions): Promise<number> {
  const abort = new AbortController();
  let finish: ((code: number) => void) | undefined;
  const onSignal = (name: NodeJS.Signals) => {
    if (finish !== undefined) finish(0);
    else abort.abort(name);
  };
  // startCluster runs synchronously up to its port check, before any node exists (see there): the
  // handlers are in place before the first node starts, while a signal during the index cache build
  // still ends the launcher at once.
  const starting = startCluster(
    {
      ...options,
      onDataNodeExit: ({ id, code, signal }) =>
        process.stderr.write(
          `query-sandbox cluster: ${id} exited (code ${code}, signal ${signal}); the cluster goes on without it: ` +
            'its primaries fail over to in-sync replicas once its lease expires\n',
        ),
    },
    (line) => process.stdout.write(`${line}\n`),
    { signal: abort.signal },
  );
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let cluster: RunningCluster;
  try {
    cluster = await starting;
  } catch (error) {
    if (!abort.signal.aborted) throw error;
    process.stderr.write(
      `query-sandbox cluster: stopped by ${String(abort.signal.reason)} during start-up; no node left running\n`,
    );
    return 0;
  }
  if (abort.signal.aborted) {
    await cluster.stop();
    return 0;
  }
  process.stdout.write(readyLine(cluster, options));
  return new Promise<number>((resolve) => {
    let done = false;
    finish = (code: number) => {
      if (done) return;
      done = true;
      void cluster.stop().then(() => resolve(code));
    };
    void cluster.unexpectedExit.then(({ id, code, signal }) => {
      process.stderr.write(
        `query-sandbox cluster: ${id} exited (code ${code}, signal ${signal}); stopping the others\n`,
      );
      finish?.(1);
    });
  });
}
