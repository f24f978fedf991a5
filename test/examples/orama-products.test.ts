import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// The example is compiled with the project (`npm test` builds first) and run as an app would run it.
const app = fileURLToPath(new URL('../../dist/examples/orama-products/app.js', import.meta.url));
const cacheDir = mkdtempSync(path.join(tmpdir(), 'qs-orama-'));
afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

interface Summary {
  topName: unknown;
  shop: { sent: number; completed: number; failed: number; p50Ms: number; p99Ms: number };
  reports: { completed: number; cancelledSoft: number; cancelledHard: number; rejected: number };
  softCancellationToEndMs: { count: number; median: number };
  outcomes: Record<string, number>;
  events: Record<string, number>;
  closeMs: number;
}

function run(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [app, '--products', '10000', '--seconds', '3', '--cache-dir', cacheDir],
      { timeout: 120_000, cwd: cacheDir },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : ((error as { code?: number }).code ?? null), stdout, stderr }),
    );
  });
}

describe('examples/orama-products: an app embedding the runtime with an Orama engine', () => {
  it('serves the shop while the governor refuses and softly cancels the reports, then drains', async () => {
    const { code, stdout, stderr } = await run();
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const s = JSON.parse(stdout) as Summary;
    expect(typeof s.topName).toBe('string');
    // The shop's sandbox has no limits: every search it sent was answered.
    expect(s.shop.failed).toBe(0);
    expect(s.shop.completed).toBe(s.shop.sent);
    expect(s.shop.sent).toBeGreaterThan(10);
    // The reports' sandbox is far above its CPU limits: refused and cancelled, never hard (grace 3 s).
    // Its priority puts it in the background lane (nice 19): next to other load (two CPU hogs) its
    // worker gets about 1.5 % of a core and never reaches the limits, which is the lane doing its job.
    const busyHost = loadavg()[0]! >= availableParallelism();
    if (!busyHost) expect(s.reports.cancelledSoft + s.reports.rejected).toBeGreaterThan(0);
    else if (s.reports.cancelledSoft + s.reports.rejected === 0) {
      console.log(`orama-products: load ${loadavg()[0]!.toFixed(1)}, the reports stayed under their limits`);
    }
    expect(s.reports.cancelledHard).toBe(0);
    expect(s.softCancellationToEndMs.count).toBe(s.reports.cancelledSoft);
    // The events tell the same story as the answers.
    expect(s.events['task:ended']).toBe(s.events['task:started']);
    expect(s.events['task:rejected'] ?? 0).toBe(s.reports.rejected);
    expect(s.outcomes['shop:completed']).toBe(s.shop.completed + 1); // and the first, typed search
    expect(s.outcomes['reports:cancelled:soft'] ?? 0).toBe(s.reports.cancelledSoft);
    expect(s.outcomes['reports:completed'] ?? 0).toBe(s.reports.completed);
    expect(s.closeMs).toBeLessThan(10_000);
  });
});
