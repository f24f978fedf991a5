import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { buildHttpServer } from '../../src/server/http-server.js';

// The default engine behind the runtime and the HTTP API, on a small slice of the real corpus.
describe('default MiniSearch engine in the runtime', () => {
  let runtime: Runtime;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'qs-engine-runtime-'));
    runtime = await createRuntime({ threads: 1, dataDir, engineOptions: { maxDocumentsPerIndex: 150 } });
  });
  afterAll(async () => {
    await runtime.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers spam-* with hits from spam-1 and spam-2 only', async () => {
    const app = buildHttpServer(runtime);
    const r = await app.inject({
      method: 'POST',
      url: '/spam-*/_search',
      headers: { 'x-user': 'alice', 'content-type': 'application/json' },
      payload: '{"query":{"match":{"body":"money"}},"size":50}',
    });
    await app.close();
    expect(r.statusCode).toBe(200);
    const body = r.json();
    expect(body.hits.total!.value).toBeGreaterThan(0);
    const indices = new Set(body.hits.hits.map((h: { _index: string }) => h._index));
    expect([...indices].every((i) => i === 'spam-1' || i === 'spam-2')).toBe(true);
    expect(body.hits.hits[0]).toMatchObject({ _id: expect.any(String), _score: expect.any(Number) });
    expect(body.hits.hits[0]._source).toHaveProperty('subject');
  });

  it('answers a wildcard that matches no index with no hits, not with every index', async () => {
    const r = (await runtime.search({ index: 'zzz*', body: { size: 0 } })) as {
      hits: { total: { value: number } };
      _shards: { total: number };
    };
    expect(r.hits.total!.value).toBe(0);
    expect(r._shards.total).toBe(0);
  });

  it('lists the five corpus indices and reports worker start-up with them loaded', () => {
    const node = runtime.nodeStats();
    expect(node.engineIndices).toEqual(['easy-ham-1', 'easy-ham-2', 'hard-ham-1', 'spam-1', 'spam-2']);
    expect(node.workerStartupMs[0]).toBeGreaterThan(0);
  });

  it('answers a slow query under a timeout with partial hits and timed_out: true, as Elasticsearch does', async () => {
    const app = buildHttpServer(runtime);
    // Fuzziness 2 over several words on every index: ten shards, each a costly MiniSearch search.
    const body = { query: { match: { body: { query: 'mony ofer frie linx', fuzziness: 2 } } }, size: 1000 };
    const search = async (url: string, payload: unknown) => {
      const r = await app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify(payload),
      });
      expect(r.statusCode).toBe(200);
      return r.json() as {
        timed_out: boolean;
        _shards: { total: number; successful: number };
        hits: { total: { value: number }; hits: { _index: string; _id: string }[] };
      };
    };
    const full = await search('/_all/_search', body);
    expect(full.timed_out).toBe(false);
    // 1 ms is less than one shard's search: the first shard is searched, the nine others are not.
    for (const partial of [
      await search('/_all/_search?timeout=1ms', body),
      await search('/_all/_search', { ...body, timeout: '1ms' }),
    ]) {
      expect(partial.timed_out).toBe(true);
      expect(partial._shards).toMatchObject({ total: 10, successful: 10 });
      expect(partial.hits.total.value).toBeGreaterThan(0);
      expect(partial.hits.total.value).toBeLessThan(full.hits.total.value);
      const all = new Set(full.hits.hits.map((h) => `${h._index}/${h._id}`));
      expect(partial.hits.hits.every((h) => all.has(`${h._index}/${h._id}`))).toBe(true);
    }
    const bad = await app.inject({ method: 'POST', url: '/_all/_search?timeout=soon', payload: '{}' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.reason).toContain('timeout must be a time value');
    await app.close();
  });

  it('refuses an unknown query type on the main thread with 400', async () => {
    await expect(
      runtime.search({ index: 'spam-1', body: { query: { fuzzyy: { body: 'x' } } } }),
    ).rejects.toThrow('unknown query [fuzzyy]');
  });
});
