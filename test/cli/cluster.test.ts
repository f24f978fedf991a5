import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ClusterStartError, lockClusterDir, parseClusterOptions } from '../../src/cli/cluster.js';
import { startFakeDataNode } from '../cluster/fake-data-node.js';
import { portsFree } from '../../src/cli/port-probe.js';
import { etcdSkipReason } from '../cluster/etcd-server.js';

// The launcher keeps cluster state in a local etcd of its own (three more processes: its guard shell, the guard's pipe watcher and
// etcd) where the binary is installed; without it these start-up tests run with --etcd none.
const etcdFlags = etcdSkipReason === undefined ? [] : ['--etcd', 'none'];
const etcdProcesses = etcdSkipReason === undefined ? 3 : 0;

// The compiled command, as `npm run cluster` runs it.
const main = path.resolve('dist/src/cli/main.js');

describe('cluster options', () => {
  it('defaults to a coordinator on 9200 and three data nodes with 3 shards and 1 replica', () => {
    const o = parseClusterOptions([], {});
    expect(o).toMatchObject({
      host: '127.0.0.1',
      basePort: 9200,
      dataNodes: 3,
      shardsPerIndex: 3,
      replicas: 1,
    });
    expect(o.nodeCores).toBeGreaterThanOrEqual(1);
    expect(o.logLevel).toBe('warn');
  });

  it('takes the base port and flags for the nodes', () => {
    const o = parseClusterOptions(
      [
        '--base-port',
        '9300',
        '--data-node-flags',
        ' --debug-routes  --usage-window-ms 5000',
        '--node-cores',
        '0.5',
      ],
      {},
    );
    expect(o.basePort).toBe(9300);
    expect(o.nodeCores).toBe(0.5);
    expect(o.dataNodeArgs).toEqual(['--debug-routes', '--usage-window-ms', '5000']);
    expect(
      parseClusterOptions(['--coordinator-flags=--admission-mode monitor_only'], {}).coordinatorArgs,
    ).toEqual(['--admission-mode', 'monitor_only']);
  });

  it.each([
    [['--base-port', '65534'], '--base-port must be an integer in 1..65532; received "65534"'],
    [['--data-nodes', '0'], '--data-nodes must be an integer in 1..16; received "0"'],
    [['--replicas', 'x'], '--replicas must be an integer in 0..16; received "x"'],
    // Every copy of a shard on its own node: not silently capped (issue 6).
    [
      ['--replicas', '3'],
      '--replicas must be at most 2 with 3 data nodes (every copy of a shard is on its own node); received "3"',
    ],
    [
      ['--data-nodes', '1', '--replicas', '1'],
      '--replicas must be at most 0 with 1 data node (every copy of a shard is on its own node); received "1"',
    ],
    [['--node-cores', '0'], '--node-cores must be a number in (0, 4096]; received "0"'],
    [['--node-cores=-1'], '--node-cores must be a number in (0, 4096]; received "-1"'],
    [['--log-level', 'loud'], '--log-level must be one of'],
    [['--nope'], /arguments are invalid/],
  ])('refuses %j naming the flag', (argv, message) => {
    expect(() => parseClusterOptions(argv, {})).toThrow(message);
  });

  it('takes as many replicas as the other data nodes can hold, and none by default with one node', () => {
    expect(parseClusterOptions(['--replicas', '2'], {}).replicas).toBe(2);
    expect(parseClusterOptions(['--data-nodes', '1'], {}).replicas).toBe(0);
  });
});

describe('the launcher lock on its data directory', () => {
  const clusterDir = () => mkdtempSync(path.join(tmpdir(), 'qs-lock-'));
  const lockOf = (dir: string) => path.join(dir, 'launcher.lock');

  it('is refused while a live process holds it, naming it and telling to pass another --data-dir', () => {
    const dir = clusterDir();
    const sleeper = spawn('sleep', ['30']);
    try {
      writeFileSync(lockOf(dir), `${sleeper.pid}\n`);
      expect(() => lockClusterDir(dir, 'some/dir')).toThrow(
        new ClusterStartError(
          `--data-dir some/dir is in use by another cluster launcher (pid ${sleeper.pid}; lock ${lockOf(dir)}); ` +
            'pass a different --data-dir to run a second cluster',
        ),
      );
      expect(readFileSync(lockOf(dir), 'utf8')).toBe(`${sleeper.pid}\n`);
    } finally {
      sleeper.kill('SIGKILL');
    }
  });

  it('takes over a lock whose process is gone, refuses a second lock in the same process, and releases', () => {
    const dir = clusterDir();
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    writeFileSync(lockOf(dir), `${gone}\n`);
    const release = lockClusterDir(dir, 'd');
    expect(readFileSync(lockOf(dir), 'utf8')).toBe(`${process.pid}\n`);
    expect(() => lockClusterDir(dir, 'd')).toThrow(/is in use by another cluster launcher/);
    release();
    release();
    expect(existsSync(lockOf(dir))).toBe(false);
    lockClusterDir(dir, 'd')();
  });
});

async function freeBasePort(): Promise<number> {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 40_000);
    if (await portsFree(base, 4)) return base;
  }
}

/** Processes whose command line mentions `marker` (the cluster's unique data dir). */
function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

function startLauncher(base: number, dataDir: string): { child: ChildProcess; ready: Promise<string> } {
  const child = spawn(
    process.execPath,
    [
      main,
      'cluster',
      '--base-port',
      String(base),
      '--data-dir',
      dataDir,
      '--max-docs',
      '20',
      '--threads',
      '1',
      ...etcdFlags,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.startsWith('query-sandbox cluster ready'));
      if (line !== undefined) resolve(line);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.once('exit', (code) => reject(new Error(`launcher exited (${code}) before ready:\n${out}`)));
  });
  return { child, ready };
}

async function waitUntil(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

describe('query-sandbox cluster (real processes)', () => {
  it('starts a coordinator and three data nodes, serves a search, and leaves no process behind', async () => {
    const base = await freeBasePort();
    const dataDir = mkdtempSync(path.join(tmpdir(), 'qs-launch-'));
    const { child, ready } = startLauncher(base, dataDir);
    const line = await ready;
    expect(line).toBe(
      `query-sandbox cluster ready: coordinator http://127.0.0.1:${base} | data nodes ` +
        `data-1 http://127.0.0.1:${base + 1}, data-2 http://127.0.0.1:${base + 2}, data-3 http://127.0.0.1:${base + 3} ` +
        '(3 shards per index, 1 replica; Ctrl-C stops all)',
    );
    const r = await fetch(`http://127.0.0.1:${base}/_search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"size": 2}',
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('resource_usage_stats')).toBeNull();
    const body = (await r.json()) as { _shards: unknown; hits: { total: { value: number } } };
    expect(body._shards).toEqual({ total: 15, successful: 15, skipped: 0, failed: 0 });
    expect(body.hits.total.value).toBe(100);
    const stats = (await (await fetch(`http://127.0.0.1:${base}/_nodes/stats`)).json()) as { nodes: object };
    expect(Object.keys(stats.nodes).sort()).toEqual(['coordinator', 'data-1', 'data-2', 'data-3']);
    expect(processesWith(dataDir)).toHaveLength(5 + etcdProcesses); // the launcher and its four nodes (and etcd)
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(await waitUntil(() => processesWith(dataDir).length === 0, 5000)).toBe(true);
  });

  it('stops its nodes when the launcher itself is killed (SIGKILL)', async () => {
    const base = await freeBasePort();
    const dataDir = mkdtempSync(path.join(tmpdir(), 'qs-launch-'));
    const { child, ready } = startLauncher(base, dataDir);
    await ready;
    expect(processesWith(dataDir)).toHaveLength(5 + etcdProcesses);
    child.kill('SIGKILL');
    expect(await waitUntil(() => processesWith(dataDir).length === 0, 10_000)).toBe(true);
  });
});

const taken = new Set<number>();
/** `count` free consecutive ports from 9600 up, not handed out before in this file. */
async function portsFrom9600(count: number): Promise<number> {
  for (let base = 9600; base + count <= 20_000; base += 10) {
    if (Array.from({ length: count }, (_, i) => base + i).some((p) => taken.has(p))) continue;
    if (!(await portsFree(base, count))) continue;
    for (let i = 0; i < count; i++) taken.add(base + i);
    return base;
  }
  throw new Error('no free ports from 9600');
}

interface Run {
  readonly child: ChildProcess;
  readonly stdout: () => string;
  readonly stderr: () => string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function runCommand(args: readonly string[], env: NodeJS.ProcessEnv = process.env): Run {
  const child = spawn(process.execPath, [main, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** The launcher's own stderr lines (the nodes' lines come prefixed with `[id] `). */
const ownLines = (text: string) => text.split('\n').filter((l) => l !== '' && !l.startsWith('['));

const quickCluster = (base: number, dataDir: string, ...more: string[]) => [
  'cluster',
  '--base-port',
  String(base),
  '--data-dir',
  dataDir,
  '--data-nodes',
  '1',
  '--max-docs',
  '20',
  '--threads',
  '1',
  ...etcdFlags,
  ...more,
];

/** An HTTP server on `port` that answers 200 to everything, claiming to be `name`. */
async function impostor(port: number, name: string): Promise<http.Server> {
  const server = http.createServer((_request, response) => {
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ name }));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

describe('query-sandbox cluster start-up (issue 6)', () => {
  it('leaves no node behind when the launcher is stopped (SIGTERM) or killed (SIGKILL) while they start', async () => {
    const runs = await Promise.all(
      (['SIGTERM', 'SIGKILL'] as const).map(async (signal) => {
        const dataDir = mkdtempSync(path.join(tmpdir(), 'qs-early-'));
        const run = runCommand(quickCluster(await portsFrom9600(4), dataDir));
        // A node process exists (besides the launcher and etcd): start-up is under way, far from ready.
        expect(await waitUntil(() => processesWith(dataDir).length >= 2 + etcdProcesses, 10_000)).toBe(true);
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(run.stdout()).not.toContain('cluster ready');
        run.child.kill(signal);
        return { signal, dataDir, run, exit: await run.exited };
      }),
    );
    for (const { signal, dataDir, run } of runs) {
      const gone = await waitUntil(() => processesWith(dataDir).length === 0, 5000);
      expect(gone, `${signal}: ${processesWith(dataDir)} left\n${run.stdout()}${run.stderr()}`).toBe(true);
    }
    expect(runs[0]!.exit).toEqual({ code: 0, signal: null });
    expect(ownLines(runs[0]!.run.stderr())).toEqual([
      'query-sandbox cluster: stopped by SIGTERM during start-up; no node left running',
    ]);
    expect(runs[1]!.exit.signal).toBe('SIGKILL');
  });

  it('fails at once in one line naming the node when a port is taken or a node refuses a flag, leaving nothing running', async () => {
    const cases = [
      { name: 'data node port taken', busy: 1 },
      { name: 'coordinator port taken', busy: 0 },
      { name: 'bad data node flag', busy: undefined, more: ['--data-node-flags', '--bogus'] },
    ];
    const results = await Promise.all(
      cases.map(async (c) => {
        const base = await portsFrom9600(4);
        // Servers of another process, even one answering as the node would: never taken for it.
        const server =
          c.busy === undefined
            ? undefined
            : await impostor(base + c.busy, c.busy === 0 ? 'coordinator' : 'data-1');
        const dataDir = mkdtempSync(path.join(tmpdir(), 'qs-fail-'));
        const run = runCommand(quickCluster(base, dataDir, ...(c.more ?? [])));
        const exit = await Promise.race([
          run.exited,
          new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 15_000)),
        ]);
        if (exit === 'still running') run.child.kill('SIGKILL');
        server?.close();
        return { ...c, base, dataDir, run, exit };
      }),
    );
    const [data, coordinator, flag] = results;
    for (const r of results) {
      expect(r.exit, `${r.name}: ${r.run.stdout()}${r.run.stderr()}`).toEqual({ code: 1, signal: null });
      expect(r.run.stdout()).not.toContain('cluster ready');
      expect(r.run.stderr()).not.toMatch(/^\s+at /m);
      expect(ownLines(r.run.stderr())).toHaveLength(1);
      expect(await waitUntil(() => processesWith(r.dataDir).length === 0, 5000)).toBe(true);
    }
    // A taken port is told before any node starts.
    expect(data!.run.stderr().trim().split('\n')).toEqual([
      `query-sandbox: port ${data!.base + 1} (data-1) is already in use on 127.0.0.1; choose another --base-port`,
    ]);
    expect(coordinator!.run.stderr().trim().split('\n')).toEqual([
      `query-sandbox: port ${coordinator!.base} (coordinator) is already in use on 127.0.0.1; choose another --base-port`,
    ]);
    // A node that exits while it starts is told at once, with its own reason.
    expect(flag!.run.stderr()).toContain(
      "[data-1] query-sandbox: arguments are invalid (Unknown option '--bogus')",
    );
    expect(ownLines(flag!.run.stderr())[0]).toMatch(
      /^query-sandbox: data-1 exited during start-up \(exit code 1\): arguments are invalid \(Unknown option '--bogus'\)/,
    );
  });

  it('refuses a data directory that another live launcher holds, in one line, before writing anything', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'qs-held-'));
    const lock = path.join(dataDir, 'cluster', 'launcher.lock');
    mkdirSync(path.dirname(lock));
    writeFileSync(lock, `${process.pid}\n`); // this test process: alive
    const run = runCommand(quickCluster(await portsFrom9600(4), dataDir));
    const timer = setTimeout(() => run.child.kill('SIGKILL'), 10_000);
    expect(await run.exited).toEqual({ code: 1, signal: null });
    clearTimeout(timer);
    expect(run.stderr().trim().split('\n')).toEqual([
      `query-sandbox: --data-dir ${dataDir} is in use by another cluster launcher (pid ${process.pid}; lock ${lock}); ` +
        'pass a different --data-dir to run a second cluster',
    ]);
    expect(existsSync(path.join(dataDir, 'cluster', 'cluster.json'))).toBe(false);
    expect(readFileSync(lock, 'utf8')).toBe(`${process.pid}\n`);
  });

  it('a coordinator tells in one line that two addresses are one data node, or that a node never answered', async () => {
    const node = await startFakeDataNode('data-1', [{ index: 'alpha', shard: 0, primary: true }]);
    try {
      const port = new URL(node.url).port;
      const base = await portsFrom9600(3);
      const dataDir = mkdtempSync(path.join(tmpdir(), 'qs-coord-'));
      const coordinator = (listen: number, dataNodes: string, ...more: string[]) =>
        runCommand(
          [
            'serve',
            '--role',
            'coordinator',
            '--port',
            String(listen),
            '--data-nodes',
            dataNodes,
            '--data-dir',
            dataDir,
            '--log-level',
            'warn',
            ...more,
          ],
          { ...process.env, QUERY_SANDBOX_CLUSTER_SECRET: 'cli-cluster-test-secret' },
        );
      const twice = coordinator(base, `127.0.0.1:${port},localhost:${port}`);
      const nobody = coordinator(base + 1, `127.0.0.1:${base + 2}`, '--discovery-timeout-ms', '600');
      expect(await twice.exited).toEqual({ code: 1, signal: null });
      expect(twice.stderr().trim().split('\n')).toEqual([
        `query-sandbox: data nodes http://127.0.0.1:${port} and http://localhost:${port} both answer as [data-1]: list each data node once`,
      ]);
      expect(await nobody.exited).toEqual({ code: 1, signal: null });
      expect(nobody.stderr().trim().split('\n')).toEqual([
        expect.stringMatching(
          new RegExp(
            `^query-sandbox: data node http://127\\.0\\.0\\.1:${base + 2} did not answer discovery within 600 ms \\(\\d+ tries; last: ECONNREFUSED\\)$`,
          ),
        ),
      ]);
      // It said so while it waited.
      expect(nobody.stdout()).toContain(
        `"msg":"data node http://127.0.0.1:${base + 2} does not answer discovery yet`,
      );
    } finally {
      await node.app.close();
    }
  });

  it('refuses to start a data node or a coordinator without a cluster secret, in one line naming it', async () => {
    const env = { ...process.env };
    delete env['QUERY_SANDBOX_CLUSTER_SECRET'];
    for (const role of ['data', 'coordinator']) {
      const run = runCommand(
        [
          'serve',
          '--role',
          role,
          '--port',
          '0',
          ...(role === 'coordinator' ? ['--data-nodes', '127.0.0.1:1'] : []),
        ],
        env,
      );
      expect(await run.exited).toEqual({ code: 1, signal: null });
      expect(run.stderr().trim()).toMatch(
        new RegExp(
          `^query-sandbox: QUERY_SANDBOX_CLUSTER_SECRET is required with --role ${role}: .*; received undefined$`,
        ),
      );
    }
  });
});
