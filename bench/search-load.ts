/**
 * The load of the isolation benchmarks (`isolation.ts`, `lane-weight.ts`, `bare-capacity.ts`): the
 * cheap and expensive queries, bare piscina on the benchmark's engine, and the open-loop phase and
 * closed-loop capacity measured against any target.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as hdr from 'hdr-histogram-js';
import { Piscina } from 'piscina';
import { busiestThreads, type ThreadTimeSnapshot, threadTimes } from './thread-time.js';

/** The engine module every benchmark worker loads. */
export const engineUrl = new URL('../src/engine/minisearch-engine.js', import.meta.url).href;
const bareWorker = fileURLToPath(new URL('../../bench/workers/bare-engine.mjs', import.meta.url));
const CHEAP_WORDS = ['money', 'meeting', 'free', 'offer', 'report', 'linux', 'update', 'click'];
const EXPENSIVE = [
  { query: { match: { body: { query: 'mony fre ofer clik remuve', fuzziness: 2 } } } },
  { query: { prefix: { body: 'a' } } },
  {
    query: {
      multi_match: { query: 'bussines oportunity investmnt', fields: ['subject', 'body'], fuzziness: 2 },
    },
  },
  { query: { prefix: { body: 'co' } } },
];
export const cheap = (i: number) => ({
  index: 'spam-*',
  body: { query: { match: { subject: CHEAP_WORDS[i % CHEAP_WORDS.length] } } },
});
export const expensive = (i: number) => ({
  index: 'spam-*,easy-ham-*',
  body: EXPENSIVE[i % EXPENSIVE.length],
});

export interface Target {
  readonly name: string;
  cheap(i: number): Promise<unknown>;
  expensive(i: number): Promise<unknown>;
}

/** The engine indices an index expression (`spam-*,easy-ham-*`) names, as the runtime resolves them. */
export function indexResolver(indices: readonly string[]): (expr: string) => string[] {
  return (expr) =>
    indices.filter((n) =>
      new RegExp(
        `^(${expr
          .split(',')
          .map((e) => e.replace('*', '.*'))
          .join('|')})$`,
      ).test(n),
    );
}

/** Bare piscina on the benchmark's engine: `threads` workers, piscina's FIFO queue, no accounting. */
export function barePiscina(threads: number, dataDir: string): Piscina {
  return new Piscina({
    filename: bareWorker,
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: 600_000,
    workerData: { engineUrl, cacheDir: path.join(dataDir, 'cache'), options: {} },
  });
}

/** A target that runs the cheap queries on `cheapPool` and the expensive ones on `expensivePool`. */
export function poolTarget(
  name: string,
  resolve: (expr: string) => string[],
  cheapPool: Piscina,
  expensivePool = cheapPool,
): Target {
  return {
    name,
    cheap: (i) => {
      const r = cheap(i);
      return cheapPool.run({ indices: resolve(r.index), body: r.body });
    },
    expensive: (i) => {
      const r = expensive(i);
      return expensivePool.run({ indices: resolve(r.index), body: r.body });
    },
  };
}

export interface PhaseResult {
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** The cheap requests' latencies, µs from each one's intended send time (to pool across phases). */
  readonly histogram: hdr.Histogram;
  readonly okPerSecond: number;
  readonly sent: number;
  readonly ok: number;
  readonly failed: number;
  readonly floodOk: number;
  readonly floodRefused: number;
}

/** A latency histogram, µs, 1 µs to 600 s, 3 significant digits. */
export function histogram(): hdr.Histogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 600_000_000,
    numberOfSignificantValueDigits: 3,
  });
}

/**
 * Sends `cheapPerSecond` cheap and `floodPerSecond` expensive requests open-loop for `ms`, waits for
 * the cheap ones (the flood's stragglers are awaited by the caller's drain), returns the cheap class's figures.
 */
export async function phase(target: Target, cheapPerSecond: number, floodPerSecond: number, ms: number) {
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
      for (
        let at = (sent * 1000) / cheapPerSecond;
        at <= elapsed && at < ms;
        at = (sent * 1000) / cheapPerSecond
      ) {
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
        for (
          let at = (floodSent * 1000) / floodPerSecond;
          at <= elapsed && at < ms;
          at = (floodSent * 1000) / floodPerSecond
        ) {
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
    histogram: h,
    okPerSecond: (ok * 1000) / ms,
    sent,
    ok,
    failed,
    get floodOk() {
      return floodOk;
    },
    get floodRefused() {
      return floodRefused;
    },
  };
  return { result, floodPending, started };
}

/** Completed expensive queries and the wall time they took, ms. */
interface ClosedLoop {
  readonly done: number;
  readonly ms: number;
}

/**
 * Keeps the queue full (`threads` x 2 expensive requests in flight) for `ms`, then waits for the last
 * ones to settle. A refused request is not counted; its sender waits 5 ms before the next.
 */
async function closedLoop(target: Target, threads: number, ms: number): Promise<ClosedLoop> {
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
  return { done, ms: performance.now() - started };
}

/** Expensive requests per second the workers complete with the queue kept full (closed loop). */
export async function capacity(target: Target, threads: number, ms: number): Promise<number> {
  const { done, ms: took } = await closedLoop(target, threads, ms);
  return (done * 1000) / took;
}

/** One target's part of an interleaved capacity measurement (`interleavedCapacity`). */
export interface SliceCapacity {
  /** Completed queries per second over the target's slices. */
  readonly perSecond: number;
  /** Queries completed in its slices. */
  readonly done: number;
  /** Wall time of its slices, ms (each runs until its last query settles, so a little over the slice). */
  readonly ms: number;
  /**
   * Time on a CPU of its workers (the `threads` busiest threads of each slice, the main thread
   * excepted) over `ms` x `threads`, 0..1; NaN without `/proc` schedstat.
   */
  readonly workerRunShare: number;
  /** Time its workers were runnable but waited for a CPU, over `ms` x `threads`, 0..1; NaN likewise. */
  readonly workerWaitShare: number;
  /** Its workers' CPU time per completed query, ms; NaN likewise. */
  readonly cpuPerQueryMs: number;
}

/**
 * The closed-loop capacity of several targets measured in interleaved slices: `sliceMs` on each in
 * turn, until each has had `msEach`. Each cycle visits every target once, the order rotating from
 * cycle to cycle and reversed every `targets.length` cycles (`offset` shifts the first order), so
 * every target takes every position equally often (and, for two or three targets, follows every other
 * target within a cycle equally often: rotations alone would only ever put B after A, never A after
 * B). A host whose speed moves during the measurement (the same pool's completions per 10 s here
 * moved by up to 15 % from one 10 s to the next) then moves all targets alike: back-to-back phases of
 * 10 s each put that drift into their ratio.
 *
 * Per slice it also reads every thread's schedstat (`readThreads`, default `threadTimes` from
 * `bench/thread-time.ts`) and charges the `threads` busiest, other than the main thread, to the
 * target: its workers.
 *
 * @returns one entry per target, in the order given.
 * @throws RangeError when `msEach` or `sliceMs` is not a positive number, or `targets` is empty.
 */
export async function interleavedCapacity(
  targets: readonly Target[],
  threads: number,
  msEach: number,
  sliceMs = 1000,
  offset = 0,
  readThreads: () => ThreadTimeSnapshot = threadTimes,
): Promise<SliceCapacity[]> {
  if (!(msEach > 0) || !(sliceMs > 0) || targets.length === 0) {
    throw new RangeError(
      `interleavedCapacity needs targets and positive times; received ${targets.length} targets, msEach ${msEach}, sliceMs ${sliceMs}`,
    );
  }
  const sums = targets.map(() => ({ done: 0, ms: 0, runMs: 0, waitMs: 0, threadMs: 0, counted: true }));
  const cycles = Math.max(1, Math.round(msEach / sliceMs));
  for (let cycle = 0; cycle < cycles; cycle++) {
    for (const i of sliceOrder(targets.length, cycle + offset)) {
      const before = readThreads();
      const slice = await closedLoop(targets[i]!, threads, sliceMs);
      const workers = busiestThreads(before, readThreads(), threads);
      const sum = sums[i]!;
      sum.done += slice.done;
      sum.ms += slice.ms;
      sum.runMs += workers.runMs;
      sum.waitMs += workers.waitMs;
      sum.threadMs += workers.wallMs * threads;
      if (workers.count < threads) sum.counted = false;
    }
  }
  return sums.map((s) => ({
    perSecond: (s.done * 1000) / s.ms,
    done: s.done,
    ms: s.ms,
    workerRunShare: s.counted ? s.runMs / s.threadMs : Number.NaN,
    workerWaitShare: s.counted ? s.waitMs / s.threadMs : Number.NaN,
    cpuPerQueryMs: s.counted && s.done > 0 ? s.runMs / s.done : Number.NaN,
  }));
}

/**
 * The order of cycle `cycle` over `n` targets: 0..n-1 rotated by `cycle`, reversed when
 * `floor(cycle / n)` is odd. Over 2n consecutive cycles every target is in every position twice
 * (for n = 3, these are the six orders).
 */
export function sliceOrder(n: number, cycle: number): number[] {
  const c = ((cycle % (2 * n)) + 2 * n) % (2 * n);
  const rotated = Array.from({ length: n }, (_, k) => (k + c) % n);
  return Math.floor(c / n) % 2 === 1 ? rotated.reverse() : rotated;
}
