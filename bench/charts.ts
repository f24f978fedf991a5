/**
 * The chart of every benchmark result, as a function of its JSON (`bench/results/<name>.json`): the
 * benchmarks draw their SVG with it when they finish, and `npm run bench:charts` redraws every SVG
 * from the committed JSON without running anything. One place, so a chart and its data cannot drift.
 */
import type { BarChart } from './harness.js';

type Result = Record<string, unknown>;
type Rows = ReadonlyArray<Record<string, unknown>>;

const rowsOf = (result: Result, key: string): Rows => (result[key] as Rows | undefined) ?? [];

export const CHARTS: Readonly<Record<string, (result: Result) => BarChart>> = {
  classification: (r) => ({
    title: 'Classification: requests per second (log scale)',
    rows: rowsOf(r, 'rows').flatMap((row) => [
      { sandboxes: String(row['sandboxes']), classifier: 'indexed (runtime)', rps: row['indexed'] },
      { sandboxes: String(row['sandboxes']), classifier: 'regex loop (baseline)', rps: row['naive'] },
    ]),
    x: 'sandboxes',
    y: 'rps',
    yTitle: 'requests per second',
    color: 'classifier',
    logY: true,
  }),
  fidelity: (r) => ({
    title: 'Per-task CPU figure: error against the task\u2019s own thread clock (%, log scale)',
    rows: rowsOf(r, 'rows').flatMap((row) => [
      {
        task: `${row['taskMs']} ms`,
        case: row['case'] ?? 'all',
        statistic: 'median',
        error: (row['medianError'] as number) * 100,
      },
      {
        task: `${row['taskMs']} ms`,
        case: row['case'] ?? 'all',
        statistic: 'p99',
        error: (row['p99Error'] as number) * 100,
      },
    ]),
    x: 'task',
    y: 'error',
    yTitle: '|error| %',
    color: 'statistic',
    // One panel per case: every worker busy on one lane, and both lanes busy (2x oversubscribed).
    column: 'case',
    // The errors span decades (0.04 % to 4 %): on a linear axis the smallest bar is under a pixel.
    logY: true,
  }),
  'governor-tick': (r) => ({
    title: 'Governor tick cost (µs)',
    rows: rowsOf(r, 'rows').flatMap((row) => [
      { tasks: String(row['tasks']), statistic: 'median', us: row['medianUs'] },
      { tasks: String(row['tasks']), statistic: 'p99', us: row['p99Us'] },
    ]),
    x: 'tasks',
    y: 'us',
    yTitle: 'µs per tick',
    color: 'statistic',
  }),
  isolation: (r) => ({
    title: 'High-priority p99 latency under a flood (ms, log scale; medians of rounds)',
    rows: [
      { case: '(a) alone', load: 'none', p99: r['aloneP99'] },
      ...rowsOf(r, 'rows').map((row) => ({ case: row['case'], load: `${row['load']}x`, p99: row['p99Ms'] })),
    ],
    x: 'case',
    y: 'p99',
    yTitle: 'p99 latency, ms',
    color: 'load',
    logY: true,
  }),
  memory: (r) => ({
    title: 'Memory overhead (KiB; each panel its own scale)',
    rows: rowsOf(r, 'rows').flatMap((row) => [
      { figure: row['figure'], side: 'bare piscina', kib: (row['bare'] as number) / 1024 },
      { figure: row['figure'], side: 'runtime', kib: (row['runtime'] as number) / 1024 },
    ]),
    x: 'side',
    y: 'kib',
    yTitle: 'KiB',
    color: 'side',
    column: 'figure',
  }),
  overhead: (r) => ({
    title: 'Time per task, governed / bare piscina (1 = no overhead)',
    rows: rowsOf(r, 'results').flatMap((row) => [
      { case: row['case'], ratio: 'time (throughput)', value: row['timeRatio'] },
      { case: row['case'], ratio: 'p50 latency', value: row['latencyRatio'] },
      ...(row['metricsTimeRatio'] === undefined
        ? []
        : [{ case: row['case'], ratio: 'metrics on / off (time)', value: row['metricsTimeRatio'] }]),
      { case: row['case'], ratio: 'target', value: row['target'] },
    ]),
    x: 'case',
    y: 'value',
    yTitle: 'governed / bare',
    color: 'ratio',
  }),
};
