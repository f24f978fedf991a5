/**
 * The dashboard's server-side cost per connected page. A server (the governed runtime behind its
 * HTTP API, no search load) runs in this process; a child process opens 0, 1, 10 or 50 dashboard
 * streams (`GET /_dashboard/stream`) and reads them. Over each window the server process's CPU time
 * (`process.cpuUsage()`, all its threads) is measured; the baseline is the same server with no page
 * open, in the same run, in interleaved rounds. Reports per page: the extra CPU (ms per second, and
 * the ratio to the idle server's), the bytes per frame; and the cost of building one frame, for the
 * bundled 3 sandboxes and for 100.
 *
 * Usage: `npm run build && node dist/bench/dashboard-cost.js [--full]` (run it through
 * `/work/tools/bench` on a shared machine).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createRuntime, type Runtime } from '../src/index.js';
import { NodeFrameSource } from '../src/observability/dashboard-frames.js';
import { RuntimeFeed, withTaskEnds } from '../src/observability/runtime-feed.js';
import { buildHttpServer } from '../src/server/http-server.js';
import { median, printTable, writeResult } from './harness.js';
import { benchPhase } from './progress.js';

const workerFile = fileURLToPath(new URL('../../bench/workers/spin-task.mjs', import.meta.url));

/** The bundled three sandboxes, or `count` leaf sandboxes under the root. */
function sandboxFile(count: number): { sandboxes: unknown[] } {
  return {
    sandboxes: Array.from({ length: count }, (_, i) => ({
      _id: `s${i}`,
      name: `sandbox-${i}`,
      priority: i,
      resourceConsumptionLimits: { cpu: { low: 0.004, high: 0.008 }, memory: { low: 0.004, high: 0.008 } },
      selectionAttributes: [{ name: 'userPattern', value: `user${i}_*` }],
    })),
  };
}

// The pages: N streams read and discarded in a child process, so their own cost is not counted here.
const PAGES_SCRIPT = `
const [url, n] = [process.argv[1], Number(process.argv[2])];
let bytes = 0, frames = 0;
for (let i = 0; i < n; i++) {
  fetch(url).then(async (r) => { for await (const chunk of r.body) { bytes += chunk.length; frames++; } }).catch(() => {});
}
process.on('message', () => process.send({ bytes, frames }));
`;

function openPages(url: string, n: number): ChildProcess {
  return spawn(process.execPath, ['-e', PAGES_SCRIPT, url, String(n)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

function closePages(child: ChildProcess): Promise<{ bytes: number; frames: number }> {
  return new Promise((resolve) => {
    child.once('message', (m) => {
      child.kill();
      resolve(m as { bytes: number; frames: number });
    });
    child.send('report');
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Server CPU, ms per second of wall time, over `windowMs`. */
async function serverCpuMsPerSecond(windowMs: number): Promise<number> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await sleep(windowMs);
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000 / ((performance.now() - t0) / 1000);
}

/** µs to read the runtime, build and serialise one frame (median of `n`; a fresh reading each time). */
function frameCostUs(runtime: Runtime, n: number): { us: number; bytes: number } {
  const costs: number[] = [];
  let bytes = 0;
  const source = new NodeFrameSource(new RuntimeFeed({ maxAgeMs: 0 }).attach(runtime));
  source.setActive(true);
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const text = JSON.stringify(source.frame());
    costs.push((performance.now() - t0) * 1000);
    bytes = text.length;
  }
  return { us: median(costs), bytes };
}

export async function run(full: boolean): Promise<Record<string, unknown>> {
  const rounds = full ? 5 : 3;
  const windowMs = full ? 10_000 : 5000;
  const pageCounts = [0, 1, 10, 50];
  const rows = [];
  const frames = [];
  for (const sandboxes of [3, 100]) {
    benchPhase(`${sandboxes} sandboxes`);
    const feed = new RuntimeFeed();
    const runtime = await createRuntime(
      withTaskEnds(
        {
          engine: workerFile,
          dataDir: '.query-sandbox/bench',
          sandboxes: sandboxes === 3 ? 'config/sandboxes.json' : sandboxFile(sandboxes),
        },
        feed,
      ),
    );
    const app = buildHttpServer(runtime, { feed: feed.attach(runtime, true) });
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const address = app.server.address();
      const url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/_dashboard/stream`;
      frames.push({ sandboxes, ...frameCostUs(runtime, 200) });
      const cpu = new Map<number, number[]>(pageCounts.map((n) => [n, []]));
      let bytesPerFrame = 0;
      for (let r = 0; r < rounds; r++) {
        for (let k = 0; k < pageCounts.length; k++) {
          const n = pageCounts[(r + k) % pageCounts.length]!;
          benchPhase(`${sandboxes} sandboxes, ${n} pages, round ${r + 1} of ${rounds}`);
          const pages = n > 0 ? openPages(url, n) : undefined;
          await sleep(1500);
          cpu.get(n)!.push(await serverCpuMsPerSecond(windowMs));
          if (pages !== undefined) {
            const seen = await closePages(pages);
            if (seen.frames > 0) bytesPerFrame = seen.bytes / seen.frames;
          }
          await sleep(500);
        }
      }
      const idle = median(cpu.get(0)!);
      for (const n of pageCounts) {
        const ms = median(cpu.get(n)!);
        rows.push({
          sandboxes,
          pages: n,
          serverCpuMsPerSecond: ms,
          vsIdle: ms / idle,
          perPageCpuMsPerSecond: n === 0 ? 0 : (ms - idle) / n,
          bytesPerFrame: n === 0 ? 0 : bytesPerFrame,
        });
      }
    } finally {
      await app.close();
      await runtime.close();
    }
  }
  console.log(
    `\ndashboard cost: server CPU with N pages open, median of ${rounds} interleaved ${windowMs / 1000} s windows`,
  );
  printTable(
    ['sandboxes', 'pages', 'server CPU ms/s', 'vs no page', 'per page ms/s', 'bytes/frame'],
    rows.map((r) => [
      r.sandboxes,
      r.pages,
      r.serverCpuMsPerSecond,
      r.vsIdle,
      r.perPageCpuMsPerSecond,
      Math.round(r.bytesPerFrame),
    ]),
  );
  printTable(
    ['sandboxes', 'frame build + JSON µs', 'frame bytes'],
    frames.map((f) => [f.sandboxes, f.us, f.bytes]),
  );
  const data = { rounds, windowMs, rows, frames };
  await writeResult('dashboard-cost', data);
  return data;
}

if (import.meta.url === `file://${process.argv[1]}`) await run(process.argv.includes('--full'));
