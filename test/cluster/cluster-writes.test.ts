/**
 * Writes on a real cluster in one process: three data-node runtimes (role `data`, debug routes on)
 * behind their HTTP servers, and a coordinator that owns the writable indices' metadata. Checks that
 * writes go to primaries and their replicas, GET and search through the coordinator, single-shard bulks
 * that avoid a sick node, a replica that is down, and its recovery when it comes back.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterSpec } from '../../src/cluster/cluster-spec.js';
import { Coordinator } from '../../src/cluster/coordinator.js';
import { placeDataNode } from '../../src/cluster/data-node-placement.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { buildCoordinatorServer } from '../../src/server/coordinator-server.js';
import { type DataNodeRecovery, registerDataNodeRoutes } from '../../src/server/data-node-routes.js';
import { buildHttpServer } from '../../src/server/http-server.js';

// biome-ignore lint/suspicious/noExplicitAny: the tests read JSON answers freely
type Json = any;

const ENGINE = { maxDocumentsPerIndex: 5 };
const SECRET = 'cluster-writes-cluster-secret';
const ADMIN_TOKEN = 'cluster-writes-admin-token';
const INTERNAL = { authorization: `Bearer ${SECRET}` };
const AUTH = { authorization: `Bearer ${ADMIN_TOKEN}` };
const IDS = ['d1', 'd2', 'd3'];
const spec: ClusterSpec = {
  shardsPerIndex: 2,
  replicas: 1,
  dataNodes: IDS.map((id, i) => ({ id, url: `http://127.0.0.1:${1 + i}` })),
};

let dir: string;
interface DataNode {
  id: string;
  runtime: Runtime;
  app: FastifyInstance;
  url: string;
  port: number;
  recovery: DataNodeRecovery;
}
const data: DataNode[] = [];
let coordinator: Coordinator;
let app: FastifyInstance;

async function startDataNode(id: string, port = 0): Promise<DataNode> {
  const placement = placeDataNode({ nodeId: id, cluster: spec, engineOptions: ENGINE, builtInEngine: true });
  const runtime = await createRuntime({
    cacheDir: path.join(dir, 'cache'),
    threads: 1,
    spareWorkers: 0,
    resourceUsage: { intervalMs: 20, windowMs: 200 },
    engineOptions: placement.engineOptions,
    dataDir: path.join(dir, id),
    nodeId: id,
    nodeRole: 'data',
  });
  const server = buildHttpServer(runtime, { clusterSecret: SECRET });
  const recovery = registerDataNodeRoutes(server, runtime, {
    clusterSecret: SECRET,
    shardsPerIndex: placement.shardsPerIndex,
    copies: placement.copiesFor(runtime.nodeStats().engineIndices ?? []),
    debugRoutes: true,
    replicationTimeoutMs: 2000,
  });
  const url = await server.listen({ host: '127.0.0.1', port });
  return { id, runtime, app: server, url, port: Number(new URL(url).port), recovery };
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'qs-cluster-writes-'));
  for (const id of IDS) data.push(await startDataNode(id));
  coordinator = await Coordinator.start({
    dataNodes: data.map((d) => ({ id: d.id, url: d.url })),
    statsCollector: { minRefreshMs: 0 },
    discoveryTimeoutMs: 5000,
    shardTimeoutMs: 3000,
    failedNodeBackoffMs: 0,
    dataDir: path.join(dir, 'coordinator'),
    clusterSecret: SECRET,
  });
  app = buildCoordinatorServer(coordinator, { adminToken: ADMIN_TOKEN });
});

afterAll(async () => {
  await app?.close();
  for (const d of data) {
    await d.app.close();
    await d.runtime.close();
  }
  rmSync(dir, { recursive: true, force: true });
});

async function call(method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, body?: unknown) {
  const r = await app.inject({
    method,
    url,
    headers: { ...AUTH, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  return { status: r.statusCode, json: r.json() as Json };
}

const bulk = async (url: string, lines: unknown[]) => {
  const payload = `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
  const r = await app.inject({
    method: 'POST',
    url,
    payload,
    headers: { ...AUTH, 'content-type': 'application/x-ndjson' },
  });
  return { status: r.statusCode, json: r.json() as Json };
};

const keyed = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => [
    { index: { _id: `${prefix}${i}` } },
    { body: `cluster words ${prefix}${i}` },
  ]).flat();

/** Document ids of every local copy of `index`, per node and shard. */
function localIds(index: string): Map<string, { primary: boolean; ids: string[] }> {
  const out = new Map<string, { primary: boolean; ids: string[] }>();
  for (const d of data) {
    for (const c of d.runtime.indices!.shards.copiesOf(index)) {
      out.set(`${c.shard}/${d.id}`, { primary: c.primary, ids: [...c.copy.ids()].sort() });
    }
  }
  return out;
}

describe('cluster writes', () => {
  it('places one primary and one replica per shard on distinct data nodes, on every node', async () => {
    const created = await call('PUT', '/events', {
      settings: { number_of_shards: 6, number_of_replicas: 1 },
    });
    expect(created.json).toEqual({ acknowledged: true, shards_acknowledged: true, index: 'events' });
    const rows = (await call('GET', '/_cat/shards/events?format=json')).json as Json[];
    expect(rows).toHaveLength(12);
    for (let shard = 0; shard < 6; shard++) {
      const copies = rows.filter((r) => r.shard === String(shard));
      expect(copies.map((r) => r.prirep).sort()).toEqual(['p', 'r']);
      expect(new Set(copies.map((r) => r.node)).size).toBe(2);
      expect(copies.every((r) => r.state === 'STARTED' && r.docs === '0')).toBe(true);
    }
    // Every data node holds 4 of the 12 copies.
    for (const d of data) expect(d.runtime.indices!.shards.copiesOf('events')).toHaveLength(4);
  });

  it('refuses every internal write route of a data node without the cluster secret, with no node stats', async () => {
    const node = data[0]!;
    const routes: Array<[string, string]> = [
      ['PUT', '/_internal/indices/x'],
      ['DELETE', '/_internal/indices/x?uuid=u'],
      ['PUT', '/_internal/indices/x/_settings'],
      ['POST', '/_internal/bulk'],
      ['POST', '/_internal/replicate'],
      ['POST', '/_internal/recover'],
      ['POST', '/_internal/get'],
      ['GET', '/_internal/cat_shards'],
      ['POST', '/_internal/refresh'],
    ];
    for (const [method, route] of routes) {
      for (const [headers, status] of [
        [{}, 401],
        [{ authorization: 'Bearer a-wrong-cluster-secret' }, 403],
        [AUTH, 403],
      ] as const) {
        const r = await fetch(`${node.url}${route}`, {
          method,
          headers,
          ...(method === 'GET' ? {} : { body: '{}' }),
        });
        expect([method, route, r.status]).toEqual([method, route, status]);
        expect(r.headers.get('resource_usage_stats')).toBeNull();
      }
    }
    const ok = await fetch(`${node.url}/_internal/cat_shards`, { headers: INTERNAL });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('resource_usage_stats')).toMatch(/^v1\|d1:/);
  });

  it('writes each document to its primary and its replica, and finds it by GET and search', async () => {
    const r = await bulk('/events/_bulk?refresh=true', keyed('k', 60));
    expect(r.json.errors).toBe(false);
    for (const item of r.json.items)
      expect(item.index._shards).toEqual({ total: 2, successful: 2, failed: 0 });
    const copies = localIds('events');
    let primaries = 0;
    for (let shard = 0; shard < 6; shard++) {
      const pair = [...copies].filter(([key]) => key.startsWith(`${shard}/`)).map(([, v]) => v);
      expect(pair).toHaveLength(2);
      expect(pair[0]!.ids).toEqual(pair[1]!.ids);
      primaries += pair.find((p) => p.primary)!.ids.length;
    }
    expect(primaries).toBe(60);
    // Only the primaries' nodes got shard bulks from the coordinator.
    const sent = coordinator.nodesStats().writes!.shardBulkRequests;
    expect(Object.values(sent).reduce((a, b) => a + b, 0)).toBe(3);
    const got = await call('GET', '/events/_doc/k17');
    expect(got.json).toMatchObject({ found: true, _id: 'k17', _source: { body: 'cluster words k17' } });
    const hits = await call('POST', '/events/_search', { query: { match: { body: 'cluster' } }, size: 0 });
    expect(hits.json.hits.total.value).toBe(60);
    expect(hits.json._shards).toMatchObject({ total: 6, successful: 6, failed: 0 });
    // Corpus indices stay searchable next to the writable one, and read-only.
    expect((await call('POST', '/_search', { size: 0 })).json._shards.total).toBe(6 + 5 * 2);
    const blocked = await bulk('/_bulk', [{ index: { _index: 'spam-1' } }, { a: 1 }]);
    expect(blocked.json.items[0].index).toMatchObject({
      status: 403,
      error: { type: 'cluster_block_exception' },
    });
  });

  it('sends a single-shard bulk to a shard whose copies avoid a sick node', async () => {
    await call('PUT', '/single', { settings: { number_of_shards: 6, bulk_routing: { enabled: true } } });
    const sick = data[2]!;
    const latency = await fetch(`${sick.url}/_internal/debug/latency`, {
      method: 'POST',
      headers: INTERNAL,
      body: JSON.stringify({ delay_ms: 400, ratio: 1, duration_ms: 60_000 }),
    });
    expect(latency.status).toBe(200);
    try {
      // Fan-out bulks (user ids) teach the coordinator every node's write times.
      for (let round = 0; round < 3; round++) await bulk('/single/_bulk', keyed(`warm${round}-`, 12));
      const layout = coordinator.writes.metadata.get('single')!.layout;
      for (let round = 0; round < 8; round++) {
        const lines = Array.from({ length: 10 }, (_, i) => [
          { index: {} },
          { body: `auto ${round} ${i}` },
        ]).flat();
        const r = await bulk('/single/_bulk', lines);
        expect(r.json.errors).toBe(false);
        const ids = r.json.items.map((i: Json) => i.index._id as string);
        const shards = new Set(
          ids.map((id: string) => {
            for (let s = 0; s < 6; s++) {
              if (data.some((d) => d.runtime.indices!.shards.copy('single', s)?.copy.get(id) !== undefined))
                return s;
            }
            return -1;
          }),
        );
        expect(shards.size).toBe(1);
        const shard = [...shards][0] as number;
        const copies = [layout[shard]!.primary, ...layout[shard]!.replicas];
        expect(copies).not.toContain(sick.id);
      }
    } finally {
      await fetch(`${sick.url}/_internal/debug/latency`, { method: 'DELETE', headers: INTERNAL });
    }
  });

  it('acknowledges writes whose replica is down with _shards.failed, fails those whose primary is down, and recovers the replica', async () => {
    const down = data[1]!;
    await down.app.close();
    await down.runtime.close();
    const r = await bulk('/events/_bulk', keyed('late', 30));
    const layout = coordinator.writes.metadata.get('events')!.layout;
    let replicaDown = 0;
    let primaryDown = 0;
    for (const item of r.json.items) {
      const v = item.index;
      if (v.status === 201) {
        if (v._shards.failed === 1) {
          replicaDown++;
          expect(v._shards).toMatchObject({ total: 2, successful: 1, failed: 1 });
          expect(v._shards.failures[0]).toMatchObject({ _node: down.id, primary: false });
        }
      } else {
        primaryDown++;
        expect(v).toMatchObject({ status: 503, error: { type: 'unavailable_shards_exception' } });
      }
    }
    expect(replicaDown).toBeGreaterThan(0);
    expect(primaryDown).toBeGreaterThan(0);
    const acknowledged = r.json.items
      .filter((i: Json) => i.index.status === 201)
      .map((i: Json) => i.index._id);
    // The node comes back on its port, replays its logs, and its replicas catch up from their primaries.
    const again = await startDataNode(down.id, down.port);
    data[1] = again;
    expect(again.runtime.indices!.shards.copiesOf('events').some((c) => c.state === 'INITIALIZING')).toBe(
      true,
    );
    await again.recovery.recover({ timeoutMs: 10_000 });
    expect(again.runtime.indices!.shards.copiesOf('events').every((c) => c.state === 'STARTED')).toBe(true);
    const copies = localIds('events');
    for (let shard = 0; shard < 6; shard++) {
      const pair = [...copies].filter(([key]) => key.startsWith(`${shard}/`)).map(([, v]) => v);
      expect(pair[0]!.ids).toEqual(pair[1]!.ids);
    }
    for (const id of acknowledged) expect((await call('GET', `/events/_doc/${id}`)).json.found).toBe(true);
    await call('POST', '/events/_refresh');
    const hits = await call('POST', '/events/_search', { query: { match: { body: 'cluster' } }, size: 0 });
    expect(hits.json.hits.total.value).toBe(60 + acknowledged.length);
    expect(acknowledged.length).toBeGreaterThan(0);
    expect(layout).toHaveLength(6);
  });

  it('resyncs a replica with what its primary logged but never replicated (the primary went down first)', async () => {
    const owner = data[0]!;
    const local = owner.runtime.indices!.shards.copiesOf('events').find((c) => c.primary)!;
    const unreplicated = local.copy.write([
      { position: 0, action: 'index', id: 'orphan', source: { body: 'cluster orphan' } },
    ]);
    await unreplicated.durable;
    const replicaNode = data.find((d) => d.id === local.meta.layout[local.shard]!.replicas[0])!;
    const replica = replicaNode.runtime.indices!.shards.copy('events', local.shard)!;
    expect(replica.copy.get('orphan')).toBeUndefined();
    await owner.recovery.recover({ timeoutMs: 5000 });
    expect(replica.copy.get('orphan')?.source).toEqual({ body: 'cluster orphan' });
    expect(replica.copy.log.nextSeqNo).toBe(local.copy.log.nextSeqNo);
  });

  it('refuses to change the replica count, and deletes an index everywhere', async () => {
    const r = await call('PUT', '/events/_settings', { number_of_replicas: 2 });
    expect(r.status).toBe(400);
    expect(r.json.error.reason).toMatch(
      /^settings\.index\.number_of_replicas cannot change on this cluster.*received 2$/,
    );
    expect((await call('DELETE', '/single')).json).toEqual({ acknowledged: true });
    for (const d of data) expect(d.runtime.indices!.has('single')).toBe(false);
    expect((await call('GET', '/single/_doc/x')).status).toBe(404);
  });
});
