import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime, type TaskEndEvent } from '../../src/runtime.js';
import { buildHttpServer } from '../../src/server/http-server.js';

const echoEngine = fileURLToPath(new URL('../fixtures/echo-engine.mjs', import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await sleep(10);
  }
}

describe('HTTP clients that go away (over real HTTP)', () => {
  let runtime: Runtime;
  let app: FastifyInstance;
  let port: number;
  const ended: TaskEndEvent[] = [];
  beforeAll(async () => {
    runtime = await createRuntime({
      engine: echoEngine,
      lanes: false,
      threads: 1,
      dataDir: mkdtempSync(path.join(tmpdir(), 'qs-disconnect-')),
      onTaskEnd: (e) => ended.push(e),
    });
    app = buildHttpServer(runtime);
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await app.close();
    await runtime.close();
  });

  /** Sends a search on its own connection; `request` is there to be destroyed, `answer` resolves with the status. */
  function send(body: unknown) {
    const request = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/alpha/_search',
      headers: { 'content-type': 'application/json' },
      agent: false,
    });
    const answer = new Promise<number | 'gone'>((resolve) => {
      request.on('response', (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      });
      request.on('error', () => resolve('gone'));
    });
    request.end(JSON.stringify(body));
    return { request, answer };
  }

  it('a client that disconnects while its search is queued never reaches a worker', async () => {
    const before = ended.length;
    const busy = send({ sleepMs: 800 });
    await until(() => runtime.nodeStats().running === 1);
    const gone = send({ echo: 'never run' });
    await until(() => runtime.nodeStats().queued === 1);
    gone.request.destroy();
    expect(await gone.answer).toBe('gone');
    // Removed from the queue as soon as the server saw the connection close, not when the worker frees.
    await until(() => runtime.nodeStats().queued === 0, 500);
    expect(runtime.nodeStats().running).toBe(1);
    expect(await busy.answer).toBe(200);
    await sleep(100);
    // One task ran: the sleeper. The other was removed, counted as aborted.
    expect(ended.slice(before).map((e) => e.outcome)).toEqual(['completed']);
    expect(runtime.sandboxStats().get('_root')!.counters.aborted).toBe(1);
    expect(runtime.schedulerStats().priorities.reduce((n, p) => n + p.removed, 0)).toBe(1);
    expect(runtime.nodeStats().queued + runtime.nodeStats().running).toBe(0);
  });

  it('a client that disconnects while its search runs has the task cancelled', async () => {
    const before = ended.length;
    const long = send({ sleepMs: 10_000 });
    await until(() => runtime.nodeStats().running === 1);
    const t0 = performance.now();
    long.request.destroy();
    await until(() => ended.length > before, 2000);
    expect(ended.slice(before)).toMatchObject([{ outcome: 'cancelled' }]);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(runtime.sandboxStats().get('_root')!.counters.aborted).toBe(2);
  });

  it('keeps a keep-alive connection that carries several searches: nothing is aborted when one answer is sent', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const one = () =>
      new Promise<number>((resolve, reject) => {
        const request = http.request(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/alpha/_search',
            headers: { 'content-type': 'application/json' },
            agent,
          },
          (response) => {
            response.resume();
            response.on('end', () => resolve(response.statusCode ?? 0));
          },
        );
        request.on('error', reject);
        request.end('{"echo":"again"}');
      });
    const aborted = runtime.sandboxStats().get('_root')!.counters.aborted;
    expect([await one(), await one(), await one()]).toEqual([200, 200, 200]);
    agent.destroy();
    await sleep(50);
    expect(runtime.sandboxStats().get('_root')!.counters.aborted).toBe(aborted);
  });

  it('takes ?timeout= as the queue-wait bound when smaller, and refuses a bad one naming it', async () => {
    const bad = await app.inject({ method: 'POST', url: '/alpha/_search?timeout=soon', payload: '{}' });
    expect(bad.statusCode).toBe(400);
    // The edge folds ?timeout= into the body's timeout: the echo engine does not read it, the runtime does.
    expect(bad.json().error.reason).toMatch(/^timeout must be a time value/);
    const busy = send({ sleepMs: 600 });
    await until(() => runtime.nodeStats().running === 1);
    const r = await app.inject({
      method: 'POST',
      url: '/alpha/_search?timeout=100ms',
      payload: '{"echo":"late"}',
    });
    expect(r.statusCode).toBe(429);
    expect(r.json().error).toMatchObject({
      type: 'rejected_execution_exception',
      rejection_reason: 'queue_wait',
      code: 'QS_REJECTED',
    });
    expect(r.json().error.reason).toContain("past its bound of 100 ms (the request's timeout)");
    await busy.answer;
  });
});
