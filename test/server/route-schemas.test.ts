import type { FastifyInstance, FastifySchema } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import { createApiServer, SANDBOX_STATS_QUERY_SCHEMA } from '../../src/server/http-server.js';
import {
  booleanParameter,
  CAT_FORMAT_PARAMETER,
  querySchema,
  REFRESH_PARAMETER,
  schemaError,
} from '../../src/server/route-schemas.js';
import { WLM_LIST_QUERY_SCHEMA } from '../../src/server/wlm-routes.js';

/** An API server with one echo route per schema: what passes comes back exactly as sent. */
function serverWith(schemas: Record<string, FastifySchema>): FastifyInstance {
  const app = createApiServer({
    urlParameters: () => ({ names: [], hint: '' }),
    auth: { insecureSkipAuth: true },
  });
  for (const [url, schema] of Object.entries(schemas)) {
    app.route({
      method: schema.body === undefined ? ['GET', 'PUT'] : ['PUT'],
      url,
      schema,
      config: {
        urlParameters: {
          names: ['breach', 'from', 'size', 'sort', 'order', 'format', 'refresh', 'create'],
          hint: '',
        },
      },
      handler: async (request) => ({ query: request.query, body: request.body ?? null }),
    });
  }
  return app;
}

describe('route schemas', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = serverWith({
      '/stats': SANDBOX_STATS_QUERY_SCHEMA,
      '/list': WLM_LIST_QUERY_SCHEMA,
      '/cat': querySchema({ format: CAT_FORMAT_PARAMETER }),
      '/write': querySchema({ refresh: REFRESH_PARAMETER, create: booleanParameter(true) }),
      '/plain-required': { body: { type: 'object', required: ['name'], properties: {} } },
      '/body': {
        body: {
          type: 'object',
          required: ['shard'],
          properties: { shard: { type: 'integer', minimum: 0, 'x-must': 'must be an integer >= 0' } },
        },
      },
    });
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
  });
  const get = (url: string) => app.inject({ method: 'GET', url });

  it.each([
    ['/stats?from=0', { from: '0' }],
    ['/stats?from=100000&size=1000', { from: '100000', size: '1000' }],
    ['/stats?size=1&breach=false', { size: '1', breach: 'false' }],
    ['/stats?size=007', { size: '007' }],
    ['/list?size=100&sort=workload_group&order=desc', { size: '100', sort: 'workload_group', order: 'desc' }],
    ['/cat?format=txt', { format: 'txt' }],
    ['/write?refresh=&create=', { refresh: '', create: '' }],
    ['/write?refresh=wait_for&create=true', { refresh: 'wait_for', create: 'true' }],
  ])('lets %s through unchanged (no coercion)', async (url, query) => {
    const r = await get(url);
    expect(r.statusCode).toBe(200);
    expect(r.json().query).toEqual(query);
  });

  it.each([
    ['/stats?from=100001', 'from must be an integer in 0..100000; received "100001"'],
    ['/stats?from=-1', 'from must be an integer in 0..100000; received "-1"'],
    ['/stats?size=0', 'size must be an integer in 1..1000; received "0"'],
    ['/stats?size=1001', 'size must be an integer in 1..1000; received "1001"'],
    ['/stats?size=1e3', 'size must be an integer in 1..1000; received "1e3"'],
    ['/stats?size=1&size=2', 'size must be an integer in 1..1000; received ["1","2"]'],
    ['/stats?breach=maybe', 'breach must be true or false; received "maybe"'],
    ['/list?size=101', 'size must be an integer in 1..100 (the page size); received "101"'],
    ['/list?sort=cpu', `sort must be 'node_id' or 'workload_group'; received "cpu"`],
    ['/list?order=up', `order must be 'asc' or 'desc'; received "up"`],
    ['/cat?format=yaml', 'format must be json or text; received "yaml"'],
    ['/write?refresh=maybe', 'refresh must be true, false or wait_for; received "maybe"'],
    ['/write?create=maybe', 'create must be true or false; received "maybe"'],
  ])('answers %s with 400 naming the field and the value', async (url, reason) => {
    const r = await get(url);
    expect(r.statusCode).toBe(400);
    expect(r.json()).toEqual({
      error: {
        root_cause: [{ type: 'illegal_argument_exception', reason }],
        type: 'illegal_argument_exception',
        reason,
        code: 'QS_INVALID_ARGUMENT',
      },
      status: 400,
    });
  });

  it('names a body field by its path, and a missing one as required', async () => {
    const put = (payload: unknown) =>
      app.inject({ method: 'PUT', url: '/body', payload: JSON.stringify(payload) });
    expect((await put({ shard: -2 })).json().error.reason).toBe('shard must be an integer >= 0; received -2');
    expect((await put({ shard: '3' })).json().error.reason).toBe(
      'shard must be an integer >= 0; received "3"',
    );
    expect((await put({})).json().error.reason).toBe('shard must be an integer >= 0; received undefined');
    expect((await put([1])).json().error.reason).toBe('body must be object; received [1]');
    expect((await put({ shard: 3 })).json().body).toEqual({ shard: 3 });
    const plain = await app.inject({ method: 'PUT', url: '/plain-required', payload: '{}' });
    expect(plain.json().error.reason).toBe('name is required; received undefined');
  });

  it('formats the first failure of any schema as an InvalidArgumentError', () => {
    const e = schemaError(
      [
        {
          keyword: 'enum',
          instancePath: '/settings/a~1b',
          schemaPath: '#/x',
          params: {},
          message: 'must be equal to one of the allowed values',
          data: 'x',
          parentSchema: {},
        },
      ],
      'body',
    );
    expect(e).toBeInstanceOf(InvalidArgumentError);
    expect(e.message).toBe('settings.a/b must be equal to one of the allowed values; received "x"');
    expect(schemaError([], 'querystring').message).toBe('querystring is invalid; received undefined');
  });
});
