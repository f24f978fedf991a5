/// <reference lib="dom" />
/**
 * The dashboard in a real browser: Debian's headless Chromium driven by playwright-core, against a
 * running server under a short load (a single node), and against a coordinator over stand-in data
 * nodes. Saves screenshots under test-output/. Skipped, saying so, only outside CI when
 * /usr/bin/chromium is missing (`.ci/run` installs it).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Coordinator } from '../../src/cluster/coordinator.js';
import { assignShardCopies, copiesHeldBy } from '../../src/cluster/shard-layout.js';
import { RuntimeFeed } from '../../src/observability/runtime-feed.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { buildCoordinatorServer } from '../../src/server/coordinator-server.js';
import { buildHttpServer } from '../../src/server/http-server.js';
import {
  FAKE_INDICES,
  FAKE_SHARDS,
  type FakeDataNode,
  startFakeDataNode,
} from '../cluster/fake-data-node.js';

export const CHROMIUM = '/usr/bin/chromium';
/** The flags this machine needs (see the machine notes): no sandbox as root, no network chatter. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const OUTPUT_DIR = fileURLToPath(new URL('../../test-output/', import.meta.url));
const echoEngine = fileURLToPath(new URL('../fixtures/echo-engine.mjs', import.meta.url));
const bundledSandboxes = fileURLToPath(new URL('../../config/sandboxes.json', import.meta.url));

const haveChromium = existsSync(CHROMIUM);
if (!haveChromium && process.env['CI'] === undefined) {
  console.warn(`dashboard browser test skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`);
}

/** A fresh profile in a temp dir, the machine's flags; the caller closes it. */
export async function launchChromium(): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  const profile = mkdtempSync(path.join(os.tmpdir(), 'qs-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    headless: true,
    viewport: { width: 1400, height: 1000 },
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Console errors and uncaught page errors of `page`. */
function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => errors.push(`page: ${error.message}`));
  return errors;
}

const pointsOf = (page: Page, key: string) =>
  page.$eval(`[data-chart="${key}"]`, (e) => Number((e as HTMLElement).dataset['points']));

describe.skipIf(!haveChromium && process.env['CI'] === undefined)('dashboard in headless Chromium', () => {
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  beforeAll(async () => {
    mkdirSync(OUTPUT_DIR, { recursive: true });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  describe('a single node under load', () => {
    let runtime: Runtime;
    let app: FastifyInstance;
    let base: string;
    beforeAll(async () => {
      const feed = new RuntimeFeed();
      runtime = await createRuntime({
        engine: echoEngine,
        sandboxes: bundledSandboxes,
        threads: 2,
        spareWorkers: 0,
        cores: 1,
        onTaskEnd: feed.onTaskEnd,
      });
      app = buildHttpServer(runtime, { feed: feed.attach(runtime) });
      await app.listen({ host: '127.0.0.1', port: 0 });
      const address = app.server.address();
      base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
    });
    afterAll(async () => {
      await app?.close();
      await runtime?.close();
    });

    it('shows every sandbox, its charts gain points while load runs, and the console stays clean', async () => {
      const page = await browser.context.newPage();
      const errors = collectErrors(page);
      // A short load: cheap dashboards queries at 20/s and analysts' expensive ones, two in flight.
      const endAt = Date.now() + 5000;
      const post = (user: string, body: unknown) =>
        fetch(`${base}/alpha/_search`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-user': user },
          body: JSON.stringify(body),
        }).then((r) => r.arrayBuffer());
      const analysts = Array.from({ length: 2 }, async () => {
        while (Date.now() < endAt) await post('analyst_ann', { burnCpuMs: 400, checkpointEveryMs: 5 });
      });
      const dashboards = (async () => {
        while (Date.now() < endAt) {
          void post('dash_ops', { burnCpuMs: 2 });
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      await page.goto(`${base}/_dashboard`);
      for (const sandbox of runtime.sandboxes()) {
        await page.waitForSelector(`[data-sandbox-id="${sandbox.id}"] [data-chart="cpu:${sandbox.id}"]`, {
          timeout: 10_000,
        });
        expect(await page.textContent(`[data-sandbox-id="${sandbox.id}"] .name`)).toContain(sandbox.name);
      }
      const before = await pointsOf(page, 'cpu:analysts');
      await page.waitForFunction(
        (n) =>
          Number(document.querySelector('[data-chart="cpu:analysts"]')?.getAttribute('data-points')) >= n + 2,
        before,
        { timeout: 10_000 },
      );
      for (const key of ['node', 'workers', 'queue', 'refusals', 'latency', 'memory:dashboards']) {
        expect(await pointsOf(page, key)).toBeGreaterThanOrEqual(before + 2);
      }
      // uPlot drew into a canvas for every chart.
      expect(await page.$$eval('[data-chart] canvas', (c) => c.length)).toBeGreaterThanOrEqual(
        5 + 2 * runtime.sandboxes().length,
      );
      await Promise.all([...analysts, dashboards]);
      await page.screenshot({ path: path.join(OUTPUT_DIR, 'dashboard-node.png'), fullPage: true });
      expect(await page.getAttribute('#status', 'data-state')).toBe('live');
      await page.close();
      expect(errors).toEqual([]);
    });
  });

  describe('a coordinator', () => {
    let nodes: FakeDataNode[];
    let app: FastifyInstance;
    let base: string;
    beforeAll(async () => {
      const ids = ['n1', 'n2'];
      const layout = assignShardCopies({
        indices: FAKE_INDICES,
        shardsPerIndex: FAKE_SHARDS,
        nodeIds: ids,
        replicas: 1,
      });
      nodes = await Promise.all(ids.map((id) => startFakeDataNode(id, copiesHeldBy(layout, id))));
      for (const n of nodes) n.usage = { cpu: 0.3, heap: 0.2 };
      const coordinator = await Coordinator.start({
        dataNodes: nodes.map((n) => ({ id: n.id, url: n.url })),
        statsCollector: { minRefreshMs: 0 },
        discoveryTimeoutMs: 2000,
        dataDir: mkdtempSync(path.join(os.tmpdir(), 'qs-coordinator-')),
      });
      app = buildCoordinatorServer(coordinator);
      await app.listen({ host: '127.0.0.1', port: 0 });
      const address = app.server.address();
      base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
    });
    afterAll(async () => {
      await app?.close();
      await Promise.all((nodes ?? []).map((n) => n.app.close()));
    });

    it('lists the data nodes with their stats and charts, without console errors', async () => {
      const page = await browser.context.newPage();
      const errors = collectErrors(page);
      for (let i = 0; i < 5; i++)
        await fetch(`${base}/_search`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        }).then((r) => r.text());
      await page.goto(`${base}/_dashboard`);
      for (const n of nodes) {
        await page.waitForSelector(`[data-node-id="${n.id}"]`, { timeout: 10_000 });
        expect(await page.getAttribute(`[data-node-id="${n.id}"] a`, 'href')).toBe(`${n.url}/_dashboard`);
        expect(await page.getAttribute(`[data-node-id="${n.id}"] .badge`, 'data-state')).toBe('fresh');
      }
      const before = await pointsOf(page, 'data-cpu');
      await page.waitForFunction(
        (n) =>
          Number(document.querySelector('[data-chart="data-cpu"]')?.getAttribute('data-points')) >= n + 1,
        before,
        { timeout: 10_000 },
      );
      expect(await page.textContent('#node-id')).toBe('coordinator coordinator');
      await page.screenshot({ path: path.join(OUTPUT_DIR, 'dashboard-coordinator.png'), fullPage: true });
      await page.close();
      expect(errors).toEqual([]);
    });
  });
});
