/**
 * `npm run bench:charts`: redraws `bench/results/<name>.svg` and `<name>.png` of every result that
 * has a chart (`charts.ts`) from its committed JSON, without running any benchmark.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CHARTS } from './charts.js';
import { RESULTS_DIR, writeChart } from './harness.js';

for (const [name, chartOf] of Object.entries(CHARTS)) {
  const json = path.join(RESULTS_DIR, `${name}.json`);
  if (!existsSync(json)) {
    console.log(`${name}: no ${json}, skipped`);
    continue;
  }
  const written = await writeChart(
    name,
    chartOf(JSON.parse(readFileSync(json, 'utf8')) as Record<string, unknown>),
  );
  console.log(`${name}: ${written.map((p) => path.relative(process.cwd(), p)).join(', ')}`);
}
