/**
 * The load of the isolation benchmarks (`isolation.ts`, `lane-weight.ts`, `bare-capacity.ts`): the
 * cheap and expensive queries, bare piscina on the benchmark's engine, and the open-loop phase and
 * closed-loop capacity measured against any target.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as hdr from 'hdr-histogram-js';
import { Piscina } from 'piscina';

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
  readonly okPerSecond: number;
  readonly sent: number;
  readonly ok: number;
  readonly failed: number;
  readonly floodOk: number;
  readonly floodRefused: number;
}

function histogram() {
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

/** Expensive requests per second the workers complete with the queue kept full (closed loop). */
export async function capacity(target: Target, threads: number, ms: number): Promise<number> {
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
