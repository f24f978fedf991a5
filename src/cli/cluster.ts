/**
 * `query-sandbox cluster` (`npm run cluster`): a real multi-process cluster on loopback. One
 * coordinator on `--base-port` (default 9200) and `--data-nodes` data nodes (default 3) on the next
 * ports, each a `query-sandbox serve` child process with its own runtime, governor and sandboxes. Every
 * index is split into `--shards-per-index` shards (default 3) by the Elasticsearch routing of the
 * document ids, with `--replicas` replicas (default 1), placed by `cluster/shard-layout.ts`.
 *
 * Start: writes the cluster file (`<data-dir>/cluster/cluster.json`), builds the shared index cache
 * once when the built-in engine runs (the data nodes then only load their shards from it), starts the
 * children, waits until each answers HTTP, and prints one ready line with the URLs.
 * Stop: SIGINT or SIGTERM stops every child (SIGTERM, then SIGKILL after 10 s) and exits; a child that
 * dies stops the rest (exit 1). The children hold an IPC channel to the launcher and stop by
 * themselves when it goes away, even by SIGKILL: no orphans.
 *
 * Each data node gets its share of the machine as its CPU capacity (`--node-cores`, default
 * `max(1, round(cores / data nodes))`), since on one machine the nodes compete for the same cores: a
 * node can then be saturated without saturating the machine, as a real node would be.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { availableCores } from '../../native-shim/index.js';
import { type ClusterSpec, formatClusterSpec } from '../cluster/cluster-spec.js';
import { parseEngineOptions } from '../engine/engine-options.js';
import { ensureIndexCache } from '../engine/index-cache.js';
import { InvalidArgumentError } from '../errors.js';
import { packageRoot } from './package-root.js';

export const CLUSTER_USAGE = `query-sandbox cluster [options]   (npm run cluster -- [options])

  --base-port N          coordinator port; data nodes on N+1, N+2, ... (default 9200)
  --host HOST            listen address of every node (default 127.0.0.1)
  --data-nodes N         data nodes, 1..16 (default 3)
  --shards-per-index N   shards of every index, 1..64 (default 3)
  --replicas N           replicas of every shard, 0..16 (default 1)
  --node-cores N         CPU capacity of each data node (default max(1, round(cores / data nodes)))
  --threads N            worker threads per data node (default: its cores)
  --data-dir DIR         state; each node uses DIR/cluster/<id>, the index cache DIR/cache (default ./.query-sandbox)
  --max-docs N           index at most N mails per index (quick starts)
  --engine MODULE        engine module for the data nodes (default: built-in MiniSearch)
  --log-level LEVEL      the nodes' pino level (default warn)
  --data-node-flags "…"  more serve flags for every data node (e.g. "--debug-routes --usage-window-ms 5000")
  --coordinator-flags "…" more serve flags for the coordinator (e.g. "--admission-mode monitor_only")
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
  /** How long to wait for every node to answer, ms. @default 300000 */
  readonly startTimeoutMs?: number;
  /** Where the children's output goes: the launcher's own stdout/stderr, line by line with a `[node]` prefix (default), or nowhere. */
  readonly output?: 'prefixed' | 'silent';
}

function intFlag(name: string, text: string | undefined, min: number, max: number, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || n > max) {
    throw new InvalidArgumentError(`--${name}`, `must be an integer in ${min}..${max}`, text);
  }
  return n;
}

function splitFlags(text: string | undefined): string[] {
  return text === undefined ? [] : text.split(/\s+/).filter((part) => part.length > 0);
}

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
      args,
      options: {
        'base-port': { type: 'string' },
        host: { type: 'string' },
        'data-nodes': { type: 'string' },
        'shards-per-index': { type: 'string' },
        replicas: { type: 'string' },
        'node-cores': { type: 'string' },
        threads: { type: 'string' },
        'data-dir': { type: 'string' },
        'max-docs': { type: 'string' },
        engine: { type: 'string' },
        'log-level': { type: 'string' },
        'data-node-flags': { type: 'string' },
        'coordinator-flags': { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    }) as { values: Record<string, string | undefined> });
  } catch (error) {
    throw new InvalidArgumentError('arguments', `are invalid (${(error as Error).message})`, argv.join(' '));
  }
  const dataNodes = intFlag('data-nodes', values['data-nodes'], 1, 16, 3);
  const basePort = intFlag('base-port', values['base-port'], 1, 65535 - dataNodes, 9200);
  const coresText = values['node-cores'];
  const nodeCores =
    coresText === undefined ? Math.max(1, Math.round(availableCores() / dataNodes)) : Number(coresText);
  if (coresText !== undefined && (!/^\d*\.?\d+$/.test(coresText) || !(nodeCores > 0 && nodeCores <= 4096))) {
    throw new InvalidArgumentError('--node-cores', 'must be a number in (0, 4096]', coresText);
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
    replicas: intFlag('replicas', values['replicas'], 0, 16, 1),
    nodeCores,
    threads: values['threads'] === undefined ? undefined : intFlag('threads', values['threads'], 1, 1024, 1),
    dataDir: values['data-dir'] ?? env['QUERY_SANDBOX_DATA_DIR'] ?? '.query-sandbox',
    maxDocs:
      values['max-docs'] === undefined ? undefined : intFlag('max-docs', values['max-docs'], 1, 1_000_000, 1),
    engine: values['engine'],
    logLevel,
    dataNodeArgs: splitFlags(values['data-node-flags']),
    coordinatorArgs: splitFlags(values['coordinator-flags']),
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
  /** Settles when the first node exits on its own (not through `stop`): its id, code and signal. */
  readonly unexpectedExit: Promise<{ id: string; code: number | null; signal: string | null }>;
  /** Stops every node (SIGTERM, SIGKILL after 10 s) and waits for them to exit. Idempotent. */
  stop(): Promise<void>;
  /**
   * Starts a node again with the same arguments after it exited (crash tests: SIGKILL a data node by
   * its `pid`, then restart it); resolves once it answers HTTP. Its exit does not count as unexpected.
   * @throws Error when the node is still running 5 s after the call, or does not answer within
   *   `startTimeoutMs`.
   */
  restartNode(id: string): Promise<ClusterNode>;
}

/** The compiled `query-sandbox` command that the children run. */
function mainScript(): string {
  const here = fileURLToPath(import.meta.url);
  // Compiled: dist/src/cli/cluster.js next to main.js. From the TypeScript sources (tests): the build.
  return here.endsWith('.js')
    ? path.join(path.dirname(here), 'main.js')
    : path.join(packageRoot(), 'dist', 'src', 'cli', 'main.js');
}

interface Child {
  readonly node: ClusterNode;
  readonly process: ChildProcess;
  readonly tail: string[];
  exited: boolean;
}

function pipeLines(
  stream: NodeJS.ReadableStream | null,
  prefix: string,
  sink: NodeJS.WritableStream | undefined,
  tail: string[],
): void {
  if (stream === null) return;
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      tail.push(line);
      if (tail.length > 20) tail.shift();
      sink?.write(`${prefix}${line}\n`);
    }
  });
}

async function waitUntilAnswering(child: Child, deadlineMs: number): Promise<void> {
  for (;;) {
    if (child.exited) {
      throw new Error(
        `${child.node.id} exited during start-up:\n${child.tail.slice(-5).join('\n') || '(no output)'}`,
      );
    }
    try {
      const response = await fetch(`${child.node.url}/`, { signal: AbortSignal.timeout(2000) });
      await response.text();
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    if (performance.now() > deadlineMs)
      throw new Error(`${child.node.id} did not answer at ${child.node.url} in time`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Starts the cluster (see module doc) and resolves once every node answers.
 * @throws Error when a node exits during start-up (with its last output lines) or does not answer
 *   within `startTimeoutMs`; the nodes already started are stopped first.
 */
export async function startCluster(
  options: ClusterOptions,
  log: (line: string) => void = () => {},
): Promise<RunningCluster> {
  const root = path.resolve(options.dataDir);
  const clusterDir = path.join(root, 'cluster');
  const cacheDir = path.join(root, 'cache');
  mkdirSync(clusterDir, { recursive: true });
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
  writeFileSync(clusterFile, formatClusterSpec(spec));
  if (options.engine === undefined) {
    const engineOptions = parseEngineOptions({
      shardsPerIndex: options.shardsPerIndex,
      ...(options.maxDocs !== undefined ? { maxDocumentsPerIndex: options.maxDocs } : {}),
    });
    ensureIndexCache(cacheDir, engineOptions, (message) => log(message));
  }
  const env = { ...process.env };
  if ((env['QUERY_SANDBOX_ADMIN_TOKEN'] ?? '') === '') {
    // One token for every data node, kept where the README says (each node also honours it).
    const token = randomBytes(24).toString('base64url');
    writeFileSync(path.join(clusterDir, 'admin-token'), `${token}\n`, { mode: 0o600 });
    env['QUERY_SANDBOX_ADMIN_TOKEN'] = token;
  }
  const script = mainScript();
  const sink = options.output === 'silent' ? undefined : process.stdout;
  const errSink = options.output === 'silent' ? undefined : process.stderr;
  const children: Child[] = [];
  let stopping = false;
  let reportExit: (exit: { id: string; code: number | null; signal: string | null }) => void = () => {};
  const unexpectedExit = new Promise<{ id: string; code: number | null; signal: string | null }>(
    (resolve) => {
      reportExit = resolve;
    },
  );
  const launched = new Map<string, { role: 'coordinator' | 'data'; port: number; args: readonly string[] }>();
  const launch = (id: string, role: 'coordinator' | 'data', port: number, args: readonly string[]) => {
    launched.set(id, { role, port, args });
    const common = ['serve', '--role', role, '--node-id', id, '--host', host, '--port', String(port)];
    const child = spawn(process.execPath, [script, ...common, '--log-level', options.logLevel, ...args], {
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      env,
    });
    const entry: Child = {
      node: { id, role, url: urlOf(port), pid: child.pid ?? -1 },
      process: child,
      tail: [],
      exited: false,
    };
    pipeLines(child.stdout, `[${id}] `, sink, entry.tail);
    pipeLines(child.stderr, `[${id}] `, errSink, entry.tail);
    child.on('exit', (code, signal) => {
      entry.exited = true;
      if (!stopping && !restarting.has(id)) reportExit({ id, code, signal });
    });
    child.on('error', () => {
      entry.exited = true;
    });
    children.push(entry);
    return entry;
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
      ...(options.threads !== undefined ? ['--threads', String(options.threads)] : []),
      ...(options.maxDocs !== undefined ? ['--max-docs', String(options.maxDocs)] : []),
      ...(options.engine !== undefined ? ['--engine', options.engine] : []),
      ...options.dataNodeArgs,
    ]);
  });
  launch('coordinator', 'coordinator', options.basePort, [
    '--cluster',
    clusterFile,
    '--data-dir',
    path.join(clusterDir, 'coordinator'),
    ...options.coordinatorArgs,
  ]);

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
  };
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
    await waitUntilAnswering(child, performance.now() + (options.startTimeoutMs ?? 300_000));
    return child.node;
  };
  const restarting = new Set<string>();
  const deadline = performance.now() + (options.startTimeoutMs ?? 300_000);
  try {
    await Promise.all(children.map((c) => waitUntilAnswering(c, deadline)));
  } catch (error) {
    await stop();
    throw error;
  }
  const [coordinator, ...dataNodes] = [children[children.length - 1]!, ...children.slice(0, -1)];
  return {
    coordinator: coordinator.node,
    dataNodes: dataNodes.map((c) => c.node),
    clusterFile,
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

/** The one line printed once the cluster answers. */
export function readyLine(cluster: RunningCluster, options: ClusterOptions): string {
  const data = cluster.dataNodes.map((n) => `${n.id} ${n.url}`).join(', ');
  return (
    `query-sandbox cluster ready: coordinator ${cluster.coordinator.url} | data nodes ${data} ` +
    `(${options.shardsPerIndex} shards per index, ${options.replicas} replica${options.replicas === 1 ? '' : 's'}; Ctrl-C stops all)\n`
  );
}

/** `query-sandbox cluster`: starts the cluster, prints the ready line, runs until a signal or a node dies. */
export async function runCluster(options: ClusterOptions): Promise<number> {
  const cluster = await startCluster(options, (line) => process.stdout.write(`${line}\n`));
  process.stdout.write(readyLine(cluster, options));
  return new Promise<number>((resolve) => {
    let done = false;
    const finish = async (code: number) => {
      if (done) return;
      done = true;
      await cluster.stop();
      resolve(code);
    };
    process.once('SIGINT', () => void finish(0));
    process.once('SIGTERM', () => void finish(0));
    void cluster.unexpectedExit.then(({ id, code, signal }) => {
      process.stderr.write(
        `query-sandbox cluster: ${id} exited (code ${code}, signal ${signal}); stopping the others\n`,
      );
      void finish(1);
    });
  });
}
