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

  it('refuses an unknown query type on the main thread with 400', async () => {
    await expect(
      runtime.search({ index: 'spam-1', body: { query: { fuzzyy: { body: 'x' } } } }),
    ).rejects.toThrow('unknown query [fuzzyy]');
  });
});
