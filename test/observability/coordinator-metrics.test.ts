import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Coordinator } from '../../src/cluster/coordinator.js';
import { assignShardCopies, copiesHeldBy } from '../../src/cluster/shard-layout.js';
import { CoordinatorFeed } from '../../src/observability/coordinator-metrics.js';
import { CoordinatorFrameSource } from '../../src/observability/dashboard-frames.js';
import { buildCoordinatorServer } from '../../src/server/coordinator-server.js';
import {
  FAKE_INDICES,
  FAKE_SHARDS,
  type FakeDataNode,
  startFakeDataNode,
} from '../cluster/fake-data-node.js';
import { parsePrometheusText, samplesOf } from './prometheus-text.js';

const P = 'query_sandbox_';

describe('coordinator metrics, decision log and dashboard frames', () => {
  let nodes: FakeDataNode[];
  let coordinator: Coordinator;
  let app: FastifyInstance;
  const lines: Array<Record<string, unknown>> = [];
  beforeAll(async () => {
    const ids = ['n1', 'n2'];
    // No replicas: every shard has one copy, so one node over its limit refuses a search.
    const layout = assignShardCopies({
      indices: FAKE_INDICES,
      shardsPerIndex: FAKE_SHARDS,
      nodeIds: ids,
      replicas: 0,
    });
    nodes = await Promise.all(ids.map((id) => startFakeDataNode(id, copiesHeldBy(layout, id))));
    const stream = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line));
        done();
      },
    });
    coordinator = await Coordinator.start({
      dataNodes: nodes.map((n) => ({ id: n.id, url: n.url })),
      statsCollector: { minRefreshMs: 0 },
      discoveryTimeoutMs: 2000,
      dataDir: mkdtempSync(path.join(os.tmpdir(), 'qs-coordinator-metrics-')),
      logger: pino({ level: 'info' }, stream),
    });
    app = buildCoordinatorServer(coordinator);
  });
  afterAll(async () => {
    await app?.close();
    await Promise.all((nodes ?? []).map((n) => n.app.close()));
  });

  const search = () => app.inject({ method: 'POST', url: '/_search', payload: '{}' });

  it('exposes per data node the stats age, usage, admission rejections and ranking', async () => {
    nodes[0]!.usage = { cpu: 0.2, heap: 0.1 };
    nodes[1]!.usage = { cpu: 0.3, heap: 0.2 };
    expect((await search()).statusCode).toBe(200);
    nodes[1]!.usage = { cpu: 0.99, heap: 0.2 };
    expect((await search()).statusCode).toBe(200); // reports its new figures
    const refused = await search();
    expect(refused.statusCode).toBe(429);
    const r = await app.inject({ method: 'GET', url: '/_prometheus/metrics' });
    const m = parsePrometheusText(r.body);
    expect(samplesOf(m, `${P}coordinator_searches_total`)[0]?.value).toBe(3);
    expect(samplesOf(m, `${P}coordinator_search_rejections_total`)[0]?.value).toBe(1);
    expect(
      samplesOf(m, `${P}data_node_admission_rejections_total`, { node_id: 'n2', resource: 'cpu' })[0]?.value,
    ).toBe(1);
    expect(
      samplesOf(m, `${P}data_node_admission_rejections_total`, { node_id: 'n1', resource: 'cpu' })[0]?.value,
    ).toBe(0);
    for (const id of ['n1', 'n2']) {
      expect(samplesOf(m, `${P}data_node_stats_state`, { node_id: id, state: 'fresh' })[0]?.value).toBe(1);
      const age = samplesOf(m, `${P}data_node_stats_age_seconds`, { node_id: id })[0]!.value;
      expect(age).toBeGreaterThanOrEqual(0);
      expect(age).toBeLessThan(5);
      expect(samplesOf(m, `${P}data_node_rank`, { node_id: id })).toHaveLength(1);
      expect(samplesOf(m, `${P}data_node_requests_total`, { node_id: id })[0]!.value).toBeGreaterThanOrEqual(
        2,
      );
    }
    expect(samplesOf(m, `${P}data_node_usage_ratio`, { node_id: 'n2', resource: 'cpu' })[0]?.value).toBe(
      0.99,
    );
    expect(samplesOf(m, `${P}data_node_duress`, { node_id: 'n2' })[0]?.value).toBe(1);
    expect(samplesOf(m, `${P}process_cpu_user_seconds_total`)).toHaveLength(1);
    expect(lines.filter((l) => l['msg'] === 'admission rejected')).toEqual([
      expect.objectContaining({ level: 30, nodeId: 'n2', resource: 'cpu', usage: 0.99, limit: 0.95 }),
    ]);
  });

  it('lists every data node in its dashboard frames, with rates between frames', async () => {
    const frames = new CoordinatorFrameSource(new CoordinatorFeed(coordinator, 0));
    frames.setActive(true);
    const first = frames.frame();
    expect(first.kind).toBe('coordinator');
    expect(first.dataNodes.map((d) => d.id)).toEqual(['n1', 'n2']);
    expect(first.dataNodes[1]).toMatchObject({
      state: 'fresh',
      cpu: 0.99,
      duress: true,
      dashboardUrl: `${nodes[1]!.url}/_dashboard`,
    });
    expect(first.searchesPerSecond).toBe(0);
    await search();
    await new Promise((r) => setTimeout(r, 100));
    const second = frames.frame();
    expect(second.rejectionsPerSecond).toBeGreaterThan(0);
    expect(second.dataNodes[1]!.admissionRejectionsPerSecond).toBeGreaterThan(0);
    expect(second.dataNodes[0]!.admissionRejectionsPerSecond).toBe(0);
  });
});
