import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { buildHttpServer } from '../../src/server/http-server.js';

const echoEngine = fileURLToPath(new URL('../fixtures/echo-engine.mjs', import.meta.url));
const token = 'test-admin-token-0123456789';

describe('sandbox REST API', () => {
  let runtime: Runtime;
  let app: FastifyInstance;
  beforeAll(async () => {
    runtime = await createRuntime({ engine: echoEngine, threads: 1, nodeId: 'n1', maxSandboxes: 5 });
    app = buildHttpServer(runtime, { adminToken: token });
  });
  afterAll(async () => {
    await app.close();
    await runtime.close();
  });

  const call = (
    method: 'GET' | 'PUT' | 'DELETE',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) =>
    app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });

  it('requires the admin token for changes: 401 without, 403 with a wrong one', async () => {
    const body = { name: 'x', priority: 1 };
    const none = await app.inject({ method: 'PUT', url: '/_sandbox', payload: body });
    expect(none.statusCode).toBe(401);
    expect(none.json().error.reason).toContain('Authorization: Bearer');
    const wrong = await call('PUT', '/_sandbox', body, { authorization: 'Bearer nope' });
    expect(wrong.statusCode).toBe(403);
    expect((await app.inject({ method: 'GET', url: '/_sandbox' })).statusCode).toBe(200);
    expect(runtime.sandboxes()).toHaveLength(1);
  });

  it('creates a tree of three, lists it, reads one with its version, updates, refuses a stale write, deletes', async () => {
    const org = await call('PUT', '/_sandbox', {
      name: 'org',
      priority: 1,
      resourceConsumptionLimits: { cpuUsageLimit: 80, jvmUsageLimit: 70 },
      selectionAttributes: [{ name: 'indicesPattern', value: 'alpha' }],
    });
    expect(org.statusCode).toBe(201);
    const orgId = org.json()._id as string;
    expect(org.json()).toMatchObject({
      name: 'org',
      version: 1,
      resourceConsumptionLimits: { cpu: { low: 0.64, high: 0.8 } },
    });
    const dept = await call('PUT', '/_sandbox', { name: 'dept', priority: 1, parent_id: orgId });
    const deptId = dept.json()._id as string;
    const unit = await call('PUT', '/_sandbox', {
      name: 'unit',
      priority: 1,
      parent_id: deptId,
      selectionAttributes: [{ name: 'userPattern', value: 'unit_*' }],
    });
    expect(unit.statusCode).toBe(201);
    const unitId = unit.json()._id as string;

    const list = await app.inject({ method: 'GET', url: '/_sandbox' });
    expect(Object.keys(list.json())).toEqual(['_root', orgId, deptId, unitId]);
    expect(list.json()[unitId].parent_id).toBe(deptId);
    expect(list.json()[orgId].parent_id).toBeUndefined();

    const one = await app.inject({ method: 'GET', url: `/_sandbox/${unitId}` });
    expect(one.headers.etag).toBe('"1"');
    const updated = await call('PUT', `/_sandbox/${unitId}`, { priority: 3 }, { 'if-match': '"1"' });
    expect(updated.statusCode).toBe(200);
    expect(updated.json()).toMatchObject({ priority: 3, version: 2 });
    const stale = await call('PUT', `/_sandbox/${unitId}`, { priority: 4 }, { 'if-match': '"1"' });
    expect(stale.statusCode).toBe(409);
    expect(stale.json().error.type).toBe('version_conflict_engine_exception');
    expect(stale.json().error.reason).toContain('is at version 2, not 1');

    const parentDelete = await call('DELETE', `/_sandbox/${deptId}`);
    expect(parentDelete.statusCode).toBe(409);
    const deleted = await call('DELETE', `/_sandbox/${unitId}`);
    expect(deleted.json()).toEqual({ acknowledged: true, _id: unitId });
    expect((await app.inject({ method: 'GET', url: `/_sandbox/${unitId}` })).statusCode).toBe(404);
    await call('DELETE', `/_sandbox/${deptId}`);
    await call('DELETE', `/_sandbox/${orgId}`);
  });

  it('answers 400 naming the field and value, 404 for an unknown id, 409 for a taken name', async () => {
    const bad = await call('PUT', '/_sandbox', { name: 'b', priority: 'high' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.reason).toBe(
      'priority must be an integer in -(2^53 - 1)..2^53 - 1 (higher = more important); received "high"',
    );
    const serverField = await call('PUT', '/_sandbox', { name: 'b', priority: 1, _id: 'mine' });
    expect(serverField.json().error.reason).toBe(
      '_id is set by the server and may not be given; received "mine"',
    );
    expect((await call('PUT', '/_sandbox/nope', { priority: 1 })).statusCode).toBe(404);
    expect((await call('DELETE', '/_sandbox/nope')).statusCode).toBe(404);
    const badIfMatch = await call('PUT', '/_sandbox/nope', { priority: 1 }, { 'if-match': 'abc' });
    expect(badIfMatch.statusCode).toBe(400);
    await call('PUT', '/_sandbox', { name: 'taken', priority: 1 });
    const taken = await call('PUT', '/_sandbox', { name: 'taken', priority: 2 });
    expect(taken.statusCode).toBe(409);
  });

  it('sets max_queue_wait at runtime, on a sandbox and on the root, refusing a bad one naming field and value', async () => {
    const created = await call('PUT', '/_sandbox', { name: 'waits', priority: 7, max_queue_wait: '2s' });
    expect(created.statusCode).toBe(201);
    expect(created.json().max_queue_wait).toBe('2s');
    const id = created.json()._id as string;
    expect(runtime.sandboxRegistry.get(id)!.maxQueueWaitMs).toBe(2000);
    const bad = await call('PUT', `/_sandbox/${id}`, { max_queue_wait: 'fast' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.reason).toBe(
      'max_queue_wait must be a time value such as "5s" or "500ms" (whole milliseconds, 1ms to 1d), or -1 for no bound; received "fast"',
    );
    expect((await call('PUT', `/_sandbox/${id}`, { max_queue_wait: '0ms' })).statusCode).toBe(400);
    expect((await call('PUT', `/_sandbox/${id}`, { max_queue_wait: -1 })).json().max_queue_wait).toBe('-1');
    expect(runtime.sandboxRegistry.get(id)!.maxQueueWaitMs).toBe(Number.POSITIVE_INFINITY);
    expect((await call('PUT', `/_sandbox/${id}`, { max_queue_wait: '750ms' })).json().max_queue_wait).toBe(
      '750ms',
    );
    // null: inherit again (the document no longer names it).
    const inherit = await call('PUT', `/_sandbox/${id}`, { max_queue_wait: null });
    expect(inherit.json().max_queue_wait).toBeUndefined();
    const root = await call('PUT', '/_sandbox/_root', { max_queue_wait: '10s' });
    expect(root.statusCode).toBe(200);
    expect(root.json()).toMatchObject({ _id: '_root', max_queue_wait: '10s' });
    const rootName = await call('PUT', '/_sandbox/_root', { name: 'x' });
    expect(rootName.statusCode).toBe(400);
    expect(rootName.json().error.reason).toContain(
      '(only _id, priority, max_queue_wait, cancellationGraceMs and search_settings may be set)',
    );
    await call('PUT', '/_sandbox/_root', { max_queue_wait: null });
    await call('DELETE', `/_sandbox/${id}`);
  });

  it('takes If-Match as RFC 9110 says: quoted strong tags only, weak tags never match', async () => {
    const created = await call('PUT', '/_sandbox', {
      name: 'etag',
      priority: 7,
      selectionAttributes: [{ name: 'userPattern', value: 'etag_*' }],
    });
    const id = created.json()._id as string;
    const put = (ifMatch: string, priority: number) =>
      call('PUT', `/_sandbox/${id}`, { priority }, { 'if-match': ifMatch });
    const unquoted = await put('1', 8);
    expect(unquoted.statusCode).toBe(400);
    expect(unquoted.json().error.reason).toBe(
      'If-Match must be * or quoted entity tags such as "3" (the sandbox version from its ETag, in double quotes); received "1"',
    );
    const weak = await put('W/"1"', 8);
    expect(weak.statusCode).toBe(409);
    expect(weak.json().error.reason).toMatch(/^If-Match "W\/\\"1\\"" can never match: a weak entity tag/);
    const notVersion = await put('"abc"', 8);
    expect(notVersion.statusCode).toBe(409);
    expect(notVersion.json().error.reason).toContain('a sandbox version is a quoted integer');
    expect(runtime.sandboxRegistry.get(id)!.version).toBe(1);
    const list = await put('"9", "1"', 8);
    expect(list.statusCode).toBe(200);
    expect(list.json()).toMatchObject({ priority: 8, version: 2 });
    const listStale = await put('"1", "9"', 9);
    expect(listStale.statusCode).toBe(409);
    const any = await put('*', 9);
    expect(any.json()).toMatchObject({ priority: 9, version: 3 });
    const deleteWeak = await call('DELETE', `/_sandbox/${id}`, undefined, { 'if-match': 'W/"3"' });
    expect(deleteWeak.statusCode).toBe(409);
    expect((await call('DELETE', `/_sandbox/${id}`, undefined, { 'if-match': '"3"' })).statusCode).toBe(200);
  });

  it('answers 429 once the node holds maxSandboxes', async () => {
    const before = runtime.sandboxes().length - 1;
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => call('PUT', '/_sandbox', { name: `bulk${i}`, priority: 100 + i })),
    );
    const created = results.filter((r) => r.statusCode === 201).length;
    expect(created).toBe(5 - before);
    const refused = results.filter((r) => r.statusCode === 429);
    expect(refused).toHaveLength(8 - created);
    expect(refused[0]!.json().error.reason).toContain('limit of 5 sandboxes');
  });

  it('filters stats to breaching sandboxes and pages them', async () => {
    const all = await app.inject({ method: 'GET', url: '/_sandbox/_stats?size=2&from=1' });
    for (const [id, entry] of Object.entries(all.json().n1.sandboxes as Record<string, { name: string }>)) {
      expect(entry.name).toBe(runtime.sandboxRegistry.get(id)!.name);
    }
    expect(all.json().n1.total).toBe(runtime.sandboxes().length);
    expect(Object.keys(all.json().n1.sandboxes)).toHaveLength(2);
    const breach = await app.inject({ method: 'GET', url: '/_sandbox/_stats?breach=true' });
    expect(breach.json().n1.total).toBe(0);
    const bad = await app.inject({ method: 'GET', url: '/_sandbox/_stats?size=0' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.reason).toBe('size must be an integer in 1..1000; received "0"');
  });
});
