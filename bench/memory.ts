/**
 * Memory overhead against bare piscina: resident memory per worker and main-thread heap per queued
 * task. Each figure comes from a fresh child process (`--expose-gc`), so one measurement's garbage
 * does not land in the next:
 * - per worker: RSS with 5 workers started minus RSS with 1, divided by 4 (the slope), for bare
 *   piscina and for the runtime (trivial engine, `spareWorkers: 0`, heap probe on);
 * - per queued task: with every worker held by a long task, 20,000 more tasks are queued; the
 *   main-thread heap after a full GC, minus before, divided by 20,000.
 * Both sides run the same handler (`workers/sleep-task.mjs`), the runtime with one lane, so that a
 * "worker" means the same on both sides. Reported: bytes, and runtime / bare.
 *
 * Then the default engine (MiniSearch over the SpamAssassin corpus, its indices loaded in every
 * worker) with the bundled sandboxes, lanes off (`cores` workers + 1 spare) and on (two lanes of
 * `cores` + 1 each), fresh process each, after a few queries in every lane: total RSS, workers, and
 * RSS per engine worker = (RSS with lanes − RSS without) / (their worker counts' difference).
 *
 * Usage: part of `npm run bench`; alone: `node --expose-gc dist/bench/memory.js`.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { createRuntime } from '../src/index.js';
import { CHARTS } from './charts.js';
import { median, printTable, writeResult } from './harness.js';
import { benchPhase } from './progress.js';

const workerFile = fileURLToPath(new URL('../../bench/workers/sleep-task.mjs', import.meta.url));
const sandboxFile = fileURLToPath(new URL('../../config/sandboxes.json', import.meta.url));
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
    const pool = new Piscina({
      filename: workerFile,
      minThreads: workers,
      maxThreads: workers,
      idleTimeout: 600_000,
    });
    submit = (n, sleepMs) => pool.run({ n, sleepMs });
    close = () => pool.destroy();
  } else {
    const runtime = await createRuntime({
      engine: workerFile,
      threads: workers,
      spareWorkers: 0,
      lanes: false,
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

/** In a child: the default engine with the bundled sandboxes, lanes on or off; print RSS and workers. */
async function engineProbe(lanes: boolean): Promise<void> {
  const runtime = await createRuntime({
    sandboxes: sandboxFile,
    dataDir: '.query-sandbox/bench',
    ...(lanes ? {} : { lanes: false }),
  });
  try {
    // A few queries in every lane: cheap ones (dashboards: foreground) and fuzzy ones (analysts: background).
    const queries = [];
    for (let i = 0; i < 8; i++) {
      queries.push(
        runtime.search({ index: 'spam-*', body: { query: { match: { subject: 'money' } } }, user: 'dash_m' }),
      );
      queries.push(
        runtime
          .search({
            index: '_all',
            body: { query: { match: { body: { query: 'mony ofer', fuzziness: 2 } } } },
            user: `analyst_${i}`,
          })
          .catch(() => undefined),
      );
    }
    await Promise.all(queries);
    gc();
    await new Promise((r) => setTimeout(r, 500));
    const n = runtime.nodeStats();
    process.stdout.write(
      JSON.stringify({
        rss: process.memoryUsage().rss,
        workers: n.liveWorkers,
        mainHeap: process.memoryUsage().heapUsed,
      }),
    );
  } finally {
    await runtime.close();
  }
}

function measureEngine(lanes: boolean): { rss: number; workers: number; mainHeap: number } {
  const out = execFileSync(process.execPath, ['--expose-gc', self, '--engine-probe', lanes ? 'on' : 'off'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(out);
}

function measure(
  side: 'bare' | 'runtime',
  workers: number,
  queue: boolean,
): { rss: number; heapPerQueuedTask: number } {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', self, '--probe', side, String(workers), queue ? 'queue' : ''],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return JSON.parse(out);
}

export async function run(full: boolean): Promise<Record<string, unknown>> {
  // Each measurement starts two processes and their workers: about 7 s a repetition.
  const repetitions = full ? 5 : 1;
  const perWorker = (side: 'bare' | 'runtime') => {
    benchPhase(`RSS per worker, ${side}`);
    return median(
      Array.from(
        { length: repetitions },
        () => (measure(side, 5, false).rss - measure(side, 1, false).rss) / 4,
      ),
    );
  };
  const perQueued = (side: 'bare' | 'runtime') => {
    benchPhase(`heap per queued task, ${side}`);
    return median(Array.from({ length: repetitions }, () => measure(side, 2, true).heapPerQueuedTask));
  };
  const engine = {
    off: [] as ReturnType<typeof measureEngine>[],
    on: [] as ReturnType<typeof measureEngine>[],
  };
  benchPhase('default engine, RSS with lanes off and on');
  for (let i = 0; i < repetitions; i++) {
    engine.off.push(measureEngine(false));
    engine.on.push(measureEngine(true));
  }
  const lanesOff = { rss: median(engine.off.map((e) => e.rss)), workers: engine.off[0]!.workers };
  const lanesOn = { rss: median(engine.on.map((e) => e.rss)), workers: engine.on[0]!.workers };
  const rssPerEngineWorker = (lanesOn.rss - lanesOff.rss) / (lanesOn.workers - lanesOff.workers);
  const rows = [
    { figure: 'RSS per worker', bare: perWorker('bare'), runtime: perWorker('runtime') },
    { figure: 'heap per queued task', bare: perQueued('bare'), runtime: perQueued('runtime') },
  ].map((r) => ({ ...r, ratio: r.runtime / r.bare }));
  console.log(`\nmemory: fresh process per figure, median of ${repetitions}`);
  printTable(
    ['figure', 'bare piscina', 'runtime', 'runtime / bare'],
    rows.map((r) => [
      r.figure,
      `${(r.bare / 1024).toFixed(1)} KiB`,
      `${(r.runtime / 1024).toFixed(1)} KiB`,
      r.ratio,
    ]),
  );
  const mib = (b: number) => `${(b / 1048576).toFixed(0)} MiB`;
  console.log('\ndefault engine (its indices in every worker), bundled sandboxes:');
  printTable(
    ['pool', 'workers (spares included)', 'RSS total', 'RSS / worker (total / workers)'],
    [
      ['lanes off', lanesOff.workers, mib(lanesOff.rss), mib(lanesOff.rss / lanesOff.workers)],
      ['lanes on', lanesOn.workers, mib(lanesOn.rss), mib(lanesOn.rss / lanesOn.workers)],
    ],
  );
  console.log(
    `RSS per engine worker (the difference of the two over the difference of workers): ${mib(rssPerEngineWorker)}`,
  );
  const data = { repetitions, queued: QUEUED, rows, engine: { lanesOff, lanesOn, rssPerEngineWorker } };
  await writeResult('memory', data, CHARTS['memory']!(data));
  return { rows, engine: { lanesOff, lanesOn, rssPerEngineWorker } };
}

const at = process.argv.indexOf('--probe');
const engineAt = process.argv.indexOf('--engine-probe');
if (engineAt >= 0) {
  await engineProbe(process.argv[engineAt + 1] === 'on');
} else if (at >= 0) {
  await probe(
    process.argv[at + 1] as 'bare' | 'runtime',
    Number(process.argv[at + 2]),
    process.argv[at + 3] === 'queue',
  );
} else if (import.meta.url === `file://${process.argv[1]}`) {
  await run(process.argv.includes('--full'));
}
