/**
 * Cost of one governor tick (sample every running task's thread clock and memory, aggregate up the
 * tree, decide, publish, act) against the number of running tasks: 8, 64 and 256 workers, each
 * running a task that sleeps, with as many tasks again queued, 20 sandboxes, on the real runtime
 * with a trivial engine. Ticks are counted only once every worker is busy. Prints the median and
 * p99 in µs, and the share of one core the governor takes at the default 100 ms interval.
 *
 * Usage: part of `npm run bench`; alone: `node dist/bench/governor-tick.js [--full]`.
 */
import { fileURLToPath } from 'node:url';
import { createRuntime } from '../src/index.js';
import { CHARTS } from './charts.js';
import { benchPhase } from './progress.js';
import { printTable, writeResult } from './harness.js';

const echoEngine = fileURLToPath(new URL('../../test/fixtures/echo-engine.mjs', import.meta.url));
const INTERVAL_MS = 100;

async function measure(threads: number, ms: number): Promise<{ median: number; p99: number; ticks: number }> {
  const sandboxes = Array.from({ length: 20 }, (_, i) => ({
    name: `s${i}`,
    priority: i,
    resourceConsumptionLimits: { cpu: { low: 0.9, high: 1 }, memory: { low: 0.9, high: 1 } },
    selectionAttributes: [{ name: 'userPattern', value: `u${i}_*` }],
  }));
  const runtime = await createRuntime({
    engine: echoEngine,
    threads,
    // One pool of `threads` workers: with the default two lanes the bundled priorities would spread
    // the tasks over 2 x threads workers, and the table is per running-task count.
    lanes: false,
    spareWorkers: 0,
    workerHeapMb: 64,
    maxQueuedTasks: threads,
    intervalMs: INTERVAL_MS,
    dataDir: '.query-sandbox/bench',
    sandboxes: { sandboxes },
  });
  const pending = Array.from({ length: 2 * threads }, (_, i) =>
    runtime
      .search({ index: 'alpha', body: { sleepMs: 600_000 }, user: `u${i % 20}_x` })
      .catch(() => undefined),
  );
  while (runtime.nodeStats().running < threads) await new Promise((r) => setTimeout(r, 50));
  // Only ticks with every worker busy: the tick-cost histogram restarts here.
  runtime.governorStats({ resetTickCost: true });
  await new Promise((r) => setTimeout(r, ms));
  const stats = runtime.governorStats();
  const node = runtime.nodeStats();
  if (node.running !== threads || node.queued !== threads) {
    throw new Error(
      `expected ${threads} running and ${threads} queued, saw ${node.running} and ${node.queued}`,
    );
  }
  await runtime.close();
  await Promise.all(pending);
  return { median: stats.tickMedianUs, p99: stats.tickP99Us, ticks: stats.tickCostSamples };
}

export async function run(full: boolean): Promise<Record<string, unknown>> {
  const ms = full ? 10_000 : 3_000;
  const rows: Array<{ tasks: number; medianUs: number; p99Us: number; ticks: number; coreShare: number }> =
    [];
  for (const threads of [8, 64, 256]) {
    benchPhase(`${threads} tasks`);
    const m = await measure(threads, ms);
    rows.push({
      tasks: threads,
      medianUs: m.median,
      p99Us: m.p99,
      ticks: m.ticks,
      coreShare: m.median / 1000 / INTERVAL_MS,
    });
  }
  console.log(`\ngovernor tick: running tasks (as many queued), 20 sandboxes, ${ms / 1000} s of ticks each`);
  printTable(
    ['running tasks', 'ticks', 'median µs', 'p99 µs', 'share of a core at 100 ms'],
    rows.map((r) => [
      r.tasks,
      r.ticks,
      Math.round(r.medianUs),
      Math.round(r.p99Us),
      `${(r.coreShare * 100).toFixed(2)} %`,
    ]),
  );
  const data = { intervalMs: INTERVAL_MS, rows };
  await writeResult('governor-tick', data, CHARTS['governor-tick']!(data));
  return { rows };
}

if (import.meta.url === `file://${process.argv[1]}`) await run(process.argv.includes('--full'));
