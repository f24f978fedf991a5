/**
 * The index and bulk routes of a node that serves writable indices (`runtime.indices`), in
 * Elasticsearch's shapes:
 *
 * - `PUT /{index}` `{settings?, mappings?}`; `DELETE /{index}`; `PUT /{index}/_settings`;
 * - `PUT|POST /_index_template/{name}` (`?create=true`), `GET /_index_template[/{name}]`,
 *   `DELETE /_index_template/{name}`;
 * - the single-document APIs (`document-routes.ts`);
 * - `POST|PUT /_bulk`, `POST|PUT /{index}/_bulk` (`?refresh=true|false|wait_for`, `?routing=`): NDJSON
 *   whatever the content type (`application/x-ndjson`, `application/json`, none), up to
 *   `bulkBodyLimitBytes`;
 * - `GET /_cat/shards[/{index}]` (`?format=json`, `?v`).
 *
 * `GET /{index}/_settings`, `_refresh` and the other calls over every index are in `index-info-routes.ts`.
 *
 * A node whose engine serves no writable indices answers these with 400 naming the route. A cluster data
 * node answers the index APIs with 400 too: its coordinator serves them.
 *
 * Roles (`route-auth.ts`): index creation and deletion, settings changes and templates need the admin
 * token; `_bulk` and refresh the writer token (or the admin token); GETs and `_cat` are open.
 */
import { booleanParameter, CAT_FORMAT_PARAMETER, querySchema, REFRESH_PARAMETER } from './route-schemas.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { InvalidArgumentError, TemplateNotFoundError } from '../errors.js';
import { parseRefreshPolicy } from '../bulk/bulk-response.js';
import type { CatShardRow, IndexApi } from '../indices/index-api.js';
import { catText } from './index-info-routes.js';
import { registerDocumentRoutes } from './document-routes.js';
import { sendError } from './error-body.js';
import type { RouteAuth } from './route-auth.js';

export interface IndexRoutesOptions {
  /** Largest bulk body, bytes. @default 104857600 (Elasticsearch `http.max_content_length`) */
  readonly bulkBodyLimitBytes?: number | undefined;
}

/**
 * `config` of a route: who may call it, which URL parameters it takes (others answer 400), and the raw
 * body for bulk.
 */
function config(auth: RouteAuth, names: readonly string[], rawBody = false) {
  return {
    auth,
    urlParameters: { names: [...names, 'pretty'], hint: `(${[...names, 'pretty'].join(', ')})` },
    ...(rawBody ? { rawBody: true } : {}),
  };
}

/** `GET /_cat/shards` as text: space-aligned columns, a header line with `?v` (`catText`). */
export function catShardsText(rows: readonly CatShardRow[], header: boolean): string {
  return catText(rows, CAT_SHARDS_COLUMNS, header);
}

const CAT_SHARDS_COLUMNS = ['index', 'shard', 'prirep', 'state', 'docs', 'node'] as const;

/** `?routing=`: a string; the empty value means none. @throws InvalidArgumentError. */
export function routingParameter(query: Record<string, unknown>): string | undefined {
  const routing = query['routing'];
  if (routing === undefined || routing === '') return undefined;
  if (typeof routing !== 'string') throw new InvalidArgumentError('routing', 'must be given once', routing);
  return routing;
}

/** Registers the routes on `app` (a single node's server, or a data node's for the refusal). */
export function registerIndexRoutes(
  app: FastifyInstance,
  indices: IndexApi | undefined,
  options: IndexRoutesOptions = {},
): void {
  const bulkBodyLimit = options.bulkBodyLimitBytes ?? 100 * 1024 * 1024;
  const service = (what: string): IndexApi => {
    if (indices === undefined) {
      throw new InvalidArgumentError(
        'url',
        'is not served: the engine does not support writable indices (EngineModule.writableIndices)',
        what,
      );
    }
    return indices;
  };
  const handle =
    <P>(
      what: string,
      run: (w: IndexApi, request: FastifyRequest<{ Params: P }>, reply: FastifyReply) => unknown,
    ) =>
    async (request: FastifyRequest<{ Params: P }>, reply: FastifyReply) => {
      try {
        const result = await run(service(what), request, reply);
        if (result !== reply) return reply.send(result);
        return reply;
      } catch (error) {
        return sendError(reply, error);
      }
    };
  const query = (request: FastifyRequest) => (request.query as Record<string, unknown> | undefined) ?? {};

  app.put<{ Params: { index: string } }>(
    '/:index',
    { config: config('admin', []) },
    handle('PUT /{index}', (w, r) => w.createIndex(r.params.index, r.body)),
  );
  app.delete<{ Params: { index: string } }>(
    '/:index',
    { config: config('admin', []) },
    handle('DELETE /{index}', (w, r) => w.deleteIndex(r.params.index)),
  );
  app.put<{ Params: { index: string } }>(
    '/:index/_settings',
    { config: config('admin', []) },
    handle('PUT /{index}/_settings', (w, r) => w.updateSettings(r.params.index, r.body)),
  );
  for (const method of ['PUT', 'POST'] as const) {
    app.route<{ Params: { name: string } }>({
      method,
      url: '/_index_template/:name',
      config: config('admin', ['create']),
      schema: querySchema({ create: booleanParameter(true) }),
      handler: handle('PUT /_index_template/{name}', (w, r) => {
        const create = query(r)['create'];
        return w.putTemplate(r.params.name, r.body, create === 'true' || create === '');
      }),
    });
  }
  app.get(
    '/_index_template',
    { config: config('read', []) },
    handle('GET /_index_template', (w) => w.getTemplates()),
  );
  app.get<{ Params: { name: string } }>(
    '/_index_template/:name',
    { config: config('read', []) },
    handle('GET /_index_template/{name}', (w, r, reply) => {
      const found = w.getTemplates(r.params.name);
      if ((found['index_templates'] as unknown[]).length === 0) {
        return sendError(reply, new TemplateNotFoundError(r.params.name));
      }
      return found;
    }),
  );
  app.delete<{ Params: { name: string } }>(
    '/_index_template/:name',
    { config: config('admin', []) },
    handle('DELETE /_index_template/{name}', (w, r) => w.deleteTemplate(r.params.name)),
  );
  registerDocumentRoutes(app, service);
  for (const method of ['POST', 'PUT'] as const) {
    for (const url of ['/_bulk', '/:index/_bulk']) {
      app.route<{ Params: { index?: string } }>({
        method,
        url,
        bodyLimit: bulkBodyLimit,
        config: config('write', ['refresh', 'routing'], true),
        schema: querySchema({ refresh: REFRESH_PARAMETER }),
        handler: handle('POST /_bulk', (w, r) => {
          const q = query(r);
          const body = r.body as Buffer | undefined;
          return w.bulk(body ?? Buffer.alloc(0), {
            index: r.params.index,
            routing: routingParameter(q),
            refresh: parseRefreshPolicy(q['refresh']),
          });
        }),
      });
    }
  }
  const cat = async (w: IndexApi, r: FastifyRequest<{ Params: { index?: string } }>, reply: FastifyReply) => {
    const q = query(r);
    const rows = await w.catShards(r.params.index ?? '_all');
    // `?format=` is checked by the routes' schema (json, text or txt).
    if (q['format'] === 'json') return rows;
    return reply.type('text/plain; charset=UTF-8').send(catShardsText(rows, q['v'] !== undefined));
  };
  const catOptions = {
    config: config('read', ['format', 'v']),
    schema: querySchema({ format: CAT_FORMAT_PARAMETER }),
  };
  app.get('/_cat/shards', catOptions, handle('GET /_cat/shards', cat));
  app.get('/_cat/shards/:index', catOptions, handle('GET /_cat/shards', cat));
}
