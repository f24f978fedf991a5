/**
 * `query-sandbox demo`: starts a service on the embedded defaults (MiniSearch over SpamAssassin, the
 * default sandbox file, the default lanes) on a free loopback port, measures the dashboards user
 * alone, then runs the same bounded load twice, enforcement off and then on:
 * - `dash_ops` (sandbox `dashboards`, high priority) sends cheap `match` queries at a fixed open-loop
 *   rate; latency counts from the intended send time, so a stalled service cannot hide its queueing
 *   (no coordinated omission);
 * - `analyst_ann` (sandbox `analysts`, low priority) keeps several expensive fuzzy and prefix queries in
 *   flight, backing off 100 ms after a 429.
 * It prints one table per phase, the dashboards p99 under the flood against its p99 alone, and stops
 * by itself. `--lanes off` runs the same on one pool (the runtime before lanes), for comparison.
 */
import { parseArgs } from 'node:util';
import pino from 'pino';
import type { EnforcementMode } from '../governor/decide.js';
import { RuntimeFeed, withTaskEnds } from '../observability/runtime-feed.js';
import { createRuntime, type Runtime } from '../runtime.js';
import type { RuntimeOptions } from '../runtime-options.js';
import { buildHttpServer } from '../server/http-server.js';
import { LatencyRecorder } from './latency-recorder.js';
import { ProgressReporter } from './progress-reporter.js';
import { parseServeOptions } from './serve-options.js';
import { joinNegativeValues, optionChecks } from '../common/option-checks.js';

export interface DemoOptions {
  /** Seconds per phase, 1..600. Default 10. */
  readonly phaseSeconds: number;
  /** Cheap queries per second from the dashboards user, 1..1000. Default 20. */
  readonly dashboardRate: number;
  /** Expensive queries the analyst keeps in flight, 1..64. Default 4. */
  readonly analystConcurrency: number;
  readonly runtime: RuntimeOptions;
}

export const DEMO_USAGE = `query-sandbox demo [options]

  --phase-seconds N      seconds per phase (default 10; three phases: alone, flood with enforcement off, on)
  --dashboard-rate N     cheap queries per second from dash_ops (default 20)
  --analyst-concurrency N  expensive queries in flight from analyst_ann (default 4)
  (and serve's --sandboxes, --data-dir, --threads, --lanes and the lane flags, --interval-ms, --max-docs)
`;

/** @throws InvalidArgumentError naming the flag. */
export function parseDemoOptions(argv: readonly string[], env: NodeJS.ProcessEnv): DemoOptions {
  const demoFlags = ['--phase-seconds', '--dashboard-rate', '--analyst-concurrency'];
  const own: string[] = [];
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (demoFlags.some((f) => a === f || a.startsWith(`${f}=`))) {
      own.push(a);
      if (!a.includes('=') && i + 1 < argv.length) own.push(argv[++i]!);
    } else {
      rest.push(a);
    }
  }
  const { values } = parseArgs({
    args: joinNegativeValues(own),
    options: {
      'phase-seconds': { type: 'string' },
      'dashboard-rate': { type: 'string' },
      'analyst-concurrency': { type: 'string' },
    },
  });
  const int = (name: string, min: number, max: number, fallback: number): number => {
    const text = values[name as keyof typeof values];
    return (
      optionChecks.integerText(`--${name}`, typeof text === 'string' ? text : undefined, min, max) ?? fallback
    );
  };
  const serve = parseServeOptions(rest, env);
  return {
    phaseSeconds: int('phase-seconds', 1, 600, 10),
    dashboardRate: int('dashboard-rate', 1, 1000, 20),
    analystConcurrency: int('analyst-concurrency', 1, 64, 4),
    runtime: serve.runtime,
  };
}

const CHEAP_WORDS = ['money', 'free', 'list', 'linux', 'email', 'offer', 'update', 'perl', 'click', 'server'];
const EXPENSIVE_BODIES: readonly unknown[] = [
  { query: { match: { body: { query: 'mony fre ofer clik remuve', fuzziness: 2 } } } },
  { query: { prefix: { body: 'a' } } },
  {
    query: {
      multi_match: { query: 'bussines oportunity investmnt', fields: ['subject', 'body'], fuzziness: 2 },
    },
  },
  { query: { prefix: { body: 'co' } } },
];

interface PhaseResult {
  readonly label: string;
  readonly dashboards: LatencyRecorder;
  readonly analysts: LatencyRecorder;
  readonly cpu: { readonly dashboards: number; readonly analysts: number };
}

async function post(url: string, user: string, body: unknown): Promise<number> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user': user },
    body: JSON.stringify(body),
  });
  await response.arrayBuffer();
  return response.status;
}

function countOutcome(
  recorder: LatencyRecorder,
  status: number,
  latencyMs: number,
  typeIsCancel: boolean,
): void {
  if (status === 200) {
    recorder.ok++;
    recorder.recordMs(latencyMs);
  } else if (status === 429 && typeIsCancel) recorder.cancelled++;
  else if (status === 429) recorder.rejected++;
  else recorder.errors++;
}

async function request(
  url: string,
  user: string,
  body: unknown,
): Promise<{ status: number; cancelled: boolean }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user': user },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    cancelled: response.status === 429 && text.includes('task_cancelled_exception'),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function runPhase(
  runtime: Runtime,
  base: string,
  label: string,
  mode: EnforcementMode,
  options: DemoOptions,
  progress: ProgressReporter,
  flood = true,
): Promise<PhaseResult> {
  runtime.setEnforcement(mode);
  await sleep(3 * runtime.options.intervalMs);
  const dashboards = new LatencyRecorder();
  const analysts = new LatencyRecorder();
  const durationMs = options.phaseSeconds * 1000;
  progress.phase(label, {
    plannedMs: durationMs,
    detail: () =>
      `dashboards ${dashboards.ok} ok, ${dashboards.rejected} rejected; analysts ${analysts.ok} ok, ` +
      `${analysts.rejected} rejected, ${analysts.cancelled} cancelled`,
  });
  const start = performance.now();
  const end = start + durationMs;
  const cpuSamples = { dashboards: 0, analysts: 0, n: 0 };

  const sampler = (async () => {
    while (performance.now() < end) {
      const stats = runtime.sandboxStats();
      cpuSamples.dashboards += stats.get('dashboards')?.usage.cpu ?? 0;
      cpuSamples.analysts += stats.get('analysts')?.usage.cpu ?? 0;
      cpuSamples.n++;
      await sleep(runtime.options.intervalMs);
    }
  })();

  const analystLoops = Array.from({ length: flood ? options.analystConcurrency : 0 }, async (_, k) => {
    let i = k;
    while (performance.now() < end) {
      const sent = performance.now();
      analysts.requests++;
      try {
        const r = await request(
          `${base}/_all/_search`,
          'analyst_ann',
          EXPENSIVE_BODIES[i++ % EXPENSIVE_BODIES.length],
        );
        countOutcome(analysts, r.status, performance.now() - sent, r.cancelled);
        if (r.status === 429) await sleep(100);
      } catch {
        analysts.errors++;
      }
    }
  });

  const inFlight: Promise<void>[] = [];
  const intervalMs = 1000 / options.dashboardRate;
  for (let i = 0; ; i++) {
    const intended = start + i * intervalMs;
    if (intended >= end) break;
    const wait = intended - performance.now();
    if (wait > 0) await sleep(wait);
    dashboards.requests++;
    const word = CHEAP_WORDS[i % CHEAP_WORDS.length]!;
    inFlight.push(
      request(`${base}/easy-ham-*/_search`, 'dash_ops', {
        query: { match: { subject: word } },
        size: 5,
      }).then(
        (r) => countOutcome(dashboards, r.status, performance.now() - intended, r.cancelled),
        () => {
          dashboards.errors++;
        },
      ),
    );
  }
  await Promise.all([...inFlight, ...analystLoops, sampler]);
  const n = Math.max(1, cpuSamples.n);
  return {
    label,
    dashboards,
    analysts,
    cpu: { dashboards: cpuSamples.dashboards / n, analysts: cpuSamples.analysts / n },
  };
}

function fmt(n: number, digits = 1): string {
  return Number.isNaN(n) ? '-' : n.toFixed(digits);
}

/** Renders one phase as a fixed-width table. */
export function renderPhase(result: PhaseResult): string {
  const header = [
    'sandbox',
    'requests',
    'ok',
    'p50 ms',
    'p99 ms',
    'rejected',
    'cancelled',
    'errors',
    'cpu usage',
  ];
  const rows = [
    ['dashboards', result.dashboards, result.cpu.dashboards],
    ['analysts', result.analysts, result.cpu.analysts],
  ].map(([name, r, cpu]) => {
    const rec = r as LatencyRecorder;
    return [
      name as string,
      String(rec.requests),
      String(rec.ok),
      fmt(rec.percentileMs(50)),
      fmt(rec.percentileMs(99)),
      String(rec.rejected),
      String(rec.cancelled),
      String(rec.errors),
      fmt(cpu as number, 3),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [`${result.label}`, line(header), ...rows.map(line)].join('\n');
}

/** Runs the demo; resolves when both phases are done and everything is closed. */
export async function runDemo(options: DemoOptions): Promise<void> {
  const log = pino({ level: 'warn' });
  const progress = new ProgressReporter({
    label: 'demo',
    write: (line) => process.stdout.write(`${line}\n`),
  });
  progress.phase('starting the service (the first start builds the index cache)');
  const feed = new RuntimeFeed();
  const runtime = await createRuntime(withTaskEnds({ ...options.runtime, logger: log }, feed)).finally(() =>
    progress.stop(),
  );
  const app = buildHttpServer(runtime, { feed: feed.attach(runtime, true) });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    const base = `http://127.0.0.1:${port}`;
    const node = runtime.nodeStats();
    const lanes = node.lanes
      .map(
        (l) =>
          `${l.name} ${l.workers}+${l.spareWorkers} spare at ${l.weight === 'idle' ? 'SCHED_IDLE' : `nice ${l.weight}`}` +
          (l.minPriority === null ? '' : ` (priority >= ${l.minPriority})`),
      )
      .join(', ');
    process.stdout.write(
      `demo: ${node.threads} workers + ${node.spareWorkers} spare on ${node.cores} cores; lanes: ${lanes}; isolation: ${node.isolation}\n` +
        `demo: worker start-up with indices loaded: ${node.workerStartupMs.map((ms) => `${Math.round(ms)} ms`).join(', ')}\n` +
        `demo: dash_ops sends ${options.dashboardRate}/s cheap match queries (open loop); analyst_ann keeps ` +
        `${options.analystConcurrency} fuzzy/prefix queries in flight; ${options.phaseSeconds} s per phase\n` +
        `demo: dashboard ${base}/_dashboard (metrics ${base}/_prometheus/metrics)\n\n`,
    );
    for (const l of node.lanes) {
      if (!l.weighted)
        process.stdout.write(
          `demo: lane ${l.name} is UNWEIGHTED (${l.weightReason}); expect less isolation\n`,
        );
    }
    await post(`${base}/easy-ham-1/_search`, 'dash_ops', { query: { match: { subject: 'warm' } } });
    const alone = await runPhase(
      runtime,
      base,
      'dashboards alone (no flood)',
      'enabled',
      options,
      progress,
      false,
    );
    progress.stop();
    process.stdout.write(`${renderPhase(alone)}\n\n`);
    const off = await runPhase(runtime, base, 'enforcement off (disabled)', 'disabled', options, progress);
    progress.stop();
    process.stdout.write(`${renderPhase(off)}\n\n`);
    const on = await runPhase(runtime, base, 'enforcement on (enabled)', 'enabled', options, progress);
    progress.stop();
    process.stdout.write(`${renderPhase(on)}\n\n`);
    const p99Alone = alone.dashboards.percentileMs(99);
    const p99Off = off.dashboards.percentileMs(99);
    const p99On = on.dashboards.percentileMs(99);
    process.stdout.write(
      `dashboards p99: ${fmt(p99Alone)} ms alone; under the analysts' flood ${fmt(p99Off)} ms with enforcement off ` +
        `(${fmt(p99Off / p99Alone, 2)}x alone), ${fmt(p99On)} ms with it on (${fmt(p99On / p99Alone, 2)}x); ` +
        `analysts completed ${off.analysts.ok} with it off, ${on.analysts.ok} with it on ` +
        `(rejected ${on.analysts.rejected}, cancelled ${on.analysts.cancelled}).\n`,
    );
    const after = runtime.nodeStats();
    const replaced = after.lanes.reduce((sum, l) => sum + l.replacedWorkers, 0);
    if (after.lastReplacementStartupMs !== undefined) {
      process.stdout.write(
        `replacement workers started: ${replaced}, last start-up ${Math.round(after.lastReplacementStartupMs)} ms\n`,
      );
    }
  } finally {
    progress.stop();
    await app.close();
    await runtime.close();
  }
}
