/**
 * The single-document APIs of a single node through HTTP (fastify inject) over a real runtime: index
 * with and without an id, create, get and exists, update, delete, optimistic concurrency with
 * if_seq_no / if_primary_term, routing and refresh, in Elasticsearch's response shapes.
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

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'qs-document-api-'));
  runtime = await createRuntime({
    dataDir: path.join(dir, 'node'),
    cacheDir: path.join(dir, 'cache'),
    threads: 1,
    spareWorkers: 0,
    engineOptions: { maxDocumentsPerIndex: 5 },
  });
  // Writes need a token (docs/security.md, tested in bad-input.test.ts); these tests are about what writes do.
  app = buildHttpServer(runtime, { insecureSkipAuth: true });
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

describe('single-document writes', () => {
  it("indexes with an id (201 created, then 200 updated) in Elasticsearch's shape", async () => {
    const first = await call('PUT', '/docs/_doc/1', { subject: 'hello', n: 1 });
    expect(first.status).toBe(201);
    expect(first.json).toEqual({
      _index: 'docs',
      _id: '1',
      _version: 1,
      result: 'created',
      _shards: { total: 2, successful: 1, failed: 0 },
      _seq_no: expect.any(Number),
      _primary_term: 1,
    });
    const second = await call('POST', '/docs/_doc/1', { subject: 'hello again', n: 2 });
    expect(second.status).toBe(200);
    expect(second.json).toMatchObject({ result: 'updated', _version: 2 });
    expect(second.json._seq_no).toBeGreaterThan(first.json._seq_no);
  });

  it('makes an id for POST /{index}/_doc', async () => {
    const r = await call('POST', '/docs/_doc?refresh=true', { subject: 'auto' });
    expect(r.status).toBe(201);
    expect(r.json._id).toMatch(/^[A-Za-z0-9_-]{20}$/);
    expect(r.json.forced_refresh).toBe(true);
    expect((await call('GET', `/docs/_doc/${r.json._id}`)).json._source).toEqual({ subject: 'auto' });
  });

  it('creates once: a second create, or op_type=create, answers 409 with the reason and its root cause', async () => {
    expect((await call('PUT', '/docs/_create/c1', { a: 1 })).status).toBe(201);
    for (const url of ['/docs/_create/c1', '/docs/_doc/c1?op_type=create']) {
      const again = await call('PUT', url, { a: 2 });
      expect(again.status).toBe(409);
      expect(again.json.error).toMatchObject({
        type: 'version_conflict_engine_exception',
        reason: '[c1]: version conflict, document already exists (current version [1])',
        code: 'QS_VERSION_CONFLICT',
        index: 'docs',
        root_cause: [{ type: 'version_conflict_engine_exception', index: 'docs' }],
      });
    }
  });

  it('gets, checks existence with HEAD, and filters _source', async () => {
    await call('PUT', '/docs/_doc/g1', { subject: 's', user: { id: 'u', name: 'n' } });
    const got = await call('GET', '/docs/_doc/g1');
    expect(got.json).toMatchObject({ _index: 'docs', _id: 'g1', found: true, _version: 1, _primary_term: 1 });
    expect((await call('GET', '/docs/_doc/g1?_source_includes=user.id')).json._source).toEqual({
      user: { id: 'u' },
    });
    expect((await call('GET', '/docs/_doc/g1?_source=false')).json).not.toHaveProperty('_source');
    expect((await call('GET', '/docs/_source/g1?_source_excludes=user')).json).toEqual({ subject: 's' });
    expect((await call('HEAD', '/docs/_doc/g1')).status).toBe(200);
    const missing = await call('HEAD', '/docs/_doc/none');
    expect(missing.status).toBe(404);
    expect(missing.body).toBe('');
    expect((await call('GET', '/docs/_doc/none')).json).toEqual({
      _index: 'docs',
      _id: 'none',
      found: false,
    });
    expect((await call('GET', '/docs/_source/none')).json.error.code).toBe('QS_DOCUMENT_MISSING');
  });

  it('updates with a partial doc, detects a noop, upserts, and answers 404 for a missing document', async () => {
    await call('PUT', '/docs/_doc/u1', { a: 1, o: { x: 1 } });
    const updated = await call('POST', '/docs/_update/u1', { doc: { o: { y: 2 } } });
    expect(updated.status).toBe(200);
    expect(updated.json).toMatchObject({ result: 'updated', _version: 2 });
    expect((await call('GET', '/docs/_doc/u1')).json._source).toEqual({ a: 1, o: { x: 1, y: 2 } });
    expect((await call('POST', '/docs/_update/u1', { doc: { a: 1 } })).json.result).toBe('noop');
    const upserted = await call('POST', '/docs/_update/u2', { doc: { a: 1 }, doc_as_upsert: true });
    expect(upserted.status).toBe(201);
    expect(upserted.json.result).toBe('created');
    const missing = await call('POST', '/docs/_update/u3', { doc: { a: 1 } });
    expect(missing.status).toBe(404);
    expect(missing.json.error).toMatchObject({
      type: 'document_missing_exception',
      code: 'QS_DOCUMENT_MISSING',
    });
    const noDoc = await call('POST', '/docs/_update/u1', {});
    expect(noDoc.status).toBe(400);
    expect(noDoc.json.error.reason).toMatch(/script or doc is missing/);
  });

  it('deletes, and answers 404 not_found for a document that is not there', async () => {
    await call('PUT', '/docs/_doc/d1', { a: 1 });
    const deleted = await call('DELETE', '/docs/_doc/d1');
    expect(deleted.status).toBe(200);
    expect(deleted.json).toMatchObject({ _index: 'docs', _id: 'd1', result: 'deleted', _version: 2 });
    const again = await call('DELETE', '/docs/_doc/d1');
    expect(again.status).toBe(404);
    expect(again.json).toMatchObject({ result: 'not_found' });
  });

  it('writes only when if_seq_no and if_primary_term match the stored document', async () => {
    const put = await call('PUT', '/docs/_doc/v1', { a: 1 });
    const stale = put.json._seq_no;
    const ok = await call('PUT', `/docs/_doc/v1?if_seq_no=${stale}&if_primary_term=1`, { a: 2 });
    expect(ok.status).toBe(200);
    const conflict = await call('PUT', `/docs/_doc/v1?if_seq_no=${stale}&if_primary_term=1`, { a: 3 });
    expect(conflict.status).toBe(409);
    expect(conflict.json.error.reason).toBe(
      `[v1]: version conflict, required seqNo [${stale}], primary term [1]. current document has seqNo [${ok.json._seq_no}] and primary term [1]`,
    );
    expect((await call('DELETE', `/docs/_doc/v1?if_seq_no=${stale}&if_primary_term=1`)).status).toBe(409);
    expect(
      (
        await call('POST', `/docs/_update/v1?if_seq_no=${ok.json._seq_no}&if_primary_term=1`, {
          doc: { b: 1 },
        })
      ).status,
    ).toBe(200);
    expect((await call('PUT', '/docs/_doc/v1?if_seq_no=1', { a: 1 })).json.error.reason).toMatch(
      /ifSeqNo is set, but primary term is \[0\]/,
    );
  });

  it('routes by ?routing: the document is stored with it, found with it and searchable by it', async () => {
    await call('PUT', '/routed', { settings: { number_of_shards: 4 } });
    const r = await call('PUT', '/routed/_doc/r1?routing=user7&refresh=true', { a: 1 });
    expect(r.json._routing).toBe('user7');
    const withRouting = await call('GET', '/routed/_doc/r1?routing=user7');
    expect(withRouting.json).toMatchObject({ found: true, _routing: 'user7' });
    const search = await call('POST', '/routed/_search', { query: { term: { _routing: 'user7' } } });
    expect(search.json.hits.hits.map((h: Json) => h._id)).toEqual(['r1']);
  });

  it('refuses bad input with a 400 naming it, and writes to a corpus index with 403', async () => {
    const noBody = await call('PUT', '/docs/_doc/x');
    expect(noBody.status).toBe(400);
    expect(noBody.json.error).toMatchObject({
      type: 'action_request_validation_exception',
      reason: 'Validation Failed: 1: source is missing;',
    });
    const array = await call('PUT', '/docs/_doc/x', [1]);
    expect(array.status).toBe(400);
    expect(array.json.error.type).toBe('document_parsing_exception');
    const metadata = await call('PUT', '/docs/_doc/x', { _id: 'y', a: 1 });
    expect(metadata.status).toBe(400);
    expect(metadata.json.error).toMatchObject({ type: 'document_parsing_exception' });
    expect(metadata.json.error.reason).toMatch(
      /field \[_id\] is a metadata field and cannot be added inside a document/,
    );
    expect(metadata.json.error.reason).not.toMatch(/bulk line/);
    expect((await call('GET', '/docs/_doc/x')).status).toBe(404);
    const param = await call('PUT', '/docs/_doc/x?version=3', { a: 1 });
    expect(param.status).toBe(400);
    expect(param.json.error.reason).toMatch(/^url parameter \[version\] is not supported/);
    expect((await call('PUT', '/docs/_doc/x?op_type=upsert', { a: 1 })).json.error.reason).toBe(
      'url parameter [op_type] must be index or create; received "upsert"',
    );
    expect((await call('PUT', '/docs/_doc/x?refresh=soon', { a: 1 })).json.error.reason).toBe(
      'refresh must be true, false or wait_for; received "soon"',
    );
    const corpus = await call('PUT', '/spam-1/_doc/1', { a: 1 });
    expect(corpus.status).toBe(403);
    expect(corpus.json.error).toMatchObject({ type: 'cluster_block_exception', code: 'QS_INDEX_READ_ONLY' });
    const badName = await call('PUT', '/Docs/_doc/1', { a: 1 });
    expect(badName.status).toBe(400);
    expect(badName.json.error.type).toBe('invalid_index_name_exception');
  });

  it("answers a write body of a content type it does not read with Elasticsearch's 406, and reads the clients' ones", async () => {
    for (const [method, url] of [
      ['PUT', '/docs/_doc/ct'],
      ['POST', '/docs/_doc'],
      ['POST', '/docs/_bulk'],
    ] as const) {
      const r = await app.inject({
        method,
        url,
        payload: '{"a":1}\n',
        headers: { 'content-type': 'text/plain' },
      });
      expect(r.statusCode, `${method} ${url}`).toBe(406);
      expect(r.json()).toEqual({ error: 'Content-Type header [text/plain] is not supported', status: 406 });
    }
    const ndjson = `${JSON.stringify({ index: { _index: 'docs', _id: 'ct' } })}\n${JSON.stringify({ a: 1 })}\n`;
    for (const type of [
      'application/x-ndjson',
      'application/vnd.elasticsearch+x-ndjson; compatible-with=8',
    ]) {
      const r = await app.inject({
        method: 'POST',
        url: '/_bulk',
        payload: ndjson,
        headers: { 'content-type': type },
      });
      expect(r.statusCode, type).toBe(200);
    }
    const put = await app.inject({
      method: 'PUT',
      url: '/docs/_doc/ct',
      payload: '{"a":2}',
      headers: { 'content-type': 'application/vnd.elasticsearch+json; compatible-with=9' },
    });
    expect(put.statusCode).toBe(200);
  });

  it('names the document, not a bulk line, in the reason of a refused single-document write', async () => {
    const array = await call('PUT', '/docs/_doc/x', [1]);
    expect(array.json.error.reason).toBe(
      'failed to parse: Malformed content, must start with an object (document [docs]/[x]; received "[1]")',
    );
    const auto = await call('POST', '/docs/_doc', 'text');
    expect(auto.status).toBe(400);
    expect(auto.json.error.reason).toMatch(/\(document \[docs\]\/\[_auto_\]; received /);
    const badName = await call('PUT', '/Docs/_doc/1', { a: 1 });
    expect(badName.json.error.reason).toMatch(/\(document \[Docs\]\/\[1\]\)$/);
    for (const r of [array, auto, badName]) expect(JSON.stringify(r.json)).not.toMatch(/bulk line/);
  });

  it('names the document in the id, compare-and-set and update checks too, never a line', async () => {
    const longId = await call('PUT', `/docs/_doc/${'x'.repeat(600)}`, { a: 1 });
    expect(longId.status).toBe(400);
    expect(longId.json.error.reason).toMatch(/but was: 600 \(document \[docs\]\/\[x{600}\]\)/);
    const cas = await call('PUT', '/docs/_doc/1?if_seq_no=1', { a: 1 });
    expect(cas.status).toBe(400);
    expect(cas.json.error.reason).toMatch(
      /ifSeqNo is set, but primary term is \[0\] \(document \[docs\]\/\[1\]\)/,
    );
    const update = await call('POST', '/docs/_update/1', { doc: 'notobj' });
    expect(update.status).toBe(400);
    expect(update.json.error.reason).toMatch(/\(document \[docs\]\/\[1\]\)/);
    for (const r of [longId, cas, update]) expect(JSON.stringify(r.json)).not.toMatch(/\bline\b/);
  });
});
