/**
 * Which OS scheduling weight should the background lane have? Bare piscina, two pools on the same
 * engine: a foreground pool (nice 0) takes cheap `match` queries open-loop at 20/s, a background pool
 * of the same size takes a flood of fuzzy/prefix queries at 1.2x and 2x its measured capacity, with
 * its threads at each weight in turn (nice 0, 5, 10, 19, SCHED_IDLE). Reports the cheap queries' p99
 * against their p99 alone, and the flood's completed queries per second against the nice-0 pool's.
 * Medians over `rounds` rounds, phases interleaved by round.
 *
 * Usage: `node [--single-threaded-gc] dist/bench/lane-weight.js [--rounds N] [--phase-seconds S]`.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { median, printTable, writeResult } from './harness.js';
import { capacity, indexResolver, phase, poolTarget, type Target } from './search-load.js';
import { availableCores } from '../native-shim/index.js';

const engineUrl = new URL('../src/engine/minisearch-engine.js', import.meta.url).href;
const shimUrl = new URL('../native-shim/index.js', import.meta.url).href;
const worker = fileURLToPath(new URL('../../bench/workers/weighted-engine.mjs', import.meta.url));
const DATA_DIR = path.resolve('.query-sandbox/bench');
const INDICES = ['easy-ham-1', 'easy-ham-2', 'hard-ham-1', 'spam-1', 'spam-2'];

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : Number(process.argv[i + 1]);
}

const resolve = indexResolver(INDICES);

function pool(threads: number, weight: number | 'idle'): Piscina {
  return new Piscina({
    filename: worker,
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: 600_000,
    workerData: { engineUrl, shimUrl, cacheDir: path.join(DATA_DIR, 'cache'), options: {}, weight },
  });
}

export async function run(): Promise<Record<string, unknown>> {
  const rounds = arg('--rounds', 3);
  const phaseMs = arg('--phase-seconds', 8) * 1000;
  const threads = Math.max(1, Math.round(availableCores()));
  const weights: Array<number | 'idle'> = [0, 5, 10, 19, 'idle'];
  const fg = pool(threads, 0);
  const bgs = new Map(weights.map((w) => [w, pool(threads, w)]));
  const target = (p: Piscina): Target => poolTarget('pool', resolve, p);
  const fgTarget = target(fg);
  // Cheap queries go to the foreground pool, the flood to a background one.
  const split = (bg: Piscina): Target => poolTarget('split', resolve, fg, bg);
  try {
    for (const p of [fg, ...bgs.values()]) await capacity(target(p), threads, 1000);
    const floodCapacity = await capacity(target(bgs.get(0)!), threads, 3000);
    console.log(
      `\nlane weight: ${threads} + ${threads} workers, flood capacity ${floodCapacity.toFixed(1)}/s, cheap at 20/s, ` +
        `${phaseMs / 1000} s phases, ${rounds} rounds${process.execArgv.includes('--single-threaded-gc') ? ', single-threaded GC' : ''}`,
    );
    const samples = new Map<string, { p99: number[]; floodPerSecond: number[] }>();
    const add = (key: string, p99: number, floodPerSecond: number) => {
      const s = samples.get(key) ?? { p99: [], floodPerSecond: [] };
      s.p99.push(p99);
      s.floodPerSecond.push(floodPerSecond);
      samples.set(key, s);
    };
    for (let round = 0; round < rounds; round++) {
      const alone = await phase(fgTarget, 20, 0, phaseMs);
      add('alone', alone.result.p99Ms, 0);
      for (const load of [1.2, 2]) {
        for (const w of weights) {
          const started = performance.now();
          const { result, floodPending } = await phase(split(bgs.get(w)!), 20, load * floodCapacity, phaseMs);
          await Promise.all(floodPending);
          const floodPerSecond = (result.floodOk * 1000) / (performance.now() - started);
          add(`${load}x ${w}`, result.p99Ms, floodPerSecond);
          console.log(
            `  round ${round + 1} flood ${load}x, background ${String(w).padEnd(4)} cheap p99 ${result.p99Ms.toFixed(1)} ms, flood ${floodPerSecond.toFixed(1)}/s`,
          );
        }
      }
    }
    const aloneP99 = median(samples.get('alone')!.p99);
    const rows = [];
    for (const load of [1.2, 2]) {
      const base = median(samples.get(`${load}x 0`)!.floodPerSecond);
      for (const w of weights) {
        const s = samples.get(`${load}x ${w}`)!;
        rows.push({
          load,
          weight: String(w),
          p99Ms: median(s.p99),
          p99VsAlone: median(s.p99) / aloneP99,
          floodVsNice0: median(s.floodPerSecond) / base,
        });
      }
    }
    console.log(`cheap p99 alone ${aloneP99.toFixed(2)} ms (median of ${rounds})`);
    printTable(
      ['flood', 'background weight', 'cheap p99 ms', 'p99 / alone', 'flood done / nice 0'],
      rows.map((r) => [`${r.load}x`, r.weight, r.p99Ms, r.p99VsAlone, r.floodVsNice0]),
    );
    await writeResult('lane-weight', { phaseMs, rounds, aloneP99, rows }, undefined);
    return { aloneP99, rows };
  } finally {
    await fg.destroy();
    for (const p of bgs.values()) await p.destroy();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
