import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RuntimeFeed } from '../../src/observability/runtime-feed.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { buildHttpServer } from '../../src/server/http-server.js';
import { parsePrometheusText, samplesOf } from './prometheus-text.js';

const echoEngine = fileURLToPath(new URL('../fixtures/echo-engine.mjs', import.meta.url));
const bundledSandboxes = fileURLToPath(new URL('../../config/sandboxes.json', import.meta.url));
const P = 'query_sandbox_';

const until = async (check: () => boolean | Promise<boolean>, timeoutMs = 15_000) => {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe('Prometheus metrics of a runtime', () => {
  let runtime: Runtime;
  let app: FastifyInstance;
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line));
      done();
    },
  });

  beforeAll(async () => {
    const feed = new RuntimeFeed();
    runtime = await createRuntime({
      engine: echoEngine,
      sandboxes: bundledSandboxes,
      threads: 1,
      spareWorkers: 0,
      // One pool of one worker on one core: one busy worker is the whole node, so a long task of
      // `analysts` crosses its limits, and a second task finds no worker (the lanes are tested below).
      lanes: false,
      cores: 1,
      maxQueuedTasks: 0,
      nodeId: 'metrics-test',
      logger: pino({ level: 'info' }, stream),
      onTaskEnd: feed.onTaskEnd,
    });
    app = buildHttpServer(runtime, { feed: feed.attach(runtime) });
  });
  afterAll(async () => {
    await app?.close();
    await runtime?.close();
  });

  const scrape = async (url = '/_prometheus/metrics') => {
    const r = await app.inject({ method: 'GET', url });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    return parsePrometheusText(r.body);
  };

  it('exposes every bundled sandbox with its limits, in an exposition a strict parser accepts', async () => {
    for (let i = 0; i < 5; i++) await runtime.search({ index: 'alpha', body: { echo: i }, user: 'dash_ops' });
    await until(() => runtime.governorStats().ticks >= 2);
    const m = await scrape();
    for (const [id, name] of [
      ['_root', '_root'],
      ['dashboards', 'dashboards'],
      ['analysts', 'analysts'],
    ]) {
      const labels = { sandbox_id: id!, sandbox_name: name! };
      expect(
        samplesOf(m, `${P}sandbox_usage_ratio`, labels)
          .map((s) => s.labels['resource'])
          .sort(),
      ).toEqual(['cpu', 'memory']);
      expect(samplesOf(m, `${P}sandbox_state`, { ...labels, state: 'ok' })).toHaveLength(1);
      expect(samplesOf(m, `${P}sandbox_running_tasks`, labels)).toHaveLength(1);
      expect(samplesOf(m, `${P}sandbox_queued_tasks`, labels)).toHaveLength(1);
    }
    const limit = (id: string, resource: string, threshold: string) =>
      samplesOf(m, `${P}sandbox_limit_ratio`, { sandbox_id: id, resource, threshold })[0]?.value;
    expect(limit('analysts', 'cpu', 'low')).toBe(0.3);
    expect(limit('analysts', 'cpu', 'high')).toBe(0.6);
    expect(limit('dashboards', 'memory', 'high')).toBe(0.8);
    expect(samplesOf(m, `${P}sandbox_limit_ratio`, { sandbox_id: '_root' })).toHaveLength(0);
    expect(samplesOf(m, `${P}sandbox_completions_total`, { sandbox_id: 'dashboards' })[0]?.value).toBe(5);
    expect(m.get(`${P}sandbox_completions_total`)?.type).toBe('counter');
    // Histograms fed by task ends: one observation per completed task.
    expect(m.get(`${P}task_queue_wait_seconds`)?.type).toBe('histogram');
    expect(samplesOf(m, `${P}task_queue_wait_seconds_count`, { sandbox_id: 'dashboards' })[0]?.value).toBe(5);
    expect(
      samplesOf(m, `${P}task_run_seconds_count`, { sandbox_id: 'dashboards', outcome: 'completed' })[0]
        ?.value,
    ).toBe(5);
    // Node, pool, governor, and Node's own process metrics under the prefix.
    expect(samplesOf(m, `${P}pool_threads`)[0]?.value).toBe(1);
    expect(samplesOf(m, `${P}pool_workers`)[0]?.value).toBe(1);
    expect(samplesOf(m, `${P}pool_loading_workers`)[0]?.value).toBe(0);
    expect(samplesOf(m, `${P}node_cores`)[0]?.value).toBe(1);
    expect(samplesOf(m, `${P}node_enforcement`, { mode: 'enabled' })[0]?.value).toBe(1);
    expect(samplesOf(m, `${P}governor_ticks_total`)[0]!.value).toBeGreaterThan(0);
    expect(samplesOf(m, `${P}lane_info`)).toEqual([
      expect.objectContaining({
        labels: { lane: 'default', weight: '0', weighted: 'true', min_priority: 'none' },
        value: 1,
      }),
    ]);
    expect(samplesOf(m, `${P}lane_isolation`, { isolation: 'single_lane' })[0]?.value).toBe(1);
    expect(samplesOf(m, `${P}governor_tick_seconds`, { quantile: '0.99' })[0]!.value).toBeGreaterThan(0);
    expect(samplesOf(m, `${P}process_cpu_user_seconds_total`)).toHaveLength(1);
    expect(samplesOf(m, `${P}nodejs_heap_size_used_bytes`)).toHaveLength(1);
    // No user anywhere: the requests above came from dash_ops.
    const r = await app.inject({ method: 'GET', url: '/metrics' });
    expect(r.body).not.toContain('dash_ops');
    expect(parsePrometheusText(r.body).size).toBe(m.size);
  });

  it('counts rejections by reason and cancellations by resource and kind, and logs each decision', async () => {
    // A long task of analysts takes the only worker: with no queue, the next request is refused (queue).
    const long = runtime.search({
      index: 'alpha',
      body: { burnCpuMs: 20_000, checkpointEveryMs: 5 },
      user: 'analyst_ann',
    });
    const settled = long.then(
      () => 'completed',
      (error: { code?: string }) => error.code,
    );
    await until(() => runtime.nodeStats().running === 1);
    await expect(
      runtime.search({ index: 'alpha', body: { echo: 1 }, user: 'dash_ops' }),
    ).rejects.toMatchObject({
      code: 'QS_REJECTED',
    });
    // It uses the whole (one-core) node: above analysts' high CPU limit, the governor cancels it.
    expect(await settled).toBe('QS_CANCELLED');
    const m = await scrape();
    expect(
      samplesOf(m, `${P}sandbox_rejections_total`, { sandbox_id: 'dashboards', reason: 'queue' })[0]?.value,
    ).toBe(1);
    const cancelled = (kind: string) =>
      samplesOf(m, `${P}sandbox_cancellations_total`, { sandbox_id: 'analysts', resource: 'cpu', kind })[0]
        ?.value;
    expect(cancelled('soft')).toBe(1);
    expect(cancelled('hard')).toBe(0);
    expect(samplesOf(m, `${P}governor_soft_cancellations_total`)[0]?.value).toBe(1);
    expect(
      samplesOf(m, `${P}task_run_seconds_count`, { sandbox_id: 'analysts', outcome: 'cancelled' })[0]?.value,
    ).toBe(1);
    const cancellation = lines.find((l) => l['msg'] === 'task cancelled');
    expect(cancellation).toMatchObject({
      level: 30,
      decision: 'cancellation',
      sandboxId: 'analysts',
      breachedSandboxId: 'analysts',
      reason: 'limit',
      resource: 'cpu',
      kind: 'soft',
      highLimit: 0.6,
    });
    expect(cancellation!['usage'] as number).toBeGreaterThan(0.6);
    const changes = lines.filter(
      (l) => l['msg'] === 'sandbox state changed' && l['sandboxId'] === 'analysts',
    );
    expect(changes[0]).toMatchObject({ from: 'ok', resource: 'cpu', lowLimit: 0.3, highLimit: 0.6 });
    expect(['rejecting', 'cancelling']).toContain(changes[0]!['to']);
    expect(changes.map((c) => c['to'])).toContain('cancelling');
    await until(() => runtime.sandboxStats().get('analysts')?.state === 'ok');
    await until(() => lines.some((l) => l['msg'] === 'sandbox state changed' && l['to'] === 'ok'));
  });

  it('drops the series of a deleted sandbox at the next scrape', async () => {
    const batch = await runtime.sandboxRegistry.create({
      name: 'batch-jobs',
      priority: 1,
      resourceConsumptionLimits: { cpu: { low: 0.2, high: 0.4 } },
      selectionAttributes: [{ name: 'userPattern', value: 'batch_*' }],
    });
    await runtime.search({ index: 'alpha', body: { echo: 1 }, user: 'batch_1' });
    // The scrape reads the snapshot of the governor's last tick: on a busy host the first tick after
    // the create may come late, so wait for it rather than for a fixed time.
    await vi.waitFor(
      async () => {
        const m = await scrape();
        expect(
          samplesOf(m, `${P}sandbox_usage_ratio`, { sandbox_id: batch.id, sandbox_name: 'batch-jobs' }),
        ).toHaveLength(2);
        expect(samplesOf(m, `${P}task_queue_wait_seconds_count`, { sandbox_id: batch.id })).toHaveLength(1);
      },
      { timeout: 10_000, interval: 50 },
    );
    await runtime.sandboxRegistry.delete(batch.id);
    await vi.waitFor(
      async () => {
        const m = await scrape();
        expect(samplesOf(m, `${P}sandbox_usage_ratio`, { sandbox_id: batch.id })).toHaveLength(0);
        expect(samplesOf(m, `${P}task_queue_wait_seconds_count`, { sandbox_id: batch.id })).toHaveLength(0);
      },
      { timeout: 10_000, interval: 50 },
    );
  });
});

describe('Prometheus metrics of the lanes', () => {
  it('has one series per lane with its weight, band, workers and replacements', async () => {
    const feed = new RuntimeFeed();
    const runtime = await createRuntime({
      engine: echoEngine,
      sandboxes: bundledSandboxes,
      threads: 1,
      spareWorkers: 1,
    });
    const app = buildHttpServer(runtime, { feed: feed.attach(runtime) });
    try {
      await runtime.search({ index: 'alpha', body: { echo: 1 }, user: 'dash_ops' });
      const m = parsePrometheusText((await app.inject({ method: 'GET', url: '/_prometheus/metrics' })).body);
      expect(samplesOf(m, `${P}lane_info`).map((s) => s.labels)).toEqual([
        { lane: 'foreground', weight: '0', weighted: 'true', min_priority: '11' },
        { lane: 'background', weight: '19', weighted: 'true', min_priority: 'none' },
      ]);
      for (const lane of ['foreground', 'background']) {
        expect(samplesOf(m, `${P}lane_workers`, { lane })[0]?.value).toBe(1);
        expect(samplesOf(m, `${P}lane_live_workers`, { lane })[0]?.value).toBe(2);
        expect(samplesOf(m, `${P}lane_workers_replaced_total`, { lane })[0]?.value).toBe(0);
        expect(samplesOf(m, `${P}lane_pipelined_tasks_total`, { lane })[0]?.value).toBe(0);
        expect(samplesOf(m, `${P}lane_stolen_tasks_total`, { lane })[0]?.value).toBe(0);
        expect(samplesOf(m, `${P}reservation_workers`, { lane, min_priority: 'none' })[0]?.value).toBe(1);
      }
      expect(samplesOf(m, `${P}lane_isolation`, { isolation: 'weighted' })[0]?.value).toBe(1);
      expect(samplesOf(m, `${P}pool_threads`)[0]?.value).toBe(2);
    } finally {
      await app.close();
      await runtime.close();
    }
  });
});

describe('the Grafana dashboard in docs/', () => {
  it('queries only metrics that the node and the coordinator expose', async () => {
    const { readFileSync } = await import('node:fs');
    const { CoordinatorMetrics, CoordinatorFeed } = await import(
      '../../src/observability/coordinator-metrics.js'
    );
    const { RuntimeMetrics } = await import('../../src/observability/runtime-metrics.js');
    const names = new Set<string>();
    const registries = [
      new RuntimeMetrics(new RuntimeFeed(), { processMetrics: false }).registry,
      new CoordinatorMetrics(new CoordinatorFeed(undefined as never), { processMetrics: false }).registry,
    ];
    for (const registry of registries) {
      for (const metric of registry.getMetricsAsArray()) {
        names.add(metric.name);
        if (String(metric.type) === 'histogram')
          for (const s of ['_bucket', '_sum', '_count']) names.add(metric.name + s);
      }
    }
    const dashboard = readFileSync(
      fileURLToPath(new URL('../../docs/grafana-dashboard.json', import.meta.url)),
      'utf8',
    );
    const used = [...new Set(dashboard.match(/query_sandbox_[a-z_]+/g))];
    expect(used.length).toBeGreaterThan(15);
    expect(used.filter((name) => !names.has(name))).toEqual([]);
  });
});
