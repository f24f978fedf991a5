import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Coordinator, type CoordinatorOptions } from '../../src/cluster/coordinator.js';
import { ClusterDiscoveryError } from '../../src/cluster/discovery.js';
import { assignShardCopies, copiesHeldBy } from '../../src/cluster/shard-layout.js';
import { parseSandboxDefinitions } from '../../src/sandbox/sandbox-file.js';
import { buildCoordinatorServer } from '../../src/server/coordinator-server.js';
import {
  FAKE_INDICES,
  FAKE_SHARDS,
  type FakeDataNode,
  fakeHits,
  sortHits,
  startFakeDataNode,
} from './fake-data-node.js';

const IDS = ['n1', 'n2', 'n3'];
const layout = assignShardCopies({
  indices: FAKE_INDICES,
  shardsPerIndex: FAKE_SHARDS,
  nodeIds: IDS,
  replicas: 1,
});
let nodes: FakeDataNode[];
const started: Array<{ coordinator: Coordinator; app: FastifyInstance }> = [];

beforeAll(async () => {
  nodes = await Promise.all(IDS.map((id) => startFakeDataNode(id, copiesHeldBy(layout, id))));
});
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.app.close()));
});
afterEach(async () => {
  for (const n of nodes) {
    n.usage = undefined;
    n.failWith = undefined;
    n.delayMs = 0;
    n.timedOut = false;
    n.maxInFlight = 0;
    n.gone = 0;
  }
  for (const s of started.splice(0)) await s.app.close();
});

/** A coordinator over the fake nodes, behind its HTTP server (stats accepted at every response). */
async function coordinatorWith(options: Partial<CoordinatorOptions> = {}) {
  const coordinator = await Coordinator.start({
    dataNodes: nodes.map((n) => ({ id: n.id, url: n.url })),
    statsCollector: { minRefreshMs: 0 },
    discoveryTimeoutMs: 2000,
    // Its own (empty) metadata: writable indices left in ./.query-sandbox by other runs name other nodes.
    dataDir: mkdtempSync(path.join(tmpdir(), 'qs-coordinator-')),
    ...options,
  });
  const app = buildCoordinatorServer(coordinator);
  started.push({ coordinator, app });
  const search = (body: unknown, headers: Record<string, string> = {}, index = '_all') =>
    app.inject({ method: 'POST', url: `/${index}/_search`, payload: JSON.stringify(body), headers });
  return { coordinator, app, search };
}

const allHits = () => sortHits(FAKE_INDICES.flatMap((index) => fakeHits(index, undefined)));
const searchesOf = () => nodes.map((n) => n.searches);

describe('coordinator: fan-out and merge', () => {
  it('asks one copy of every shard and merges by score, index and _id, honouring from and size', async () => {
    const { search } = await coordinatorWith();
    const all = allHits();
    for (const [from, size] of [
      [0, 10],
      [5, 7],
      [75, 10],
      [0, 0],
      [0, 200],
    ] as const) {
      const asked = nodes.map((n) => n.asked.length);
      const r = await search({ from, size });
      expect(r.statusCode).toBe(200);
      const body = r.json();
      expect(body.hits.hits).toEqual(all.slice(from, from + size));
      expect(body.hits.total).toEqual({ value: all.length, relation: 'eq' });
      expect(body._shards).toEqual({ total: 6, successful: 6, skipped: 0, failed: 0 });
      // Every shard was asked exactly once, of a node that holds it.
      const seen: string[] = [];
      nodes.forEach((n, i) => {
        for (const shards of n.asked.slice(asked[i])) {
          for (const [index, list] of Object.entries(shards)) {
            for (const shard of list) {
              const copies = layout.get(index)![shard]!;
              expect([copies.primary, ...copies.replicas]).toContain(n.id);
              seen.push(`${index}/${shard}`);
            }
          }
        }
      });
      expect(seen.sort()).toEqual(FAKE_INDICES.flatMap((i) => [0, 1, 2].map((s) => `${i}/${s}`)).sort());
    }
  });

  it('passes the end user and the sandbox choice on to the data nodes', async () => {
    const { search } = await coordinatorWith();
    await search({ size: 1 }, { 'x-user': 'dash_ops', 'x-sandbox-id': 'dashboards' }, 'alpha');
    const asked = nodes.filter((n) => n.lastHeaders['x-user'] === 'dash_ops');
    expect(asked.length).toBeGreaterThan(0);
    for (const n of asked) expect(n.lastHeaders['x-sandbox-id']).toBe('dashboards');
  });

  it('presents the cluster secret on every call to a data node', async () => {
    const { search } = await coordinatorWith({ clusterSecret: 'coordinator-test-secret' });
    expect((await search({ size: 1 }, {}, 'alpha')).statusCode).toBe(200);
    const asked = nodes.filter((n) => n.lastHeaders['authorization'] !== undefined);
    expect(asked.length).toBeGreaterThan(0);
    for (const n of asked) expect(n.lastHeaders['authorization']).toBe('Bearer coordinator-test-secret');
  });

  it('refuses a number beyond a double with 400 naming the field and the literal, before asking any node', async () => {
    const { app } = await coordinatorWith();
    const before = searchesOf();
    const r = await app.inject({ method: 'POST', url: '/_search', payload: '{"size":1e309}' });
    expect(r.statusCode).toBe(400);
    expect(r.json().error.reason).toBe(
      'size must be a number within the range of a double (at most 1.7976931348623157e308 in magnitude); received 1e309',
    );
    expect(searchesOf()).toEqual(before);
  });

  it('refuses a bad page, an unknown index and an unknown URL parameter before asking any node', async () => {
    const { search, app } = await coordinatorWith();
    const before = searchesOf();
    const size = await search({ size: -1 });
    expect(size.statusCode).toBe(400);
    expect(size.json().error.reason).toBe('[size] must be an integer in 0..10000; received -1');
    const window = await search({ from: 9995, size: 10 });
    expect(window.json().error.type).toBe('illegal_argument_exception');
    const missing = await search({}, {}, 'gamma');
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.type).toBe('index_not_found_exception');
    const param = await app.inject({ method: 'GET', url: '/_search?scroll=1m' });
    expect(param.statusCode).toBe(400);
    expect(param.json().error.reason).toMatch(/url parameter \[scroll\] is not supported/);
    const urlPage = await app.inject({ method: 'GET', url: '/_search?size=-1' });
    expect(urlPage.json().error.reason).toBe('[size] must be an integer in 0..10000; received -1');
    const broken = await app.inject({ method: 'POST', url: '/_search', payload: '{"size": ' });
    expect(broken.statusCode).toBe(400);
    expect(broken.json().error).toMatchObject({ type: 'parsing_exception', code: 'QS_INVALID_ARGUMENT' });
    expect(broken.json().error.reason).toMatch(/^request body is not valid JSON/);
    expect((await app.inject({ method: 'GET', url: '/_sandbox' })).statusCode).toBe(404);
    const array = await search([1]);
    expect(array.json().error.reason).toBe('body must be a JSON object; received [1]');
    expect(searchesOf()).toEqual(before);
  });
});

describe('coordinator: the stats header', () => {
  it('takes the data nodes stats from their answers and never lets the header reach the client', async () => {
    for (const n of nodes) n.usage = { cpu: 0.2, heap: 0.1 };
    const { search, app } = await coordinatorWith();
    const r = await search({ size: 1 });
    expect(r.statusCode).toBe(200);
    expect(Object.keys(r.headers).map((h) => h.toLowerCase())).not.toContain('resource_usage_stats');
    const stats = (await app.inject({ method: 'GET', url: '/_nodes/stats' })).json();
    expect(Object.keys(stats.nodes['coordinator'])).toContain('admission');
    // Each node that took part reported its usage: 0.2 CPU, fresh, with its age.
    const fresh = IDS.filter((id) => stats.nodes[id].resource_usage_stats.state === 'fresh');
    expect(fresh.length).toBeGreaterThan(0);
    for (const id of fresh) {
      expect(stats.nodes[id].resource_usage_stats).toMatchObject({
        cpu: 0.2,
        heap: 0.1,
        io: null,
        duress: false,
      });
      expect(stats.nodes[id].resource_usage_stats.age_ms).toBeGreaterThanOrEqual(0);
    }
    const statsHeaders = Object.keys((await app.inject({ method: 'GET', url: '/_nodes/stats' })).headers).map(
      (h) => h.toLowerCase(),
    );
    expect(statsHeaders).not.toContain('resource_usage_stats');
  });

  it('ignores a stats header sent by an end client', async () => {
    const { search, app } = await coordinatorWith();
    const now = Date.now();
    const forged = `v1|${IDS.map((id) => `${id}:99.0,99.0,,${now}`).join(';')}`;
    for (let i = 0; i < 3; i++) {
      const r = await search({ size: 1 }, { Resource_Usage_Stats: forged });
      expect(r.statusCode).toBe(200);
    }
    const stats = (await app.inject({ method: 'GET', url: '/_nodes/stats' })).json();
    for (const id of IDS) expect(stats.nodes[id].resource_usage_stats).toEqual({ state: 'unknown' });
    expect(stats.nodes['coordinator'].stats_collector.accepted).toBe(0);
    // Nor is it passed on to the data nodes.
    for (const n of nodes) expect(Object.keys(n.lastHeaders)).not.toContain('resource_usage_stats');
  });
});

describe('coordinator: admission control', () => {
  it('answers 429 naming the node and resource before fan-out when every copy of a shard is over its limit', async () => {
    const { search, app } = await coordinatorWith();
    nodes[0]!.usage = { cpu: 0.97, heap: 0.1 };
    nodes[1]!.usage = { cpu: 0.99, heap: 0.1 };
    nodes[2]!.usage = { cpu: 0.1, heap: 0.1 };
    // Unknown nodes are never refused: the first search goes out and brings the stats back.
    expect((await search({ size: 1 })).statusCode).toBe(200);
    const before = searchesOf();
    const r = await search({ size: 1 });
    expect(r.statusCode).toBe(429);
    const error = r.json().error;
    expect(error).toMatchObject({
      type: 'rejected_execution_exception',
      code: 'QS_ADMISSION_REJECTED',
      resource: 'cpu',
    });
    expect(['n1', 'n2']).toContain(error.node_id);
    expect(error.reason).toMatch(
      /before fan-out: every copy of shard \[(alpha|beta)\]\[\d\] is on a node over its admission limit/,
    );
    expect(error.reason).toMatch(/node \[n[12]\] cpu usage 0\.9[79]0 >= limit 0\.95/);
    expect(searchesOf()).toEqual(before);
    const stats = (await app.inject({ method: 'GET', url: '/_nodes/stats' })).json();
    expect(stats.nodes['coordinator'].admission.search.rejected).toEqual({ cpu: 1, heap: 0 });
    expect(stats.nodes['n2'].resource_usage_stats).toMatchObject({ state: 'fresh', cpu: 0.99, duress: true });
  });

  it('in monitor_only mode counts what it would refuse and serves', async () => {
    for (const n of nodes) n.usage = { cpu: 0.1, heap: 0.95 };
    const { search, app } = await coordinatorWith({ admission: { mode: 'monitor_only' } });
    await search({ size: 1 });
    const r = await search({ size: 1 });
    expect(r.statusCode).toBe(200);
    const stats = (await app.inject({ method: 'GET', url: '/_nodes/stats' })).json();
    expect(stats.nodes['coordinator'].admission.search.would_reject.heap).toBeGreaterThanOrEqual(1);
    expect(stats.nodes['coordinator'].admission.search.rejected).toEqual({ cpu: 0, heap: 0 });
  });
});

describe('coordinator: replica ranking', () => {
  it('sends no shard to a node in duress while its shards have a copy elsewhere', async () => {
    nodes[0]!.usage = { cpu: 0.92, heap: 0.1 }; // duress (>= 0.9), under the admission limit (0.95)
    nodes[1]!.usage = { cpu: 0.3, heap: 0.1 };
    nodes[2]!.usage = { cpu: 0.3, heap: 0.1 };
    const { search } = await coordinatorWith();
    await search({ size: 1 });
    const before = searchesOf();
    for (let i = 0; i < 6; i++) expect((await search({ size: 1 })).statusCode).toBe(200);
    const after = searchesOf();
    expect(after[0]! - before[0]!).toBe(0);
    expect(after[1]! - before[1]!).toBe(6);
    expect(after[2]! - before[2]!).toBe(6);
  });

  it('sends fewer shards to a node that answers slowly', async () => {
    nodes[0]!.delayMs = 60;
    const { search, coordinator } = await coordinatorWith({ ranking: { warmupSamples: 0 } });
    for (let i = 0; i < 12; i++) expect((await search({ size: 1 })).statusCode).toBe(200);
    const shards = coordinator.nodesStats().dataNodes.map((n) => n.shardRequests);
    expect(shards.reduce((a, b) => a + b, 0)).toBe(12 * 6);
    expect(shards[0]).toBeLessThan(Math.min(shards[1]!, shards[2]!) / 2);
  });
});

describe('coordinator: failures', () => {
  it('retries the shards of a failing node once on their other copy', async () => {
    for (const failWith of [
      { status: 500, type: 'exception' },
      { status: 429, type: 'rejected_execution_exception' },
      { status: 0, type: 'reset' },
    ]) {
      nodes[0]!.failWith = failWith;
      const { search, coordinator } = await coordinatorWith();
      for (let i = 0; i < 3; i++) {
        const r = await search({ size: 200 });
        expect(r.statusCode).toBe(200);
        expect(r.json()._shards).toEqual({ total: 6, successful: 6, skipped: 0, failed: 0 });
        expect(r.json().hits.hits).toEqual(allHits());
      }
      const n1 = coordinator.nodesStats().dataNodes[0]!;
      expect(n1.failures).toBeGreaterThan(0);
      expect(n1.retriedAway).toBeGreaterThan(0);
    }
  });

  it("reports the shards whose copies all failed, and the failures' status (500, 429) when every shard failed", async () => {
    nodes[0]!.failWith = { status: 500, type: 'exception' };
    nodes[1]!.failWith = { status: 500, type: 'exception' };
    const { search } = await coordinatorWith();
    const partial = await search({ size: 200 });
    expect(partial.statusCode).toBe(200);
    const body = partial.json();
    expect(body._shards.failed).toBeGreaterThan(0);
    expect(body._shards.successful + body._shards.failed).toBe(6);
    expect(body._shards.failures[0]).toMatchObject({ status: 500, reason: { type: 'exception' } });
    nodes[2]!.failWith = { status: 500, type: 'exception' };
    const none = await search({ size: 1 });
    // Elasticsearch's rule (SearchPhaseExecutionException.status): a 502..504 first, else the last 5xx.
    expect(none.statusCode).toBe(500);
    expect(none.json().error).toMatchObject({
      type: 'search_phase_execution_exception',
      code: 'QS_SHARDS_FAILED',
    });
    expect(none.json().error.failed_shards).toHaveLength(6);
    for (const n of nodes) n.failWith = { status: 429, type: 'rejected_execution_exception' };
    expect((await search({ size: 1 })).statusCode).toBe(429);
  });

  it("fails a search whose shards partly failed when allow_partial_search_results is false, with the failures' status", async () => {
    nodes[0]!.failWith = { status: 429, type: 'rejected_execution_exception' };
    nodes[1]!.failWith = { status: 429, type: 'rejected_execution_exception' };
    const { app } = await coordinatorWith();
    const partial = await app.inject({ method: 'POST', url: '/_search', payload: '{"size": 1}' });
    expect(partial.statusCode).toBe(200);
    expect(partial.json()._shards.failed).toBeGreaterThan(0);
    const strict = await app.inject({
      method: 'POST',
      url: '/_search?allow_partial_search_results=false',
      payload: '{"size": 1}',
    });
    expect(strict.statusCode).toBe(429);
    expect(strict.json().error).toMatchObject({
      type: 'search_phase_execution_exception',
      reason: expect.stringMatching(/^Partial shards failure/),
      code: 'QS_SHARDS_FAILED',
      phase: 'query',
      root_cause: expect.arrayContaining([expect.objectContaining({ type: 'rejected_execution_exception' })]),
    });
  });

  it('passes a data node client error on as it is', async () => {
    for (const n of nodes) n.failWith = { status: 400, type: 'parsing_exception' };
    const { search } = await coordinatorWith();
    const r = await search({ query: { nope: {} } });
    expect(r.statusCode).toBe(400);
    expect(r.json()).toMatchObject({
      error: { type: 'parsing_exception', reason: expect.stringMatching(/says no/) },
      status: 400,
    });
  });
});

describe('coordinator: discovery', () => {
  it('learns the routing table from the data nodes', async () => {
    const { coordinator, app } = await coordinatorWith();
    expect(coordinator.routingTable.indices).toEqual(['alpha', 'beta']);
    expect(coordinator.routingTable.copiesOf('alpha', 0)).toEqual(['n1', 'n2']);
    expect(coordinator.routingTable.copiesOf('beta', 2)).toEqual(['n3', 'n1']);
    expect((await app.inject({ method: 'GET', url: '/' })).json().data_nodes).toEqual(IDS);
  });

  it('refuses to start when a node answers with another id, or not at all in time', async () => {
    await expect(
      Coordinator.start({ dataNodes: [{ id: 'other', url: nodes[0]!.url }], discoveryTimeoutMs: 1000 }),
    ).rejects.toThrow(/answers as \[n1\], but the cluster lists it as \[other\]/);
    await expect(
      Coordinator.start({
        dataNodes: [{ id: undefined, url: 'http://127.0.0.1:1' }],
        discoveryTimeoutMs: 300,
      }),
    ).rejects.toThrow(/did not answer discovery within 300 ms/);
    await expect(Coordinator.start({ dataNodes: [], discoveryTimeoutMs: 300 })).rejects.toThrow(
      'options.dataNodes must list 1..64 data nodes; received []',
    );
  });
});

/** A pino logger that keeps its lines (parsed) in `lines`. */
function capturingLogger(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

describe('coordinator: issue 6', () => {
  it('refuses a body nested too deep with 400 before fan-out; no data node counts a failure', async () => {
    const { app, coordinator } = await coordinatorWith();
    const before = searchesOf();
    const deep = `{"query":${'{"bool":{"must":'.repeat(3000)}{"match_all":{}}${'}}'.repeat(3000)}}`;
    const r = await app.inject({ method: 'POST', url: '/_search', payload: deep });
    expect(r.statusCode).toBe(400);
    expect(r.json().error).toMatchObject({
      type: 'illegal_argument_exception',
      code: 'QS_INVALID_ARGUMENT',
      reason:
        'body nesting depth must be at most 1000 (objects and arrays within one another); received 6003',
    });
    // A body that cannot be serialised (from a programmatic caller) is the caller's error too.
    await expect(coordinator.search({ index: '_all', body: { query: { n: 1n } } })).rejects.toThrow(
      /^body cannot be serialised as JSON \(.*BigInt.*\)/,
    );
    expect(searchesOf()).toEqual(before);
    expect(coordinator.nodesStats().dataNodes.map((n) => n.failures)).toEqual([0, 0, 0]);
  });

  it('counts a data node client error as no failure of the node and logs no warning for it', async () => {
    const { logger, lines } = capturingLogger('warn');
    for (const n of nodes) n.failWith = { status: 403, type: 'security_exception' };
    const { search, coordinator } = await coordinatorWith({ logger });
    const r = await search({ size: 1 });
    expect(r.statusCode).toBe(403);
    expect(r.json().error.type).toBe('security_exception');
    expect(coordinator.nodesStats().dataNodes.map((n) => [n.failures, n.lastCallFailed])).toEqual([
      [0, false],
      [0, false],
      [0, false],
    ]);
    expect(lines).toEqual([]);
    // A 5xx still is a failure, with its warning.
    for (const n of nodes) n.failWith = { status: 500, type: 'exception' };
    expect((await search({ size: 1 })).statusCode).toBe(500);
    expect(coordinator.nodesStats().dataNodes.every((n) => n.failures > 0 && n.lastCallFailed)).toBe(true);
    expect(lines.filter((l) => l['msg'] === 'shard search failed on a data node').length).toBeGreaterThan(0);
  });

  it('counts the data nodes without fresh stats whose last call failed as failed in _nodes', async () => {
    const { search, app } = await coordinatorWith();
    const stats = async () => (await app.inject({ method: 'GET', url: '/_nodes/stats' })).json();
    expect((await stats())._nodes).toEqual({ total: 4, successful: 4, failed: 0 });
    for (const n of nodes) n.failWith = { status: 0, type: 'reset' };
    expect((await search({ size: 1 })).statusCode).toBe(503);
    const dead = await stats();
    expect(dead._nodes).toEqual({ total: 4, successful: 1, failed: 3 });
    expect(dead.nodes['n1']).toMatchObject({
      last_call_failed: true,
      resource_usage_stats: { state: 'unknown' },
    });
    // A node that fails but sends fresh figures with its answer is alive.
    nodes[0]!.usage = { cpu: 0.1, heap: 0.1 };
    for (const n of nodes) n.failWith = { status: 500, type: 'exception' };
    expect((await search({ size: 1 })).statusCode).toBe(500);
    expect((await stats())._nodes).toEqual({ total: 4, successful: 2, failed: 2 });
    // Answering again clears it.
    for (const n of nodes) n.failWith = undefined;
    expect((await search({ size: 200 })).statusCode).toBe(200);
    expect((await stats())._nodes).toEqual({ total: 4, successful: 4, failed: 0 });
  });

  it('warns naming a data node that does not answer discovery yet, then gives up in one line naming it', async () => {
    const { logger, lines } = capturingLogger('warn');
    // A port nothing listens on (fetch refuses port 1 itself as a "bad port").
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const url = `http://127.0.0.1:${port}`;
    const error = await Coordinator.start({
      dataNodes: [{ id: 'n9', url }],
      discoveryTimeoutMs: 600,
      logger,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClusterDiscoveryError);
    expect((error as Error).message).toMatch(
      new RegExp(
        `^data node ${url} \\[n9\\] did not answer discovery within 600 ms \\(\\d+ tries; last: ECONNREFUSED\\)$`,
      ),
    );
    expect(lines.length).toBeGreaterThan(0);
    expect(lines[0]).toMatchObject({ level: 40, node: 'n9', url, failure: 'ECONNREFUSED' });
    expect(lines[0]!['msg']).toBe(
      `data node ${url} does not answer discovery yet (ECONNREFUSED); retrying until the time-out`,
    );
  });

  it('refuses two addresses of one data node, naming both', async () => {
    const url = nodes[0]!.url;
    const alias = url.replace('127.0.0.1', 'localhost');
    await expect(
      Coordinator.start({
        dataNodes: [
          { id: undefined, url },
          { id: undefined, url: alias },
        ],
        discoveryTimeoutMs: 2000,
      }),
    ).rejects.toThrow(
      new ClusterDiscoveryError(
        alias,
        `data nodes ${url} and ${alias} both answer as [n1]: list each data node once`,
      ),
    );
  });
});

describe('coordinator: search settings at the fan-out', () => {
  const shardsPerCall = () => nodes.flatMap((n) => n.asked.map((a) => Object.values(a).flat().length));
  const clearAsked = () => {
    for (const n of nodes) n.asked.length = 0;
  };

  it('bounds the shards sent to one data node at once by max_concurrent_shard_requests, in turns', async () => {
    const { search, app } = await coordinatorWith();
    clearAsked();
    const whole = await search({ size: 100 });
    expect(whole.statusCode).toBe(200);
    // Without a bound: one call per node with all of its shards (two copies of six shards over three nodes).
    expect(Math.max(...shardsPerCall())).toBeGreaterThan(1);
    clearAsked();
    for (const n of nodes) n.delayMs = 30;
    const r = await app.inject({
      method: 'POST',
      url: '/_all/_search?max_concurrent_shard_requests=1',
      payload: '{"size":100}',
    });
    expect(r.statusCode).toBe(200);
    expect(r.json().hits.hits).toEqual(whole.json().hits.hits);
    expect(r.json()._shards).toMatchObject({ total: 6, successful: 6 });
    expect(shardsPerCall().every((n) => n === 1)).toBe(true);
    expect(shardsPerCall()).toHaveLength(6);
    // One call at a time per node.
    expect(Math.max(...nodes.map((n) => n.maxInFlight))).toBe(1);
    const bad = await app.inject({
      method: 'POST',
      url: '/_all/_search?max_concurrent_shard_requests=0',
      payload: '{}',
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.reason).toContain(
      'max_concurrent_shard_requests must be an integer in 1..65536; received "0"',
    );
  });

  it("takes the bound from the request's sandbox, which beats the request's with override_request_values", async () => {
    const sandboxes = parseSandboxDefinitions({
      sandboxes: [
        {
          name: 'fan',
          priority: 1,
          search_settings: { max_concurrent_shard_requests: 1 },
          selectionAttributes: [{ name: 'userPattern', value: 'fan_*' }],
        },
        {
          name: 'fan-strict',
          priority: 2,
          search_settings: { max_concurrent_shard_requests: 1, override_request_values: true },
          selectionAttributes: [{ name: 'userPattern', value: 'strict_*' }],
        },
      ],
    });
    const { app } = await coordinatorWith({ sandboxes: () => sandboxes });
    const asUser = (user: string, query = '') =>
      app.inject({
        method: 'POST',
        url: `/_all/_search${query}`,
        payload: '{"size":100}',
        headers: { 'x-user': user },
      });
    clearAsked();
    expect((await asUser('fan_1')).statusCode).toBe(200);
    expect(shardsPerCall().every((n) => n === 1)).toBe(true);
    // The request's own value wins without override...
    clearAsked();
    await asUser('fan_1', '?max_concurrent_shard_requests=10');
    expect(Math.max(...shardsPerCall())).toBeGreaterThan(1);
    // ...and loses with it.
    clearAsked();
    await asUser('strict_1', '?max_concurrent_shard_requests=10');
    expect(shardsPerCall().every((n) => n === 1)).toBe(true);
    // Someone else: no bound.
    clearAsked();
    await asUser('alice');
    expect(Math.max(...shardsPerCall())).toBeGreaterThan(1);
  });

  it('passes timeout and cancel_after_time_interval on to the data nodes and says timed_out when the nodes did', async () => {
    const { app } = await coordinatorWith();
    const r = await app.inject({
      method: 'POST',
      url: '/_all/_search?timeout=250ms&cancel_after_time_interval=2s',
      payload: '{"size":5}',
    });
    expect(r.statusCode).toBe(200);
    expect(r.json().timed_out).toBe(false);
    const asked = nodes.find((n) => n.searches > 0)!.lastRequest as {
      body: Record<string, unknown>;
      cancel_after_time_interval?: string;
    };
    expect(asked.body['timeout']).toBe('250ms');
    expect(asked.cancel_after_time_interval).toBe('2s');
    // Whichever nodes the ranking picks, each one says its search timed out.
    for (const n of nodes) n.timedOut = true;
    const partial = await app.inject({
      method: 'POST',
      url: '/_all/_search',
      payload: '{"size":5,"timeout":"1ms"}',
    });
    expect(partial.json().timed_out).toBe(true);
    const bad = await app.inject({ method: 'POST', url: '/_all/_search?timeout=fast', payload: '{}' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.reason).toContain('timeout must be a time value');
  });
});

describe('coordinator: a caller that gives up (SearchService options)', () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!condition()) {
      if (performance.now() > deadline) throw new Error('condition not met in time');
      await sleep(10);
    }
  }
  const asked = () => nodes.reduce((n, node) => n + node.searches, 0);
  const gone = () => nodes.reduce((n, node) => n + node.gone, 0);

  it('aborts the fan-out when the HTTP client disconnects: every data node call is closed, none retried or counted as failed', async () => {
    for (const n of nodes) n.delayMs = 20_000;
    const { app, coordinator } = await coordinatorWith();
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as net.AddressInfo;
    const before = asked();
    const http = await import('node:http');
    const request = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/_all/_search',
      headers: { 'content-type': 'application/json' },
      agent: false,
    });
    request.on('error', () => undefined);
    request.end(JSON.stringify({ size: 5 }));
    await until(() => nodes.every((n) => n.inFlight > 0));
    const sent = asked() - before;
    const startedMs = performance.now();
    request.destroy();
    // Every call to a data node is closed by the coordinator, long before the nodes' 20 s delay.
    await until(() => gone() === sent && nodes.every((n) => n.inFlight === 0));
    expect(performance.now() - startedMs).toBeLessThan(5000);
    await sleep(50);
    expect(asked() - before).toBe(sent); // no shard retried on another copy
    for (const n of coordinator.nodesStats().dataNodes) {
      expect(n.failures).toBe(0);
      expect(n.lastCallFailed).toBe(false);
      expect(n.retriedAway).toBe(0);
      expect(n.outstandingShards).toBe(0);
    }
  });

  it('rejects with AbortedError once the signal aborts, and with TimedOutError past timeoutMs', async () => {
    for (const n of nodes) n.delayMs = 20_000;
    const { coordinator } = await coordinatorWith();
    const controller = new AbortController();
    const aborted = coordinator.search({ index: '_all', body: {} }, { signal: controller.signal });
    await until(() => nodes.every((n) => n.inFlight > 0));
    controller.abort();
    await expect(aborted).rejects.toMatchObject({ code: 'QS_ABORTED', queued: false, sandboxId: undefined });
    await until(() => nodes.every((n) => n.inFlight === 0));
    const startedMs = performance.now();
    await expect(coordinator.search({ index: '_all', body: {} }, { timeoutMs: 150 })).rejects.toMatchObject({
      code: 'QS_TIMED_OUT',
      timeoutMs: 150,
    });
    expect(performance.now() - startedMs).toBeLessThan(5000);
    await until(() => nodes.every((n) => n.inFlight === 0));
    expect(coordinator.nodesStats().dataNodes.every((n) => n.failures === 0)).toBe(true);
  });

  it('sends nothing for an already aborted signal, and refuses bad options and a request that sets shards', async () => {
    const { coordinator } = await coordinatorWith();
    const before = asked();
    await expect(
      coordinator.search({ index: '_all', body: {} }, { signal: AbortSignal.abort() }),
    ).rejects.toMatchObject({
      code: 'QS_ABORTED',
    });
    await expect(coordinator.search({ index: '_all', body: {} }, { timeoutMs: 0 })).rejects.toThrow(
      'options.timeoutMs must be an integer in 1..2147483647; received 0',
    );
    await expect(coordinator.search({ index: 'alpha', body: {}, shards: { alpha: [0] } })).rejects.toThrow(
      /^shards must not be set on a search sent to a coordinator/,
    );
    expect(asked()).toBe(before);
    // Without options the search runs as before.
    const ok = await coordinator.search({ index: '_all', body: { size: 3 } });
    expect(ok._shards).toEqual({ total: 6, successful: 6, skipped: 0, failed: 0 });
  });
});
