import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseStatsHeader } from '../../src/admission/stats-header.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { registerDataNodeRoutes } from '../../src/server/data-node-routes.js';
import { buildHttpServer } from '../../src/server/http-server.js';

const echoEngine = fileURLToPath(new URL('../fixtures/echo-engine.mjs', import.meta.url));
const SECRET = 'data-node-routes-cluster-secret';
const ADMIN_TOKEN = 'data-node-routes-admin-token';
const INTERNAL = { authorization: `Bearer ${SECRET}` };

describe('data node routes', () => {
  let runtime: Runtime;
  let app: FastifyInstance;
  beforeAll(async () => {
    runtime = await createRuntime({
      engine: echoEngine,
      threads: 1,
      spareWorkers: 0,
      nodeId: 'data-7',
      // The governor interval paces the one node sampler, so the usage averages see samples soon.
      intervalMs: 20,
      resourceUsage: { intervalMs: 20, windowMs: 200 },
    });
    app = buildHttpServer(runtime, { clusterSecret: SECRET, adminToken: ADMIN_TOKEN });
    registerDataNodeRoutes(app, runtime, {
      clusterSecret: SECRET,
      shardsPerIndex: 2,
      copies: [{ index: 'alpha', shard: 1, primary: true }],
      debugRoutes: true,
    });
    await new Promise((resolve) => setTimeout(resolve, 60));
  });
  afterAll(async () => {
    await app.close();
    await runtime.close();
  });

  const shardSearch = (payload: unknown, headers: Record<string, string> = {}) =>
    app.inject({
      method: 'POST',
      url: '/_internal/shard_search',
      payload: JSON.stringify(payload),
      headers: { ...INTERNAL, ...headers },
    });
  const internal = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: string) =>
    app.inject({ method, url, headers: INTERNAL, ...(payload === undefined ? {} : { payload }) });

  it('tells who it is and which copies it holds', async () => {
    const r = await internal('GET', '/_internal/node_info');
    expect(r.json()).toEqual({
      node_id: 'data-7',
      roles: ['data'],
      indices: ['alpha', 'beta', 'gamma'],
      shards_per_index: 2,
      copies: [{ index: 'alpha', shard: 1, primary: true }],
    });
  });

  it('runs a shard search through the runtime and answers with service time and queue size', async () => {
    const r = await shardSearch(
      { index: 'alpha', shards: { alpha: [1] }, body: { echo: 'hi' } },
      { 'x-user': 'u' },
    );
    expect(r.statusCode).toBe(200);
    const body = r.json();
    expect(body).toMatchObject({
      node_id: 'data-7',
      queue_size: 0,
      response: { echo: 'hi', indices: ['alpha'] },
    });
    expect(body.service_time_ns).toBeGreaterThan(0);
  });

  it('puts its own stats entry on every internal answer, errors included, and on no other', async () => {
    for (const r of [
      await internal('GET', '/_internal/node_info'),
      await shardSearch({ index: 'alpha', shards: { alpha: [1] }, body: {} }),
      await shardSearch({ index: 'nope', shards: { nope: [0] }, body: {} }),
    ]) {
      const parsed = parseStatsHeader(r.headers['resource_usage_stats']);
      expect(parsed.entries).toHaveLength(1);
      expect(parsed.entries[0]).toMatchObject({ nodeId: 'data-7' });
      expect(Math.abs(parsed.entries[0]!.timestampMs - Date.now())).toBeLessThan(5000);
    }
    const plain = await app.inject({ method: 'POST', url: '/alpha/_search', payload: '{}' });
    expect(plain.headers['resource_usage_stats']).toBeUndefined();
    // A stats header in a request is dropped before anything reads it.
    const forged = await app.inject({
      method: 'POST',
      url: '/alpha/_search',
      payload: '{}',
      headers: { Resource_Usage_Stats: 'v1|data-7:99.0,99.0,,1' },
    });
    expect(forged.statusCode).toBe(200);
    expect(forged.headers['resource_usage_stats']).toBeUndefined();
  });

  it.each([
    [[1], 400, 'body must be a JSON object; received [1]'],
    [{ shards: {} }, 400, 'index must be a non-empty comma list of index names; received undefined'],
    [
      { index: 'alpha', shards: [0] },
      400,
      'shards must be an object of index name to shard numbers; received [0]',
    ],
    [{ index: 'alpha', shards: { alpha: [1] }, body: 'x' }, 400, 'body must be a JSON object; received "x"'],
    // As documented: concrete index names, each with its shards (issue 6).
    [
      { index: 'alpha', shards: {} },
      400,
      'shards must list the shards of every index in index (none for [alpha]); received {}',
    ],
    [
      { index: 'al*', shards: { alpha: [1] } },
      400,
      'index must be a comma list of concrete index names (no wildcards, _all, exclusions or empty names; [al*] is not one); received "al*"',
    ],
    [
      { index: '_all', shards: {} },
      400,
      'index must be a comma list of concrete index names (no wildcards, _all, exclusions or empty names; [_all] is not one); received "_all"',
    ],
    [
      { index: 'alpha,alpha', shards: { alpha: [1] } },
      400,
      'index must not repeat an index name ([alpha]); received "alpha,alpha"',
    ],
    [
      { index: 'alpha', shards: {}, extra: 1 },
      400,
      'extra is not a field of a shard search (index, shards, body, cancel_after_time_interval); received 1',
    ],
    [
      { index: 'alpha', shards: { beta: [0] } },
      400,
      'shards.beta must name an index the request resolves to; received [0]',
    ],
    [
      { index: 'alpha', shards: { alpha: [] } },
      400,
      'shards.alpha must be a non-empty array of shard numbers; received []',
    ],
    [
      { index: 'alpha', shards: { alpha: [0, -1] } },
      400,
      'shards.alpha[1] must be an integer in 0..1023; received -1',
    ],
    [
      { index: 'alpha', shards: { alpha: [3, 3] } },
      400,
      'shards.alpha[1] must not repeat a shard; received 3',
    ],
    [{ index: 'delta', shards: { delta: [0] } }, 404, 'no such index [delta]'],
  ])(
    'refuses the shard search %j with %i naming the field and the value',
    async (payload, status, reason) => {
      const r = await shardSearch(payload);
      expect(r.statusCode).toBe(status);
      expect(r.json().error.reason).toBe(reason);
    },
  );

  it('starts and stops a CPU hog when debug routes are on, refusing bad values', async () => {
    const bad = await internal('POST', '/_internal/debug/cpu_hog', '{"threads": 0, "duration_ms": 10}');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.reason).toBe('threads must be an integer in 1..64; received 0');
    const noDuration = await internal('POST', '/_internal/debug/cpu_hog', '{}');
    expect(noDuration.json().error.reason).toBe(
      'duration_ms must be an integer in 1..600000; received undefined',
    );
    const started = await internal('POST', '/_internal/debug/cpu_hog', '{"threads": 1, "duration_ms": 5000}');
    expect(started.statusCode).toBe(200);
    expect(started.json()).toMatchObject({ node_id: 'data-7', threads: 1 });
    const stopped = await internal('DELETE', '/_internal/debug/cpu_hog');
    expect(stopped.json()).toEqual({ node_id: 'data-7', threads: 0 });
  });

  const routes: Array<['GET' | 'POST' | 'DELETE', string, string | undefined]> = [
    ['GET', '/_internal/node_info', undefined],
    ['POST', '/_internal/shard_search', '{"index":"alpha","shards":{"alpha":[1]},"body":{}}'],
    ['POST', '/_internal/debug/cpu_hog', '{"threads":1,"duration_ms":10}'],
    ['DELETE', '/_internal/debug/cpu_hog', undefined],
    ['POST', '/_internal/debug/latency', '{"delay_ms":1,"ratio":0.5,"duration_ms":10}'],
    ['DELETE', '/_internal/debug/latency', undefined],
  ];
  const refusals: Array<[string, Record<string, string>, number, RegExp]> = [
    ['no token', {}, 401, /^Authorization is required: .* needs the cluster secret .*; received nothing$/],
    [
      'a wrong token',
      { authorization: 'Bearer not-the-cluster-secret' },
      403,
      /^Authorization must carry the cluster secret: .*; received a wrong token \(22 characters\)$/,
    ],
    ['the admin token', { authorization: `Bearer ${ADMIN_TOKEN}` }, 403, /received a client token/],
    [
      'another scheme',
      { authorization: `Basic ${Buffer.from(`a:${SECRET}`).toString('base64')}` },
      401,
      /^Authorization must read Bearer <token>: .*; received a header of \d+ characters with scheme "Basic"$/,
    ],
  ];
  describe.each(routes)('%s %s', (method, url, payload) => {
    it.each(refusals)(
      'refuses a call with %s, before reading the body, and sends no node stats',
      async (_what, headers, status, reason) => {
        const r = await app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
        expect(r.statusCode).toBe(status);
        expect(r.json().error).toMatchObject({ type: 'security_exception' });
        expect(r.json().error.reason).toMatch(reason);
        expect(r.json().error.reason).toContain(`${method} ${url}`);
        expect(r.headers['resource_usage_stats']).toBeUndefined();
        if (status === 401) expect(r.headers['www-authenticate']).toBe('Bearer realm="query-sandbox"');
      },
    );

    it("answers the cluster secret, with this node's stats entry", async () => {
      const r = await internal(method, url, payload);
      expect(r.statusCode).toBe(200);
      expect(parseStatsHeader(r.headers['resource_usage_stats']).entries[0]).toMatchObject({
        nodeId: 'data-7',
      });
    });
  });

  it('reports its resource usage in /_nodes/stats', async () => {
    const stats = (await app.inject({ method: 'GET', url: '/_nodes/stats' })).json();
    const usage = stats.nodes['data-7'].resource_usage;
    expect(usage).toMatchObject({ interval_ms: 20, window_ms: 200 });
    expect(usage.heap).toBeGreaterThan(0);
    expect(usage.samples.cpu).toBeGreaterThan(0);
    expect(runtime.resourceUsage().timestampMs).toBeGreaterThan(0);
  });

  it('gives up a shard search whose caller closes the connection: the running task is cancelled', async () => {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const aborted = () => runtime.sandboxStats().get('_root')!.counters.aborted;
    const before = aborted();
    const request = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/_internal/shard_search',
      headers: { 'content-type': 'application/json', ...INTERNAL },
      agent: false,
    });
    request.on('error', () => undefined);
    request.end(JSON.stringify({ index: 'alpha', shards: { alpha: [1] }, body: { sleepMs: 10_000 } }));
    const until = async (condition: () => boolean) => {
      const deadline = performance.now() + 3000;
      while (!condition()) {
        if (performance.now() > deadline) throw new Error('condition not met in time');
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    await until(() => runtime.nodeStats().running === 1);
    const t0 = performance.now();
    request.destroy();
    await until(() => runtime.nodeStats().running === 0 && aborted() === before + 1);
    expect(performance.now() - t0).toBeLessThan(3000);
  });
});
