/**
 * Overhead of the governed runtime against bare piscina (FIFO, no accounting), measured in the same
 * run: both pools run the same handler (`workers/spin-task.mjs`) with the same number of workers and
 * tasks in flight, in interleaved rounds so that machine noise hits both alike. Prints throughput
 * and latency ratios (governed / bare) for a trivial task and a 1 ms task, writes
 * `bench/results/overhead.json`.
 *
 * Usage: `npm run bench` (quick) or `npm run bench -- --full`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { createRuntime } from '../src/index.js';

const full = process.argv.includes('--full');
const rounds = full ? 9 : 5;
const threads = Math.max(1, os.availableParallelism());
const inFlight = threads * 4;
const workerFile = fileURLToPath(new URL('../../bench/workers/spin-task.mjs', import.meta.url));

interface RoundResult {
  readonly tasksPerSecond: number;
  readonly p50LatencyMs: number;
}

/** Runs `count` tasks with `inFlight` outstanding; returns throughput and median latency. */
async function drive(submit: (n: number) => Promise<unknown>, count: number): Promise<RoundResult> {
  const latencies: number[] = new Array(count);
  let next = 0;
  const started = performance.now();
  const lane = async () => {
    for (let n = next++; n < count; n = next++) {
      const t0 = performance.now();
      await submit(n);
      latencies[n] = performance.now() - t0;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const elapsed = performance.now() - started;
  latencies.sort((a, b) => a - b);
  return { tasksPerSecond: (count * 1000) / elapsed, p50LatencyMs: latencies[Math.floor(count / 2)]! };
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function main(): Promise<void> {
  const bare = new Piscina({
    filename: workerFile,
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: 60_000,
  });
  const governed = await createRuntime({ engine: workerFile, threads, dataDir: '.query-sandbox/bench' });
  const cases = [
    { name: 'trivial task', spinMs: 0, count: full ? 20_000 : 5_000, target: 1.1 },
    { name: '1 ms task', spinMs: 1, count: full ? 4_000 : 1_000, target: 1.02 },
  ];
  const results = [];
  for (const c of cases) {
    const body = (n: number) => ({ n, spinMs: c.spinMs });
    // Warm-up, both sides.
    await drive((n) => bare.run(body(n)), 200);
    await drive((n) => governed.search({ index: 'bench', body: body(n) }), 200);
    const bareRounds: RoundResult[] = [];
    const governedRounds: RoundResult[] = [];
    for (let r = 0; r < rounds; r++) {
      // Alternate which side goes first so that drift is shared.
      const order = r % 2 === 0 ? ['bare', 'governed'] : ['governed', 'bare'];
      for (const side of order) {
        if (side === 'bare') bareRounds.push(await drive((n) => bare.run(body(n)), c.count));
        else
          governedRounds.push(
            await drive((n) => governed.search({ index: 'bench', body: body(n) }), c.count),
          );
      }
    }
    const bareTps = median(bareRounds.map((r) => r.tasksPerSecond));
    const govTps = median(governedRounds.map((r) => r.tasksPerSecond));
    const bareP50 = median(bareRounds.map((r) => r.p50LatencyMs));
    const govP50 = median(governedRounds.map((r) => r.p50LatencyMs));
    results.push({
      case: c.name,
      tasks: c.count,
      rounds,
      bare: { tasksPerSecond: bareTps, p50LatencyMs: bareP50 },
      governed: { tasksPerSecond: govTps, p50LatencyMs: govP50 },
      // governed / bare for time (latency) and bare / governed for throughput: above 1 = governed is slower.
      latencyRatio: govP50 / bareP50,
      throughputCostRatio: bareTps / govTps,
      target: c.target,
    });
  }
  await governed.close();
  await bare.destroy();

  const machine = { cores: os.availableParallelism(), node: process.version, threads, inFlight };
  console.log(
    `overhead: governed runtime vs bare piscina (${machine.cores} cores, Node ${machine.node}, ${threads} workers, ${inFlight} in flight, median of ${rounds} interleaved rounds)`,
  );
  console.log(
    'case            bare tasks/s  governed tasks/s  cost (bare/gov)  bare p50 ms  gov p50 ms  latency ratio  target',
  );
  for (const r of results) {
    console.log(
      `${r.case.padEnd(14)}  ${r.bare.tasksPerSecond.toFixed(0).padStart(12)}  ${r.governed.tasksPerSecond.toFixed(0).padStart(16)}  ` +
        `${r.throughputCostRatio.toFixed(3).padStart(15)}  ${r.bare.p50LatencyMs.toFixed(3).padStart(11)}  ` +
        `${r.governed.p50LatencyMs.toFixed(3).padStart(10)}  ${r.latencyRatio.toFixed(3).padStart(13)}  <= ${r.target}`,
    );
  }
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/overhead.json', `${JSON.stringify({ machine, results }, null, 2)}\n`);
}

await main();
