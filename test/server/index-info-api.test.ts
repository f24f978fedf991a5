/**
 * The calls clients make first, over the corpus and the writable indices of a single node (fastify
 * inject over a real runtime): GET/HEAD /{index}, _mapping, _settings, _cluster/health, _cat/indices,
 * _count and _refresh.
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
const DOCS = 6;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'qs-index-info-'));
  runtime = await createRuntime({
    dataDir: path.join(dir, 'node'),
    cacheDir: path.join(dir, 'cache'),
    threads: 1,
    spareWorkers: 0,
    engineOptions: { maxDocumentsPerIndex: DOCS },
  });
  // Writes need a token (docs/security.md, tested in bad-input.test.ts); these tests are about what writes do.
  app = buildHttpServer(runtime, { insecureSkipAuth: true });
  await call('PUT', '/books', {
    settings: { number_of_shards: 2, number_of_replicas: 0 },
    mappings: { properties: { title: { type: 'text' } } },
  });
  const lines = [1, 2, 3].flatMap((i) => [
    { index: { _index: 'books', _id: `b${i}` } },
    { subject: `book ${i}`, n: i },
  ]);
  await app.inject({
    method: 'POST',
    url: '/_bulk?refresh=true',
    payload: `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`,
    headers: { 'content-type': 'application/x-ndjson' },
  });
});

afterAll(async () => {
  await app?.close();
  await runtime?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function call(method: 'GET' | 'PUT' | 'POST' | 'DELETE' | 'HEAD', url: string, body?: unknown) {
  const r = await app.inject({
    method,
    url,
    ...(body === undefined
      ? {}
      : { payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  let json: Json;
  try {
    json = r.json();
  } catch {
    json = r.body;
  }
  return { status: r.statusCode, json, body: r.body };
}

describe('indices', () => {
  it('answers GET and HEAD /{index} for corpus and writable indices, 404 for a missing one', async () => {
    const corpus = await call('GET', '/spam-1');
    expect(corpus.status).toBe(200);
    expect(corpus.json['spam-1']).toMatchObject({
      aliases: {},
      mappings: { properties: { body: { type: 'text' }, date: { type: 'date' } } },
      settings: { index: { number_of_shards: '2', number_of_replicas: '0', blocks: { write: 'true' } } },
    });
    expect(corpus.json['spam-1'].settings.index.uuid).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const books = await call('GET', '/books');
    expect(books.json.books.mappings).toEqual({ properties: { title: { type: 'text' } } });
    expect(books.json.books.settings.index.number_of_shards).toBe('2');
    expect((await call('HEAD', '/spam-1')).status).toBe(200);
    expect((await call('HEAD', '/books')).status).toBe(200);
    const missing = await call('HEAD', '/nothing');
    expect(missing.status).toBe(404);
    expect(missing.body).toBe('');
    expect((await call('GET', '/nothing')).json.error.type).toBe('index_not_found_exception');
  });

  it('lists mappings and settings of every index, and changes the writable ones with PUT /_settings', async () => {
    const mappings = await call('GET', '/_mapping');
    expect(Object.keys(mappings.json)).toEqual(expect.arrayContaining(['easy-ham-1', 'spam-2', 'books']));
    expect((await call('GET', '/spam-*/_mapping')).json['spam-2'].mappings.properties.subject).toEqual({
      type: 'text',
    });
    const settings = await call('GET', '/_settings');
    expect(settings.json['hard-ham-1'].settings.index.blocks.write).toBe('true');
    expect((await call('PUT', '/_settings', { index: { refresh_interval: '5s' } })).json).toEqual({
      acknowledged: true,
    });
    expect((await call('GET', '/books/_settings')).json.books.settings.index.refresh_interval).toBe('5s');
    expect((await call('GET', '/spam-1/_settings')).json['spam-1'].settings.index.provided_name).toBe(
      'spam-1',
    );
  });
});

describe('_cluster/health', () => {
  it('is green while every copy is assigned, yellow when a writable index has an unassigned replica', async () => {
    const green = await call('GET', '/_cluster/health');
    expect(green.json).toMatchObject({
      cluster_name: 'query-sandbox',
      status: 'green',
      timed_out: false,
      number_of_nodes: 1,
      number_of_data_nodes: 1,
      active_primary_shards: 5 * 2 + 2,
      active_shards: 12,
      unassigned_shards: 0,
      active_shards_percent_as_number: 100,
    });
    await call('PUT', '/replicated', { settings: { number_of_shards: 1, number_of_replicas: 1 } });
    const yellow = await call('GET', '/_cluster/health?level=indices');
    expect(yellow.json.status).toBe('yellow');
    expect(yellow.json.unassigned_shards).toBe(1);
    expect(yellow.json.indices.replicated).toMatchObject({
      status: 'yellow',
      number_of_shards: 1,
      number_of_replicas: 1,
    });
    expect((await call('GET', '/_cluster/health/spam-*')).json.status).toBe('green');
    expect((await call('GET', '/_cluster/health?wait_for_status=yellow&timeout=1s')).status).toBe(200);
    const waited = await call('GET', '/_cluster/health/replicated?wait_for_status=green&timeout=50ms');
    expect(waited.status).toBe(408);
    expect(waited.json).toMatchObject({ status: 'yellow', timed_out: true });
    await call('DELETE', '/replicated');
    expect((await call('GET', '/_cluster/health?wait_for_status=purple')).json.error.reason).toBe(
      'url parameter [wait_for_status] must be green, yellow or red; received "purple"',
    );
  });
});

describe('_cat/indices', () => {
  it('prints a text table, with a header under ?v, and JSON rows with format=json', async () => {
    const text = await call('GET', '/_cat/indices?v&s=index');
    const lines = text.body.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^health\s+status\s+index\s+uuid\s+pri\s+rep\s+docs\.count/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[2])).toEqual([
      'books',
      'easy-ham-1',
      'easy-ham-2',
      'hard-ham-1',
      'spam-1',
      'spam-2',
    ]);
    const json = await call('GET', '/_cat/indices?format=json');
    const books = json.json.find((r: Json) => r.index === 'books');
    expect(books).toMatchObject({ health: 'green', status: 'open', pri: '2', rep: '0', 'docs.count': '3' });
    expect(json.json.find((r: Json) => r.index === 'spam-1')['docs.count']).toBe(String(DOCS));
    const picked = await call('GET', '/_cat/indices/spam-*?format=json&h=index,docs.*');
    expect(picked.json).toEqual([
      { index: 'spam-1', 'docs.count': String(DOCS), 'docs.deleted': '0' },
      { index: 'spam-2', 'docs.count': String(DOCS), 'docs.deleted': '0' },
    ]);
    expect((await call('GET', '/_cat/indices?h=nope')).status).toBe(400);
  });
});

describe('_count and _refresh', () => {
  it('counts the documents a query matches, from the body or q', async () => {
    expect((await call('GET', '/books/_count')).json).toEqual({
      count: 3,
      _shards: { total: 2, successful: 2, skipped: 0, failed: 0 },
    });
    expect((await call('POST', '/books/_count', { query: { term: { n: 2 } } })).json.count).toBe(1);
    expect((await call('GET', '/books/_count?q=subject:book')).json.count).toBe(3);
    expect((await call('GET', '/spam-*/_count')).json.count).toBe(2 * DOCS);
    expect((await call('GET', '/_count')).json.count).toBe(5 * DOCS + 3);
    const bad = await call('POST', '/books/_count', { size: 1 });
    expect(bad.status).toBe(400);
    expect(bad.json.error.reason).toBe('body.size is not a count key (expected query); received 1');
  });

  it('refreshes every index: the writable ones, and the corpus ones count as refreshed', async () => {
    const all = await call('POST', '/_refresh');
    expect(all.json._shards).toEqual({ total: 12, successful: 12, failed: 0 });
    expect((await call('POST', '/spam-1/_refresh')).json._shards).toEqual({
      total: 2,
      successful: 2,
      failed: 0,
    });
    expect((await call('GET', '/books/_refresh')).json._shards.total).toBe(2);
  });
});
