/**
 * Memory overhead against bare piscina: resident memory per worker and main-thread heap per queued
 * task. Each figure comes from a fresh child process (`--expose-gc`), so one measurement's garbage
 * does not land in the next:
 * - per worker: RSS with 5 workers started minus RSS with 1, divided by 4 (the slope), for bare
 *   piscina and for the runtime (trivial engine, `spareWorkers: 0`, heap probe on);
 * - per queued task: with every worker held by a long task, 20,000 more tasks are queued; the
 *   main-thread heap after a full GC, minus before, divided by 20,000.
 * Both sides run the same handler (`workers/sleep-task.mjs`). Reported: bytes, and runtime / bare.
 *
 * Usage: part of `npm run bench`; alone: `node --expose-gc dist/bench/memory.js`.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { createRuntime } from '../src/index.js';
import { CHARTS } from './charts.js';
import { benchPhase } from './progress.js';
import { median, printTable, writeResult } from './harness.js';

const workerFile = fileURLToPath(new URL('../../bench/workers/sleep-task.mjs', import.meta.url));
const self = fileURLToPath(import.meta.url);
const QUEUED = 20_000;

const gc = () => {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g === undefined) throw new Error('run with --expose-gc');
  g();
  g();
};

/** In a child: start `side` with `workers`, optionally queue tasks, print the figures as JSON. */
async function probe(side: 'bare' | 'runtime', workers: number, queue: boolean): Promise<void> {
  let submit: (n: number, sleepMs: number) => Promise<unknown>;
  let close: () => Promise<void>;
  if (side === 'bare') {
    const pool = new Piscina({ filename: workerFile, minThreads: workers, maxThreads: workers, idleTimeout: 600_000 });
    submit = (n, sleepMs) => pool.run({ n, sleepMs });
    close = () => pool.destroy();
  } else {
    const runtime = await createRuntime({
      engine: workerFile,
      threads: workers,
      spareWorkers: 0,
      maxQueuedTasks: QUEUED,
      dataDir: '.query-sandbox/bench',
    });
    submit = (n, sleepMs) => runtime.search({ index: 'bench', body: { n, sleepMs } });
    close = () => runtime.close();
  }
  // Every worker up and warm.
  await Promise.all(Array.from({ length: workers * 4 }, (_, n) => submit(n, 20)));
  gc();
  await new Promise((r) => setTimeout(r, 200));
  gc();
  const before = process.memoryUsage();
  let heapPerQueuedTask = 0;
  const pending: Promise<unknown>[] = [];
  if (queue) {
    for (let i = 0; i < workers; i++) pending.push(submit(i, 3000).catch(() => undefined));
    await new Promise((r) => setTimeout(r, 100));
    for (let i = 0; i < QUEUED; i++) pending.push(submit(i, 0).catch(() => undefined));
    gc();
    heapPerQueuedTask = (process.memoryUsage().heapUsed - before.heapUsed) / QUEUED;
  }
  process.stdout.write(JSON.stringify({ rss: before.rss, heapUsed: before.heapUsed, heapPerQueuedTask }));
  await Promise.all(pending);
  await close();
}

function measure(side: 'bare' | 'runtime', workers: number, queue: boolean): { rss: number; heapPerQueuedTask: number } {
  const out = execFileSync(process.execPath, ['--expose-gc', self, '--probe', side, String(workers), queue ? 'queue' : ''], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(out);
}

export async function run(full: boolean): Promise<Record<string, unknown>> {
  // Each measurement starts two processes and their workers: about 7 s a repetition.
  const repetitions = full ? 5 : 1;
  const perWorker = (side: 'bare' | 'runtime') => {
    benchPhase(`RSS per worker, ${side}`);
    return median(
      Array.from({ length: repetitions }, () => (measure(side, 5, false).rss - measure(side, 1, false).rss) / 4),
    );
  };
  const perQueued = (side: 'bare' | 'runtime') => {
    benchPhase(`heap per queued task, ${side}`);
    return median(Array.from({ length: repetitions }, () => measure(side, 2, true).heapPerQueuedTask));
  };
  const rows = [
    { figure: 'RSS per worker', bare: perWorker('bare'), runtime: perWorker('runtime') },
    { figure: 'heap per queued task', bare: perQueued('bare'), runtime: perQueued('runtime') },
  ].map((r) => ({ ...r, ratio: r.runtime / r.bare }));
  console.log(`\nmemory: fresh process per figure, median of ${repetitions}`);
  printTable(
    ['figure', 'bare piscina', 'runtime', 'runtime / bare'],
    rows.map((r) => [r.figure, `${(r.bare / 1024).toFixed(1)} KiB`, `${(r.runtime / 1024).toFixed(1)} KiB`, r.ratio]),
  );
  const data = { repetitions, queued: QUEUED, rows };
  await writeResult('memory', data, CHARTS['memory']!(data));
  return { rows };
}

const at = process.argv.indexOf('--probe');
if (at >= 0) {
  await probe(process.argv[at + 1] as 'bare' | 'runtime', Number(process.argv[at + 2]), process.argv[at + 3] === 'queue');
} else if (import.meta.url === `file://${process.argv[1]}`) {
  await run(process.argv.includes('--full'));
}
