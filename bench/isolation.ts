/**
 * Isolation, the headline: does important work stay fast while the node is flooded, without buying
 * it by refusing or idling?
 *
 * The real engine (MiniSearch over the SpamAssassin corpus). A high-priority client (`dash_*`,
 * sandbox `dashboards`, priority 20) sends cheap `match` queries open-loop at 20/s; a low-priority
 * client (`analyst_*`, sandbox `analysts`, priority 5, CPU limits 0.3 / 0.6) floods expensive fuzzy
 * and prefix queries open-loop at 1.2x, then 2x, the capacity of `cores` bare piscina workers, as
 * measured (closed loop) at the start of the same round (the mean of bare piscina and its twin in the
 * round's capacity slices, below). Cases, each phase `phaseSeconds` long, interleaved round by round:
 * - (a) alone: the cheap client alone on the runtime with lanes (the reference p99);
 * - (b) bare piscina: one FIFO pool of `cores` workers, no accounting (the baseline);
 * - (P) two bare pools: the cheap queries on `cores` workers at nice 0, the flood on `cores` workers
 *   at the background lane's weight, no accounting: what kernel placement alone gives, without the
 *   runtime's own work on the main thread;
 * - (L) lanes, enforcement disabled and no queue-wait bound for the flood (`max_queue_wait: -1` on
 *   `analysts`): isolation from placement alone, nothing is refused;
 * - (L+) lanes, the default configuration (the governor rejects and cancels `analysts`);
 * - (S) one lane (`lanes: false`, the pool before lanes), the default configuration;
 * - (S+) one lane with one worker reserved for priority 20 (`--full` only).
 * Each round also measures the flood's closed-loop capacity alone on the background lane, on bare
 * piscina and on a second bare pool identical to the first (b'), in interleaved 1 s slices until each
 * has had `--capacity-seconds` (default 30; `interleavedCapacity` in search-load.ts). The background
 * lane's figure is the median of the rounds' ratios to the mean of the two bare pools; b' against b
 * (an A/A comparison: the same code on both sides) is printed beside it as the measurement's own
 * noise. Per side it prints the share of the wall time its workers ran and waited for a CPU and their
 * CPU per query (from schedstat), which tell a host that took the cores from a pool that costs more
 * per query. Why slices and a twin: the same bare pool's completions moved by up to 15 % from one
 * 10 s to the next on this machine, and back-to-back 10 s phases put that into the ratio (per round
 * 0.83-1.06x in one run; 0.88-1.10x for b' against b in 10 s of 1 s slices each). The flood's
 * throughput against bare piscina's is likewise the median of the rounds' ratios, each round's phase
 * against the same round's bare piscina phase (`floodVsBare` in the JSON; `floodVsBareOfMedians` is
 * the ratio of the medians). Other figures are medians over the rounds; beside the p99 ratios the
 * table also prints the p99 of every round's cheap queries pooled (`p99PooledVsAlone`), as context:
 * a phase's p99 at 20/s for 10 s rests on its two slowest queries. Latency is open-loop, from each request's
 * intended send time (hdr-histogram), so a stalled sender does not hide queueing. The flood's
 * throughput is its completions per second from the phase's start until its last request settled.
 *
 * Targets: (L) and (L+) p99 within 1.5x of (a); (L) flood throughput >= 0.9x (b)'s; the background
 * lane alone >= 0.95x bare piscina's capacity.
 *
 * GC: `npm run bench` runs under `node --single-threaded-gc`, as `npm start` serves (docs/lanes.md,
 * "GC helper threads"). The flag is process-wide, so bare piscina here collects the same way. As
 * context, not a target, each round also runs bare piscina's closed loop for one `phaseSeconds` phase
 * in a child process with node's default flags (`bench/bare-capacity.ts`) and prints the background
 * lane's capacity against it; that figure is one phase a round in another process, not interleaved,
 * so it carries the host's drift that the slices take out of the target's figure.
 *
 * Usage: part of `npm run bench`; alone: `node [--single-threaded-gc] dist/bench/isolation.js [--full]
 * [--rounds N] [--phase-seconds S] [--capacity-seconds S] [--helper-thread-weight N]` (N and S
 * positive, `--rounds` an integer, `--helper-thread-weight` an integer 0..19; run alone, it refuses
 * any other argument; a bad one is one line on stderr and exit 2).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { createRuntime, type QueryPriorityInput, type Runtime } from '../src/index.js';
import { CHARTS } from './charts.js';
import { median, printTable, refuseUnknownArguments, writeResult } from './harness.js';
import { bareCapacityWithDefaultGc } from './bare-capacity.js';
import { benchPhase } from './progress.js';
import {
  barePiscina,
  capacity,
  cheap,
  engineUrl,
  expensive,
  histogram,
  indexResolver,
  interleavedCapacity,
  type PhaseResult,
  phase,
  poolTarget,
  type SliceCapacity,
  type Target,
} from './search-load.js';

const weightedWorker = fileURLToPath(new URL('../../bench/workers/weighted-engine.mjs', import.meta.url));
const shimUrl = new URL('../native-shim/index.js', import.meta.url).href;
const sandboxFile = fileURLToPath(new URL('../../config/sandboxes.json', import.meta.url));
const DATA_DIR = path.resolve('.query-sandbox/bench');

function runtimeTarget(runtime: Runtime, name: string): Target {
  return {
    name,
    cheap: (i) => runtime.search({ ...cheap(i), user: 'dash_bench' }),
    expensive: (i) => runtime.search({ ...expensive(i), user: `analyst_${i % 4}` }),
  };
}

/** This module's flags and whether each takes a value (run alone, anything else is refused). */
const FLAGS: Readonly<Record<string, boolean>> = {
  '--full': false,
  '--rounds': true,
  '--phase-seconds': true,
  '--capacity-seconds': true,
  '--helper-thread-weight': true,
};

/**
 * The number after `name` on the command line, or `fallback` when the flag is absent; exits 2 with
 * one line when the value is not a positive number (or, with `integer`, not a positive integer).
 */
function numberArg(name: string, fallback: number, integer = false): number {
  const i = process.argv.indexOf(name);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]);
  if (!(n > 0) || (integer && !Number.isInteger(n))) {
    console.error(
      `${name} must be a positive ${integer ? 'integer' : 'number'}; received ${process.argv[i + 1] ?? '(nothing)'}`,
    );
    process.exit(2);
  }
  return n;
}

/** `--helper-thread-weight N`, an integer nice value 0..19, or undefined; exits 2 with one line otherwise. */
function helperWeightArg(): number | undefined {
  const i = process.argv.indexOf('--helper-thread-weight');
  if (i < 0) return undefined;
  const raw = process.argv[i + 1];
  const n = Number(raw);
  if (raw === undefined || raw.trim() === '' || !Number.isInteger(n) || n < 0 || n > 19) {
    console.error(
      `--helper-thread-weight must be an integer nice value in 0..19; received ${raw ?? '(nothing)'}`,
    );
    process.exit(2);
  }
  return n;
}

/** One case of the benchmark. */
interface Case {
  readonly id: string;
  readonly label: string;
  readonly target: Target;
  /** Called before the phase (enforcement, rules). */
  readonly setUp: () => Promise<void>;
  /** Waits until the target is idle again. */
  readonly drain: () => Promise<void>;
}

export async function run(full: boolean): Promise<Record<string, unknown>> {
  const rounds = numberArg('--rounds', full ? 5 : 3, true);
  const phaseMs = numberArg('--phase-seconds', full ? 20 : 10) * 1000;
  // Per target per round: the background lane, bare piscina and its twin, 1 s slices each in turn.
  const capacityMs = numberArg('--capacity-seconds', 30) * 1000;
  const cheapPerSecond = 20;
  // The bundled sandboxes; the stores are in memory, so nothing from earlier runs applies.
  // `node --single-threaded-gc dist/bench/isolation.js`: every isolate collects on its own thread.
  const singleThreadedGc = process.execArgv.includes('--single-threaded-gc');
  // `--helper-thread-weight N`: the lanes runtime renices the process's helper threads (every case
  // in this process then runs with them at that nice).
  const helperThreadWeight = helperWeightArg();
  const laned = await createRuntime({
    sandboxes: sandboxFile,
    dataDir: DATA_DIR,
    nodeId: 'lanes',
    ...(helperThreadWeight !== undefined ? { helperThreadWeight } : {}),
  });
  const single = await createRuntime({
    sandboxes: sandboxFile,
    dataDir: DATA_DIR,
    lanes: false,
    nodeId: 'single',
  });
  const threads = single.options.threads;
  const bare = barePiscina(threads, DATA_DIR);
  // The A/A control of the background lane's figure: the same pool again.
  const bareTwin = barePiscina(threads, DATA_DIR);
  const backgroundWeight = laned.options.lanes.at(-1)!.weight;
  const twoPools = [0, backgroundWeight].map(
    (weight) =>
      new Piscina({
        filename: weightedWorker,
        minThreads: threads,
        maxThreads: threads,
        idleTimeout: 600_000,
        workerData: { engineUrl, shimUrl, cacheDir: path.join(DATA_DIR, 'cache'), options: {}, weight },
      }),
  );
  const indices = laned.nodeStats().engineIndices!;
  const resolveIndex = indexResolver(indices);
  const bareTarget = poolTarget('bare piscina', resolveIndex, bare);
  const bareTwinTarget = poolTarget("bare piscina's twin", resolveIndex, bareTwin);
  const twoPoolTarget = poolTarget('two bare pools', resolveIndex, twoPools[0]!, twoPools[1]!);
  const idle = (runtime: Runtime) => async () => {
    while (runtime.nodeStats().queued > 0 || runtime.nodeStats().running > 0)
      await new Promise((r) => setTimeout(r, 50));
    // Let the governor's usage window pass so one phase does not start in the last one's state.
    await new Promise((r) => setTimeout(r, 1000));
  };
  // "Nothing refused" (the (L) case and the capacity phases) means no queue-wait bound either: the
  // analysts' flood waits as long as on bare piscina. The default configuration keeps the bound (5 s,
  // maxQueueWaitMs). Set through the registry (the bench's data dir keeps it), so every phase sets it.
  const configure =
    (runtime: Runtime, enforcement: 'enabled' | 'disabled', rules: QueryPriorityInput) => async () => {
      runtime.setEnforcement(enforcement);
      await runtime.setQueryPriority(rules);
      if (runtime.sandboxes().some((s) => s.id === 'analysts')) {
        await runtime.sandboxRegistry.update('analysts', {
          max_queue_wait: enforcement === 'disabled' ? '-1' : null,
        });
      }
    };
  const lanedTarget = runtimeTarget(laned, 'lanes');
  const singleTarget = runtimeTarget(single, 'one lane');
  const cases: Case[] = [
    { id: 'b', label: '(b) bare piscina', target: bareTarget, setUp: async () => {}, drain: async () => {} },
    {
      id: 'P',
      label: '(P) two bare pools',
      target: twoPoolTarget,
      setUp: async () => {},
      drain: async () => {},
    },
    {
      id: 'L',
      label: '(L) lanes, enforcement off',
      target: lanedTarget,
      setUp: configure(laned, 'disabled', {}),
      drain: idle(laned),
    },
    {
      id: 'L+',
      label: '(L+) lanes, default config',
      target: lanedTarget,
      setUp: configure(laned, 'enabled', {}),
      drain: idle(laned),
    },
    {
      id: 'S',
      label: '(S) one lane, default config',
      target: singleTarget,
      setUp: configure(single, 'enabled', {}),
      drain: idle(single),
    },
  ];
  if (full) {
    cases.push({
      id: 'S+',
      label: '(S+) one lane, 1 reserved',
      target: singleTarget,
      setUp: configure(single, 'enabled', { priorities: [{ priority: 20, reserved_workers: 1 }] }),
      drain: idle(single),
    });
  }
  const samples = new Map<
    string,
    {
      p99: number[];
      p50: number[];
      floodPerSecond: number[];
      floodOk: number[];
      floodRefused: number[];
      /** Every round's cheap latencies together, µs. */
      pooled: ReturnType<typeof histogram>;
    }
  >();
  const record = (key: string, r: PhaseResult, floodPerSecond: number) => {
    const s = samples.get(key) ?? {
      p99: [],
      p50: [],
      floodPerSecond: [],
      floodOk: [],
      floodRefused: [],
      pooled: histogram(),
    };
    s.pooled.add(r.histogram);
    s.p99.push(r.p99Ms);
    s.p50.push(r.p50Ms);
    s.floodPerSecond.push(floodPerSecond);
    s.floodOk.push(r.floodOk);
    s.floodRefused.push(r.floodRefused);
    samples.set(key, s);
  };
  // Per round: the closed-loop capacity alone of the background lane, bare piscina, its twin (the A/A
  // control) and (bareDefaultGc, only when this process runs under --single-threaded-gc, which applies
  // to every pool of the process) bare piscina in a child process with node's default flags
  // (bench/bare-capacity.ts).
  const capacities = {
    bare: [] as number[],
    bareTwin: [] as number[],
    background: [] as number[],
    bareDefaultGc: [] as number[],
  };
  /** Per round, per side: the workers' share of the wall time on a CPU and waiting, CPU per query. */
  const workerTimes = {
    bare: [] as SliceCapacity[],
    bareTwin: [] as SliceCapacity[],
    background: [] as SliceCapacity[],
  };
  let floodCapacity = 0;
  /** Per round, the capacity its 1.2x and 2x floods are sized from (bare piscina's, that round). */
  const floodRates: number[] = [];
  try {
    // Warm up (the JIT, the workers' first queries), then measure the flood's rate on bare piscina.
    await capacity(bareTarget, threads, 1500);
    await capacity(bareTwinTarget, threads, 1500);
    laned.setEnforcement('disabled');
    await capacity(lanedTarget, threads, 1500);
    await capacity(singleTarget, threads, 1500);
    await capacity(twoPoolTarget, threads, 1500);
    await Promise.all(Array.from({ length: 50 }, (_, i) => bareTarget.cheap(i)));
    await Promise.all(Array.from({ length: 50 }, (_, i) => twoPoolTarget.cheap(i)));
    // The flood's rate: the median of three closed-loop runs on bare piscina.
    const measured: number[] = [];
    for (let i = 0; i < 3; i++) measured.push(await capacity(bareTarget, threads, full ? 5000 : 3000));
    floodCapacity = median(measured);
    const lanes = laned.nodeStats().lanes;
    console.log(
      `\nisolation: lanes ${lanes.map((l) => `${l.name} ${l.workers}+${l.spareWorkers} at ${l.weight === 'idle' ? 'SCHED_IDLE' : `nice ${l.weight}`}${l.weighted ? '' : ' (UNWEIGHTED)'}`).join(', ')}; ` +
        `one lane and bare piscina: ${threads} workers; flood capacity at the start ${floodCapacity.toFixed(1)}/s (bare, closed loop; each round's floods are sized from that round's); ` +
        `cheap queries at ${cheapPerSecond}/s; ${rounds} rounds of ${phaseMs / 1000} s phases, capacity alone ${capacityMs / 1000} s per side in 1 s slices` +
        (singleThreadedGc ? '; single-threaded GC (node --single-threaded-gc)' : '') +
        (helperThreadWeight !== undefined ? `; helper threads at nice ${helperThreadWeight}` : ''),
    );
    for (let round = 1; round <= rounds; round++) {
      // The background lane alone (enforcement off) against bare piscina and its twin, closed loop,
      // in interleaved slices: a drift of the host hits every side alike.
      benchPhase(`round ${round}: flood capacity alone`);
      await configure(laned, 'disabled', {})();
      const [background, bareSide, twinSide] = await interleavedCapacity(
        [lanedTarget, bareTarget, bareTwinTarget],
        threads,
        capacityMs,
        1000,
        round - 1,
      );
      for (const [key, side] of [
        ['background', background!],
        ['bare', bareSide!],
        ['bareTwin', twinSide!],
      ] as const) {
        capacities[key].push(side.perSecond);
        workerTimes[key].push(side);
      }
      await idle(laned)();
      if (singleThreadedGc)
        capacities.bareDefaultGc.push(await bareCapacityWithDefaultGc(threads, phaseMs, indices, DATA_DIR));
      const workers = (s: SliceCapacity) =>
        `workers ran ${pct(s.workerRunShare)}, waited ${pct(s.workerWaitShare)}, ${s.cpuPerQueryMs.toFixed(1)} ms CPU/query`;
      console.log(
        `  round ${round}: flood capacity alone: bare ${bareSide!.perSecond.toFixed(1)}/s (${workers(bareSide!)}), ` +
          `bare's twin ${twinSide!.perSecond.toFixed(1)}/s (${(twinSide!.perSecond / bareSide!.perSecond).toFixed(3)}x bare), ` +
          `background lane ${background!.perSecond.toFixed(1)}/s (${(background!.perSecond / bareMean(capacities, -1)).toFixed(3)}x the bare pools; ${workers(background!)})` +
          (singleThreadedGc
            ? `, bare with the default GC (own process) ${capacities.bareDefaultGc.at(-1)!.toFixed(1)}/s`
            : ''),
      );
      // The floods of this round are sized from bare piscina's capacity measured just now: the
      // host's speed moves between rounds (21.8-41.5/s here), so a rate measured once at the start
      // could make a "1.2x" flood one that bare piscina keeps up with.
      const roundCapacity = bareMean(capacities, -1);
      floodRates.push(roundCapacity);
      benchPhase(`round ${round}: (a) alone`);
      await configure(laned, 'disabled', {})();
      const alone = await phase(lanedTarget, cheapPerSecond, 0, phaseMs);
      record('a', alone.result, 0);
      console.log(
        `  round ${round}: (a) alone, lanes                 p50 ${alone.result.p50Ms.toFixed(1)} ms, p99 ${alone.result.p99Ms.toFixed(1)} ms`,
      );
      for (const load of [1.2, 2]) {
        for (const c of cases) {
          benchPhase(`round ${round}: ${c.label}, ${load}x`);
          await c.setUp();
          const { result, floodPending, started } = await phase(
            c.target,
            cheapPerSecond,
            load * roundCapacity,
            phaseMs,
          );
          await Promise.all(floodPending);
          const floodPerSecond = (result.floodOk * 1000) / (performance.now() - started);
          await c.drain();
          record(`${c.id} ${load}`, result, floodPerSecond);
          console.log(
            `  round ${round}: ${`${c.label}, ${load}x`.padEnd(36)} p50 ${result.p50Ms.toFixed(1)} ms, p99 ${result.p99Ms.toFixed(1)} ms; ` +
              `flood ${result.floodOk} done, ${result.floodRefused} refused, ${floodPerSecond.toFixed(1)}/s`,
          );
        }
      }
    }
  } finally {
    laned.setEnforcement('enabled');
    await laned.close();
    await single.close();
    await bare.destroy();
    await bareTwin.destroy();
    for (const p of twoPools) await p.destroy();
  }
  const aloneP99 = median(samples.get('a')!.p99);
  // p99 of every round's cheap queries pooled (3 x 200 at the defaults), beside the median of the
  // rounds' p99s that the targets use: a phase's p99 alone rests on its two slowest queries.
  const pooledP99 = (key: string) => samples.get(key)!.pooled.getValueAtPercentile(99) / 1000;
  const alonePooledP99 = pooledP99('a');
  const rows: Array<{
    case: string;
    id: string;
    load: number;
    p50Ms: number;
    p99Ms: number;
    p99VsAlone: number;
    p99PooledMs: number;
    p99PooledVsAlone: number;
    floodOk: number;
    floodRefused: number;
    floodPerSecond: number;
    floodVsBare: number;
    floodVsBareOfMedians: number;
  }> = [];
  for (const load of [1.2, 2]) {
    const bareFloods = samples.get(`b ${load}`)!.floodPerSecond;
    const bareFlood = median(bareFloods);
    for (const c of cases) {
      const s = samples.get(`${c.id} ${load}`)!;
      rows.push({
        case: c.label,
        id: c.id,
        load,
        p50Ms: median(s.p50),
        p99Ms: median(s.p99),
        p99VsAlone: median(s.p99) / aloneP99,
        p99PooledMs: pooledP99(`${c.id} ${load}`),
        p99PooledVsAlone: pooledP99(`${c.id} ${load}`) / alonePooledP99,
        floodOk: median(s.floodOk),
        floodRefused: median(s.floodRefused),
        floodPerSecond: median(s.floodPerSecond),
        // As the background lane's figure: the median of the rounds' ratios (each against bare
        // piscina's phase of the same round), the ratio of the medians beside it.
        floodVsBare: median(s.floodPerSecond.map((f, i) => f / bareFloods[i]!)),
        floodVsBareOfMedians: median(s.floodPerSecond) / bareFlood,
      });
    }
  }
  // The median of the rounds' ratios to the mean of the two bare pools; the ratio of the medians
  // beside it, for comparison; and the A/A control, bare's twin against bare, as its noise.
  const bareMeans = capacities.bare.map((_, i) => bareMean(capacities, i));
  const backgroundRatios = capacities.background.map((b, i) => b / bareMeans[i]!);
  const backgroundVsBare = median(backgroundRatios);
  const backgroundVsBareOfMedians = median(capacities.background) / median(bareMeans);
  const twinRatios = capacities.bareTwin.map((t, i) => t / capacities.bare[i]!);
  const bareTwinVsBare = median(twinRatios);
  // Against bare piscina with node's default GC (null when this run used the default GC itself).
  const backgroundVsBareDefaultGc = singleThreadedGc
    ? median(capacities.background) / median(capacities.bareDefaultGc)
    : null;
  const bareVsBareDefaultGc = singleThreadedGc ? median(bareMeans) / median(capacities.bareDefaultGc) : null;
  const sideFigures = (sides: readonly SliceCapacity[]) => ({
    workerRunShare: median(sides.map((s) => s.workerRunShare)),
    workerWaitShare: median(sides.map((s) => s.workerWaitShare)),
    cpuPerQueryMs: median(sides.map((s) => s.cpuPerQueryMs)),
  });
  const workerFigures = {
    bare: sideFigures(workerTimes.bare),
    bareTwin: sideFigures(workerTimes.bareTwin),
    background: sideFigures(workerTimes.background),
  };
  const spread = (xs: readonly number[]) =>
    `${Math.min(...xs).toFixed(3)}-${Math.max(...xs).toFixed(3)}x by round`;
  console.log(
    `\nmedians of ${rounds} rounds: cheap p99 alone ${aloneP99.toFixed(2)} ms (${alonePooledP99.toFixed(2)} ms over the rounds pooled); flood capacity alone (${capacityMs / 1000} s per side per round, 1 s slices): ` +
      `bare ${median(capacities.bare).toFixed(1)}/s, bare's twin ${median(capacities.bareTwin).toFixed(1)}/s, ` +
      `background lane ${median(capacities.background).toFixed(1)}/s: ${backgroundVsBare.toFixed(3)}x the bare pools (the median of the rounds' ratios, ${spread(backgroundRatios)}; ` +
      `${backgroundVsBareOfMedians.toFixed(3)}x the ratio of the medians); ` +
      `A/A, bare's twin against bare: ${bareTwinVsBare.toFixed(3)}x (${spread(twinRatios)})` +
      (singleThreadedGc
        ? `; bare with the default GC in its own process ${median(capacities.bareDefaultGc).toFixed(1)}/s ` +
          `(background lane ${backgroundVsBareDefaultGc!.toFixed(3)}x of it, bare here ${bareVsBareDefaultGc!.toFixed(3)}x)`
        : ''),
  );
  for (const [label, f] of [
    ['bare piscina', workerFigures.bare],
    ["bare's twin", workerFigures.bareTwin],
    ['background lane', workerFigures.background],
  ] as const) {
    console.log(
      `  ${label.padEnd(16)} workers on a CPU ${pct(f.workerRunShare)} of the wall time, waiting for one ${pct(f.workerWaitShare)}, ${f.cpuPerQueryMs.toFixed(1)} ms CPU per query`,
    );
  }
  printTable(
    [
      'case',
      'flood',
      'p50 ms',
      'p99 ms',
      'p99 / alone',
      '(pooled)',
      'flood done',
      'refused',
      'flood/s',
      'flood / bare',
      '(of medians)',
    ],
    rows.map((r) => [
      r.case,
      `${r.load}x`,
      r.p50Ms,
      r.p99Ms,
      r.p99VsAlone,
      r.p99PooledVsAlone,
      r.floodOk,
      r.floodRefused,
      r.floodPerSecond,
      r.floodVsBare,
      r.floodVsBareOfMedians,
    ]),
  );
  console.log(
    'targets: (L) and (L+) p99 / alone <= 1.5 (the median of the rounds\' p99s; "(pooled)": every round\'s cheap queries together, context); (L) flood / bare >= 0.9; background lane alone / bare >= 0.95',
  );
  const summary = [1.2, 2].map((load) => {
    const get = (id: string) => rows.find((r) => r.id === id && r.load === load);
    return {
      load,
      lanesVsAloneP99: get('L')!.p99VsAlone,
      lanesDefaultVsAloneP99: get('L+')!.p99VsAlone,
      lanesFloodVsBare: get('L')!.floodVsBare,
      singleVsAloneP99: get('S')!.p99VsAlone,
      twoPoolsVsAloneP99: get('P')!.p99VsAlone,
      bareVsAloneP99: get('b')!.p99VsAlone,
    };
  });
  const data = {
    phaseMs,
    rounds,
    cheapPerSecond,
    helperThreadWeight: helperThreadWeight ?? null,
    singleThreadedGc,
    floodCapacity,
    floodRates,
    aloneP99,
    alonePooledP99,
    capacityMs,
    capacities,
    backgroundVsBare,
    backgroundVsBareOfMedians,
    bareTwinVsBare,
    workerFigures,
    workerTimes,
    backgroundVsBareDefaultGc,
    bareVsBareDefaultGc,
    rows,
    summary,
  };
  await writeResult('isolation', data, CHARTS['isolation']!(data));
  return { aloneP99, rows, summary, backgroundVsBare, bareTwinVsBare, backgroundVsBareDefaultGc };
}

/** The mean capacity of bare piscina and its twin in round `i` (negative: from the end). */
function bareMean(capacities: { bare: readonly number[]; bareTwin: readonly number[] }, i: number): number {
  return (capacities.bare.at(i)! + capacities.bareTwin.at(i)!) / 2;
}

/** A share 0..1 as a percentage, one decimal; "n/a" without schedstat. */
function pct(share: number): string {
  return Number.isNaN(share) ? 'n/a' : `${(share * 100).toFixed(1)} %`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  refuseUnknownArguments('isolation', FLAGS);
  await run(process.argv.includes('--full'));
}
