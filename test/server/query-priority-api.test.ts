import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { buildHttpServer } from '../../src/server/http-server.js';

const echoEngine = fileURLToPath(new URL('../fixtures/echo-engine.mjs', import.meta.url));
const token = 'test-token-0123456789';

describe('query-priority API', () => {
  let runtime: Runtime;
  let app: FastifyInstance;
  beforeAll(async () => {
    runtime = await createRuntime({ engine: echoEngine, threads: 2, nodeId: 'node-qp' });
    app = buildHttpServer(runtime, { adminToken: token });
  });
  afterAll(async () => {
    await app.close();
    await runtime.close();
  });

  const put = (payload: string, auth = `Bearer ${token}`) =>
    app.inject({
      method: 'PUT',
      url: '/_query_priority',
      payload,
      headers: { authorization: auth, 'content-type': 'application/json' },
    });

  it('replaces the rules with the admin token and shows them', async () => {
    const doc = {
      lending: true,
      priorities: [{ priority: 10, reserved_workers: 1, query_attributes: [{ regex: 'vip' }] }],
    };
    const r = await put(JSON.stringify(doc));
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ enabled: true, lending: true, priorities: doc.priorities });
    const got = await app.inject({ method: 'GET', url: '/_query_priority' });
    expect(got.json().priorities).toEqual(doc.priorities);
    const stats = (await app.inject({ method: 'GET', url: '/_nodes/stats' })).json();
    expect(stats.nodes['node-qp'].scheduler.queue_order).toBe('priority');
    // Priority 10 is in the background lane's band: the reservation takes one of its two workers.
    expect(stats.nodes['node-qp'].scheduler.lanes).toEqual([
      {
        name: 'foreground',
        min_priority: 11,
        workers: 2,
        busy: 0,
        prefetch: 0,
        queued: 0,
        overloaded: false,
        reservations_suspended: null,
        reservations: [{ min_priority: null, workers: 2, busy: 0 }],
      },
      {
        name: 'background',
        min_priority: null,
        workers: 2,
        busy: 0,
        prefetch: 0,
        queued: 0,
        overloaded: false,
        reservations_suspended: null,
        reservations: [
          { min_priority: null, workers: 1, busy: 0 },
          { min_priority: 10, workers: 1, busy: 0 },
        ],
      },
    ]);
  });

  it('refuses without the token, and bad documents with 400 naming the field; nothing changes', async () => {
    const before = (await app.inject({ method: 'GET', url: '/_query_priority' })).json();
    expect((await put('{}', 'Bearer nope')).statusCode).toBe(403);
    const bad = await put('{"priorities":[{"priority":1,"query_attributes":[{"regex":"(a)\\\\1"}]}]}');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.reason).toContain(
      'body.priorities[0].query_attributes[0].regex must be an RE2 regular expression',
    );
    const all = await put('{"priorities":[{"priority":1,"reserved_workers":2}]}');
    expect(all.statusCode).toBe(400);
    expect(all.json().error.reason).toContain(
      "body.priorities must leave at least one of lane [background]'s 2 workers unreserved",
    );
    const notJson = await put('{"priorities": [');
    expect(notJson.statusCode).toBe(400);
    // Without the token, the body is not even read: 401/403, never a 400 about the body.
    expect((await put('{"priorities": [', 'Bearer nope')).statusCode).toBe(403);
    const noToken = await app.inject({
      method: 'PUT',
      url: '/_query_priority',
      payload: '{"priorities": [',
      headers: { 'content-type': 'application/json' },
    });
    expect(noToken.statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/_query_priority' })).json()).toEqual(before);
  });
});
