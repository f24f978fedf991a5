/**
 * Every committed benchmark chart (`bench/results/*.svg`) renders with its data visible: rendered to
 * PNG with resvg (written to test-output/charts/ to look at), each row of the chart's data has its
 * bar, with a height, inside its panel, painted in its colour in the PNG, and the heights follow the
 * data on the chart's scale (linear from zero, or log). The committed SVG is what `bench/charts.ts`
 * draws from the committed JSON (`npm run bench:charts` redraws them).
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Resvg } from '@resvg/resvg-js';
import { describe, expect, it } from 'vitest';
import { CHARTS } from '../../bench/charts.js';
import { barChartSvg } from '../../bench/harness.js';

const RESULTS = fileURLToPath(new URL('../../bench/results/', import.meta.url));
const OUTPUT = fileURLToPath(new URL('../../test-output/charts/', import.meta.url));
const svgs = readdirSync(RESULTS).filter((f) => f.endsWith('.svg'));

interface Rect {
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
}
interface Bar extends Rect {
  readonly label: string;
  readonly fill: string;
}

const NUMBER = '(-?[\\d.]+(?:e[-+]?\\d+)?)';
const RECT_PATH = new RegExp(`^M${NUMBER},${NUMBER}h${NUMBER}v${NUMBER}h${NUMBER}Z$`);
const attr = (attrs: string, name: string) => new RegExp(`\\s${name}="([^"]*)"`).exec(attrs)?.[1];

/** The panels (frames) and bars of a vega SVG, in absolute coordinates (groups' translations summed). */
function barsOf(svg: string): { frames: Rect[]; bars: Bar[] } {
  const frames: Rect[] = [];
  const bars: Bar[] = [];
  const stack: Array<[number, number]> = [[0, 0]];
  for (const m of svg.matchAll(/<(\/?)([a-zA-Z]+)((?:[^>"]|"[^"]*")*?)(\/?)>/g)) {
    const [, closing, tag, attrs = '', selfClosing] = m;
    if (tag === 'g' && closing === '/') {
      stack.pop();
      continue;
    }
    const [tx, ty] = stack[stack.length - 1]!;
    if (tag === 'g' && closing === '' && selfClosing === '') {
      const t = /^translate\(([-\d.e]+),([-\d.e]+)\)$/.exec(attr(attrs, 'transform') ?? 'translate(0,0)');
      stack.push(t === null ? [Number.NaN, Number.NaN] : [tx + Number(t[1]), ty + Number(t[2])]);
      continue;
    }
    if (tag !== 'path') continue;
    const d = RECT_PATH.exec(attr(attrs, 'd') ?? '');
    if (d === null) continue;
    let [x, y, w, h] = [Number(d[1]), Number(d[2]), Number(d[3]), Number(d[4])];
    if (h < 0) [y, h] = [y + h, -h];
    if (attr(attrs, 'class') === 'background' && w > 0 && h > 0) frames.push({ x: tx + x, y: ty + y, w, h });
    if (attr(attrs, 'aria-roledescription') === 'bar') {
      bars.push({
        x: tx + x,
        y: ty + y,
        w,
        h,
        label: attr(attrs, 'aria-label') ?? '',
        fill: attr(attrs, 'fill') ?? '',
      });
    }
  }
  return { frames, bars };
}

/** The value after `title: ` in a bar's aria-label. */
function valueIn(label: string, title: string): number {
  const at = label.indexOf(`${title}: `);
  if (at < 0) return Number.NaN;
  return Number(label.slice(at + title.length + 2).split(';')[0]);
}

const hex = (fill: string): [number, number, number] => {
  const [r, g, b] = [1, 3, 5].map((i) => Number.parseInt(fill.slice(i, i + 2), 16));
  return [r!, g!, b!];
};

describe.each(svgs)('bench/results/%s', (file) => {
  const name = file.replace(/\.svg$/, '');
  const svg = readFileSync(path.join(RESULTS, file), 'utf8');

  it('has a chart definition and is what that definition draws from the committed JSON', async () => {
    const chartOf = CHARTS[name];
    expect(chartOf, `bench/charts.ts has no chart for ${name}`).toBeDefined();
    const result = JSON.parse(readFileSync(path.join(RESULTS, `${name}.json`), 'utf8'));
    expect(svg).toBe(`${await barChartSvg(chartOf!(result))}\n`);
  });

  it('draws every bar of its data, with a height, inside its panel, visible once rendered, on its scale', () => {
    const chart = CHARTS[name]!(JSON.parse(readFileSync(path.join(RESULTS, `${name}.json`), 'utf8')));
    const { frames, bars } = barsOf(svg);
    expect(frames.length).toBeGreaterThan(0);
    const rendered = new Resvg(svg, { font: { loadSystemFonts: true } }).render();
    mkdirSync(OUTPUT, { recursive: true });
    writeFileSync(path.join(OUTPUT, `${name}.png`), rendered.asPng());
    const pixelAt = (x: number, y: number): [number, number, number] => {
      const i = (Math.round(y) * rendered.width + Math.round(x)) * 4;
      return [rendered.pixels[i]!, rendered.pixels[i + 1]!, rendered.pixels[i + 2]!];
    };
    const unmatched = [...bars];
    const placed: Array<{ bar: Bar; value: number; frame: Rect }> = [];
    for (const row of chart.rows) {
      const expected = Number(row[chart.y]);
      const at = unmatched.findIndex(
        (b) => Math.abs(valueIn(b.label, chart.yTitle) - expected) <= Math.abs(expected) * 1e-4,
      );
      expect(at, `no bar for ${JSON.stringify(row)}`).toBeGreaterThanOrEqual(0);
      const bar = unmatched.splice(at, 1)[0]!;
      const frame = frames.find((f) => bar.x + bar.w / 2 >= f.x && bar.x + bar.w / 2 <= f.x + f.w);
      expect(frame, `bar ${bar.label} is in no panel`).toBeDefined();
      expect(bar.h, `bar ${bar.label} has no height`).toBeGreaterThanOrEqual(1);
      expect(bar.w).toBeGreaterThanOrEqual(1);
      expect(bar.y, `bar ${bar.label} starts above its panel`).toBeGreaterThanOrEqual(frame!.y - 0.5);
      expect(bar.y + bar.h, `bar ${bar.label} ends below its panel`).toBeLessThanOrEqual(
        frame!.y + frame!.h + 0.5,
      );
      // Painted: the middle of the bar has the bar's colour in the PNG.
      const [r, g, b] = pixelAt(bar.x + bar.w / 2, bar.y + bar.h / 2);
      const [er, eg, eb] = hex(bar.fill);
      expect(
        Math.abs(r - er) + Math.abs(g - eg) + Math.abs(b - eb),
        `bar ${bar.label} is not painted`,
      ).toBeLessThan(12);
      placed.push({ bar, value: expected, frame: frame! });
    }
    expect(unmatched).toEqual([]);
    // On its scale: per panel, height ∝ value (linear from zero) or height linear in log10(value).
    for (const frame of frames) {
      const inPanel = placed.filter((p) => p.frame === frame);
      if (inPanel.length < 2) continue;
      const f = chart.logY === true ? (v: number) => Math.log10(v) : (v: number) => v;
      const lo = inPanel.reduce((a, b) => (f(a.value) <= f(b.value) ? a : b));
      const hi = inPanel.reduce((a, b) => (f(a.value) >= f(b.value) ? a : b));
      if (f(hi.value) === f(lo.value)) continue;
      const slope = (hi.bar.h - lo.bar.h) / (f(hi.value) - f(lo.value));
      expect(slope).toBeGreaterThan(0);
      for (const p of inPanel) {
        const predicted =
          chart.logY === true
            ? lo.bar.h + slope * (f(p.value) - f(lo.value))
            : (hi.bar.h / hi.value) * p.value;
        expect(Math.abs(p.bar.h - predicted), `bar ${p.bar.label} off its scale`).toBeLessThan(1);
      }
    }
  });
});
