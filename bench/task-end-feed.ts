/**
 * Cost of one task end on the metrics feed: the per-sandbox task series (queue wait and run time
 * histograms, CPU seconds) as `runtime-metrics.ts` keeps them (typed children resolved once), against
 * prom-client's own Histogram and Counter children (`labels(...).observe(v)`, which validates and
 * hashes the labels on every call), measured in the same run; median of rounds.
 *
 * Usage: `npm run build && node dist/bench/task-end-feed.js`.
 */
import { Counter, Histogram, Registry } from 'prom-client';
import type { Runtime } from '../src/index.js';
import { RuntimeFeed } from '../src/observability/runtime-feed.js';
import { RuntimeMetrics, TASK_SECONDS_BUCKETS } from '../src/observability/runtime-metrics.js';
import type { TaskEndEvent } from '../src/runtime-options.js';
import { median, printTable, writeResult } from './harness.js';

const EVENT: TaskEndEvent = {
  runtimeId: 1,
  nodeId: 'node-1',
  taskId: 1,
  sandboxId: 'a',
  priority: 1,
  lane: 'default',
  ran: true,
  outcome: 'completed',
  cancellation: undefined,
  errorCode: undefined,
  cpuTimeNs: 12_345,
  waitMs: 0.2,
  runMs: 1.3,
};
const N = 500_000;

function timeUs(fn: () => void): number {
  const t0 = performance.now();
  for (let i = 0; i < N; i++) fn();
  return ((performance.now() - t0) * 1000) / N;
}

export async function run(): Promise<Record<string, unknown>> {
  const sandboxes = [{ id: 'a', name: 'a' }];
  const feed = new RuntimeFeed();
  feed.attach({ sandboxes: () => sandboxes, options: {} } as unknown as Runtime, true);
  new RuntimeMetrics(feed, { processMetrics: false });
  const registry = new Registry();
  const labelNames = ['sandbox_id', 'sandbox_name'];
  const wait = new Histogram({
    name: 'w',
    help: 'w',
    labelNames,
    buckets: [...TASK_SECONDS_BUCKETS],
    registers: [registry],
  });
  const runH = new Histogram({
    name: 'r',
    help: 'r',
    labelNames: [...labelNames, 'outcome'],
    buckets: [...TASK_SECONDS_BUCKETS],
    registers: [registry],
  });
  const cpu = new Counter({ name: 'c', help: 'c', labelNames, registers: [registry] });
  const w = wait.labels('a', 'a');
  const r = runH.labels('a', 'a', 'completed');
  const c = cpu.labels('a', 'a');
  const baseline = () => {
    w.observe(EVENT.waitMs / 1000);
    c.inc(EVENT.cpuTimeNs / 1e9);
    r.observe(EVENT.runMs / 1000);
  };
  const ours = () => feed.onTaskEnd(EVENT);
  const rounds = { prom: [] as number[], typed: [] as number[] };
  for (let k = 0; k < 7; k++) {
    rounds.prom.push(timeUs(baseline));
    rounds.typed.push(timeUs(ours));
  }
  const prom = median(rounds.prom);
  const typed = median(rounds.typed);
  console.log('\ntask-end feed: µs per task end, median of 7 rounds of 500,000');
  printTable(['prom-client children', 'metrics feed', 'feed / prom-client'], [[prom, typed, typed / prom]]);
  const data = { events: N, rounds: 7, promClientUs: prom, feedUs: typed, ratio: typed / prom };
  await writeResult('task-end-feed', data);
  return data;
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
