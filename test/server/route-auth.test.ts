/**
 * The one authorisation hook (`route-auth.ts`) on a bare API server: the roles, the safe default for
 * routes that declare nothing, the check before the body is read (also over a real socket), the opt-out
 * and a server without tokens.
 */
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiServer } from '../../src/server/http-server.js';
import { type AuthOptions, createTokenCheck, routeAuthOf } from '../../src/server/route-auth.js';

const ADMIN = 'route-auth-admin-token-000';
const WRITER = 'route-auth-writer-token-00';
const SECRET = 'route-auth-cluster-secret-0';

function app(auth: AuthOptions): FastifyInstance {
  const server = createApiServer({ auth, urlParameters: () => ({ names: [], hint: '' }) });
  server.get('/open', async () => ({ ok: 'read' }));
  server.post('/search', { config: { auth: 'read' } }, async () => ({ ok: 'read' }));
  server.post('/docs', { config: { auth: 'write' } }, async (request) => ({
    ok: 'write',
    body: request.body,
  }));
  server.put('/manage', { config: { auth: 'admin' } }, async () => ({ ok: 'admin' }));
  // Declares nothing: a write route added in a hurry must be closed, not open.
  server.post('/undeclared', async () => ({ ok: 'undeclared' }));
  server.delete('/undeclared', async () => ({ ok: 'undeclared' }));
  // Declares read, but lives under /_internal/: internal all the same.
  server.post('/_internal/thing', { config: { auth: 'read' } }, async () => ({ ok: 'internal' }));
  return server;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('route roles', () => {
  const server = app({ adminToken: ADMIN, writerToken: WRITER, clusterSecret: SECRET });
  afterAll(() => server.close());
  const call = (
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    url: string,
    headers: Record<string, string> = {},
  ) => server.inject({ method, url, headers, ...(method === 'GET' ? {} : { payload: '{"a":1}' }) });

  const table: Array<[string, 'GET' | 'POST' | 'PUT' | 'DELETE', string, Record<string, string>, number]> = [
    ['a GET without a token', 'GET', '/open', {}, 200],
    ['a declared read POST without a token', 'POST', '/search', {}, 200],
    ['a write without a token', 'POST', '/docs', {}, 401],
    ['a write with the writer token', 'POST', '/docs', bearer(WRITER), 200],
    ['a write with the admin token', 'POST', '/docs', bearer(ADMIN), 200],
    ['a write with the cluster secret', 'POST', '/docs', bearer(SECRET), 403],
    ['a write with a wrong token', 'POST', '/docs', bearer('not-a-token-of-this-server'), 403],
    ['an admin route with the writer token', 'PUT', '/manage', bearer(WRITER), 403],
    ['an admin route with the admin token', 'PUT', '/manage', bearer(ADMIN), 200],
    ['an undeclared POST with the writer token', 'POST', '/undeclared', bearer(WRITER), 403],
    ['an undeclared DELETE without a token', 'DELETE', '/undeclared', {}, 401],
    ['an undeclared POST with the admin token', 'POST', '/undeclared', bearer(ADMIN), 200],
    ['an internal route declared read, without a token', 'POST', '/_internal/thing', {}, 401],
    ['an internal route with the admin token', 'POST', '/_internal/thing', bearer(ADMIN), 403],
    ['an internal route with the cluster secret', 'POST', '/_internal/thing', bearer(SECRET), 200],
    ['a lower-case scheme', 'POST', '/docs', { authorization: `bearer ${WRITER}` }, 200],
    ['another scheme', 'POST', '/docs', { authorization: `Basic ${WRITER}` }, 401],
    ['a bare token', 'POST', '/docs', { authorization: WRITER }, 401],
    ['an unknown route', 'POST', '/nowhere', {}, 404],
  ];
  it.each(table)('answers %s with %i', async (_what, method, url, headers, status) => {
    const r = await call(method, url, headers);
    expect(r.statusCode).toBe(status);
    if (status === 401 || status === 403) {
      expect(r.json()).toMatchObject({ status, error: { type: 'security_exception' } });
      expect(r.json().error.code).toBe(status === 401 ? 'QS_UNAUTHORIZED' : 'QS_ADMIN_FORBIDDEN');
      // The message names the header, the route and what was received.
      expect(r.json().error.reason).toMatch(/^Authorization /);
      expect(r.json().error.reason).toContain(`${method} ${url}`);
      expect(r.json().error.reason).toMatch(/received /);
      // It never echoes the token.
      for (const token of [ADMIN, WRITER, SECRET]) expect(r.body).not.toContain(token);
    }
    if (status === 401) expect(r.headers['www-authenticate']).toBe('Bearer realm="query-sandbox"');
  });

  it('refuses before the body is parsed: a body that is not JSON gets 401, not 400', async () => {
    const r = await server.inject({ method: 'POST', url: '/docs', payload: '{not json' });
    expect(r.statusCode).toBe(401);
    const authorised = await server.inject({
      method: 'POST',
      url: '/docs',
      payload: '{not json',
      headers: bearer(WRITER),
    });
    expect(authorised.statusCode).toBe(400);
  });

  it('names what it received without the token: its length, or the writer role', async () => {
    expect((await call('POST', '/docs', bearer('x'.repeat(17)))).json().error.reason).toMatch(
      /neither the admin nor the writer token: POST \/docs needs the writer or the admin token; received a wrong token \(17 characters\)$/,
    );
    expect((await call('PUT', '/manage', bearer(WRITER))).json().error.reason).toBe(
      'Authorization carries the writer token, which allows documents and _bulk only: PUT /manage needs the admin token; received the writer token',
    );
  });
});

describe('before the body is read, over a socket', () => {
  let server: FastifyInstance;
  let port: number;
  beforeAll(async () => {
    server = app({ adminToken: ADMIN });
    await server.listen({ host: '127.0.0.1', port: 0 });
    port = (server.server.address() as net.AddressInfo).port;
  });
  afterAll(() => server.close());

  it('answers 401 to a write announcing a megabyte it never sends', async () => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      'POST /docs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n',
    );
    for (let i = 0; i < 200 && !text.includes('}'); i++) await new Promise((r) => setTimeout(r, 10));
    socket.destroy();
    expect(text).toMatch(/^HTTP\/1\.1 401 /);
    expect(text).toContain('"code":"QS_UNAUTHORIZED"');
  });
});

describe('without tokens, and with the opt-out', () => {
  it('refuses every write and admin route of a server without tokens, saying writes are disabled', async () => {
    const server = app({});
    const r = await server.inject({ method: 'PUT', url: '/manage', headers: bearer(ADMIN) });
    expect(r.statusCode).toBe(401);
    expect(r.json().error.reason).toMatch(
      /no token configured: writes are disabled \(QUERY_SANDBOX_ADMIN_TOKEN\)$/,
    );
    const internal = await server.inject({
      method: 'POST',
      url: '/_internal/thing',
      headers: bearer(SECRET),
    });
    expect(internal.statusCode).toBe(401);
    expect(internal.json().error.reason).toMatch(/no cluster secret configured/);
    expect((await server.inject({ method: 'GET', url: '/open' })).statusCode).toBe(200);
    await server.close();
  });

  it('opens client routes with insecureSkipAuth, but never the internal ones', async () => {
    const server = app({ insecureSkipAuth: true, clusterSecret: SECRET });
    expect((await server.inject({ method: 'PUT', url: '/manage' })).statusCode).toBe(200);
    expect((await server.inject({ method: 'POST', url: '/undeclared' })).statusCode).toBe(200);
    expect((await server.inject({ method: 'POST', url: '/_internal/thing' })).statusCode).toBe(401);
    await server.close();
  });
});

describe('routeAuthOf and createTokenCheck', () => {
  it.each([
    ['GET', '/x', undefined, 'read'],
    ['HEAD', '/x', undefined, 'read'],
    ['POST', '/x', undefined, 'admin'],
    ['PUT', '/x', undefined, 'admin'],
    ['DELETE', '/x', undefined, 'admin'],
    ['PATCH', '/x', undefined, 'admin'],
    ['POST', '/x', 'read', 'read'],
    ['GET', '/x', 'write', 'write'],
    ['GET', '/_internal/node_info', undefined, 'internal'],
    ['GET', '/_internal/node_info', 'read', 'internal'],
  ] as const)('%s %s declaring %s needs %s', (method, url, declared, role) => {
    expect(routeAuthOf(method, url, declared)).toBe(role);
  });

  it('tells the cluster secret apart from the client tokens', () => {
    const check = createTokenCheck({ adminToken: ADMIN, clusterSecret: SECRET });
    expect(check('internal', `Bearer ${SECRET}`, 'GET /_internal/x')).toBe(true);
    expect(check('admin', `Bearer ${ADMIN}`, 'PUT /x')).toBe(false);
    expect(check('read', undefined, 'GET /x')).toBe(false);
    expect(() => check('admin', `Bearer ${SECRET}`, 'PUT /x')).toThrow(
      /neither the admin nor the writer token/,
    );
  });
});
