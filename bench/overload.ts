/**
 * Overload, the short repro as a new user would try it, over HTTP against `query-sandbox
 * serve` in a child process (the default sandboxes and lanes, MiniSearch over SpamAssassin):
 * - a user who matches no sandbox (`alice`, so the root sandbox, priority 10) sends expensive fuzzy
 *   queries open-loop at `--flood` (default 3) times the measured capacity for `--flood-seconds`
 *   (default 20), each with a client time-out of 30 s (it aborts the request, closing its connection);
 * - a dashboards user (`dash_ops`, sandbox `dashboards`, priority 20) sends 20 cheap `match` queries a
 *   second, alone first (the reference) and then beside the flood.
 * Capacity is the fuzzy queries per second that the root sandbox completes closed-loop (twice the
 * threads in flight), measured once on the first server so that every configuration gets the same
 * offered load. Latency is open-loop, from each request's intended send time.
 *
 * Configurations (a fresh server each, interleaved round by round; `--configs a,b,...` picks some):
 * see `CONFIGS` below. The first is the baseline the others are compared with in the same run.
 *
 * Usage: `npm run build && node dist/bench/overload.js [--configs ...] [--rounds N] [--flood 3]
 * [--flood-seconds 20]`. Writes `bench/results/overload.json`.
 */
import * as hdr from 'hdr-histogram-js';
import { median, printTable, writeResult } from './harness.js';
import { benchDataDir, type SearchOutcome, searchOverHttp, startServer } from './server-process.js';

/** Server flags of each configuration; the first is the baseline. */
const CONFIGS: Readonly<Record<string, readonly string[]>> = {
  // No bound at all: the queue bound (1,000) is the only limit, as before this issue.
  unbounded: ['--max-queue-wait-ms', 'none', '--duress-shedding', 'off'],
  // The simple bound: a task waits at most 5 s.
  bound: ['--duress-shedding', 'off'],
  // Controlled delay (with the bound): under a standing queue (1 s) a task waits at most 100 ms.
  'bound+codel': ['--controlled-delay-ms', '100', '--duress-shedding', 'off'],
  'bound+codel+lifo': ['--controlled-delay-ms', '100', '--adaptive-lifo', 'on', '--duress-shedding', 'off'],
  // The defaults of this build: the bound and shedding in duress.
  default: [],
  'default+codel': ['--controlled-delay-ms', '100'],
};

const CHEAP_WORDS = ['money', 'meeting', 'free', 'offer', 'report', 'linux', 'update', 'click'];
const FUZZY = [
  'mony fre ofer clik remuve',
  'bussines oportunity investmnt',
  'lotery winnr claim prize',
  'mortgaeg rate aproved',
];
const CLIENT_TIMEOUT_MS = 30_000;
const DASH_PER_SECOND = 20;

const cheapBody = (i: number) => ({
  query: { match: { subject: CHEAP_WORDS[i % CHEAP_WORDS.length] } },
  size: 5,
});
const fuzzyBody = (i: number) => ({
  query: { match: { body: { query: FUZZY[i % FUZZY.length], fuzziness: 2 } } },
  size: 5,
});

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
}
function numberArg(name: string, fallback: number): number {
  const text = arg(name);
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!(n > 0)) throw new Error(`${name} must be a positive number; received ${text}`);
  return n;
}

function histogram() {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 600_000_000,
    numberOfSignificantValueDigits: 3,
  });
}

/** Figures of one class of requests in one phase. */
class ClassFigures {
  sent = 0;
  ok = 0;
  readonly okLatency = histogram();
  /** Every answer (ok or refused), ms from the intended send time. */
  readonly answered = histogram();
  readonly refusedLatency = histogram();
  readonly refused = new Map<string, number>();
  timeouts = 0;
  errors = 0;

  record(o: SearchOutcome): void {
    const us = Math.max(1, Math.round(o.latencyMs * 1000));
    if (o.status === 200) {
      this.ok++;
      this.okLatency.recordValue(us);
      this.answered.recordValue(us);
    } else if (o.status === 429) {
      this.refused.set(o.reason ?? '?', (this.refused.get(o.reason ?? '?') ?? 0) + 1);
      this.refusedLatency.recordValue(us);
      this.answered.recordValue(us);
    } else if (o.reason === 'client_timeout') this.timeouts++;
    else this.errors++;
  }

  summary() {
    const ms = (h: hdr.Histogram, p: number) =>
      h.totalCount === 0 ? null : h.getValueAtPercentile(p) / 1000;
    return {
      sent: this.sent,
      ok: this.ok,
      refused: Object.fromEntries(this.refused),
      refusedTotal: [...this.refused.values()].reduce((a, b) => a + b, 0),
      clientTimeouts: this.timeouts,
      errors: this.errors,
      okP50Ms: ms(this.okLatency, 50),
      okP99Ms: ms(this.okLatency, 99),
      okMaxMs: this.okLatency.totalCount === 0 ? null : this.okLatency.maxValue / 1000,
      refusedP50Ms: ms(this.refusedLatency, 50),
      refusedMaxMs: this.refusedLatency.totalCount === 0 ? null : this.refusedLatency.maxValue / 1000,
      answeredMaxMs: this.answered.totalCount === 0 ? null : this.answered.maxValue / 1000,
    };
  }
}

/** Sends each class open-loop at its rate for `ms`, then waits for every answer. */
async function openLoop(
  classes: ReadonlyArray<{
    rate: number;
    send: (i: number, intendedAt: number) => Promise<SearchOutcome>;
    figures: ClassFigures;
  }>,
  ms: number,
): Promise<void> {
  const pending: Promise<void>[] = [];
  const started = performance.now();
  await new Promise<void>((resolve) => {
    const tick = () => {
      const elapsed = performance.now() - started;
      for (const c of classes) {
        if (c.rate <= 0) continue;
        for (
          let at = (c.figures.sent * 1000) / c.rate;
          at <= elapsed && at < ms;
          at = (c.figures.sent * 1000) / c.rate
        ) {
          const i = c.figures.sent++;
          pending.push(c.send(i, started + at).then((o) => c.figures.record(o)));
        }
      }
      if (elapsed >= ms) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
  await Promise.all(pending);
}

/** Fuzzy queries per second the root sandbox completes with `inFlight` requests kept in flight. */
async function capacity(url: string, inFlight: number, ms: number): Promise<number> {
  let done = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() - started < ms) {
        const o = await searchOverHttp(
          url,
          '_all',
          'alice',
          fuzzyBody(next++),
          performance.now(),
          CLIENT_TIMEOUT_MS,
        );
        if (o.status === 200) done++;
        else await new Promise((r) => setTimeout(r, 5));
      }
    }),
  );
  return (done * 1000) / (performance.now() - started);
}

async function idle(url: string): Promise<void> {
  for (;;) {
    const stats = (await (await fetch(`${url}/_nodes/stats`)).json()) as {
      nodes: Record<string, { workers: { running: number; queued: number } }>;
    };
    const node = Object.values(stats.nodes)[0]!;
    if (node.workers.running === 0 && node.workers.queued === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  // Let the governor's usage window and the duress streak pass.
  await new Promise((r) => setTimeout(r, 1500));
}

async function main(): Promise<void> {
  const names = (arg('--configs') ?? Object.keys(CONFIGS).join(',')).split(',');
  for (const n of names)
    if (CONFIGS[n] === undefined)
      throw new Error(`--configs: no configuration [${n}]; have ${Object.keys(CONFIGS).join(', ')}`);
  const rounds = numberArg('--rounds', 1);
  const flood = numberArg('--flood', 3);
  const floodMs = numberArg('--flood-seconds', 20) * 1000;
  const aloneMs = 8000;
  const dataDir = benchDataDir('bench-overload');
  const cacheDir = benchDataDir('cache');
  const threads = Number(arg('--threads') ?? 0) || undefined;
  const common = ['--cache-dir', cacheDir, ...(threads !== undefined ? ['--threads', String(threads)] : [])];
  let floodRate = 0;
  let capacityPerSecond = 0;
  const results: Array<Record<string, unknown>> = [];
  for (let round = 1; round <= rounds; round++) {
    for (const name of names) {
      const server = await startServer(`${dataDir}-${name}`, [...common, ...CONFIGS[name]!]);
      try {
        // Warm-up: the JIT and each worker's first queries.
        await capacity(server.url, 4, 2000);
        await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            searchOverHttp(
              server.url,
              'spam-*',
              'dash_ops',
              cheapBody(i),
              performance.now(),
              CLIENT_TIMEOUT_MS,
            ),
          ),
        );
        await idle(server.url);
        if (floodRate === 0) {
          capacityPerSecond = await capacity(server.url, 4, 5000);
          floodRate = flood * capacityPerSecond;
          console.log(
            `\noverload: root fuzzy capacity ${capacityPerSecond.toFixed(1)}/s (closed loop, 4 in flight); flood ${flood}x = ` +
              `${floodRate.toFixed(1)}/s for ${floodMs / 1000} s; dashboards ${DASH_PER_SECOND}/s; client time-out ${CLIENT_TIMEOUT_MS / 1000} s`,
          );
          await idle(server.url);
        }
        const aloneDash = new ClassFigures();
        await openLoop(
          [
            {
              rate: DASH_PER_SECOND,
              figures: aloneDash,
              send: (i, at) =>
                searchOverHttp(server.url, 'spam-*', 'dash_ops', cheapBody(i), at, CLIENT_TIMEOUT_MS),
            },
          ],
          aloneMs,
        );
        await idle(server.url);
        const dash = new ClassFigures();
        const root = new ClassFigures();
        const statsBefore = await nodeStats(server.url);
        await openLoop(
          [
            {
              rate: DASH_PER_SECOND,
              figures: dash,
              send: (i, at) =>
                searchOverHttp(server.url, 'spam-*', 'dash_ops', cheapBody(i), at, CLIENT_TIMEOUT_MS),
            },
            {
              rate: floodRate,
              figures: root,
              send: (i, at) =>
                searchOverHttp(server.url, '_all', 'alice', fuzzyBody(i), at, CLIENT_TIMEOUT_MS),
            },
          ],
          floodMs,
        );
        const statsAfter = await nodeStats(server.url);
        const row = {
          config: name,
          round,
          dashAlone: aloneDash.summary(),
          dash: dash.summary(),
          root: root.summary(),
          server: { before: statsBefore, after: statsAfter },
        };
        results.push(row);
        console.log(
          `  round ${round} [${name}]: dashboards alone p50 ${fmt(row.dashAlone.okP50Ms)} p99 ${fmt(row.dashAlone.okP99Ms)} ms; ` +
            `beside the flood p50 ${fmt(row.dash.okP50Ms)} p99 ${fmt(row.dash.okP99Ms)} ms (${row.dash.ok}/${row.dash.sent} ok, ${row.dash.refusedTotal} x 429); ` +
            `flood ${row.root.ok}/${row.root.sent} ok (p50 ${fmt(row.root.okP50Ms)}, p99 ${fmt(row.root.okP99Ms)}, max ${fmt(row.root.okMaxMs)} ms), ` +
            `429 ${JSON.stringify(row.root.refused)} (p50 ${fmt(row.root.refusedP50Ms)}, max ${fmt(row.root.refusedMaxMs)} ms), ` +
            `${row.root.clientTimeouts} client time-outs, ${row.root.errors} errors`,
        );
      } finally {
        await server.stop();
      }
    }
  }
  const table = names.map((name) => {
    const rs = results.filter((r) => r['config'] === name) as Array<{
      dashAlone: ReturnType<ClassFigures['summary']>;
      dash: ReturnType<ClassFigures['summary']>;
      root: ReturnType<ClassFigures['summary']>;
    }>;
    const m = (f: (r: (typeof rs)[number]) => number | null) =>
      median(rs.map(f).filter((v): v is number => v !== null));
    return {
      config: name,
      dashAloneP99Ms: m((r) => r.dashAlone.okP99Ms),
      dashP50Ms: m((r) => r.dash.okP50Ms),
      dashP99Ms: m((r) => r.dash.okP99Ms),
      floodOk: m((r) => r.root.ok),
      floodRefused: m((r) => r.root.refusedTotal),
      floodTimeouts: m((r) => r.root.clientTimeouts),
      floodOkP50Ms: m((r) => r.root.okP50Ms),
      floodOkP99Ms: m((r) => r.root.okP99Ms),
      floodOkMaxMs: m((r) => r.root.okMaxMs),
      floodRefusedP50Ms: m((r) => r.root.refusedP50Ms),
      answeredMaxMs: m((r) => Math.max(r.root.answeredMaxMs ?? 0, r.dash.answeredMaxMs ?? 0)),
    };
  });
  console.log(
    `\nmedians of ${rounds} round(s); flood ${floodRate.toFixed(1)}/s for ${floodMs / 1000} s (${flood}x capacity ${capacityPerSecond.toFixed(1)}/s)`,
  );
  printTable(
    [
      'config',
      'dash p99 alone',
      'dash p50',
      'dash p99',
      'flood ok',
      '429',
      'timeouts',
      'ok p50',
      'ok p99',
      'ok max',
      '429 p50',
      'answer max',
    ],
    table.map((t) => [
      t.config,
      t.dashAloneP99Ms,
      t.dashP50Ms,
      t.dashP99Ms,
      t.floodOk,
      t.floodRefused,
      t.floodTimeouts,
      t.floodOkP50Ms,
      t.floodOkP99Ms,
      t.floodOkMaxMs,
      t.floodRefusedP50Ms,
      t.answeredMaxMs,
    ]),
  );
  await writeResult('overload', {
    flood,
    floodMs,
    floodRate,
    capacityPerSecond,
    configs: CONFIGS,
    table,
    results,
  });
}

async function nodeStats(url: string): Promise<unknown> {
  const stats = (await (await fetch(`${url}/_nodes/stats`)).json()) as {
    nodes: Record<string, Record<string, unknown>>;
  };
  const node = Object.values(stats.nodes)[0]!;
  return { cpu: node['cpu'], heap: node['heap'], duress: node['duress'], governor: node['governor'] };
}

function fmt(v: number | null): string {
  return v === null ? '-' : v >= 100 ? v.toFixed(0) : v.toFixed(1);
}

await main();
