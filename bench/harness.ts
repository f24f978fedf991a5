/**
 * Shared pieces of the benchmarks: the machine description, medians, and writing
 * `bench/results/<name>.json` with its chart next to it: an SVG (vega-lite, rendered headless) and
 * the same rendered to PNG (resvg), so that what the SVG shows can be looked at and tested.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Resvg } from '@resvg/resvg-js';
import os from 'node:os';
import path from 'node:path';
import * as vega from 'vega';
import * as vl from 'vega-lite';

/** Where results go: `bench/results` under the working directory (the project root under npm). */
export const RESULTS_DIR = path.resolve('bench/results');

export interface Machine {
  readonly cores: number;
  readonly cpu: string;
  readonly node: string;
  readonly memoryGiB: number;
}

export function machine(): Machine {
  return {
    cores: os.availableParallelism(),
    cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
    node: process.version,
    memoryGiB: Math.round(os.totalmem() / 1024 ** 3),
  };
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** A grouped bar chart: one bar per row, `x` on the axis, `color` grouping, `y` the height. */
export interface BarChart {
  readonly title: string;
  readonly rows: readonly Record<string, unknown>[];
  readonly x: string;
  readonly y: string;
  readonly yTitle: string;
  /** Field that splits bars within one x (side by side). */
  readonly color?: string;
  /** Log scale for y (for values spanning decades). */
  readonly logY?: boolean;
  /** Field for small multiples (one panel per value). */
  readonly column?: string;
}

/**
 * The lower end of a log axis for values whose smallest is `min` (> 0): the power of ten below it, so
 * that the smallest bar still has a height (a bar on a log scale starts at the domain's low end).
 */
export function logDomainMin(min: number): number {
  return 10 ** (Math.ceil(Math.log10(min)) - 1);
}

/** The upper end of a log axis for values whose largest is `max` (> 0): the power of ten at or above it. */
export function logDomainMax(max: number): number {
  return 10 ** Math.ceil(Math.log10(max));
}

/**
 * Renders a bar chart to an SVG string. Bars are never stacked (groups sit side by side through
 * `xOffset`): a stacked bar starts at 0, which a log scale cannot show, and vega-lite's stack then
 * drew every bar with height 0 and the log axis without labels. Small multiples (`column`) get each
 * their own y scale, so a panel of small values is not flattened by a panel of large ones.
 */
export async function barChartSvg(chart: BarChart): Promise<string> {
  const positive = chart.rows.map((r) => Number(r[chart.y])).filter((v) => v > 0);
  const encoding: Record<string, unknown> = {
    x: { field: chart.x, type: 'nominal', sort: null, axis: { labelAngle: -30, labelLimit: 240 } },
    y: {
      field: chart.y,
      type: 'quantitative',
      title: chart.yTitle,
      stack: null,
      ...(chart.logY === true
        ? {
            scale: {
              type: 'log',
              ...(positive.length > 0
                ? {
                    domainMin: logDomainMin(Math.min(...positive)),
                    domainMax: logDomainMax(Math.max(...positive)),
                  }
                : {}),
            },
          }
        : {}),
    },
  };
  if (chart.color !== undefined) {
    encoding['color'] = { field: chart.color, type: 'nominal', sort: null, legend: { labelLimit: 240 } };
    // Side by side within one x band; not when the colour is the x field itself (one bar per band).
    if (chart.color !== chart.x) encoding['xOffset'] = { field: chart.color, sort: null };
  }
  if (chart.column !== undefined) encoding['column'] = { field: chart.column, type: 'nominal', sort: null };
  const spec = vl.compile({
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: chart.title,
    width: chart.column === undefined ? 480 : 220,
    height: 260,
    data: { values: chart.rows as Record<string, unknown>[] },
    mark: { type: 'bar', tooltip: true },
    encoding,
    ...(chart.column !== undefined ? { resolve: { scale: { y: 'independent' } } } : {}),
  } as vl.TopLevelSpec).spec;
  const view = new vega.View(vega.parse(spec), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  return svg;
}

/** Renders an SVG to PNG with resvg (system fonts; white background as the SVG draws it). */
export function svgToPng(svg: string): Buffer {
  return new Resvg(svg, { font: { loadSystemFonts: true } }).render().asPng();
}

/**
 * Writes `<dir>/<name>.svg` and `<name>.png` for `chart`.
 * @returns the paths written.
 */
export async function writeChart(name: string, chart: BarChart, dir = RESULTS_DIR): Promise<string[]> {
  mkdirSync(dir, { recursive: true });
  const svg = `${await barChartSvg(chart)}\n`;
  const svgPath = path.join(dir, `${name}.svg`);
  const pngPath = path.join(dir, `${name}.png`);
  writeFileSync(svgPath, svg);
  writeFileSync(pngPath, svgToPng(svg));
  return [svgPath, pngPath];
}

/**
 * Writes `<RESULTS_DIR>/<name>.json` (`{machine, ...data}`) and, when given, its chart
 * (`<name>.svg`, `<name>.png`). @returns the paths written.
 */
export async function writeResult(
  name: string,
  data: Record<string, unknown>,
  chart?: BarChart,
): Promise<string[]> {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const json = path.join(RESULTS_DIR, `${name}.json`);
  writeFileSync(json, `${JSON.stringify({ machine: machine(), ...data }, null, 2)}\n`);
  if (chart === undefined) return [json];
  return [json, ...(await writeChart(name, chart))];
}

/** Prints rows as an aligned plain-text table. */
export function printTable(headers: readonly string[], rows: readonly (readonly unknown[])[]): void {
  const text = rows.map((r) => r.map((v) => (typeof v === 'number' ? formatNumber(v) : String(v))));
  const widths = headers.map((h, i) => Math.max(h.length, ...text.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  console.log(line(headers));
  for (const r of text) console.log(line(r));
}

function formatNumber(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v)) return String(v);
  const abs = Math.abs(v);
  return abs >= 100 ? v.toFixed(0) : abs >= 1 ? v.toFixed(2) : v.toFixed(3);
}

/**
 * Exits 2 with one line on stderr when `args` holds an argument that `flags` does not name; `flags`
 * maps each flag to whether it takes a value (the argument after it, skipped here: each bench checks
 * its values itself). For a bench run alone (`node dist/bench/<name>.js ...`).
 */
export function refuseUnknownArguments(
  bench: string,
  flags: Readonly<Record<string, boolean>>,
  args: readonly string[] = process.argv.slice(2),
): void {
  for (let i = 0; i < args.length; i++) {
    const takesValue = flags[args[i]!];
    if (takesValue === undefined) {
      console.error(
        `${bench}: unknown argument ${JSON.stringify(args[i])}; it takes ${Object.keys(flags).join(', ')}`,
      );
      process.exit(2);
    }
    if (takesValue) i++;
  }
}
