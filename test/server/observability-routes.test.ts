import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeFrame } from '../../src/observability/dashboard-frames.js';
import { RuntimeFeed } from '../../src/observability/runtime-feed.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { buildHttpServer } from '../../src/server/http-server.js';

const echoEngine = fileURLToPath(new URL('../fixtures/echo-engine.mjs', import.meta.url));
const bundledSandboxes = fileURLToPath(new URL('../../config/sandboxes.json', import.meta.url));

/** Reads `count` SSE data frames from `url`, then aborts. */
async function readFrames(url: string, count: number): Promise<unknown[]> {
  const abort = new AbortController();
  const response = await fetch(url, { signal: abort.signal });
  expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  const reader = response.body!.getReader();
  const frames: unknown[] = [];
  let text = '';
  while (frames.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    text += Buffer.from(value).toString('utf8');
    let end = text.indexOf('\n\n');
    while (end >= 0) {
      const event = text.slice(0, end);
      text = text.slice(end + 2);
      if (event.startsWith('data: ')) frames.push(JSON.parse(event.slice(6)));
      end = text.indexOf('\n\n');
    }
  }
  abort.abort();
  return frames;
}

describe('observability routes of a node', () => {
  let runtime: Runtime;
  let app: FastifyInstance;
  let base: string;
  beforeAll(async () => {
    const feed = new RuntimeFeed();
    runtime = await createRuntime({
      engine: echoEngine,
      sandboxes: bundledSandboxes,
      threads: 1,
      spareWorkers: 0,
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

  it('serves the page and its assets, uPlot from the installed package', async () => {
    const page = await fetch(`${base}/_dashboard`);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await page.text();
    for (const asset of [
      '/_dashboard/app.js',
      '/_dashboard/app.css',
      '/_dashboard/vendor/uPlot.iife.min.js',
      '/_dashboard/vendor/uPlot.min.css',
    ]) {
      expect(html).toContain(asset);
      const r = await fetch(`${base}${asset}`);
      expect(r.status, asset).toBe(200);
      expect((await r.arrayBuffer()).byteLength).toBeGreaterThan(500);
    }
    expect(await (await fetch(`${base}/_dashboard/vendor/uPlot.iife.min.js`)).text()).toContain('uPlot');
  });

  it('streams a frame a second with every sandbox, latencies of completed tasks and rates', async () => {
    const reading = readFrames(`${base}/_dashboard/stream`, 3);
    await new Promise((r) => setTimeout(r, 200));
    for (let i = 0; i < 10; i++)
      await runtime.search({ index: 'alpha', body: { sleepMs: 2 }, user: 'dash_ops' });
    const frames = (await reading) as NodeFrame[];
    expect(frames).toHaveLength(3);
    expect(frames[0]!.kind).toBe('node');
    expect(frames[0]!.taskLatencies).toBe(true);
    expect(frames[0]!.sandboxes.map((s) => s.id)).toEqual(runtime.sandboxes().map((s) => s.id));
    const analysts = frames[0]!.sandboxes.find((s) => s.id === 'analysts')!;
    expect(analysts.limits).toEqual({ cpu: { low: 0.3, high: 0.6 }, memory: { low: 0.15, high: 0.25 } });
    expect(frames[2]!.timeMs - frames[1]!.timeMs).toBeGreaterThan(700);
    const dashboards = frames.slice(1).map((f) => f.sandboxes.find((s) => s.id === 'dashboards')!);
    const latencies = dashboards.filter((s) => s.latencyMs !== null);
    expect(latencies.reduce((n, s) => n + s.latencyMs!.count, 0)).toBe(10);
    expect(latencies[0]!.latencyMs!.p50).toBeGreaterThanOrEqual(2);
    expect(dashboards.some((s) => s.completionsPerSecond > 0)).toBe(true);
    // Two lanes of one worker each (the default lanes; no spares here).
    expect(frames[1]!.workers).toMatchObject({ live: 2, threads: 2, loading: 0 });
    expect(frames[1]!.isolation).toBe('weighted');
    expect(frames[1]!.lanes.map((l) => [l.name, l.weight, l.workers])).toEqual([
      ['foreground', 0, 1],
      ['background', 19, 1],
    ]);
  });

  it('closes while a page is still connected', async () => {
    const response = await fetch(`${base}/_dashboard/stream`);
    const reader = response.body!.getReader();
    await reader.read();
    const other = buildHttpServer(runtime);
    await other.listen({ host: '127.0.0.1', port: 0 });
    const address = other.server.address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
    const stream = await fetch(`${url}/_dashboard/stream`);
    const r = stream.body!.getReader();
    let text = '';
    while (!/data: .*\n\n/.test(text)) text += Buffer.from((await r.read()).value!).toString('utf8');
    const first = JSON.parse(/data: (.*)\n\n/.exec(text)![1]!) as NodeFrame;
    // A server built without the feed has no task ends: it says so instead of showing empty latencies.
    expect(first.taskLatencies).toBe(false);
    await other.close();
    expect((await r.read()).done).toBe(true);
    await reader.cancel();
  });
});
