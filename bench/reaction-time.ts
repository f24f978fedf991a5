/**
 * Reaction time of the governor: a task that takes its sandbox over the high CPU limit from its
 * first interval (one busy worker is 0.5 of a 2-core node; the limit is 0.1) must be soft-cancelled
 * within 2 intervals and, when it ignores that, hard-cancelled within the grace period plus one
 * interval. Measures, from submission to the cancellation reaching the caller, `runs` tasks of each
 * kind, one at a time on an idle pool, and prints the distribution against those bounds.
 *
 * Usage: `npm run bench:reaction` (20 of each).
 */
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { CancelledError, createRuntime } from '../src/index.js';

const workerFile = fileURLToPath(new URL('../../bench/workers/reaction-task.mjs', import.meta.url));
const runs = Number(process.argv[2] ?? 20);
const intervalMs = 100;
const graceIntervals = 2;

function summary(values: number[]): string {
  const s = [...values].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return `p50 ${at(0.5).toFixed(0)} ms  p90 ${at(0.9).toFixed(0)} ms  max ${s[s.length - 1]!.toFixed(0)} ms`;
}

const runtime = await createRuntime({
  engine: workerFile,
  threads: 1,
  intervalMs,
  graceIntervals,
  // One cancellation per task here: the rate limit must not be what is measured.
  cancellation: { burst: 1000, ratePerSecond: 1000 },
  dataDir: '.query-sandbox/bench',
  sandboxes: {
    sandboxes: [
      {
        name: 'hog',
        priority: 1,
        resourceConsumptionLimits: { cpu: { low: 0.05, high: 0.1 } },
        selectionAttributes: [{ name: 'userPattern', value: 'hog_*' }],
      },
    ],
  },
});
const soft: number[] = [];
const hard: number[] = [];
for (const cooperative of [true, false]) {
  for (let i = 0; i < runs; i++) {
    await new Promise((r) => setTimeout(r, 3 * intervalMs)); // usage back to 0, spare ready
    const started = performance.now();
    const outcome = await runtime
      .search({ index: 'x', body: { cooperative }, user: 'hog_1' })
      .catch((e: unknown) => e);
    const ms = performance.now() - started;
    if (!(outcome instanceof CancelledError) || outcome.hard === cooperative) {
      throw new Error(
        `run ${i} (${cooperative ? 'cooperative' : 'uncooperative'}): unexpected outcome ${String(outcome)}`,
      );
    }
    (cooperative ? soft : hard).push(ms);
  }
}
await runtime.close();
const softBound = 2 * intervalMs;
const hardBound = (graceIntervals + 1) * intervalMs;
console.log(
  `reaction time: ${runs} tasks each, interval ${intervalMs} ms, grace ${graceIntervals} intervals, ${os.availableParallelism()} cores, Node ${process.version}`,
);
console.log(
  `soft (cooperative task):    ${summary(soft)}   bound ${softBound} ms   within: ${soft.filter((v) => v <= softBound).length}/${runs}`,
);
console.log(
  `hard (ignores soft cancel): ${summary(hard)}   bound ${softBound + hardBound} ms (soft bound + grace + 1 interval)   within: ${hard.filter((v) => v <= softBound + hardBound).length}/${runs}`,
);
