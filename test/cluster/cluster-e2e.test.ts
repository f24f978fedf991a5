/**
 * A real cluster in one process: three data-node runtimes (the MiniSearch engine over a slice of the
 * corpus, each holding only its shard copies) behind their HTTP servers on loopback ports, and a
 * coordinator that fans searches out to them over HTTP. Checked against one node holding every shard.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterSpec } from '../../src/cluster/cluster-spec.js';
import { Coordinator } from '../../src/cluster/coordinator.js';
import { placeDataNode } from '../../src/cluster/data-node-placement.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { buildCoordinatorServer } from '../../src/server/coordinator-server.js';
import { registerDataNodeRoutes } from '../../src/server/data-node-routes.js';
import { buildHttpServer } from '../../src/server/http-server.js';

const ENGINE = { maxDocumentsPerIndex: 60 };
const SECRET = 'cluster-e2e-cluster-secret';
const ADMIN_TOKEN = 'cluster-e2e-admin-token-000';
const WRITER_TOKEN = 'cluster-e2e-writer-token-00';
const INTERNAL = { authorization: `Bearer ${SECRET}` };
const SANDBOXES = fileURLToPath(new URL('../../config/sandboxes.json', import.meta.url));
const SHARDS = 3;
const IDS = ['d1', 'd2', 'd3'];
const spec: ClusterSpec = {
  shardsPerIndex: SHARDS,
  replicas: 1,
  dataNodes: IDS.map((id, i) => ({ id, url: `http://127.0.0.1:${1 + i}` })), // placement reads the ids only
};

let dir: string;
let single: Runtime;
const data: Array<{ id: string; runtime: Runtime; app: FastifyInstance; url: string }> = [];
let coordinator: Coordinator;
let coordinatorApp: FastifyInstance;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'qs-cluster-'));
  const cacheDir = path.join(dir, 'cache');
  const common = { cacheDir, threads: 1, spareWorkers: 0, resourceUsage: { intervalMs: 20, windowMs: 200 } };
  single = await createRuntime({
    ...common,
    engineOptions: { ...ENGINE, shardsPerIndex: SHARDS },
    dataDir: dir,
  });
  for (const id of IDS) {
    const placement = placeDataNode({
      nodeId: id,
      cluster: spec,
      engineOptions: ENGINE,
      builtInEngine: true,
    });
    const runtime = await createRuntime({
      ...common,
      engineOptions: placement.engineOptions,
      dataDir: path.join(dir, id),
      nodeId: id,
      sandboxes: SANDBOXES,
    });
    const app = buildHttpServer(runtime, { clusterSecret: SECRET, adminToken: ADMIN_TOKEN });
    registerDataNodeRoutes(app, runtime, {
      clusterSecret: SECRET,
      shardsPerIndex: placement.shardsPerIndex,
      copies: placement.copiesFor(runtime.nodeStats().engineIndices ?? []),
    });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    data.push({ id, runtime, app, url });
  }
  await new Promise((resolve) => setTimeout(resolve, 60)); // the trackers' first samples
  coordinator = await Coordinator.start({
    dataNodes: data.map((d) => ({ id: d.id, url: d.url })),
    statsCollector: { minRefreshMs: 0 },
    discoveryTimeoutMs: 5000,
    clusterSecret: SECRET,
    // Its own metadata: the writes below must not reach another test's coordinator.
    dataDir: path.join(dir, 'coordinator'),
  });
  coordinatorApp = buildCoordinatorServer(coordinator, {
    adminToken: ADMIN_TOKEN,
    writerToken: WRITER_TOKEN,
  });
});

afterAll(async () => {
  await coordinatorApp?.close();
  for (const d of data) {
    await d.app.close();
    await d.runtime.close();
  }
  await single?.close();
  rmSync(dir, { recursive: true, force: true });
});

const viaCoordinator = async (index: string, body: unknown) => {
  const r = await coordinatorApp.inject({
    method: 'POST',
    url: `/${index}/_search`,
    payload: JSON.stringify(body),
  });
  expect(r.statusCode).toBe(200);
  return r;
};

describe('cluster on loopback (in-process data nodes)', () => {
  it.each([
    ['_all', { query: { match: { body: 'money' } }, size: 25 }],
    ['_all', { query: { match: { body: 'money' } }, from: 7, size: 11 }],
    ['spam-*', { query: { multi_match: { query: 'free offer', fields: ['subject^2', 'body'] } }, size: 40 }],
    ['easy-ham-1,hard-ham-1', { query: { prefix: { subject: 're' } }, from: 3, size: 15 }],
    ['_all', { query: { match_all: {} }, from: 100, size: 30 }],
    [
      '_all',
      {
        query: {
          bool: { must: { match: { body: 'linux' } }, filter: { range: { date: { gte: '2002-01-01' } } } },
        },
        size: 20,
      },
    ],
  ])('answers %s %j with the hits one node holding every shard returns', async (index, body) => {
    const expected = (await single.search({ index, body })) as { hits: unknown };
    const r = await viaCoordinator(index, body);
    expect(r.json().hits).toEqual(expected.hits);
    expect(r.json()._shards.failed).toBe(0);
  });

  it('spreads every index over the data nodes, one primary and one replica per shard', async () => {
    const infos = await Promise.all(
      data.map(
        async (d) =>
          (await (await fetch(`${d.url}/_internal/node_info`, { headers: INTERNAL })).json()) as {
            copies: unknown[];
          },
      ),
    );
    for (const info of infos) expect(info.copies).toHaveLength(10); // 5 indices × 3 shards × 2 copies / 3 nodes
    const table = coordinator.routingTable;
    for (const index of table.indices) {
      for (let shard = 0; shard < SHARDS; shard++) expect(new Set(table.copiesOf(index, shard)).size).toBe(2);
    }
    // A data node refuses a shard it does not hold (it never loaded it).
    const [index] = table.indices;
    const notHeld = [0, 1, 2].find((s) => !table.copiesOf(index!, s).includes('d1'))!;
    const r = await fetch(`${data[0]!.url}/_internal/shard_search`, {
      method: 'POST',
      headers: INTERNAL,
      body: JSON.stringify({ index, shards: { [index!]: [notHeld] }, body: {} }),
    });
    expect(r.status).toBe(404);
    expect(((await r.json()) as { error: { type: string } }).error.type).toBe('shard_not_found_exception');
    // Without --debug-routes there is no CPU hog to start.
    const hog = await fetch(`${data[0]!.url}/_internal/debug/cpu_hog`, {
      method: 'POST',
      headers: INTERNAL,
      body: '{"duration_ms": 1}',
    });
    expect(hog.status).toBe(404);
  });

  it('carries each data node stats to the coordinator in the header, and never to the client', async () => {
    const internal = await fetch(`${data[1]!.url}/_internal/node_info`, { headers: INTERNAL });
    expect(internal.headers.get('resource_usage_stats')).toMatch(/^v1\|d2:\d+\.\d,\d+\.\d,[\d.]*,\d+$/);
    // A direct client without the cluster secret is refused, and learns no stats (issue 12, hole 4).
    for (const [headers, status] of [
      [{}, 401],
      [{ authorization: 'Bearer some-guess-of-a-secret' }, 403],
      [{ authorization: `Bearer ${ADMIN_TOKEN}` }, 403],
    ] as const) {
      for (const [method, route, body] of [
        ['GET', '/_internal/node_info', undefined],
        ['POST', '/_internal/shard_search', '{}'],
      ] as const) {
        const direct = await fetch(`${data[1]!.url}${route}`, {
          method,
          headers,
          ...(body === undefined ? {} : { body }),
        });
        expect(direct.status).toBe(status);
        expect(direct.headers.get('resource_usage_stats')).toBeNull();
      }
    }
    // The data node's public routes do not carry it either.
    const publicRoute = await fetch(`${data[1]!.url}/spam-1/_search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(publicRoute.headers.get('resource_usage_stats')).toBeNull();
    const r = await viaCoordinator('_all', { size: 1 });
    expect(r.headers['resource_usage_stats']).toBeUndefined();
    const stats = (await coordinatorApp.inject({ method: 'GET', url: '/_nodes/stats' })).json();
    for (const id of IDS) {
      expect(stats.nodes[id].resource_usage_stats.state).toBe('fresh');
      expect(stats.nodes[id].resource_usage_stats.heap).toBeGreaterThan(0);
      expect(stats.nodes[id].resource_usage_stats.age_ms).toBeLessThan(5000);
    }
  });

  it('answers 429 before fan-out once the real stats put every copy of a shard over a limit', async () => {
    const strict = await Coordinator.start({
      dataNodes: data.map((d) => ({ id: d.id, url: d.url })),
      admission: { limits: { search: { heap: 0.001 } } }, // every node's heap is above 0.1 %
      statsCollector: { minRefreshMs: 0 },
      discoveryTimeoutMs: 5000,
      clusterSecret: SECRET,
      dataDir: path.join(dir, 'strict-coordinator'),
    });
    const app = buildCoordinatorServer(strict);
    try {
      const completions = () => data.map((d) => d.runtime.sandboxStats().get('_root')!.counters.completions);
      // Discovery brought every node's stats already: the first search is refused.
      const before = completions();
      const r = await app.inject({ method: 'POST', url: '/spam-1/_search', payload: '{}' });
      expect(r.statusCode).toBe(429);
      expect(r.json().error).toMatchObject({
        type: 'rejected_execution_exception',
        resource: 'heap',
        index: 'spam-1',
      });
      expect(r.json().error.reason).toMatch(/node \[d\d\] heap usage 0\.\d+ >= limit 0\.001/);
      expect(strict.nodesStats().dataNodes.map((n) => n.requests)).toEqual([0, 0, 0]);
      expect(completions()).toEqual(before);
    } finally {
      await app.close();
    }
  });

  it('passes a forbidden explicit sandbox on as 403: the root and attribute-less sandboxes cannot be named', async () => {
    const body = JSON.stringify({ query: { prefix: { body: 'a' } }, size: 100 });
    const root = await coordinatorApp.inject({
      method: 'POST',
      url: '/_all/_search',
      payload: body,
      headers: { 'x-user': 'analyst_eve', 'x-sandbox-id': '_root' },
    });
    expect(root.statusCode).toBe(403);
    expect(root.json().error.reason).toMatch(
      /may not use sandbox "_root".*this request belongs to sandbox "analysts"/,
    );
    const own = await coordinatorApp.inject({
      method: 'POST',
      url: '/_all/_search',
      payload: '{"size":1}',
      headers: { 'x-user': 'analyst_eve', 'x-sandbox-id': 'analysts' },
    });
    expect(own.statusCode).toBe(200);
    const anonymousRoot = await coordinatorApp.inject({
      method: 'POST',
      url: '/_all/_search',
      payload: '{"size":1}',
      headers: { 'x-user': 'alice', 'x-sandbox-id': '_root' },
    });
    expect(anonymousRoot.statusCode).toBe(200);
  });

  it('needs the admin token for index management and a token for _bulk at the coordinator, before reading the body', async () => {
    const routes: Array<['PUT' | 'DELETE' | 'POST', string, string, 'admin' | 'write']> = [
      ['PUT', '/logs', '{}', 'admin'],
      ['DELETE', '/logs', '', 'admin'],
      ['PUT', '/logs/_settings', '{"index":{"refresh_interval":"1s"}}', 'admin'],
      ['PUT', '/_index_template/t', '{"index_patterns":["l*"]}', 'admin'],
      ['DELETE', '/_index_template/t', '', 'admin'],
      ['POST', '/_bulk', '{"index":{"_index":"logs"}}\n{"a":1}\n', 'write'],
      ['POST', '/logs/_refresh', '', 'write'],
    ];
    for (const [method, url, payload, role] of routes) {
      const writer = await coordinatorApp.inject({
        method,
        url,
        payload,
        headers: { authorization: `Bearer ${WRITER_TOKEN}` },
      });
      if (role === 'admin') {
        expect([method, url, writer.statusCode]).toEqual([method, url, 403]);
        expect(writer.json().error.reason).toMatch(
          /^Authorization carries the writer token, which allows documents and _bulk only/,
        );
      } else {
        expect([method, url, writer.statusCode]).not.toContainEqual(401);
        expect(writer.statusCode === 401 || writer.statusCode === 403).toBe(false);
      }
      const none = await coordinatorApp.inject({ method, url, payload: '{not json' });
      expect([method, url, none.statusCode]).toEqual([method, url, 401]);
      const wrong = await coordinatorApp.inject({
        method,
        url,
        payload,
        headers: { authorization: 'Bearer wrong-token-0123456789' },
      });
      expect([method, url, wrong.statusCode]).toEqual([method, url, 403]);
      const secret = await coordinatorApp.inject({ method, url, payload, headers: INTERNAL });
      expect([method, url, secret.statusCode]).toEqual([method, url, 403]);
    }
  });
});
