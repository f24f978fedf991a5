/**
 * Back-pressure on writes where Elasticsearch puts it: a full write queue refuses the items of the
 * shards it cannot take (429 each, the other items standing), so a client retries exactly those;
 * indexing pressure refuses a bulk whole (429 for the request). A single node over HTTP (inject).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shardId, resolveShardRouting } from '../../src/routing/shard-routing.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { buildHttpServer } from '../../src/server/http-server.js';

// biome-ignore lint/suspicious/noExplicitAny: the tests read JSON answers freely
type Json = any;

let dir: string;
let runtime: Runtime;
let app: FastifyInstance;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'qs-back-pressure-'));
  runtime = await createRuntime({
    dataDir: path.join(dir, 'node'),
    cacheDir: path.join(dir, 'cache'),
    threads: 1,
    spareWorkers: 0,
    engineOptions: { maxDocumentsPerIndex: 2 },
    writeQueueSize: 1,
    indexingPressureBytes: 4096,
  });
  // Writes need a token (docs/security.md, tested in bad-input.test.ts); these tests are about what writes do.
  app = buildHttpServer(runtime, { insecureSkipAuth: true });
});

afterAll(async () => {
  await app?.close();
  await runtime?.close();
  rmSync(dir, { recursive: true, force: true });
});

const bulk = async (lines: unknown[], url = '/_bulk') => {
  const r = await app.inject({
    method: 'POST',
    url,
    payload: `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`,
    headers: { 'content-type': 'application/x-ndjson' },
  });
  return { status: r.statusCode, json: r.json() as Json };
};

describe('write back-pressure', () => {
  it('refuses only the items of the shard the full write queue cannot take; their retry lands them once', async () => {
    await app.inject({
      method: 'PUT',
      url: '/bp',
      payload: '{"settings":{"number_of_shards":2,"number_of_replicas":0}}',
    });
    const routing = resolveShardRouting({ numberOfShards: 2 });
    const ids = Array.from({ length: 8 }, (_, i) => `doc-${i}`);
    const shards = new Set(ids.map((id) => shardId(routing, id)));
    expect(shards.size).toBe(2);
    const lines = ids.flatMap((id) => [{ index: { _index: 'bp', _id: id } }, { n: id }]);
    const first = await bulk(lines);
    expect(first.status).toBe(200);
    expect(first.json.errors).toBe(true);
    const refused = first.json.items.filter((i: Json) => i.index.status === 429);
    const written = first.json.items.filter((i: Json) => i.index.status === 201);
    expect(refused.length + written.length).toBe(ids.length);
    expect(refused.length).toBeGreaterThan(0);
    expect(written.length).toBeGreaterThan(0);
    // Every refused item is of one shard, and every written one of the other.
    expect(new Set(refused.map((i: Json) => shardId(routing, i.index._id))).size).toBe(1);
    expect(refused[0].index.error).toMatchObject({ type: 'es_rejected_execution_exception', index: 'bp' });
    expect(refused[0].index.error.reason).toMatch(/queue capacity = 1/);
    const retryIds = refused.map((i: Json) => i.index._id as string);
    const retry = await bulk(
      retryIds.flatMap((id: string) => [{ index: { _index: 'bp', _id: id } }, { n: id }]),
      '/_bulk?refresh=true',
    );
    expect(retry.json.errors).toBe(false);
    await app.inject({ method: 'POST', url: '/bp/_refresh' });
    const count = await app.inject({ method: 'GET', url: '/bp/_count' });
    expect(count.json().count).toBe(ids.length);
    expect(runtime.indices!.writeQueue.stats()).toMatchObject({ inFlight: 0, rejected: 1 });
  });

  it('refuses a whole bulk for indexing pressure, the coordinating step (429 for the request)', async () => {
    const big = 'x'.repeat(3000);
    const lines = (n: number) =>
      Array.from({ length: n }, (_, i) => [{ index: { _index: 'bp2', _id: `p${i}` } }, { big }]).flat();
    const [a, b] = await Promise.all([bulk(lines(1)), bulk(lines(1))]);
    const statuses = [a.status, b.status].sort();
    expect(statuses).toEqual([200, 429]);
    const refused = a.status === 429 ? a : b;
    expect(refused.json.error).toMatchObject({
      type: 'es_rejected_execution_exception',
      code: 'QS_WRITE_REJECTED',
    });
    expect(refused.json.error.root_cause[0].type).toBe('es_rejected_execution_exception');
  });
});
