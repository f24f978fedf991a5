/**
 * Connection hygiene over real sockets (a raw `net` client against a server on a free loopback port):
 * a stalled body, stalled headers and a silent connection are answered 408 and closed within the
 * configured time-outs; a slow but complete request is not cut; connections beyond the bound are
 * closed at once. Bounds are tolerant of a busy machine: a close must never come before its time-out,
 * and must come within the time-out plus Node's checking interval plus 2 s.
 */
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { checkingIntervalMs, resolveConnectionLimits } from '../../src/server/connection-limits.js';
import { createApiServer } from '../../src/server/http-server.js';

const HEADERS_MS = 300;
const REQUEST_MS = 600;
const SLACK_MS = 2000;

let apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.map((a) => a.close()));
  apps = [];
});

async function serve(limits: Parameters<typeof createApiServer>[0]['connectionLimits']): Promise<number> {
  const app = createApiServer({
    connectionLimits: limits,
    urlParameters: () => ({ names: [], hint: '' }),
    auth: { insecureSkipAuth: true },
  });
  app.post('/echo', { config: { auth: 'read' } }, async (request) => ({ got: request.body }));
  app.get('/', async () => ({ ok: true }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  apps.push(app);
  return (app.server.address() as net.AddressInfo).port;
}

interface Outcome {
  readonly text: string;
  /** From the last byte sent to the close, ms. */
  readonly closedAfterMs: number;
}

/** Connects, writes `parts` (strings, or pauses in ms), and resolves with what came back once closed. */
function exchange(port: number, ...parts: Array<string | number>): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    let lastSentAt = performance.now();
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve({ text, closedAfterMs: performance.now() - lastSentAt }));
    socket.on('connect', async () => {
      for (const part of parts) {
        if (typeof part === 'number') await new Promise((r) => setTimeout(r, part));
        else socket.write(part);
        lastSentAt = performance.now();
      }
    });
  });
}

const statusOf = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
const bodyOf = (text: string) => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));

describe('connection hygiene', () => {
  it('closes a stalled body with 408 within the request time-out (Content-Length 100, then 2 bytes)', async () => {
    const port = await serve({ headersTimeoutMs: HEADERS_MS, requestTimeoutMs: REQUEST_MS });
    const r = await exchange(port, 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n', 'ab');
    console.log(
      `stalled body: closed ${r.closedAfterMs.toFixed(0)} ms after its last byte (request time-out ${REQUEST_MS} ms, checked every ${checkingIntervalMs(resolveConnectionLimits({ headersTimeoutMs: HEADERS_MS, requestTimeoutMs: REQUEST_MS }))} ms)`,
    );
    expect(statusOf(r.text)).toBe(408);
    expect(r.text.toLowerCase()).toContain('connection: close');
    expect(bodyOf(r.text)).toMatchObject({
      status: 408,
      error: { type: 'request_timeout_exception', code: 'QS_REQUEST_TIMEOUT' },
    });
    expect(bodyOf(r.text).error.reason).toContain(
      `whole request within ${REQUEST_MS} ms (--request-timeout-ms)`,
    );
    expect(r.closedAfterMs).toBeGreaterThanOrEqual(REQUEST_MS - 50);
    expect(r.closedAfterMs).toBeLessThan(REQUEST_MS + 150 + SLACK_MS);
  });

  it('closes stalled headers with 408 within the headers time-out', async () => {
    const port = await serve({ headersTimeoutMs: HEADERS_MS, requestTimeoutMs: REQUEST_MS });
    const r = await exchange(port, 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Le');
    console.log(
      `stalled headers: closed ${r.closedAfterMs.toFixed(0)} ms after the last byte (headers time-out ${HEADERS_MS} ms)`,
    );
    expect(statusOf(r.text)).toBe(408);
    expect(bodyOf(r.text).error.reason).toContain(`headers within ${HEADERS_MS} ms (--headers-timeout-ms)`);
    expect(r.closedAfterMs).toBeGreaterThanOrEqual(HEADERS_MS - 50);
    expect(r.closedAfterMs).toBeLessThan(HEADERS_MS + 75 + SLACK_MS);
  });

  it('closes a connection that sends nothing within the headers time-out', async () => {
    const port = await serve({ headersTimeoutMs: HEADERS_MS, requestTimeoutMs: REQUEST_MS });
    const r = await exchange(port);
    expect(r.closedAfterMs).toBeGreaterThanOrEqual(HEADERS_MS - 50);
    expect(r.closedAfterMs).toBeLessThan(HEADERS_MS + 75 + SLACK_MS);
  });

  it('answers a slow request that completes in time, and keeps the connection', async () => {
    const port = await serve({ headersTimeoutMs: 2000, requestTimeoutMs: 4000 });
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.write('POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\n\r\n{"a"');
    await new Promise((r) => setTimeout(r, 300));
    socket.write(':12}');
    for (let i = 0; i < 100 && !text.includes('}}'); i++) await new Promise((r) => setTimeout(r, 20));
    expect(statusOf(text)).toBe(200);
    expect(text).toContain('{"got":{"a":12}}');
    expect(socket.destroyed).toBe(false);
    socket.destroy();
  });

  it('closes connections beyond --max-connections at once, and takes new ones when others close', async () => {
    const port = await serve({ headersTimeoutMs: 10_000, requestTimeoutMs: 10_000, maxConnections: 2 });
    const open = async () => {
      const s = net.connect(port, '127.0.0.1');
      await new Promise((resolve) => s.once('connect', resolve));
      return s;
    };
    const first = await open();
    const second = await open();
    await new Promise((r) => setTimeout(r, 50)); // both accepted by the server
    const started = performance.now();
    const third = await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(third.text).toBe('');
    expect(performance.now() - started).toBeLessThan(SLACK_MS);
    first.destroy();
    await new Promise((r) => setTimeout(r, 50));
    const fourth = await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(statusOf(fourth.text)).toBe(200);
    second.destroy();
  });

  it('answers a malformed request with 400 in the usual shape and closes', async () => {
    const port = await serve({});
    const r = await exchange(port, 'NOT HTTP AT ALL\r\n\r\n');
    expect(statusOf(r.text)).toBe(400);
    expect(bodyOf(r.text).error.reason).toMatch(/^request is not a valid HTTP\/1\.1 request; received "HPE_/);
  });

  it.each([
    [{ headersTimeoutMs: 0 }, 'headersTimeoutMs must be an integer in 1..3600000; received 0'],
    [{ requestTimeoutMs: 1.5 }, 'requestTimeoutMs must be an integer in 1..3600000; received 1.5'],
    [
      { headersTimeoutMs: 500, requestTimeoutMs: 100 },
      'requestTimeoutMs must be at least headersTimeoutMs (500): the headers are part of the request; received 100',
    ],
    [{ maxConnections: 0 }, 'maxConnections must be an integer in 1..1000000; received 0'],
  ])('refuses the limits %j, naming the option and the value', (limits, message) => {
    expect(() => resolveConnectionLimits(limits)).toThrow(message);
  });

  it('defaults to 30 s for headers and the whole request and 1024 connections, checked every second', () => {
    const limits = resolveConnectionLimits();
    expect(limits).toEqual({ headersTimeoutMs: 30_000, requestTimeoutMs: 30_000, maxConnections: 1024 });
    expect(checkingIntervalMs(limits)).toBe(1000);
    expect(resolveConnectionLimits({ headersTimeoutMs: 60_000 }).requestTimeoutMs).toBe(60_000);
  });
});
