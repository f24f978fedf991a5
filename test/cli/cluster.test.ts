import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseClusterOptions } from '../../src/cli/cluster.js';

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
    expect(parseClusterOptions(['--coordinator-flags=--admission-mode monitor_only'], {}).coordinatorArgs).toEqual([
      '--admission-mode',
      'monitor_only',
    ]);
  });

  it.each([
    [['--base-port', '65534'], '--base-port must be an integer in 1..65532; received "65534"'],
    [['--data-nodes', '0'], '--data-nodes must be an integer in 1..16; received "0"'],
    [['--replicas', 'x'], '--replicas must be an integer in 0..16; received "x"'],
    [['--node-cores', '0'], '--node-cores must be a number in (0, 4096]; received "0"'],
    [['--node-cores=-1'], '--node-cores must be a number in (0, 4096]; received "-1"'],
    [['--log-level', 'loud'], '--log-level must be one of'],
    [['--nope'], /arguments are invalid/],
  ])('refuses %j naming the flag', (argv, message) => {
    expect(() => parseClusterOptions(argv, {})).toThrow(message);
  });
});

async function portsFree(base: number, count: number): Promise<boolean> {
  for (let port = base; port < base + count; port++) {
    const free = await new Promise<boolean>((resolve) => {
      const probe = net.createServer();
      probe.once('error', () => resolve(false));
      probe.listen({ host: '127.0.0.1', port, exclusive: true }, () => probe.close(() => resolve(true)));
    });
    if (!free) return false;
  }
  return true;
}

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
    const r = await fetch(`http://127.0.0.1:${base}/_search`, { method: 'POST', body: '{"size": 2}' });
    expect(r.status).toBe(200);
    expect(r.headers.get('resource_usage_stats')).toBeNull();
    const body = (await r.json()) as { _shards: unknown; hits: { total: { value: number } } };
    expect(body._shards).toEqual({ total: 15, successful: 15, skipped: 0, failed: 0 });
    expect(body.hits.total.value).toBe(100);
    const stats = (await (await fetch(`http://127.0.0.1:${base}/_nodes/stats`)).json()) as { nodes: object };
    expect(Object.keys(stats.nodes).sort()).toEqual(['coordinator', 'data-1', 'data-2', 'data-3']);
    expect(processesWith(dataDir)).toHaveLength(5); // the launcher and its four nodes
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
    expect(processesWith(dataDir)).toHaveLength(5);
    child.kill('SIGKILL');
    expect(await waitUntil(() => processesWith(dataDir).length === 0, 10_000)).toBe(true);
  });
});
