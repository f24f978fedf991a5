/**
 * The HTTP face of a runtime (fastify): search, sandbox listing, stats. Thin: every decision is the
 * runtime's; this file only maps HTTP to the runtime's API and errors to OpenSearch-shaped bodies.
 *
 * Routes: `POST|GET /{index}/_search`, `POST|GET /_search`; sandboxes: `GET /_sandbox`,
 * `GET /_sandbox/{id}`, `PUT /_sandbox` (create), `PUT /_sandbox/{id}` (partial update, `If-Match`),
 * `DELETE /_sandbox/{id}`, `GET /_sandbox/_stats?breach=true&from=0&size=100`; `GET /_nodes/stats`,
 * `GET /`. Sandbox changes need `Authorization: Bearer <adminToken>`.
 */
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { InvalidArgumentError, SandboxNotFoundError } from '../errors.js';
import { toSandboxDocument } from '../sandbox/sandbox-document.js';
import { checkAdminToken } from './admin-auth.js';
import type { Runtime } from '../runtime.js';
import { toErrorResponse } from './error-body.js';
import { registerIndexRoutes } from './index-routes.js';
import { nodeStatsView, type StatsQuery, sandboxStatsView, sandboxesView } from './stats-views.js';

export interface HttpServerOptions {
  /** Header that carries the user (set by the deployment's authentication layer). Default `x-user`. */
  readonly userHeader?: string;
  /** Header that carries an explicit sandbox choice. Default `x-sandbox-id`. */
  readonly sandboxHeader?: string;
  /** Largest request body, bytes. Default 1 MiB. */
  readonly bodyLimitBytes?: number;
  /** Token that sandbox changes must present. Default: none, and changes are refused (401). */
  readonly adminToken?: string | undefined;
  /** Logger for requests and errors. Default: none. */
  readonly logger?: FastifyBaseLogger;
  /** Largest bulk body, bytes (Elasticsearch `http.max_content_length`). Default 100 MiB. */
  readonly bulkBodyLimitBytes?: number;
  /**
   * Where the node's cluster state is and whether it is reachable (etcd), shown as `cluster_state` in
   * its `GET /_nodes/stats` entry. Default: `{"store": "local"}` (this node's own stores).
   */
  readonly clusterState?: () => unknown;
}

/** The first value of a request header (lower-case `name`), or `undefined`. */
export function headerValue(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Answers `error` with its OpenSearch-shaped body and status (`toErrorResponse`). */
export function sendError(reply: FastifyReply, error: unknown): FastifyReply {
  const { status, body } = toErrorResponse(error);
  return reply.code(status).send(body);
}

/** `If-Match: "3"` (or `3`, or `W/"3"`) -> 3; absent -> undefined. @throws InvalidArgumentError. */
function ifMatchVersion(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  const match = /^\s*(?:W\/)?"?(\d{1,15})"?\s*$/.exec(header);
  if (match === null)
    throw new InvalidArgumentError('If-Match', 'must be a sandbox version such as "3"', header);
  return Number(match[1]);
}

/** URL parameters each route takes (`*`: the others), and the hint a refusal gives. */
const URL_PARAMETERS: Record<string, { readonly names: readonly string[]; readonly hint: string }> = {
  '/:index/_search': { names: ['pretty', 'timeout'], hint: '(timeout, pretty; put size, from and the query in the body)' },
  '/_search': { names: ['pretty', 'timeout'], hint: '(timeout, pretty; put size, from and the query in the body)' },
  '/_sandbox/_stats': { names: ['breach', 'from', 'size', 'pretty'], hint: '(breach, from, size, pretty)' },
  '*': { names: ['pretty'], hint: '(only pretty)' },
};

function statsQuery(query: Record<string, unknown>): StatsQuery {
  const breach = query['breach'];
  if (breach !== undefined && breach !== 'true' && breach !== 'false') {
    throw new InvalidArgumentError('breach', 'must be true or false', breach);
  }
  const int = (name: string, min: number, max: number, fallback: number): number => {
    const text = query[name];
    if (text === undefined) return fallback;
    const n = Number(text);
    if (typeof text !== 'string' || !/^\d+$/.test(text) || n < min || n > max) {
      throw new InvalidArgumentError(name, `must be an integer in ${min}..${max}`, text);
    }
    return n;
  };
  return { breach: breach === 'true', from: int('from', 0, 100_000, 0), size: int('size', 1, 1000, 100) };
}

/** Route config this server reads: `rawBody` (hand the handler the raw bytes), `urlParameters` (allowed). */
export interface RouteConfig {
  readonly rawBody?: boolean;
  readonly urlParameters?: { readonly names: readonly string[]; readonly hint: string };
}

/**
 * The one body parser of both servers: JSON whatever the content type, `undefined` for an empty body,
 * JSON.parse's own message (400) on a syntax error; the raw bytes for a route with `config.rawBody`.
 */
export function parseBody(
  request: FastifyRequest,
  body: Buffer | string,
  done: (error: Error | null, body?: unknown) => void,
): void {
  if ((request.routeOptions.config as RouteConfig | undefined)?.rawBody === true) {
    done(null, body);
    return;
  }
  const text = typeof body === 'string' ? body : body.toString('utf8');
  if (text.trim().length === 0) {
    done(null, undefined);
    return;
  }
  try {
    done(null, JSON.parse(text));
  } catch (error) {
    done(Object.assign(error as Error, { statusCode: 400 }), undefined);
  }
}

/** Builds (does not listen) the fastify instance for `runtime`. */
export function buildHttpServer(runtime: Runtime, options: HttpServerOptions = {}): FastifyInstance {
  const userHeader = (options.userHeader ?? 'x-user').toLowerCase();
  const sandboxHeader = (options.sandboxHeader ?? 'x-sandbox-id').toLowerCase();
  const log = options.logger;
  const app = createApiServer({
    bodyLimitBytes: options.bodyLimitBytes,
    logger: log,
    urlParameters: (url) => URL_PARAMETERS[url] ?? URL_PARAMETERS['*']!,
  });
  registerSearchRoutes(app, (request, call) => runtime.search(request, call), sendError, { userHeader, sandboxHeader });
  app.get('/_sandbox', async () => sandboxesView(runtime));
  app.get('/_sandbox/_stats', async (request, reply) => {
    try {
      return sandboxStatsView(runtime, statsQuery(request.query as Record<string, unknown>));
    } catch (error) {
      return sendError(reply, error);
    }
  });
  app.get<{ Params: { id: string } }>('/_sandbox/:id', async (request, reply) => {
    const sandbox = runtime.sandboxRegistry.get(request.params.id);
    if (sandbox === undefined) return sendError(reply, new SandboxNotFoundError(request.params.id));
    return reply.header('etag', `"${sandbox.version}"`).send({ [sandbox.id]: toSandboxDocument(sandbox) });
  });
  const admin = (request: FastifyRequest) =>
    checkAdminToken(headerValue(request, 'authorization'), options.adminToken);
  // Admin routes check the token before the body is read: a caller without it learns nothing from
  // a 400 about its body, and an unauthorised megabyte is not parsed.
  const adminOnly = {
    onRequest: async (request: FastifyRequest, reply: FastifyReply) => {
      try {
        admin(request);
      } catch (error) {
        return sendError(reply, error);
      }
    },
  };
  app.put('/_sandbox', adminOnly, async (request, reply) => {
    try {
      admin(request);
      const sandbox = await runtime.sandboxRegistry.create(request.body);
      return reply.code(201).header('etag', `"${sandbox.version}"`).send(toSandboxDocument(sandbox));
    } catch (error) {
      return sendError(reply, error);
    }
  });
  app.put<{ Params: { id: string } }>('/_sandbox/:id', adminOnly, async (request, reply) => {
    try {
      admin(request);
      const expected = ifMatchVersion(headerValue(request, 'if-match'));
      const sandbox = await runtime.sandboxRegistry.update(request.params.id, request.body, expected);
      return reply.header('etag', `"${sandbox.version}"`).send(toSandboxDocument(sandbox));
    } catch (error) {
      return sendError(reply, error);
    }
  });
  app.delete<{ Params: { id: string } }>('/_sandbox/:id', adminOnly, async (request, reply) => {
    try {
      admin(request);
      const expected = ifMatchVersion(headerValue(request, 'if-match'));
      const sandbox = await runtime.sandboxRegistry.delete(request.params.id, expected);
      return reply.send({ acknowledged: true, _id: sandbox.id });
    } catch (error) {
      return sendError(reply, error);
    }
  });
  app.get('/_query_priority', async () => runtime.queryPriority());
  app.put('/_query_priority', adminOnly, async (request, reply) => {
    try {
      admin(request);
      return reply.send(await runtime.setQueryPriority(request.body));
    } catch (error) {
      return sendError(reply, error);
    }
  });
  app.get('/_nodes/stats', async () => {
    const view = nodeStatsView(runtime) as { nodes: Record<string, Record<string, unknown>> };
    const entry = view.nodes[runtime.options.nodeId];
    if (entry !== undefined) entry['cluster_state'] = options.clusterState?.() ?? { store: 'local' };
    return view;
  });
  registerIndexRoutes(app, runtime.indices, { bulkBodyLimitBytes: options.bulkBodyLimitBytes });
  app.get('/', async () => ({
    name: runtime.options.nodeId,
    tagline: 'query-sandbox: governed search execution',
    indices: runtime.nodeStats().engineIndices ?? null,
  }));
  return app;
}

/**
 * What the node's and the coordinator's servers answer alike: `?pretty` indents a JSON answer (as
 * OpenSearch does), a thrown error becomes the error body (5xx ones are logged), and an unknown route
 * answers 404 `no_handler_found_exception`.
 */
export function installResponseHandlers(app: FastifyInstance, log: FastifyBaseLogger | undefined): void {
  // `?pretty` indents the JSON answer, as OpenSearch does.
  app.addHook('onSend', async (request, reply, payload) => {
    const pretty = (request.query as Record<string, unknown> | undefined)?.['pretty'];
    if (pretty === undefined || pretty === 'false' || typeof payload !== 'string') return payload;
    if (!String(reply.getHeader('content-type') ?? '').includes('json')) return payload;
    try {
      return `${JSON.stringify(JSON.parse(payload), null, 2)}\n`;
    } catch {
      return payload;
    }
  });

  app.setErrorHandler((error, request, reply) => {
    const { status } = toErrorResponse(error);
    if (status >= 500) log?.error({ err: error, url: request.url }, 'request failed');
    return sendError(reply, error);
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({
      error: {
        type: 'no_handler_found_exception',
        reason: `no handler for ${request.method} ${request.url}`,
      },
      status: 404,
    }),
  );
}

/** URL parameters a route accepts, and the hint its refusal gives. */
export interface UrlParameters {
  readonly names: readonly string[];
  readonly hint: string;
}

/** Options of `createApiServer`. */
export interface ApiServerOptions {
  /** Largest request body, bytes. Default 1 MiB. */
  readonly bodyLimitBytes?: number | undefined;
  readonly logger?: FastifyBaseLogger | undefined;
  /** The URL parameters a route without `config.urlParameters` accepts, by its URL pattern. */
  readonly urlParameters: (url: string) => UrlParameters;
}

/**
 * The fastify instance both the node's and the coordinator's servers start from: bodies parsed as
 * JSON whatever the content type (raw bytes for `config.rawBody` routes), unknown URL parameters
 * refused as OpenSearch does, and the shared response handlers (`installResponseHandlers`).
 */
export function createApiServer(options: ApiServerOptions): FastifyInstance {
  // Request logging stays off (one line per search is too much); errors are logged by the handlers.
  const app = Fastify({
    bodyLimit: options.bodyLimitBytes ?? 1024 * 1024,
    logger: false,
    // Index expressions can be long comma lists; the runtime bounds them (4096 characters) itself.
    routerOptions: { maxParamLength: 4096 },
    // Errors raised before routing (a bad percent-encoding) get the same body shape as the rest.
    frameworkErrors: (error, _request, reply) => {
      sendError(
        reply as unknown as FastifyReply,
        new InvalidArgumentError('url', 'is not a valid request path', error.message),
      );
    },
  });
  // Bodies are JSON whatever the content type says (curl -d sends form-urlencoded by default), and a
  // syntax error reports JSON.parse's own message, which says where the text went wrong. Routes with
  // `config.rawBody` (bulk: NDJSON) get the raw bytes instead.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, parseBody);
  // OpenSearch refuses URL parameters it does not know: silently ignoring `?size=1` would mislead.
  app.addHook('preHandler', async (request, reply) => {
    const allowed =
      (request.routeOptions.config as RouteConfig | undefined)?.urlParameters ??
      options.urlParameters(request.routeOptions.url ?? '');
    const query = (request.query as Record<string, unknown> | undefined) ?? {};
    for (const name of Object.keys(query)) {
      if (!allowed.names.includes(name)) {
        return sendError(
          reply,
          new InvalidArgumentError(`url parameter [${name}]`, `is not supported ${allowed.hint}`, query[name]),
        );
      }
    }
  });
  installResponseHandlers(app, options.logger);
  return app;
}

/**
 * `GET|POST /{index}/_search` and `/_search`: the body must be a JSON object (or absent); the user
 * and explicit sandbox come from the named headers, `timeout` from `?timeout=` (where the server
 * accepts it); `search` answers, `sendFailure` turns its errors into the error body.
 *
 * A client that goes away gives up its search: when the request's connection closes before the
 * answer is ready, `call.signal` aborts, so a queued task is removed without running and a running
 * one is cancelled (the answer, `QS_ABORTED`, has nobody to go to).
 */
export function registerSearchRoutes(
  app: FastifyInstance,
  search: (
    request: {
      index: string;
      body: unknown;
      user: string | undefined;
      sandboxId: string | undefined;
      timeout?: string;
    },
    call: { readonly signal: AbortSignal },
  ) => Promise<unknown>,
  sendFailure: (reply: FastifyReply, error: unknown) => FastifyReply,
  headers: { readonly userHeader: string; readonly sandboxHeader: string },
): void {
  const handle = async (request: FastifyRequest, reply: FastifyReply, index: string) => {
    const body = request.body;
    if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body))) {
      return sendError(reply, new InvalidArgumentError('body', 'must be a JSON object', body));
    }
    const timeout = (request.query as Record<string, unknown> | undefined)?.['timeout'];
    // The connection closing before the answer is sent: the client is gone (HTTP/1.1 has no other way
    // to cancel a request). Keep-alive sockets carry later requests, so the listener goes once answered.
    const gone = new AbortController();
    const socket = request.raw.socket;
    const onClose = () => gone.abort(new Error('the client closed its connection before the answer'));
    socket.once('close', onClose);
    if (socket.destroyed) onClose();
    try {
      const result = await search(
        {
          index,
          body: body ?? {},
          user: headerValue(request, headers.userHeader),
          sandboxId: headerValue(request, headers.sandboxHeader),
          ...(typeof timeout === 'string' ? { timeout } : {}),
        },
        { signal: gone.signal },
      );
      return reply.send(result);
    } catch (error) {
      return sendFailure(reply, error);
    } finally {
      socket.off('close', onClose);
    }
  };
  for (const method of ['GET', 'POST'] as const) {
    app.route<{ Params: { index: string } }>({
      method,
      url: '/:index/_search',
      handler: (request, reply) => handle(request, reply, request.params.index),
    });
    app.route({ method, url: '/_search', handler: (request, reply) => handle(request, reply, '_all') });
  }
}
