/**
 * Isolation, the headline: does important work stay fast while the node is flooded?
 *
 * The real engine (MiniSearch over the SpamAssassin corpus) on `cores` workers. A high-priority
 * client (`dash_*`, sandbox `dashboards`, priority 20) sends cheap `match` queries open-loop at a
 * fixed rate; a low-priority client (`analyst_*`, sandbox `analysts`, priority 5, CPU limits 0.3 /
 * 0.6) floods expensive fuzzy and prefix queries open-loop at 1.2x, then 2x, the workers' measured
 * capacity for them. The high-priority p50, p99 and throughput are reported:
 * - (a) alone, on the runtime (no flood);
 * - (b) with the flood on bare piscina (FIFO, no accounting; the same engine in the workers);
 * - (c) with the flood under the runtime (the bundled sandboxes, priority queue, governor), and (c+)
 *   the same with one worker reserved for priority 20 and above (`reserved_workers: 1`).
 * Latency is open-loop, from each request's intended send time (hdr-histogram), so a stalled sender
 * does not hide queueing. Targets: (c) p99 within 1.5x of (a), and at least 10x better than (b).
 *
 * Usage: part of `npm run bench`; alone: `node dist/bench/isolation.js [--full]`.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as hdr from 'hdr-histogram-js';
import { Piscina } from 'piscina';
import { createRuntime, type Runtime } from '../src/index.js';
import { CHARTS } from './charts.js';
import { benchPhase } from './progress.js';
import { printTable, writeResult } from './harness.js';

const engineUrl = new URL('../src/engine/minisearch-engine.js', import.meta.url).href;
const bareWorker = fileURLToPath(new URL('../../bench/workers/bare-engine.mjs', import.meta.url));
const sandboxFile = fileURLToPath(new URL('../../config/sandboxes.json', import.meta.url));
const DATA_DIR = path.resolve('.query-sandbox/bench');

const CHEAP_WORDS = ['money', 'meeting', 'free', 'offer', 'report', 'linux', 'update', 'click'];
const EXPENSIVE = [
  { query: { match: { body: { query: 'mony fre ofer clik remuve', fuzziness: 2 } } } },
  { query: { prefix: { body: 'a' } } },
  { query: { multi_match: { query: 'bussines oportunity investmnt', fields: ['subject', 'body'], fuzziness: 2 } } },
  { query: { prefix: { body: 'co' } } },
];
const cheap = (i: number) => ({ index: 'spam-*', body: { query: { match: { subject: CHEAP_WORDS[i % CHEAP_WORDS.length] } } } });
const expensive = (i: number) => ({ index: 'spam-*,easy-ham-*', body: EXPENSIVE[i % EXPENSIVE.length] });

interface Target {
  readonly name: string;
  cheap(i: number): Promise<unknown>;
  expensive(i: number): Promise<unknown>;
}

interface PhaseResult {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly okPerSecond: number;
  readonly sent: number;
  readonly ok: number;
  readonly failed: number;
  readonly floodOk: number;
  readonly floodRefused: number;
}

function histogram() {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: 3 });
}

/**
 * Sends `cheapPerSecond` cheap and `floodPerSecond` expensive requests open-loop for `ms`, waits for
 * the cheap ones (the flood's stragglers are awaited by the caller's drain), returns the cheap class's figures.
 */
async function phase(target: Target, cheapPerSecond: number, floodPerSecond: number, ms: number) {
  const h = histogram();
  let sent = 0;
  let ok = 0;
  let failed = 0;
  let floodSent = 0;
  let floodOk = 0;
  let floodRefused = 0;
  const cheapPending: Promise<void>[] = [];
  const floodPending: Promise<void>[] = [];
  const started = performance.now();
  await new Promise<void>((resolve) => {
    const tick = () => {
      const elapsed = performance.now() - started;
      for (let at = (sent * 1000) / cheapPerSecond; at <= elapsed && at < ms; at = (sent * 1000) / cheapPerSecond) {
        const intended = started + at;
        cheapPending.push(
          target.cheap(sent++).then(
            () => {
              ok++;
              h.recordValue(Math.max(1, Math.round((performance.now() - intended) * 1000)));
            },
            () => {
              failed++;
            },
          ),
        );
      }
      if (floodPerSecond > 0) {
        for (let at = (floodSent * 1000) / floodPerSecond; at <= elapsed && at < ms; at = (floodSent * 1000) / floodPerSecond) {
          floodPending.push(
            target.expensive(floodSent++).then(
              () => {
                floodOk++;
              },
              () => {
                floodRefused++;
              },
            ),
          );
        }
      }
      if (elapsed >= ms) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
  await Promise.all(cheapPending);
  const result: PhaseResult = {
    p50Ms: h.totalCount === 0 ? Number.NaN : h.getValueAtPercentile(50) / 1000,
    p99Ms: h.totalCount === 0 ? Number.NaN : h.getValueAtPercentile(99) / 1000,
    okPerSecond: (ok * 1000) / ms,
    sent,
    ok,
    failed,
    floodOk,
    floodRefused,
  };
  return { result, floodPending };
}

/** Expensive requests per second the workers complete with the queue kept full (closed loop). */
async function capacity(target: Target, threads: number, ms: number): Promise<number> {
  let done = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: threads * 2 }, async () => {
      while (performance.now() - started < ms) {
        // The runtime refuses some (analysts above their low limit): count completions only.
        await target.expensive(next++).then(
          () => done++,
          () => new Promise((r) => setTimeout(r, 5)),
        );
      }
    }),
  );
  return (done * 1000) / (performance.now() - started);
}

function runtimeTarget(runtime: Runtime, name: string): Target {
  return {
    name,
    cheap: (i) => runtime.search({ ...cheap(i), user: 'dash_bench' }),
    expensive: (i) => runtime.search({ ...expensive(i), user: `analyst_${i % 4}` }),
  };
}

export async function run(full: boolean): Promise<Record<string, unknown>> {
  const phaseMs = full ? 20_000 : 6_000;
  const cheapPerSecond = 20;
  // The bundled sandboxes; the store is in memory, so nothing from earlier runs applies.
  const runtime = await createRuntime({ sandboxes: sandboxFile, dataDir: DATA_DIR });
  const threads = runtime.options.threads;
  const engineOptions = {};
  const bare = new Piscina({
    filename: bareWorker,
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: 60_000,
    workerData: { engineUrl, cacheDir: path.join(DATA_DIR, 'cache'), options: engineOptions },
  });
  const resolveIndex = (expr: string) => runtime.nodeStats().engineIndices!.filter((n) => new RegExp(`^(${expr.split(',').map((e) => e.replace('*', '.*')).join('|')})$`).test(n));
  const bareTarget: Target = {
    name: 'bare piscina',
    cheap: (i) => {
      const r = cheap(i);
      return bare.run({ indices: resolveIndex(r.index), body: r.body });
    },
    expensive: (i) => {
      const r = expensive(i);
      return bare.run({ indices: resolveIndex(r.index), body: r.body });
    },
  };
  const governed = runtimeTarget(runtime, 'runtime');
  const results: Array<Record<string, unknown>> = [];
  try {
    // Warm up both (the JIT, the workers' first queries).
    await capacity(bareTarget, threads, 1500);
    await capacity(governed, threads, 1500);
    await Promise.all(Array.from({ length: 50 }, (_, i) => bareTarget.cheap(i)));
    const floodCapacity = await capacity(bareTarget, threads, full ? 5000 : 3000);
    console.log(
      `\nisolation: ${threads} workers; capacity for the expensive queries ${floodCapacity.toFixed(1)}/s (bare piscina, closed loop); ` +
        `cheap high-priority queries at ${cheapPerSecond}/s; ${phaseMs / 1000} s per phase`,
    );
    const record = async (label: string, target: Target, load: number, drain: () => Promise<void>) => {
      benchPhase(label);
      const { result, floodPending } = await phase(target, cheapPerSecond, load * floodCapacity, phaseMs);
      await drain();
      await Promise.all(floodPending);
      results.push({ case: label, load, ...result });
      console.log(
        `  ${label.padEnd(34)} p50 ${result.p50Ms.toFixed(1)} ms, p99 ${result.p99Ms.toFixed(1)} ms, ${result.okPerSecond.toFixed(1)} ok/s` +
          (load > 0 ? `; flood ${result.floodOk} done, ${result.floodRefused} refused` : ''),
      );
    };
    // Bare piscina has no way to shed its backlog: the phase waits for every flood request.
    const drainBare = async () => {};
    const drainRuntime = async () => {
      while (runtime.nodeStats().queued > 0 || runtime.nodeStats().running > 0) await new Promise((r) => setTimeout(r, 100));
      // Let the governor's usage window pass so one phase does not start in the last one's state.
      await new Promise((r) => setTimeout(r, 1000));
    };
    await record('(a) alone, runtime', governed, 0, drainRuntime);
    await record('(a) alone, bare piscina', bareTarget, 0, drainBare);
    for (const load of [1.2, 2]) {
      await record(`(b) flood ${load}x, bare piscina`, bareTarget, load, drainBare);
      await runtime.setQueryPriority({});
      await record(`(c) flood ${load}x, runtime`, governed, load, drainRuntime);
      await runtime.setQueryPriority({ priorities: [{ priority: 20, reserved_workers: 1 }] });
      await record(`(c+) flood ${load}x, runtime, 1 reserved`, governed, load, drainRuntime);
      await runtime.setQueryPriority({});
    }
  } finally {
    await runtime.close();
    await bare.destroy();
  }
  const get = (label: string) => results.find((r) => r['case'] === label)!;
  const alone = get('(a) alone, runtime');
  const summary = [1.2, 2].map((load) => {
    const b = get(`(b) flood ${load}x, bare piscina`);
    const c = get(`(c) flood ${load}x, runtime`);
    const cr = get(`(c+) flood ${load}x, runtime, 1 reserved`);
    return {
      load,
      cVsAloneP99: (c['p99Ms'] as number) / (alone['p99Ms'] as number),
      bVsCP99: (b['p99Ms'] as number) / (c['p99Ms'] as number),
      cReservedVsAloneP99: (cr['p99Ms'] as number) / (alone['p99Ms'] as number),
      bVsCReservedP99: (b['p99Ms'] as number) / (cr['p99Ms'] as number),
    };
  });
  printTable(
    ['flood', '(c) p99 / (a)', '(b) p99 / (c)', '(c+) p99 / (a)', '(b) p99 / (c+)'],
    summary.map((s) => [`${s.load}x`, s.cVsAloneP99, s.bVsCP99, s.cReservedVsAloneP99, s.bVsCReservedP99]),
  );
  console.log('targets: (c) p99 / (a) <= 1.5, (b) p99 / (c) >= 10');
  const data = { phaseMs, cheapPerSecond, results, summary };
  await writeResult('isolation', data, CHARTS['isolation']!(data));
  return { results, summary };
}

if (import.meta.url === `file://${process.argv[1]}`) await run(process.argv.includes('--full'));
