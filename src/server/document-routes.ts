/**
 * The single-document routes, in Elasticsearch's shapes (see `bulk/document-writes.ts` for the
 * writes):
 *
 * - `PUT|POST /{index}/_doc/{id}`, `POST /{index}/_doc`, `PUT|POST /{index}/_create/{id}`,
 *   `POST /{index}/_update/{id}`, `DELETE /{index}/_doc/{id}`: writes (`auth: write`);
 * - `GET /{index}/_doc/{id}` (`HEAD` for `exists`: 200 or 404 without a body), `GET /{index}/_source/{id}`
 *   (`routing`, `_source`, `_source_includes`, `_source_excludes`; `realtime` is accepted: reads here
 *   are always real-time): reads (`auth: read`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { filterSource, parseSourceFilter, type SourceFilter } from '../engine/search-options.js';
import { DocumentMissingError, InvalidArgumentError } from '../errors.js';
import { parseRefreshPolicy } from '../bulk/bulk-response.js';
import {
  DOCUMENT_WRITE_PARAMETERS,
  type DocumentWrite,
  documentWriteOptions,
  opTypeAction,
  writeDocument,
} from '../bulk/document-writes.js';
import type { GetResponse, IndexApi } from '../indices/index-api.js';
import { sendError } from './error-body.js';
import { querySchema, REFRESH_PARAMETER } from './route-schemas.js';

/** `?refresh=` of every document write (the other parameters keep their own checks). */
const WRITE_QUERY_SCHEMA = querySchema({ refresh: REFRESH_PARAMETER });

type Query = Readonly<Record<string, unknown>>;

function routeConfig(names: readonly string[], auth: 'read' | 'write') {
  const all = [...names, 'pretty'];
  return { auth, urlParameters: { names: all, hint: `(${all.join(', ')})` } };
}

function routing(query: Query): string | undefined {
  const value = query['routing'];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string')
    throw new InvalidArgumentError('url parameter [routing]', 'must be given once', value);
  return value;
}

/** `_source`, `_source_includes`, `_source_excludes` of a GET, as a filter. */
function sourceParameters(query: Query): SourceFilter {
  const split = (v: unknown) =>
    typeof v === 'string'
      ? v
          .split(',')
          .map((p) => p.trim())
          .filter((p) => p.length > 0)
      : [];
  const source = query['_source'];
  const includes = query['_source_includes'];
  const excludes = query['_source_excludes'];
  if (source === 'false') return parseSourceFilter(false);
  if (includes === undefined && excludes === undefined) {
    return source === undefined || source === 'true'
      ? parseSourceFilter(true)
      : parseSourceFilter(split(source));
  }
  return parseSourceFilter({
    includes: split(includes ?? (source === 'true' ? undefined : source)),
    excludes: split(excludes),
  });
}

function shownDocument(doc: GetResponse, filter: SourceFilter): Record<string, unknown> {
  if (!doc.found) return doc;
  const { _source, ...meta } = doc;
  return filter.fetch ? { ...meta, _source: filterSource(_source, filter) } : meta;
}

/**
 * Registers the routes on `app`. `service(what)` gives the index API, or throws the 400 of a node
 * that serves no writable indices.
 */
export function registerDocumentRoutes(app: FastifyInstance, service: (what: string) => IndexApi): void {
  const run =
    <P>(
      what: string,
      handler: (
        api: IndexApi,
        request: FastifyRequest<{ Params: P }>,
        reply: FastifyReply,
      ) => Promise<unknown>,
    ) =>
    async (request: FastifyRequest<{ Params: P }>, reply: FastifyReply) => {
      try {
        const result = await handler(service(what), request, reply);
        return result === reply ? reply : reply.send(result);
      } catch (error) {
        return sendError(reply, error);
      }
    };
  const write = async (api: IndexApi, reply: FastifyReply, query: Query, request: DocumentWrite) => {
    const result = await writeDocument(api, {
      ...request,
      ...documentWriteOptions(query),
      routing: routing(query),
      refresh: parseRefreshPolicy(query['refresh']),
    });
    return reply.code(result.status).send(result.body);
  };
  const query = (request: FastifyRequest) => (request.query as Query | undefined) ?? {};
  type Doc = { index: string; id: string };

  for (const method of ['PUT', 'POST'] as const) {
    app.route<{ Params: Doc }>({
      method,
      url: '/:index/_doc/:id',
      config: routeConfig(DOCUMENT_WRITE_PARAMETERS.index, 'write'),
      schema: WRITE_QUERY_SCHEMA,
      handler: run('PUT /{index}/_doc/{id}', (api, r, reply) =>
        write(api, reply, query(r), {
          action: opTypeAction(query(r)['op_type']),
          index: r.params.index,
          id: r.params.id,
          body: r.body,
        }),
      ),
    });
    app.route<{ Params: Doc }>({
      method,
      url: '/:index/_create/:id',
      config: routeConfig(DOCUMENT_WRITE_PARAMETERS.create, 'write'),
      schema: WRITE_QUERY_SCHEMA,
      handler: run('PUT /{index}/_create/{id}', (api, r, reply) =>
        write(api, reply, query(r), {
          action: 'create',
          index: r.params.index,
          id: r.params.id,
          body: r.body,
        }),
      ),
    });
  }
  app.post<{ Params: { index: string } }>(
    '/:index/_doc',
    { config: routeConfig(DOCUMENT_WRITE_PARAMETERS.index, 'write'), schema: WRITE_QUERY_SCHEMA },
    run('POST /{index}/_doc', (api, r, reply) =>
      write(api, reply, query(r), {
        action: opTypeAction(query(r)['op_type']),
        index: r.params.index,
        body: r.body,
      }),
    ),
  );
  app.post<{ Params: Doc }>(
    '/:index/_update/:id',
    { config: routeConfig(DOCUMENT_WRITE_PARAMETERS.update, 'write'), schema: WRITE_QUERY_SCHEMA },
    run('POST /{index}/_update/{id}', (api, r, reply) =>
      write(api, reply, query(r), { action: 'update', index: r.params.index, id: r.params.id, body: r.body }),
    ),
  );
  app.delete<{ Params: Doc }>(
    '/:index/_doc/:id',
    { config: routeConfig(DOCUMENT_WRITE_PARAMETERS.delete, 'write'), schema: WRITE_QUERY_SCHEMA },
    run('DELETE /{index}/_doc/{id}', (api, r, reply) =>
      write(api, reply, query(r), { action: 'delete', index: r.params.index, id: r.params.id }),
    ),
  );
  const readParameters = ['routing', '_source', '_source_includes', '_source_excludes', 'realtime'];
  app.get<{ Params: Doc }>(
    '/:index/_doc/:id',
    { config: routeConfig(readParameters, 'read') },
    run('GET /{index}/_doc/{id}', async (api, r, reply) => {
      const filter = sourceParameters(query(r));
      const doc = await api.getDocument(r.params.index, r.params.id, routing(query(r)));
      return reply.code(doc.found ? 200 : 404).send(shownDocument(doc, filter));
    }),
  );
  app.get<{ Params: Doc }>(
    '/:index/_source/:id',
    { config: routeConfig(readParameters, 'read') },
    run('GET /{index}/_source/{id}', async (api, r, reply) => {
      const filter = sourceParameters(query(r));
      const doc = await api.getDocument(r.params.index, r.params.id, routing(query(r)));
      if (!doc.found) {
        return sendError(reply, new DocumentMissingError(r.params.index, r.params.id));
      }
      return reply.send(filterSource(doc._source, filter));
    }),
  );
}
