/**
 * `npm run bench`: every headline experiment, one after another, each against its baseline measured
 * in the same run, then one table of the ratios and their targets. Each experiment writes
 * `bench/results/<name>.json` and `<name>.svg`.
 *
 * Usage: `npm run bench` (quick, under 3 minutes on 2 cores), `npm run bench -- --full` (longer runs,
 * more repetitions), `npm run bench -- overhead isolation` (only those).
 *
 * The scheduler's own benchmarks (`npm run bench:priority`, `bench:priority-service`), the cluster's
 * (`bench:cluster`) and the others listed in README.md run separately: they take minutes each.
 */
import { run as classification } from './classification.js';
import { run as fidelity } from './fidelity.js';
import { run as governorTick } from './governor-tick.js';
import { machine, printTable } from './harness.js';
import { run as isolation } from './isolation.js';
import { run as memory } from './memory.js';
import { run as overhead } from './overhead.js';
import { experimentStarted, progressDone } from './progress.js';

type Result = Record<string, unknown>;
const EXPERIMENTS: ReadonlyArray<readonly [string, (full: boolean) => Promise<Result>]> = [
  ['overhead', overhead],
  ['classification', classification],
  ['governor-tick', governorTick],
  ['fidelity', fidelity],
  ['isolation', isolation],
  ['memory', memory],
];

interface Line {
  readonly experiment: string;
  readonly figure: string;
  readonly value: string;
  readonly target: string;
  readonly met: string;
}

const pct = (x: number) => `${(x * 100).toFixed(2)} %`;
const x = (v: number) => `${v.toFixed(2)}x`;
const verdict = (ok: boolean) => (ok ? 'yes' : 'NO');

/** The summary lines of one experiment's result. */
function summarise(name: string, r: Result): Line[] {
  const lines: Line[] = [];
  const add = (figure: string, value: string, target: string, ok?: boolean) =>
    lines.push({ experiment: name, figure, value, target, met: ok === undefined ? '' : verdict(ok) });
  if (name === 'overhead') {
    for (const c of r['results'] as Array<{
      case: string;
      timeRatio: number;
      latencyRatio: number;
      metricsTimeRatio: number;
      target: number;
    }>) {
      add(
        `${c.case}: time per task, governed / bare`,
        x(c.timeRatio),
        `<= ${c.target}`,
        c.timeRatio <= c.target,
      );
      add(`${c.case}: p50 latency, governed / bare`, x(c.latencyRatio), '', undefined);
      add(`${c.case}: time per task, metrics on / off`, x(c.metricsTimeRatio), '', undefined);
    }
  } else if (name === 'classification') {
    const rows = r['rows'] as Array<{ sandboxes: number; ratio: number }>;
    const flat = r['flatness'] as { indexed: number; naive: number };
    for (const row of rows)
      add(`${row.sandboxes} sandboxes: indexed / regex loop req/s`, x(row.ratio), '', undefined);
    add('slow-down 10 -> 1,000 sandboxes, indexed', x(flat.indexed), 'flat (<= 2x)', flat.indexed <= 2);
    add('slow-down 10 -> 1,000 sandboxes, regex loop', x(flat.naive), '', undefined);
  } else if (name === 'governor-tick') {
    for (const row of r['rows'] as Array<{
      tasks: number;
      medianUs: number;
      p99Us: number;
      coreShare: number;
    }>)
      add(
        `${row.tasks} tasks: median / p99 µs, share of a core`,
        `${Math.round(row.medianUs)} / ${Math.round(row.p99Us)}, ${pct(row.coreShare)}`,
        '',
        undefined,
      );
  } else if (name === 'fidelity') {
    for (const row of r['rows'] as Array<{
      case: string;
      taskMs: number;
      medianError: number;
      p99Error: number;
    }>)
      add(
        `${row.case}, ${row.taskMs} ms tasks: median |error| (p99)`,
        `${pct(row.medianError)} (${pct(row.p99Error)})`,
        '<= 2 %',
        row.medianError <= 0.02,
      );
    for (const u of r['usage'] as Array<{ case: string; maxNodeCpu: number; maxRootCpu: number }>)
      add(
        `${u.case}: highest node / sandbox CPU usage`,
        `${u.maxNodeCpu.toFixed(3)} / ${u.maxRootCpu.toFixed(3)}`,
        '<= 1',
        u.maxNodeCpu <= 1 && u.maxRootCpu <= 1,
      );
  } else if (name === 'isolation') {
    for (const s of r['summary'] as Array<{
      load: number;
      lanesVsAloneP99: number;
      lanesDefaultVsAloneP99: number;
      lanesFloodVsBare: number;
      singleVsAloneP99: number;
      bareVsAloneP99: number;
      twoPoolsVsAloneP99: number;
    }>) {
      add(
        `flood ${s.load}x, lanes, enforcement off: p99 / alone`,
        x(s.lanesVsAloneP99),
        '<= 1.5',
        s.lanesVsAloneP99 <= 1.5,
      );
      add(
        `flood ${s.load}x, lanes, default config: p99 / alone`,
        x(s.lanesDefaultVsAloneP99),
        '<= 1.5',
        s.lanesDefaultVsAloneP99 <= 1.5,
      );
      add(
        `flood ${s.load}x, lanes, enforcement off: flood done / bare`,
        x(s.lanesFloodVsBare),
        '>= 0.9',
        s.lanesFloodVsBare >= 0.9,
      );
      add(`flood ${s.load}x, one lane (before lanes): p99 / alone`, x(s.singleVsAloneP99), '', undefined);
      add(`flood ${s.load}x, bare piscina: p99 / alone`, x(s.bareVsAloneP99), '', undefined);
      add(
        `flood ${s.load}x, two bare pools (kernel placement alone): p99 / alone`,
        x(s.twoPoolsVsAloneP99),
        '',
        undefined,
      );
    }
    const bg = r['backgroundVsBare'] as number;
    add('background lane alone: flood capacity / bare', x(bg), '>= 0.95', bg >= 0.95);
    add(
      "A/A: bare piscina's twin / bare (the measurement's noise)",
      x(r['bareTwinVsBare'] as number),
      '',
      undefined,
    );
  } else if (name === 'memory') {
    for (const row of r['rows'] as Array<{ figure: string; bare: number; runtime: number; ratio: number }>)
      add(
        `${row.figure}: runtime / bare (KiB)`,
        `${x(row.ratio)} (${(row.runtime / 1024).toFixed(1)} / ${(row.bare / 1024).toFixed(1)})`,
        '',
        undefined,
      );
    const e = r['engine'] as {
      lanesOff: { rss: number; workers: number };
      lanesOn: { rss: number; workers: number };
      rssPerEngineWorker: number;
    };
    const mib = (b: number) => `${(b / 1048576).toFixed(0)} MiB`;
    add(
      'default engine: RSS total, lanes off / on (workers)',
      `${mib(e.lanesOff.rss)} (${e.lanesOff.workers}) / ${mib(e.lanesOn.rss)} (${e.lanesOn.workers})`,
      '',
      undefined,
    );
    add('default engine: RSS per engine worker', mib(e.rssPerEngineWorker), '', undefined);
  }
  return lines;
}

async function main(): Promise<void> {
  const full = process.argv.includes('--full');
  const flags = process.argv.slice(2).filter((a) => a.startsWith('--') && a !== '--full');
  if (flags.length > 0) {
    console.error(`unknown option ${flags.join(', ')}; the only option is --full`);
    process.exit(2);
  }
  const only = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const unknown = only.filter((n) => !EXPERIMENTS.some(([name]) => name === n));
  if (unknown.length > 0) {
    console.error(
      `unknown experiment ${unknown.join(', ')}; expected some of ${EXPERIMENTS.map(([n]) => n).join(', ')}`,
    );
    process.exit(2);
  }
  const m = machine();
  console.log(
    `query-sandbox benchmarks (${full ? 'full' : 'quick'}): ${m.cores} cores (${m.cpu}), ${m.memoryGiB} GiB, Node ${m.node}`,
  );
  const started = performance.now();
  const lines: Line[] = [];
  for (const [name, experiment] of EXPERIMENTS) {
    if (only.length > 0 && !only.includes(name)) continue;
    const t0 = performance.now();
    experimentStarted(name);
    const result = await experiment(full);
    console.log(`(${name}: ${((performance.now() - t0) / 1000).toFixed(0)} s)`);
    lines.push(...summarise(name, result));
  }
  progressDone();
  console.log(
    `\nsummary (${((performance.now() - started) / 1000).toFixed(0)} s); results and charts in bench/results/`,
  );
  printTable(
    ['experiment', 'figure', 'value', 'target', 'met'],
    lines.map((l) => [l.experiment, l.figure, l.value, l.target, l.met]),
  );
}

await main();
