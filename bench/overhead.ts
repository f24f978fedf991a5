/**
 * Overhead of the governed runtime against bare piscina (FIFO, no accounting), measured in the same
 * run: both pools run the same handler (`workers/spin-task.mjs`) with the same number of workers and
 * tasks in flight, in interleaved rounds so that machine noise hits both alike. Reports, for a trivial
 * task and a 1 ms task, throughput and median latency, and the ratios governed / bare (time per task:
 * bare throughput / governed throughput; latency: governed p50 / bare p50). Targets: <= 1.10 for the
 * trivial task, <= 1.02 for the 1 ms task.
 *
 * Metrics on and off: a second governed runtime runs with the metrics feed (`withTaskEnds`: the
 * per-sandbox histograms observe every task end) and its prom-client registry scraped once a second,
 * as Prometheus would; `metricsTimeRatio` = governed throughput / metered throughput (above 1: metrics
 * cost time per task). All three sides take turns in every round.
 *
 * Context, in the same rounds: the runtime with `prefetchTasks: 0` (docs/lanes.md, "Prefetch"), bare
 * piscina fed from a FIFO queue in front of it, one task per free worker (what any runtime that
 * orders tasks itself must do without prefetch), and bare piscina with `concurrentTasksPerWorker: 2`
 * (piscina's own pipelining, which the runtime's prefetch does too, revocably):
 * `unprefetchedTimeRatio`, `fedTimeRatio`, `pipelinedBareTimeRatio`.
 *
 * Usage: part of `npm run bench`; alone: `node --single-threaded-gc dist/bench/overhead.js [--full]
 * [--round-seconds S]` (`npm run bench:overhead`).
 * `--round-seconds S` (1..600) makes each side's round of each case about S seconds long: its task
 * count is raised to S times bare piscina's rate over the default count, after the warm-up (bare
 * piscina's own rounds come out somewhat shorter when it speeds up, the runtime's longer).
 */
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { createRuntime } from '../src/index.js';
import { RuntimeFeed, withTaskEnds } from '../src/observability/runtime-feed.js';
import { RuntimeMetrics } from '../src/observability/runtime-metrics.js';
import { CHARTS } from './charts.js';
import { benchPhase } from './progress.js';
import { median, printTable, refuseUnknownArguments, writeResult } from './harness.js';

const workerFile = fileURLToPath(new URL('../../bench/workers/spin-task.mjs', import.meta.url));

interface RoundResult {
  readonly tasksPerSecond: number;
  readonly p50LatencyMs: number;
}

/** Runs `count` tasks with `inFlight` outstanding; returns throughput and median latency. */
async function drive(
  submit: (n: number) => Promise<unknown>,
  count: number,
  inFlight: number,
): Promise<RoundResult> {
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

/**
 * Runs tasks on `pool` from a FIFO queue in front of it, handing piscina a task only while fewer than
 * `workers` are in flight: the way a runtime with its own queue order must feed it (without prefetch).
 */
function fedPiscina(pool: Piscina, workers: number): (task: unknown) => Promise<unknown> {
  const queue: { task: unknown; resolve: (v: unknown) => void; reject: (e: unknown) => void }[] = [];
  let inFlight = 0;
  const pump = (): void => {
    // The queue holds at most the callers' tasks in flight (a few): shift() is cheap here.
    for (
      let next = inFlight < workers ? queue.shift() : undefined;
      next !== undefined;
      next = inFlight < workers ? queue.shift() : undefined
    ) {
      inFlight++;
      pool.run(next.task).then(
        (value) => {
          inFlight--;
          pump();
          next.resolve(value);
        },
        (error: unknown) => {
          inFlight--;
          pump();
          next.reject(error);
        },
      );
    }
  };
  return (task) =>
    new Promise((resolve, reject) => {
      queue.push({ task, resolve, reject });
      pump();
    });
}

export async function run(full: boolean, roundSeconds?: number): Promise<Record<string, unknown>> {
  const rounds = full ? 9 : 5;
  const governed = await createRuntime({ engine: workerFile, dataDir: '.query-sandbox/bench' });
  const feed = new RuntimeFeed();
  const metered = await createRuntime(
    withTaskEnds({ engine: workerFile, dataDir: '.query-sandbox/bench' }, feed),
  );
  const metrics = new RuntimeMetrics(feed.attach(metered, true));
  let scrapes = 0;
  let scrapeBytes = 0;
  const scraper = setInterval(() => {
    void metrics.metrics().then((text) => {
      scrapes++;
      scrapeBytes = text.length;
    });
  }, 1000);
  // The runtime without prefetch (docs/lanes.md, "Prefetch"): each task from its queue once a worker is free.
  const unprefetched = await createRuntime({
    engine: workerFile,
    dataDir: '.query-sandbox/bench',
    prefetchTasks: 0,
  });
  const threads = governed.options.threads;
  const inFlight = threads * 4;
  const bare = new Piscina({
    filename: workerFile,
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: 60_000,
  });
  // Bare piscina fed from a FIFO queue in front of it, one task per free worker: the least any
  // runtime that orders tasks itself adds to piscina.
  const fedPool = new Piscina({
    filename: workerFile,
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: 60_000,
  });
  const fed = fedPiscina(fedPool, threads);
  // piscina pipelining itself: each worker takes a second task while it runs one (its least-busy balancer).
  const pipelinedPool = new Piscina({
    filename: workerFile,
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: 60_000,
    concurrentTasksPerWorker: 2,
  });
  const cases = [
    { name: 'trivial task', spinMs: 0, count: full ? 20_000 : 5_000, target: 1.1 },
    { name: '1 ms task', spinMs: 1, count: full ? 4_000 : 1_000, target: 1.02 },
  ];
  const results = [];
  try {
    for (const c of cases) {
      benchPhase(c.name);
      const body = (n: number) => ({ n, spinMs: c.spinMs });
      const runBare = (n: number) => bare.run(body(n));
      const runGoverned = (n: number) => governed.search({ index: 'bench', body: body(n) });
      const runMetered = (n: number) => metered.search({ index: 'bench', body: body(n) });
      const runUnprefetched = (n: number) => unprefetched.search({ index: 'bench', body: body(n) });
      const runFed = (n: number) => fed(body(n));
      const runPipelined = (n: number) => pipelinedPool.run(body(n));
      // Warm-up, every side.
      await drive(runBare, 500, inFlight);
      await drive(runGoverned, 500, inFlight);
      await drive(runMetered, 500, inFlight);
      await drive(runUnprefetched, 500, inFlight);
      await drive(runFed, 500, inFlight);
      await drive(runPipelined, 500, inFlight);
      // With --round-seconds: bare piscina's rate, warm, over the default count, sets the count.
      const count =
        roundSeconds === undefined
          ? c.count
          : Math.max(
              c.count,
              Math.ceil(roundSeconds * (await drive(runBare, c.count, inFlight)).tasksPerSecond),
            );
      const lanesBefore = governed.nodeStats().lanes;
      const bareRounds: RoundResult[] = [];
      const governedRounds: RoundResult[] = [];
      const meteredRounds: RoundResult[] = [];
      const unprefetchedRounds: RoundResult[] = [];
      const fedRounds: RoundResult[] = [];
      const pipelinedRounds: RoundResult[] = [];
      const sides = [
        () => drive(runBare, count, inFlight).then((x) => bareRounds.push(x)),
        () => drive(runGoverned, count, inFlight).then((x) => governedRounds.push(x)),
        () => drive(runMetered, count, inFlight).then((x) => meteredRounds.push(x)),
        () => drive(runUnprefetched, count, inFlight).then((x) => unprefetchedRounds.push(x)),
        () => drive(runFed, count, inFlight).then((x) => fedRounds.push(x)),
        () => drive(runPipelined, count, inFlight).then((x) => pipelinedRounds.push(x)),
      ];
      for (let r = 0; r < rounds; r++) {
        // Rotate which side goes first so that drift is shared.
        for (let k = 0; k < sides.length; k++) await sides[(r + k) % sides.length]!();
      }
      // How the governed runtime's prefetch went in this case's rounds: tasks pipelined, and stolen.
      const lanesAfter = governed.nodeStats().lanes;
      const pipelined = lanesAfter.reduce(
        (n, l, i) => n + l.pipelinedTasks - lanesBefore[i]!.pipelinedTasks,
        0,
      );
      const stolen = lanesAfter.reduce((n, l, i) => n + l.stolenTasks - lanesBefore[i]!.stolenTasks, 0);
      const bareTps = median(bareRounds.map((r) => r.tasksPerSecond));
      const govTps = median(governedRounds.map((r) => r.tasksPerSecond));
      const bareP50 = median(bareRounds.map((r) => r.p50LatencyMs));
      const govP50 = median(governedRounds.map((r) => r.p50LatencyMs));
      const meteredTps = median(meteredRounds.map((r) => r.tasksPerSecond));
      const meteredP50 = median(meteredRounds.map((r) => r.p50LatencyMs));
      const unprefetchedTps = median(unprefetchedRounds.map((r) => r.tasksPerSecond));
      const fedTps = median(fedRounds.map((r) => r.tasksPerSecond));
      const pipelinedTps = median(pipelinedRounds.map((r) => r.tasksPerSecond));
      results.push({
        case: c.name,
        tasks: count,
        bare: { tasksPerSecond: bareTps, p50LatencyMs: bareP50 },
        governed: { tasksPerSecond: govTps, p50LatencyMs: govP50 },
        metered: { tasksPerSecond: meteredTps, p50LatencyMs: meteredP50 },
        unprefetched: { tasksPerSecond: unprefetchedTps },
        fed: { tasksPerSecond: fedTps },
        pipelinedBare: { tasksPerSecond: pipelinedTps },
        // The runtime without prefetch, and bare piscina fed one task per free worker, against bare piscina.
        unprefetchedTimeRatio: bareTps / unprefetchedTps,
        fedTimeRatio: bareTps / fedTps,
        pipelinedBareTimeRatio: bareTps / pipelinedTps,
        // Above 1: the governed runtime takes longer per task.
        timeRatio: bareTps / govTps,
        latencyRatio: govP50 / bareP50,
        // Above 1: metrics on takes longer per task than metrics off.
        metricsTimeRatio: govTps / meteredTps,
        metricsLatencyRatio: meteredP50 / govP50,
        target: c.target,
        governedPipelinedTasks: pipelined,
        governedStolenTasks: stolen,
        governedTasks: count * rounds,
      });
    }
  } finally {
    clearInterval(scraper);
    await governed.close();
    await metered.close();
    await unprefetched.close();
    await bare.destroy();
    await fedPool.destroy();
    await pipelinedPool.destroy();
  }
  console.log(
    `\noverhead: governed runtime vs bare piscina, ${threads} workers, ${inFlight} in flight, median of ${rounds} interleaved rounds` +
      `; tasks per round: ${results.map((r) => `${r.case} ${r.tasks}`).join(', ')}`,
  );
  printTable(
    [
      'case',
      'bare tasks/s',
      'governed tasks/s',
      'metrics on tasks/s',
      'time ratio',
      'bare p50 ms',
      'governed p50 ms',
      'latency ratio',
      'target',
    ],
    results.map((r) => [
      r.case,
      Math.round(r.bare.tasksPerSecond),
      Math.round(r.governed.tasksPerSecond),
      Math.round(r.metered.tasksPerSecond),
      r.timeRatio,
      r.bare.p50LatencyMs,
      r.governed.p50LatencyMs,
      r.latencyRatio,
      `<= ${r.target}`,
    ]),
  );
  console.log(
    `time ratio without prefetch: ${results.map((r) => `${r.case} ${r.unprefetchedTimeRatio.toFixed(2)}x`).join(', ')}; ` +
      `bare piscina fed one task per free worker from a queue in front of it: ${results.map((r) => `${r.case} ${r.fedTimeRatio.toFixed(2)}x`).join(', ')}; ` +
      `bare piscina with concurrentTasksPerWorker 2: ${results.map((r) => `${r.case} ${r.pipelinedBareTimeRatio.toFixed(3)}x`).join(', ')}`,
  );
  console.log(
    `governed runtime's prefetch: ${results.map((r) => `${r.case} ${r.governedPipelinedTasks} of ${r.governedTasks} tasks pipelined, ${r.governedStolenTasks} of them stolen`).join('; ')}`,
  );
  console.log(
    `metrics on / off: ${results.map((r) => `${r.case} time ${r.metricsTimeRatio.toFixed(3)}x, p50 ${r.metricsLatencyRatio.toFixed(3)}x`).join('; ')} ` +
      `(${scrapes} scrapes of ${scrapeBytes} bytes during the run)`,
  );
  const data = { threads, inFlight, rounds, scrapeIntervalMs: 1000, scrapeBytes, results };
  await writeResult('overhead', data, CHARTS['overhead']!(data));
  return { results };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const at = args.indexOf('--round-seconds');
  const given = at < 0 ? undefined : args[at + 1];
  const seconds = at < 0 ? undefined : Number(given);
  refuseUnknownArguments('overhead', { '--full': false, '--round-seconds': true }, args);
  if (seconds !== undefined && !(Number.isFinite(seconds) && seconds >= 1 && seconds <= 600)) {
    console.error(`--round-seconds must be a number of seconds in 1..600; received ${given ?? '(nothing)'}`);
    process.exit(2);
  }
  await run(args.includes('--full'), seconds);
}
