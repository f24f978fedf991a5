/**
 * The index, bulk, GET, refresh and `_cat/shards` APIs of a single node, through HTTP (fastify inject)
 * over a real runtime: the built-in engine (a slice of the corpus) with two search workers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { buildHttpServer } from '../../src/server/http-server.js';

// biome-ignore lint/suspicious/noExplicitAny: the tests read JSON answers freely
type Json = any;

let dir: string;
let runtime: Runtime;
let app: FastifyInstance;
/** Every call of these tests sends the admin token: the routes' roles are tested in route-auth.test.ts. */
const ADMIN_TOKEN = 'index-api-admin-token-0123456789';
const AUTH = { authorization: `Bearer ${ADMIN_TOKEN}` };

const options = () => ({
  dataDir: path.join(dir, 'node'),
  cacheDir: path.join(dir, 'cache'),
  threads: 2,
  spareWorkers: 0,
  engineOptions: { maxDocumentsPerIndex: 10 },
});

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'qs-index-api-'));
  runtime = await createRuntime(options());
  app = buildHttpServer(runtime, { bulkBodyLimitBytes: 64 * 1024, adminToken: ADMIN_TOKEN });
});

afterAll(async () => {
  await app?.close();
  await runtime?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function call(method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, body?: unknown) {
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const r = await app.inject({
    method,
    url,
    headers: { ...AUTH, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(payload === undefined ? {} : { payload }),
  });
  let json: Json;
  try {
    json = r.json();
  } catch {
    json = r.body;
  }
  return { status: r.statusCode, json, body: r.body };
}

const ndjson = (...lines: unknown[]) =>
  `${lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n')}\n`;
const bulk = (url: string, ...lines: unknown[]) =>
  app
    .inject({
      method: 'POST',
      url,
      payload: ndjson(...lines),
      headers: { ...AUTH, 'content-type': 'application/x-ndjson' },
    })
    .then((r) => ({ status: r.statusCode, json: r.json() as Json }));
const search = async (index: string, query: unknown = { match_all: {} }, size = 100) =>
  (await call('POST', `/${index}/_search`, { query, size })).json;

describe('index API validation', () => {
  const refused: Array<[string, 'PUT' | 'DELETE' | 'GET' | 'POST', string, unknown, number, RegExp]> = [
    [
      'an upper-case name',
      'PUT',
      '/Logs',
      undefined,
      400,
      /^index is not a valid index name: Invalid index name \[Logs\], must be lowercase; received "Logs"$/,
    ],
    [
      'a name starting with _',
      'PUT',
      '/_logs',
      undefined,
      400,
      /must not start with '_', '-', or '\+'; received "_logs"/,
    ],
    [
      'zero shards',
      'PUT',
      '/v1',
      { settings: { number_of_shards: 0 } },
      400,
      /^settings\.index\.number_of_shards must be an integer in 1\.\.1024; received 0$/,
    ],
    [
      'routing shards that are not a multiple',
      'PUT',
      '/v2',
      { settings: { index: { number_of_shards: 3, number_of_routing_shards: 10 } } },
      400,
      /settings\.index\.number_of_routing_shards must be a multiple of index\.number_of_shards.*received 10$/,
    ],
    [
      'an unknown bulk routing mode',
      'PUT',
      '/v3',
      { settings: { 'bulk_routing.mode': 'fast' } },
      400,
      /^settings\.index\.bulk_routing\.mode must be "routing" or "id"; received "fast"$/,
    ],
    [
      'bulk routing enabled as a word',
      'PUT',
      '/v4',
      { settings: { bulk_routing: { enabled: 'yes' } } },
      400,
      /settings\.index\.bulk_routing\.enabled must be true or false.*received "yes"/,
    ],
    [
      'an unknown setting',
      'PUT',
      '/v5',
      { settings: { foo: 1 } },
      400,
      /^settings\.index\.foo is an unknown setting \[index\.foo\]/,
    ],
    ['an unknown body key', 'PUT', '/v6', { setting: {} }, 400, /^setting is not a create-index key/],
    ['aliases', 'PUT', '/v7', { aliases: { a: {} } }, 400, /^aliases is not supported/],
    [
      'a refresh interval without unit',
      'PUT',
      '/v8',
      { settings: { refresh_interval: '5' } },
      400,
      /settings\.index\.refresh_interval must be a time value with a unit.*received "5"/,
    ],
    ['a corpus index name', 'PUT', '/spam-1', undefined, 400, /^index \[spam-1\] already exists$/],
    [
      'a template without patterns',
      'PUT',
      '/_index_template/t1',
      { index_patterns: [] },
      400,
      /^index_patterns is required.*received \[\]$/,
    ],
    [
      'a template with a bad name',
      'PUT',
      '/_index_template/T',
      { index_patterns: ['a*'] },
      400,
      /^name is not a valid index template name \(name must be lower cased\); received "T"$/,
    ],
    [
      'a template with a bad pattern',
      'PUT',
      '/_index_template/t2',
      { index_patterns: ['a b'] },
      400,
      /^index_patterns\[0\] is not a valid index pattern/,
    ],
    [
      'deleting a missing template',
      'DELETE',
      '/_index_template/none',
      undefined,
      404,
      /^index template matching \[none\] not found$/,
    ],
    ['a GET on a missing index', 'GET', '/nope/_doc/1', undefined, 404, /^no such index \[nope\]$/],
    ['deleting a missing index', 'DELETE', '/nope', undefined, 404, /^no such index \[nope\]$/],
    [
      'deleting with a wildcard',
      'DELETE',
      '/sp*',
      undefined,
      400,
      /^index must name indices to delete.*received "sp\*"$/,
    ],
    [
      'deleting a corpus index',
      'DELETE',
      '/spam-1',
      undefined,
      403,
      /^index \[spam-1\] blocked by: \[FORBIDDEN\/8\/index write \(api\)\]/,
    ],
    [
      'settings of a corpus index',
      'PUT',
      '/spam-2/_settings',
      { refresh_interval: '1s' },
      403,
      /cluster_block|blocked by/,
    ],
    [
      'an unknown URL parameter',
      'GET',
      '/spam-1/_doc/1?stored_fields=a',
      undefined,
      400,
      /^url parameter \[stored_fields\] is not supported \(routing, _source, _source_includes, _source_excludes, realtime, pretty\); received "a"$/,
    ],
    [
      'a bad refresh value',
      'POST',
      '/_bulk?refresh=maybe',
      ndjson({ index: { _index: 'x1' } }, {}),
      400,
      /^refresh must be true, false or wait_for; received "maybe"$/,
    ],
  ];
  it.each(refused)(
    'refuses %s with a 4xx naming the field and the value',
    async (_what, method, url, body, status, reason) => {
      const r = await call(method, url, body);
      expect(r.status).toBe(status);
      expect(r.json.status).toBe(status);
      expect(r.json.error.reason).toMatch(reason);
    },
  );

  it('refuses a static setting on an open index, and an index that exists', async () => {
    expect((await call('PUT', '/fixed', { settings: { number_of_shards: 2 } })).status).toBe(200);
    const again = await call('PUT', '/fixed', {});
    expect(again.status).toBe(400);
    expect(again.json.error).toMatchObject({
      type: 'resource_already_exists_exception',
      code: 'QS_INDEX_EXISTS',
    });
    expect(again.json.error.reason).toMatch(/^index \[fixed\/[A-Za-z0-9_-]{22}\] already exists$/);
    const r = await call('PUT', '/fixed/_settings', { index: { number_of_shards: 4 } });
    expect(r.status).toBe(400);
    expect(r.json.error.reason).toMatch(
      /Can't update non dynamic settings \[\[index\.number_of_shards\]\] for open indices \[\[fixed\/.+\]\]; received \{"index\.number_of_shards":4\}/,
    );
    // Nothing was half-applied.
    expect((await call('GET', '/fixed/_settings')).json.fixed.settings.index.number_of_shards).toBe('2');
  });
});

describe('bulk NDJSON errors through HTTP', () => {
  const wholeRequest: Array<[string, string, number, string, RegExp]> = [
    [
      'no final newline',
      '{"index":{"_index":"e1"}}\n{"a":1}',
      400,
      'illegal_argument_exception',
      /must be terminated by a newline/,
    ],
    [
      'an action line that is not JSON',
      '{"index":\n{}\n',
      400,
      'x_content_parse_exception',
      /^Malformed action\/metadata line \[1\], not valid JSON/,
    ],
    [
      'an action line that is a string',
      '"index"\n{}\n',
      400,
      'illegal_argument_exception',
      /line \[1\], expected START_OBJECT but found \[VALUE_STRING\]/,
    ],
    [
      'an unknown action',
      '{"upsert":{"_index":"e1"}}\n{}\n',
      400,
      'illegal_argument_exception',
      /expected field \[create\], \[delete\], \[index\] or \[update\] but found \[upsert\]/,
    ],
    [
      'a _type',
      '{"index":{"_index":"e1","_type":"doc"}}\n{}\n',
      400,
      'illegal_argument_exception',
      /contains an unknown parameter \[_type\]/,
    ],
    [
      'an unsupported pipeline',
      '{"index":{"_index":"e1","pipeline":"p"}}\n{}\n',
      400,
      'illegal_argument_exception',
      /parameter \[pipeline\] that this server does not support; received "p"/,
    ],
    [
      'a delete without _id',
      '{"delete":{"_index":"e1"}}\n',
      400,
      'action_request_validation_exception',
      /^Validation Failed: 1: id is missing \(line 1, action \[delete\]\);$/,
    ],
    [
      'an update without doc',
      '{"update":{"_index":"e1","_id":"1"}}\n{"detect_noop":true}\n',
      400,
      'action_request_validation_exception',
      /script or doc is missing \(line 2\)/,
    ],
    [
      'an action without its document line',
      '{"index":{"_index":"e1"}}\n',
      400,
      'illegal_argument_exception',
      /the \[index\] action has no document line after it/,
    ],
    [
      'no index anywhere',
      '{"index":{}}\n{}\n',
      400,
      'action_request_validation_exception',
      /index is missing \(line 1\)/,
    ],
    ['an empty body', '', 400, 'action_request_validation_exception', /no requests added/],
    [
      'a negative retry_on_conflict',
      '{"update":{"_index":"e1","_id":"1","retry_on_conflict":-1}}\n{"doc":{}}\n',
      400,
      'illegal_argument_exception',
      /\[retry_on_conflict\] must be an integer >= 0; received -1/,
    ],
    [
      'an update body with an unknown field',
      '{"update":{"_index":"e1","_id":"1"}}\n{"doc":{},"x":1}\n',
      400,
      'x_content_parse_exception',
      /\[UpdateRequest\] unknown field \[x\]/,
    ],
  ];
  it.each(wholeRequest)('refuses %s as a whole', async (_what, payload, status, type, reason) => {
    const r = await app.inject({
      method: 'POST',
      url: '/_bulk',
      payload,
      headers: { ...AUTH, 'content-type': 'application/x-ndjson' },
    });
    expect(r.statusCode).toBe(status);
    expect(r.json().error).toMatchObject({ type, code: 'QS_INVALID_BULK' });
    expect(r.json().error.reason).toMatch(reason);
  });

  it('refuses a body over the bulk size limit with 413', async () => {
    const big = ndjson({ index: { _index: 'e1' } }, { body: 'x'.repeat(70 * 1024) });
    const r = await app.inject({
      method: 'POST',
      url: '/_bulk',
      payload: big,
      headers: { ...AUTH, 'content-type': 'application/x-ndjson' },
    });
    expect(r.statusCode).toBe(413);
  });

  it('fails only the bad items and runs the others, in request order', async () => {
    expect((await call('PUT', '/items', {})).status).toBe(200);
    const r = await bulk(
      '/items/_bulk?refresh=true',
      { index: { _id: 'ok1' } },
      { subject: 'fine' },
      { index: { _index: 'Bad' } },
      { a: 1 },
      { index: { _id: 'nj' } },
      '{"not json',
      { index: { _id: 'arr' } },
      [1, 2],
      { index: { _id: '' } },
      { a: 1 },
      { create: { _id: 'ok1' } },
      { a: 1 },
      { update: { _id: 'missing' } },
      { doc: { a: 1 } },
      { index: { _index: 'spam-1' } },
      { a: 1 },
      { delete: { _id: 'never' } },
      { update: { _id: 'ok1' } },
      { doc: { extra: true } },
    );
    expect(r.status).toBe(200);
    expect(r.json.errors).toBe(true);
    const summary = r.json.items.map((i: Json) => {
      const [action, v] = Object.entries(i)[0] as [string, Json];
      return [action, v.status, v.error?.type ?? v.result];
    });
    expect(summary).toEqual([
      ['index', 201, 'created'],
      ['index', 400, 'invalid_index_name_exception'],
      ['index', 400, 'document_parsing_exception'],
      ['index', 400, 'document_parsing_exception'],
      ['index', 400, 'illegal_argument_exception'],
      ['create', 409, 'version_conflict_engine_exception'],
      ['update', 404, 'document_missing_exception'],
      ['index', 403, 'cluster_block_exception'],
      ['delete', 404, 'not_found'],
      ['update', 200, 'updated'],
    ]);
    expect(r.json.items[1].index.error.reason).toMatch(
      /Invalid index name \[Bad\], must be lowercase \(bulk line 3\)/,
    );
    expect(r.json.items[2].index.error.reason).toMatch(/bulk line 6/);
    expect((await call('GET', '/items/_doc/ok1')).json).toMatchObject({
      found: true,
      _version: 2,
      _source: { subject: 'fine', extra: true },
    });
  });
});

describe('GET by id and bulk routing', () => {
  const docs = (n: number) =>
    Array.from({ length: n }, (_, i) => [
      { index: {} },
      { subject: `doc ${i}`, body: 'routed words' },
    ]).flat();
  const shardsWithDocs = async (index: string) =>
    ((await call('GET', `/_cat/shards/${index}?format=json`)).json as Json[])
      .filter((r) => r.prirep === 'p' && Number(r.docs) > 0)
      .map((r) => Number(r.shard));

  it('spreads auto-id documents over the shards when bulk routing is off', async () => {
    await call('PUT', '/spread', { settings: { number_of_shards: 5 } });
    const r = await bulk('/spread/_bulk', ...docs(40));
    expect(r.json.errors).toBe(false);
    expect((await shardsWithDocs('spread')).length).toBeGreaterThan(1);
  });

  it('mode id: one shard per bulk, ids that route there, and plain GET by id finds every document', async () => {
    await call('PUT', '/by-id', {
      settings: { number_of_shards: 5, bulk_routing: { enabled: true, mode: 'id' } },
    });
    const r = await bulk('/by-id/_bulk', ...docs(30));
    expect(r.json.errors).toBe(false);
    expect(await shardsWithDocs('by-id')).toHaveLength(1);
    for (const item of r.json.items) {
      expect(item.index._id).toMatch(/^[A-Za-z0-9_-]{20}$/);
      expect(item.index._routing).toBeUndefined();
      const got = await call('GET', `/by-id/_doc/${item.index._id}`);
      expect(got.status).toBe(200);
      expect(got.json).toMatchObject({ found: true, _id: item.index._id, _version: 1 });
    }
  });

  it('mode routing: one shard per bulk, a stored _routing of at most 10 characters that GET needs', async () => {
    await call('PUT', '/by-routing', {
      settings: { number_of_shards: 5, 'bulk_routing.enabled': true, 'bulk_routing.mode': 'routing' },
    });
    const r = await bulk(
      '/by-routing/_bulk?refresh=true',
      ...docs(30),
      { index: { _id: 'user-id' } },
      { subject: 'user' },
    );
    expect(r.json.errors).toBe(false);
    const routed = r.json.items.slice(0, 30).map((i: Json) => i.index);
    const routings = new Set(routed.map((i: Json) => i._routing));
    expect(routings.size).toBe(1);
    const routing = [...routings][0] as string;
    expect(routing.length).toBeLessThanOrEqual(10);
    expect(r.json.items[30].index._routing).toBeUndefined(); // a user id keeps normal routing
    const shards = await shardsWithDocs('by-routing');
    expect(shards.length).toBeLessThanOrEqual(2);
    for (const item of routed.slice(0, 5)) {
      const got = await call('GET', `/by-routing/_doc/${item._id}?routing=${encodeURIComponent(routing)}`);
      expect(got.json).toMatchObject({ found: true, _routing: routing });
    }
    const hits = (await search('by-routing', { match: { body: 'routed' } })).hits.hits;
    expect(hits).toHaveLength(30);
    expect(hits.every((h: Json) => h._routing === routing)).toBe(true);
    expect((await call('GET', '/by-routing/_doc/user-id')).json.found).toBe(true);
  });

  it('answers a GET of a missing document with 404 found: false', async () => {
    const r = await call('GET', '/by-id/_doc/absent');
    expect(r.status).toBe(404);
    expect(r.json).toEqual({ _index: 'by-id', _id: 'absent', found: false });
  });
});

describe('refresh', () => {
  it('does not show writes before a refresh, and shows them after POST /{index}/_refresh', async () => {
    await call('PUT', '/manual', { settings: { refresh_interval: '-1', number_of_shards: 2 } });
    await bulk('/manual/_bulk', { index: { _id: '1' } }, { body: 'hidden' });
    expect((await search('manual')).hits.total.value).toBe(0);
    expect((await call('GET', '/manual/_doc/1')).json.found).toBe(true); // GET is real-time
    expect((await call('POST', '/manual/_refresh')).json).toEqual({
      _shards: { total: 2, successful: 2, failed: 0 },
    });
    expect((await search('manual')).hits.total.value).toBe(1);
  });

  it('?refresh=true makes the writes searchable on every worker before the answer', async () => {
    await call('PUT', '/now', { settings: { refresh_interval: '-1' } });
    const r = await bulk('/now/_bulk?refresh=true', { index: { _id: 'a' } }, { body: 'visible' });
    expect(r.json.items[0].index.forced_refresh).toBe(true);
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => search('now', { match: { body: 'visible' } })),
    );
    expect(answers.map((a) => a.hits.total.value)).toEqual(Array(12).fill(1));
  });

  it('?refresh=wait_for answers once a scheduled refresh has published the writes', async () => {
    await call('PUT', '/waiting', { settings: { refresh_interval: '300ms' } });
    const started = performance.now();
    const r = await bulk('/waiting/_bulk?refresh=wait_for', { index: { _id: 'w' } }, { body: 'waited' });
    expect(r.json.items[0].index.forced_refresh).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(2000);
    expect((await search('waiting', { match: { body: 'waited' } })).hits.total.value).toBe(1);
  });

  it('refreshes on its interval without being asked', async () => {
    await call('PUT', '/scheduled', { settings: { refresh_interval: '100ms' } });
    await bulk('/scheduled/_bulk', { index: { _id: 's' } }, { body: 'later' });
    const deadline = performance.now() + 3000;
    let seen = 0;
    while (seen === 0 && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      seen = (await search('scheduled')).hits.total.value;
    }
    expect(seen).toBe(1);
  });
});

describe('templates, settings and _cat/shards', () => {
  it('applies a template with index_patterns to an index a bulk creates', async () => {
    const put = await call('PUT', '/_index_template/tpl', {
      index_patterns: ['tpl-*'],
      template: { settings: { number_of_shards: 4, bulk_routing: { enabled: true } } },
    });
    expect(put.json).toEqual({ acknowledged: true });
    const r = await bulk(
      '/_bulk',
      { index: { _index: 'tpl-1' } },
      { a: 1 },
      { index: { _index: 'tpl-1' } },
      { a: 2 },
    );
    expect(r.json.errors).toBe(false);
    const settings = (await call('GET', '/tpl-1/_settings')).json['tpl-1'].settings.index;
    expect(settings).toMatchObject({ number_of_shards: '4', bulk_routing: { enabled: 'true', mode: 'id' } });
    expect((await call('GET', '/_index_template/tpl')).json.index_templates[0].name).toBe('tpl');
  });

  it('changes a dynamic setting with PUT /{index}/_settings', async () => {
    await call('PUT', '/dyn', {});
    expect((await call('PUT', '/dyn/_settings', { index: { 'bulk_routing.enabled': true } })).json).toEqual({
      acknowledged: true,
    });
    expect((await call('GET', '/dyn/_settings')).json.dyn.settings.index.bulk_routing.enabled).toBe('true');
  });

  it('lists every copy with index, shard, prirep, docs and node; replicas are unassigned on one node', async () => {
    await call('PUT', '/cat', { settings: { number_of_shards: 2, number_of_replicas: 1 } });
    await bulk('/cat/_bulk', { index: { _id: 'x' } }, {});
    const rows = (await call('GET', '/_cat/shards/cat?format=json')).json;
    expect(rows).toHaveLength(4);
    expect(
      rows
        .filter((r: Json) => r.prirep === 'p')
        .map((r: Json) => r.docs)
        .sort(),
    ).toEqual(['0', '1']);
    expect(rows.filter((r: Json) => r.prirep === 'r')).toEqual([
      { index: 'cat', shard: '0', prirep: 'r', state: 'UNASSIGNED', docs: null, node: null },
      { index: 'cat', shard: '1', prirep: 'r', state: 'UNASSIGNED', docs: null, node: null },
    ]);
    expect(rows[0].node).toBe(runtime.options.nodeId);
    const text = (await call('GET', '/_cat/shards/cat?v')).body;
    expect(text.split('\n')[0]).toMatch(/^index +shard +prirep +state +docs +node$/);
  });

  it('deletes an index with its shard logs, and a template', async () => {
    await call('PUT', '/doomed', {});
    await bulk('/doomed/_bulk', { index: { _id: '1' } }, {});
    expect((await call('DELETE', '/doomed')).json).toEqual({ acknowledged: true });
    expect((await call('GET', '/doomed/_doc/1')).status).toBe(404);
    expect((await call('DELETE', '/_index_template/tpl')).json).toEqual({ acknowledged: true });
  });
});

describe('durability', () => {
  it('keeps indices, templates, settings and every acknowledged document across a restart', async () => {
    await call('PUT', '/_index_template/keep', {
      index_patterns: ['keep-*'],
      template: { settings: { number_of_shards: 3 } },
    });
    await call('PUT', '/durable', { settings: { refresh_interval: '-1', number_of_shards: 3 } });
    const lines = Array.from({ length: 50 }, (_, i) => [
      { index: { _id: `d${i}` } },
      { body: `kept ${i}` },
    ]).flat();
    expect((await bulk('/durable/_bulk', ...lines)).json.errors).toBe(false);
    await bulk('/durable/_bulk', { delete: { _id: 'd0' } }, { update: { _id: 'd1' } }, { doc: { extra: 1 } });
    await app.close();
    await runtime.close();

    runtime = await createRuntime(options());
    app = buildHttpServer(runtime, { bulkBodyLimitBytes: 64 * 1024, adminToken: ADMIN_TOKEN });
    // Everything recovered is searchable at once, whatever the refresh interval.
    expect((await search('durable', { match: { body: 'kept' } })).hits.total.value).toBe(49);
    expect((await call('GET', '/durable/_doc/d1')).json).toMatchObject({
      found: true,
      _version: 2,
      _source: { body: 'kept 1', extra: 1 },
    });
    expect((await call('GET', '/durable/_doc/d0')).json.found).toBe(false);
    expect((await call('GET', '/durable/_settings')).json.durable.settings.index.refresh_interval).toBe('-1');
    expect((await call('GET', '/_index_template/keep')).status).toBe(200);
    expect((await search('by-id')).hits.total.value).toBe(30);
  });
});
