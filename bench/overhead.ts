/**
 * Overhead of the governed runtime against bare piscina (FIFO, no accounting), measured in the same
 * run: both pools run the same handler (`workers/spin-task.mjs`) with the same number of workers and
 * tasks in flight, in interleaved rounds so that machine noise hits both alike. Reports, for a trivial
 * task and a 1 ms task, throughput and median latency, and the ratios governed / bare (time per task:
 * bare throughput / governed throughput; latency: governed p50 / bare p50). Targets: <= 1.10 for the
 * trivial task, <= 1.02 for the 1 ms task.
 *
 * Usage: part of `npm run bench`; alone: `node dist/bench/overhead.js [--full]`.
 */
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { createRuntime } from '../src/index.js';
import { type BarChart, median, printTable, writeResult } from './harness.js';

const workerFile = fileURLToPath(new URL('../../bench/workers/spin-task.mjs', import.meta.url));

interface RoundResult {
  readonly tasksPerSecond: number;
  readonly p50LatencyMs: number;
}

/** Runs `count` tasks with `inFlight` outstanding; returns throughput and median latency. */
async function drive(submit: (n: number) => Promise<unknown>, count: number, inFlight: number): Promise<RoundResult> {
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
  return { tasksPerSecond: (count * 1000) / elapsed, p50LatencyMs: median(latencies) };
}

export async function run(full: boolean): Promise<Record<string, unknown>> {
  const rounds = full ? 9 : 5;
  const governed = await createRuntime({ engine: workerFile, dataDir: '.query-sandbox/bench' });
  const threads = governed.options.threads;
  const inFlight = threads * 4;
  const bare = new Piscina({ filename: workerFile, minThreads: threads, maxThreads: threads, idleTimeout: 60_000 });
  const cases = [
    { name: 'trivial task', spinMs: 0, count: full ? 20_000 : 5_000, target: 1.1 },
    { name: '1 ms task', spinMs: 1, count: full ? 4_000 : 1_000, target: 1.02 },
  ];
  const results = [];
  try {
    for (const c of cases) {
      const body = (n: number) => ({ n, spinMs: c.spinMs });
      const runBare = (n: number) => bare.run(body(n));
      const runGoverned = (n: number) => governed.search({ index: 'bench', body: body(n) });
      // Warm-up, both sides.
      await drive(runBare, 500, inFlight);
      await drive(runGoverned, 500, inFlight);
      const bareRounds: RoundResult[] = [];
      const governedRounds: RoundResult[] = [];
      for (let r = 0; r < rounds; r++) {
        // Alternate which side goes first so that drift is shared.
        const first = r % 2 === 0;
        if (first) bareRounds.push(await drive(runBare, c.count, inFlight));
        governedRounds.push(await drive(runGoverned, c.count, inFlight));
        if (!first) bareRounds.push(await drive(runBare, c.count, inFlight));
      }
      const bareTps = median(bareRounds.map((r) => r.tasksPerSecond));
      const govTps = median(governedRounds.map((r) => r.tasksPerSecond));
      const bareP50 = median(bareRounds.map((r) => r.p50LatencyMs));
      const govP50 = median(governedRounds.map((r) => r.p50LatencyMs));
      results.push({
        case: c.name,
        tasks: c.count,
        bare: { tasksPerSecond: bareTps, p50LatencyMs: bareP50 },
        governed: { tasksPerSecond: govTps, p50LatencyMs: govP50 },
        // Above 1: the governed runtime takes longer per task.
        timeRatio: bareTps / govTps,
        latencyRatio: govP50 / bareP50,
        target: c.target,
      });
    }
  } finally {
    await governed.close();
    await bare.destroy();
  }
  console.log(`\noverhead: governed runtime vs bare piscina, ${threads} workers, ${inFlight} in flight, median of ${rounds} interleaved rounds`);
  printTable(
    ['case', 'bare tasks/s', 'governed tasks/s', 'time ratio', 'bare p50 ms', 'governed p50 ms', 'latency ratio', 'target'],
    results.map((r) => [
      r.case,
      Math.round(r.bare.tasksPerSecond),
      Math.round(r.governed.tasksPerSecond),
      r.timeRatio,
      r.bare.p50LatencyMs,
      r.governed.p50LatencyMs,
      r.latencyRatio,
      `<= ${r.target}`,
    ]),
  );
  const chart: BarChart = {
    title: 'Time per task, governed / bare piscina (1 = no overhead)',
    rows: results.flatMap((r) => [
      { case: r.case, ratio: 'time (throughput)', value: r.timeRatio },
      { case: r.case, ratio: 'p50 latency', value: r.latencyRatio },
      { case: r.case, ratio: 'target', value: r.target },
    ]),
    x: 'case',
    y: 'value',
    yTitle: 'governed / bare',
    color: 'ratio',
  };
  await writeResult('overhead', { threads, inFlight, rounds, results }, chart);
  return { results };
}

if (import.meta.url === `file://${process.argv[1]}`) await run(process.argv.includes('--full'));
