/**
 * Measurement fidelity: how close is the runtime's per-task CPU figure to the task's own thread
 * clock? Tasks burn 5, 50 and 500 ms of their thread's CPU (`burnCpuMs`, measured inside the task
 * with the same /proc clock) on every worker at once, sizes mixed; the runtime's figure comes from
 * `onTaskEnd` (`cpuTimeNs`: the worker thread's CPU from the end of its previous task to the end of
 * this one, read by the main thread). Error = (runtime figure − task's own figure) / task's own
 * figure. The runtime's window deliberately includes the worker's per-task overhead (receiving the
 * task, posting the result), which the task's own clock does not see: that is the error's floor.
 * Reported: median and p99 of the absolute error per size. Target: within 2 %.
 *
 * Usage: part of `npm run bench`; alone: `node dist/bench/fidelity.js [--full]`.
 */
import { fileURLToPath } from 'node:url';
import { createRuntime, type TaskEndEvent } from '../src/index.js';
import { CHARTS } from './charts.js';
import { median, printTable, writeResult } from './harness.js';

const echoEngine = fileURLToPath(new URL('../../test/fixtures/echo-engine.mjs', import.meta.url));

function percentile(values: readonly number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

export async function run(full: boolean): Promise<Record<string, unknown>> {
  const sizes = [5, 50, 500];
  const perSize = full ? { 5: 400, 50: 100, 500: 12 } : { 5: 120, 50: 30, 500: 4 };
  const ends = new Map<number, TaskEndEvent>();
  const runtime = await createRuntime({
    engine: echoEngine,
    spareWorkers: 0,
    dataDir: '.query-sandbox/bench',
    onTaskEnd: (e) => ends.set(e.taskId, e),
  });
  const threads = runtime.options.threads;
  const errors = new Map<number, number[]>(sizes.map((s) => [s, []]));
  try {
    // Every size interleaved, twice as many in flight as workers: all workers busy throughout.
    const plan: number[] = [];
    for (const size of sizes) for (let i = 0; i < perSize[size as 5 | 50 | 500]; i++) plan.push(size);
    plan.sort((a, b) => ((a * 7919) % 13) - ((b * 7919) % 13) || a - b);
    // A fresh runtime numbers its tasks 1, 2, ... in the order `search` is called (none is refused
    // here: the root sandbox has no limits), which ties each result to its onTaskEnd event.
    let next = 0;
    let calls = 0;
    await Promise.all(
      Array.from({ length: threads * 2 }, async () => {
        for (let i = next++; i < plan.length; i = next++) {
          const size = plan[i]!;
          const taskId = ++calls;
          const result = (await runtime.search({ index: 'alpha', body: { burnCpuMs: size, checkpointEveryMs: 5 } })) as {
            burnedCpuMs: number;
          };
          const event = ends.get(taskId);
          if (event === undefined) throw new Error(`no onTaskEnd event for task ${taskId}`);
          const own = result.burnedCpuMs;
          errors.get(size)!.push(Math.abs(event.cpuTimeNs / 1e6 - own) / own);
        }
      }),
    );
  } finally {
    await runtime.close();
  }
  const rows = sizes.map((size) => {
    const list = errors.get(size)!;
    return { taskMs: size, tasks: list.length, medianError: median(list), p99Error: percentile(list, 99) };
  });
  console.log(`\nmeasurement fidelity: ${threads} workers all busy, per-task CPU figure vs the task's own thread clock`);
  printTable(
    ['task CPU', 'tasks', 'median |error|', 'p99 |error|', 'target'],
    rows.map((r) => [`${r.taskMs} ms`, r.tasks, `${(r.medianError * 100).toFixed(2)} %`, `${(r.p99Error * 100).toFixed(2)} %`, '<= 2 %']),
  );
  const data = { threads, rows };
  await writeResult('fidelity', data, CHARTS['fidelity']!(data));
  return { rows };
}

if (import.meta.url === `file://${process.argv[1]}`) await run(process.argv.includes('--full'));
