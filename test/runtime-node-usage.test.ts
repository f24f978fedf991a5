import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseStatsHeader } from '../src/admission/stats-header.js';
import { createRuntime, type Runtime } from '../src/runtime.js';
import { registerDataNodeRoutes } from '../src/server/data-node-routes.js';
import { buildHttpServer } from '../src/server/http-server.js';

const echoEngine = fileURLToPath(new URL('./fixtures/echo-engine.mjs', import.meta.url));
const SECRET = 'runtime-node-usage-cluster-secret';

/** The part of `GET /_nodes/stats` the test reads. */
interface NodesStats {
  readonly nodes: Record<
    string,
    {
      readonly cpu: { readonly usage: number };
      readonly heap: { readonly usage: number };
      readonly resource_usage: { readonly cpu: number; readonly heap: number };
    }
  >;
}

/**
 * Duress (the governor snapshot), the node stats and the Resource_Usage_Stats header all read the one
 * node sampler: with the header's averages recording every governor interval over a one-sample
 * window, the three give the same figures for the same interval.
 */
describe('node usage: one sample for duress, the node stats and the stats header', () => {
  let runtime: Runtime;
  let app: FastifyInstance;
  beforeAll(async () => {
    runtime = await createRuntime({
      engine: echoEngine,
      threads: 1,
      spareWorkers: 0,
      nodeId: 'usage-1',
      intervalMs: 250,
      resourceUsage: { intervalMs: 250, windowMs: 250 },
    });
    app = buildHttpServer(runtime, { clusterSecret: SECRET, adminToken: 'runtime-node-usage-admin' });
    registerDataNodeRoutes(app, runtime, { clusterSecret: SECRET, shardsPerIndex: 1, copies: [] });
  });
  afterAll(async () => {
    await app.close();
    await runtime.close();
  });

  it('gives the same CPU and memory figures to all three for the same interval', async () => {
    while (runtime.governorSnapshot().ticks < 2) await new Promise((r) => setTimeout(r, 20));
    // Busy the process a little so the interval's CPU is not 0 everywhere by accident.
    for (let i = 0; i < 20; i++) await runtime.search({ index: 'alpha', body: { echo: i } });
    let read: { ticks: number; stats: NodesStats; header: unknown } | undefined;
    for (let attempt = 0; attempt < 20 && read === undefined; attempt++) {
      const ticks = runtime.governorSnapshot().ticks;
      const stats = (await app.inject({ method: 'GET', url: '/_nodes/stats' })).json() as NodesStats;
      const info = await app.inject({
        method: 'GET',
        url: '/_internal/node_info',
        headers: { authorization: `Bearer ${SECRET}` },
      });
      // A tick between the reads would compare two intervals: read again.
      if (runtime.governorSnapshot().ticks === ticks)
        read = { ticks, stats, header: info.headers['resource_usage_stats'] };
    }
    expect(read).toBeDefined();
    const node = read!.stats.nodes['usage-1']!;
    const duress = runtime.governorSnapshot().node;
    expect(node.cpu.usage).toBe(duress.cpu);
    expect(node.heap.usage).toBe(duress.memory);
    expect(node.resource_usage.cpu).toBe(duress.cpu);
    expect(node.resource_usage.heap).toBe(duress.memory);
    expect(node.heap.usage).toBeGreaterThan(0);
    const entry = parseStatsHeader(read!.header).entries[0]!;
    expect(entry.nodeId).toBe('usage-1');
    // The header carries percent with one decimal.
    expect(entry.cpu).toBeCloseTo(Math.round(duress.cpu * 1000) / 1000, 9);
    expect(entry.heap).toBeCloseTo(Math.round(duress.memory * 1000) / 1000, 9);
  });
});
