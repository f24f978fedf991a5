/**
 * `npm run docs:screenshot`: runs `query-sandbox demo`, opens the dashboard it prints in Debian's
 * headless Chromium (playwright-core) from the start, and saves a full-page screenshot near the end of
 * the second phase (enforcement on), when the charts hold both phases of the flood:
 * `docs/dashboard-demo.png`, and at the same moment a sample of its `/_prometheus/metrics` (the
 * series of the `analysts` and `dashboards` sandboxes, with their HELP and TYPE lines):
 * `docs/metrics-demo-sample.txt`. Flags after `--` go to the demo (default `--phase-seconds 15`).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The families with series of `sandboxIds`, with their HELP and TYPE lines and only those series. */
function sandboxSeries(exposition: string, sandboxIds: readonly string[]): string {
  const out: string[] = [];
  let header: string[] = [];
  for (const line of exposition.split('\n')) {
    if (line.startsWith('# HELP')) header = [line];
    else if (line.startsWith('# TYPE')) header.push(line);
    else if (sandboxIds.some((id) => line.includes(`sandbox_id="${id}"`))) {
      out.push(...header, line);
      header = [];
    }
  }
  return `${out.join('\n')}\n`;
}

async function main(): Promise<void> {
  const demoArgs = process.argv.slice(2);
  if (!demoArgs.includes('--phase-seconds')) demoArgs.push('--phase-seconds', '15');
  const phaseSeconds = Number(demoArgs[demoArgs.indexOf('--phase-seconds') + 1]);
  const out = path.resolve('docs/dashboard-demo.png');
  const demo = spawn(process.execPath, ['dist/src/cli/main.js', 'demo', ...demoArgs], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => demo.on('exit', (code) => resolve(code)));
  let text = '';
  const waiters: Array<{ test: RegExp; resolve: (m: RegExpMatchArray) => void }> = [];
  demo.stdout.on('data', (chunk: Buffer) => {
    process.stdout.write(chunk);
    text += chunk.toString('utf8');
    for (const w of waiters.splice(0)) {
      const m = text.match(w.test);
      if (m !== null) w.resolve(m);
      else waiters.push(w);
    }
  });
  const waitFor = (test: RegExp) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const m = text.match(test);
      if (m !== null) resolve(m);
      else waiters.push({ test, resolve });
      void exited.then(() => reject(new Error(`the demo exited before printing ${test}`)));
    });

  const found = await waitFor(/demo: dashboard (\S+) \(metrics (\S+)\)/);
  const url = found[1]!;
  const metricsUrl = found[2]!;
  const profile = mkdtempSync(path.join(os.tmpdir(), 'qs-screenshot-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
    headless: true,
    viewport: { width: 1400, height: 1000 },
  });
  try {
    const page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') console.error(`page console error: ${m.text()}`);
    });
    await page.goto(url);
    // Near the end of the enforced phase: its progress line at phaseSeconds − 2 s or later.
    const late = Math.max(1, phaseSeconds - 2);
    await waitFor(new RegExp(`demo: enforcement on \\(enabled\\), (${late}|${late + 1}|${late + 2}) s of`));
    const [exposition] = await Promise.all([
      fetch(metricsUrl).then((r) => r.text()),
      page.screenshot({ path: out, fullPage: true }),
    ]);
    console.log(`screenshot: ${out}`);
    const sample = path.resolve('docs/metrics-demo-sample.txt');
    writeFileSync(sample, sandboxSeries(exposition, ['analysts', 'dashboards']));
    console.log(`metrics sample: ${sample}`);
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
  const code = await exited;
  if (code !== 0) throw new Error(`the demo exited with ${code}`);
}

await main();
