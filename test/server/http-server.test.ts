import { routesWithSchemas } from '../../src/server/route-schemas.js';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { buildHttpServer } from '../../src/server/http-server.js';

const echoEngine = fileURLToPath(new URL('../fixtures/echo-engine.mjs', import.meta.url));

/** Routes of the single-node server that declare a schema (`routesWithSchemas`). */
// GET /_sandbox/_stats; _wlm stats and _list/wlm_stats (4 paths each); PUT|POST /_index_template;
// POST|PUT /_bulk and /{index}/_bulk; the 7 document writes; _cat/shards and _cat/indices (2 each).
const EXPECTED_SCHEMA_ROUTES = 26;

describe('HTTP server', () => {
  let runtime: Runtime;
  let app: FastifyInstance;
  beforeAll(async () => {
    runtime = await createRuntime({
      engine: echoEngine,
      threads: 1,
      nodeId: 'node-test',
      sandboxes: {
        sandboxes: [
          {
            name: 'dash',
            priority: 20,
            resourceConsumptionLimits: { cpu: { low: 0.01, high: 0.9 } },
            selectionAttributes: [{ name: 'userPattern', value: 'dash_*' }],
          },
        ],
      },
    });
    app = buildHttpServer(runtime);
  });
  afterAll(async () => {
    await app.close();
    await runtime.close();
  });

  const search = (url: string, payload: string, headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json', ...headers } });

  it('checks its fixed-shape URL parameters by route schemas', async () => {
    await app.ready();
    // fastify's automatic HEAD routes copy their GET's schema; they are not counted.
    const routes = routesWithSchemas(app).filter((r) => !r.startsWith('HEAD '));
    if (process.env['PRINT_SCHEMA_ROUTES'])
      console.log(`${routes.length} routes with schemas:\n${routes.join('\n')}`);
    expect(routes).toEqual(
      expect.arrayContaining(['GET /_sandbox/_stats', 'GET /_list/wlm_stats', 'PUT /_index_template/:name']),
    );
    expect(routes.length).toBe(EXPECTED_SCHEMA_ROUTES);
  });

  it('runs a search and returns the engine result', async () => {
    const r = await search('/alpha,beta/_search', '{"echo":"x"}');
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ echo: 'x', indices: ['alpha', 'beta'] });
  });

  it('accepts a body sent without a JSON content type, and an empty body', async () => {
    const r = await app.inject({
      method: 'POST',
      url: '/alpha/_search',
      payload: '{"echo":2}',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(r.json()).toEqual({ echo: 2, indices: ['alpha'] });
    const empty = await app.inject({ method: 'GET', url: '/_search' });
    expect(empty.statusCode).toBe(200);
    expect(empty.json().indices).toEqual(['alpha', 'beta', 'gamma']);
  });

  it("answers a search body of a content type it does not read with Elasticsearch's 406", async () => {
    for (const [method, url] of [
      ['POST', '/alpha/_search'],
      ['POST', '/_search'],
    ] as const) {
      const r = await app.inject({
        method,
        url,
        payload: '{"echo":1}',
        headers: { 'content-type': 'text/plain' },
      });
      expect(r.statusCode, `${method} ${url}`).toBe(406);
      expect(r.json()).toEqual({ error: 'Content-Type header [text/plain] is not supported', status: 406 });
    }
    const cbor = await app.inject({
      method: 'POST',
      url: '/alpha/_search',
      payload: '{}',
      headers: { 'content-type': 'application/cbor; charset=x' },
    });
    expect(cbor.json()).toEqual({
      error: 'Content-Type header [application/cbor; charset=x] is not supported',
      status: 406,
    });
  });

  it('reads the content types the official clients send', async () => {
    for (const type of [
      'application/json',
      'application/json; charset=utf-8',
      'application/vnd.elasticsearch+json; compatible-with=8',
      'application/vnd.elasticsearch+json; compatible-with=9',
      'Application/JSON',
    ]) {
      const r = await app.inject({
        method: 'POST',
        url: '/alpha/_search',
        payload: '{"echo":3}',
        headers: { 'content-type': type },
      });
      expect(r.statusCode, type).toBe(200);
      expect(r.json()).toEqual({ echo: 3, indices: ['alpha'] });
    }
  });

  it('answers malformed JSON with 400 parsing_exception and keeps serving', async () => {
    const r = await search('/alpha/_search', '{"query": {');
    expect(r.statusCode).toBe(400);
    expect(r.json().status).toBe(400);
    expect(r.json().error.type).toBe('parsing_exception');
    expect(r.json().error.reason).toMatch(/request body is not valid JSON/);
    expect((await search('/alpha/_search', '{}')).statusCode).toBe(200);
  });

  it('answers a non-object body with 400 naming the field and value', async () => {
    const r = await search('/alpha/_search', '[1,2]');
    expect(r.statusCode).toBe(400);
    expect(r.json().error.reason).toBe('body must be a JSON object; received [1,2]');
  });

  it('answers a deeply nested array body with 400, not a crash', async () => {
    const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
    const r = await search('/alpha/_search', deep);
    expect(r.statusCode).toBe(400);
    expect(r.json().error.reason).toBe('body must be a JSON object; received [array of 1]');
  });

  it('answers a bad percent-encoding and a long index list in the usual error shape', async () => {
    const bad = await app.inject({ method: 'POST', url: '/spam%ZZ/_search', payload: '{}' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.type).toBe('illegal_argument_exception');
    const long = await search(`/${Array.from({ length: 40 }, () => 'alpha').join(',')}/_search`, '{}');
    expect(long.statusCode).toBe(200);
  });

  it('refuses URL parameters it does not support rather than ignoring them', async () => {
    const r = await search('/alpha/_search?scroll=1m', '{}');
    expect(r.statusCode).toBe(400);
    expect(r.json().error.reason).toMatch(
      /^url parameter \[scroll\] is not supported \(q, df, default_operator, size, from, .*pretty\); received "1m"$/,
    );
    expect((await search('/alpha/_search?pretty', '{}')).statusCode).toBe(200);
  });

  it('folds the search URL parameters into the body the engine reads', async () => {
    const r = await search(
      '/alpha/_search?size=3&from=1&q=subject:x&sort=date:desc&_source=false&track_total_hits=false&timeout=1s&allow_partial_search_results=false',
      '{"echo":1,"size":50,"sort":["_score"]}',
    );
    expect(r.statusCode).toBe(200);
    expect(r.json().echo).toBe(1);
    const bad = await search('/alpha/_search?size=ten', '{}');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.reason).toBe('url parameter [size] must be an integer; received "ten"');
  });

  it('sends x-elastic-product on every answer, errors and unknown routes included', async () => {
    for (const [method, url] of [
      ['GET', '/'],
      ['GET', '/nothing/here'],
      ['POST', '/alpha/_search?bogus=1'],
    ] as const) {
      const r = await app.inject({ method, url });
      expect(r.headers['x-elastic-product']).toBe('Elasticsearch');
    }
  });

  it("answers GET / in Elasticsearch's shape, and HEAD / with 200", async () => {
    const r = await app.inject({ method: 'GET', url: '/' });
    expect(r.json()).toMatchObject({
      name: 'node-test',
      cluster_name: 'query-sandbox',
      version: { number: '9.3.0', build_flavor: 'default' },
      tagline: expect.any(String),
    });
    expect(r.json().cluster_uuid).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const head = await app.inject({ method: 'HEAD', url: '/' });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe('');
  });

  it('answers a route that does not exist with 404 no_handler_found_exception, whatever its parameters', async () => {
    for (const url of ['/idx/_doc/1/extra?refresh=true', '/_nothing/a/b?v&format=json', '/_msearch']) {
      const r = await app.inject({
        method: url === '/_msearch' ? 'POST' : 'DELETE',
        url,
        payload: '{}\n{"query":{}}\n',
      });
      expect(r.statusCode).toBe(404);
      expect(r.json().error.type).toBe('no_handler_found_exception');
      expect(r.json().error.root_cause).toEqual([
        { type: 'no_handler_found_exception', reason: r.json().error.reason },
      ]);
    }
  });

  it('gives every error a root_cause, and index errors their index fields', async () => {
    const r = await search('/nope/_search', '{}');
    expect(r.statusCode).toBe(404);
    expect(r.json().error).toMatchObject({
      root_cause: [
        {
          type: 'index_not_found_exception',
          reason: 'no such index [nope]',
          index: 'nope',
          index_uuid: '_na_',
        },
      ],
      type: 'index_not_found_exception',
      'resource.type': 'index_or_alias',
      'resource.id': 'nope',
      code: 'QS_INDEX_NOT_FOUND',
    });
  });

  it('indents the answer with ?pretty and refuses unknown URL parameters on every route', async () => {
    const pretty = await app.inject({ method: 'GET', url: '/_nodes/stats?pretty' });
    expect(pretty.statusCode).toBe(200);
    expect(pretty.body).toContain('\n  "_nodes": {');
    for (const url of ['/_sandbox?size=1', '/_nodes/stats?foo=1', '/_sandbox/_root?foo=1']) {
      const r = await app.inject({ method: 'GET', url });
      expect(r.statusCode).toBe(400);
      expect(r.json().error.reason).toMatch(/^url parameter \[(size|foo)\] is not supported \(only pretty\)/);
    }
  });

  it('gives malformed JSON the QS_INVALID_ARGUMENT code', async () => {
    const r = await search('/alpha/_search', '{"query":');
    expect(r.json().error.code).toBe('QS_INVALID_ARGUMENT');
  });

  it('answers an unknown index with 404 index_not_found_exception', async () => {
    const r = await search('/nope/_search', '{}');
    expect(r.statusCode).toBe(404);
    expect(r.json()).toMatchObject({
      error: { type: 'index_not_found_exception', reason: 'no such index [nope]' },
      status: 404,
    });
  });

  it("passes the engine's 4xx through with its type", async () => {
    const r = await search('/alpha/_search', '{"fail":"client"}');
    expect(r.statusCode).toBe(400);
    expect(r.json().error.type).toBe('parsing_exception');
    const failure = await search('/alpha/_search', '{"fail":"server"}');
    expect(failure.statusCode).toBe(500);
    expect(failure.json().error.type).toBe('exception');
  });

  it('answers a forbidden explicit sandbox with 403 and the reason', async () => {
    const r = await search('/alpha/_search', '{}', { 'x-user': 'bob', 'x-sandbox-id': 'dash' });
    expect(r.statusCode).toBe(403);
    expect(r.json().error.reason).toContain('dash');
    const ok = await search('/alpha/_search', '{}', { 'x-user': 'dash_1', 'x-sandbox-id': 'dash' });
    expect(ok.statusCode).toBe(200);
  });

  it('answers a rejection with 429 rejected_execution_exception naming the sandbox and resource', async () => {
    // dash's low cpu limit is 0.01: one busy task is enough.
    const busy = search('/alpha/_search', '{"burnCpuMs":600}', { 'x-user': 'dash_1' });
    let rejected:
      | { statusCode: number; json: () => { error: { type: string; reason: string; resource: string } } }
      | undefined;
    for (let i = 0; i < 40 && rejected === undefined; i++) {
      await new Promise((r) => setTimeout(r, 50));
      const r = await search('/alpha/_search', '{}', { 'x-user': 'dash_2' });
      if (r.statusCode === 429) rejected = r;
    }
    await busy;
    expect(rejected).toBeDefined();
    expect(rejected!.json().error.type).toBe('rejected_execution_exception');
    expect(rejected!.json().error.reason).toContain('sandbox [dash] is above its low cpu limit');
    expect(rejected!.json().error.resource).toBe('cpu');
  });

  it('lists sandboxes in the seed shape', async () => {
    const r = await app.inject({ method: 'GET', url: '/_sandbox' });
    expect(r.statusCode).toBe(200);
    expect(Object.keys(r.json())).toEqual(['_root', 'dash']);
    expect(r.json().dash).toMatchObject({
      priority: 20,
      mode: 'enforced',
      resourceConsumptionLimits: { cpu: { low: 0.01, high: 0.9 } },
      selectionAttributes: [{ name: 'userPattern', value: ['dash_*'] }],
    });
  });

  it('reports sandbox stats shaped like _wlm/stats, usage as a ratio', async () => {
    const r = await app.inject({ method: 'GET', url: '/_sandbox/_stats' });
    const dash = r.json()['node-test'].sandboxes.dash;
    expect(dash).toMatchObject({
      running: expect.any(Number),
      total_completions: expect.any(Number),
      total_rejections: expect.any(Number),
      total_cancellations: expect.any(Number),
      cpu: {
        current_usage: expect.any(Number),
        rejections: expect.any(Number),
        cancellations: expect.any(Number),
      },
      memory: {
        current_usage: expect.any(Number),
        rejections: expect.any(Number),
        cancellations: expect.any(Number),
      },
    });
    expect(dash.total_rejections).toBeGreaterThanOrEqual(1);
    expect(dash.cpu.current_usage).toBeGreaterThanOrEqual(0);
    expect(dash.cpu.current_usage).toBeLessThanOrEqual(1);
  });

  it('reports node stats with CPU, heap and workers', async () => {
    const r = await app.inject({ method: 'GET', url: '/_nodes/stats' });
    const node = r.json().nodes['node-test'];
    // Two lanes, each of 1 worker and 1 spare.
    expect(node.workers.threads).toBe(2);
    expect(node.workers.startup_ms).toHaveLength(4);
    expect(node.workers.spare).toBe(2);
    expect(node.isolation).toBe('weighted');
    expect(node.gc_threads).toBe(
      process.execArgv.includes('--single-threaded-gc') ? 'per_isolate' : 'shared',
    );
    expect(
      node.lanes.map((l: { name: string; weight: number; weighted: boolean }) => [
        l.name,
        l.weight,
        l.weighted,
      ]),
    ).toEqual([
      ['foreground', 0, true],
      ['background', 19, true],
    ]);
    expect(node.cpu.usage).toBeGreaterThanOrEqual(0);
    expect(node.heap.usage).toBeGreaterThan(0);
  });

  it('answers an unknown route with 404 in the same error shape', async () => {
    const r = await app.inject({ method: 'GET', url: '/_nothing_here' });
    expect(r.statusCode).toBe(404);
    expect(r.json().error.type).toBe('no_handler_found_exception');
  });
});
