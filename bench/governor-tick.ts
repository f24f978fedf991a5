/**
 * Cost of one governor tick (sample every running task's thread clock and memory, aggregate up the
 * tree, decide, publish, act) with 64 workers each running a task and 1,000 tasks queued, on the real
 * runtime with a trivial engine (tasks that sleep), over about 80 ticks (start-up ticks included). Prints the median and p99 in µs and the share of
 * one core the governor takes at the default 100 ms interval; the baseline is the same runtime with
 * 2 workers and nothing queued, measured in the same run.
 *
 * Usage: `npm run bench:tick`.
 */
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { createRuntime } from '../src/index.js';

const echoEngine = fileURLToPath(new URL('../../test/fixtures/echo-engine.mjs', import.meta.url));

async function measure(
  threads: number,
  queued: number,
): Promise<{ median: number; p99: number; ticks: number }> {
  const sandboxes = Array.from({ length: 20 }, (_, i) => ({
    name: `s${i}`,
    priority: i,
    resourceConsumptionLimits: { cpu: { low: 0.9, high: 1 }, memory: { low: 0.9, high: 1 } },
    selectionAttributes: [{ name: 'userPattern', value: `u${i}_*` }],
  }));
  const runtime = await createRuntime({
    engine: echoEngine,
    threads,
    spareWorkers: 0,
    workerHeapMb: 64,
    maxQueuedTasks: queued + threads,
    dataDir: '.query-sandbox/bench',
    sandboxes: { sandboxes },
  });
  const before = runtime.governorStats().ticks;
  const pending = Array.from({ length: threads + queued }, (_, i) =>
    runtime.search({ index: 'alpha', body: { sleepMs: 9000 }, user: `u${i % 20}_x` }).catch(() => undefined),
  );
  await new Promise((r) => setTimeout(r, 8000)); // about 80 ticks with every worker busy
  const stats = runtime.governorStats();
  const node = runtime.nodeStats();
  if (node.running !== threads || node.queued !== queued) {
    throw new Error(
      `expected ${threads} running and ${queued} queued, saw ${node.running} and ${node.queued}`,
    );
  }
  await runtime.close();
  await Promise.all(pending);
  return { median: stats.tickMedianUs, p99: stats.tickP99Us, ticks: stats.ticks - before };
}

const base = await measure(2, 0);
const big = await measure(64, 1000);
const share = (us: number) => ((us / 1000 / 100) * 100).toFixed(3);
console.log(
  `governor tick: ${os.availableParallelism()} cores, Node ${process.version}; ticks counted over the whole run`,
);
console.log('case                              median us   p99 us   share of one core at 100 ms');
console.log(
  `2 workers (2 sleeping tasks)      ${base.median.toFixed(0).padStart(9)}  ${base.p99.toFixed(0).padStart(7)}   ${share(base.median)} %`,
);
console.log(
  `64 workers (64 tasks), 1000 queued ${big.median.toFixed(0).padStart(9)}  ${big.p99.toFixed(0).padStart(7)}   ${share(big.median)} %`,
);
console.log(
  `ratio (64 / 2): median ${(big.median / base.median).toFixed(1)}x, p99 ${(big.p99 / base.p99).toFixed(1)}x`,
);
