/**
 * The HTTP face of a runtime (fastify): search, sandbox listing, stats. Thin: every decision is the
 * runtime's; this file only maps HTTP to the runtime's API and errors to OpenSearch-shaped bodies.
 *
 * Routes: `POST|GET /{index}/_search`, `POST|GET /_search`; sandboxes: `GET /_sandbox`,
 * `GET /_sandbox/{id}`, `PUT /_sandbox` (create), `PUT /_sandbox/{id}` (partial update, `If-Match`),
 * `DELETE /_sandbox/{id}`, `GET /_sandbox/_stats?breach=true&from=0&size=100`; `GET /_nodes/stats`,
 * `GET /`; OpenSearch's `_wlm` API over the same sandboxes (`wlm-routes.ts`). Who may call what:
 * each route's `config.auth`, checked by `route-auth.ts` before the body is read (sandbox and
 * query-priority changes: the admin token).
 */
import { booleanParameter, installSchemaValidation, integerParameter, querySchema } from './route-schemas.js';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import {
  InvalidArgumentError,
  SandboxConflictError,
  SandboxNotFoundError,
  UnsupportedContentTypeError,
} from '../errors.js';
import { toSandboxDocument } from '../sandbox/sandbox-document.js';
import type { Runtime } from '../runtime.js';
import type { SandboxInput, SandboxPatch } from '../sandbox/sandbox-input.js';
import type { QueryPriorityInput } from '../scheduler/query-priority.js';
import {
  applyConnectionLimits,
  type ConnectionLimits,
  fastifyConnectionOptions,
  resolveConnectionLimits,
} from './connection-limits.js';
import type { SearchService } from '../execution/search-service.js';
import { clientGoneSignal } from './client-gone.js';
import { errorBody, sendError, toErrorResponse } from './error-body.js';
import { headerValue, singleHeaderValue } from './header-value.js';
import { nodeCatalog } from './index-catalogs.js';
import { registerIndexInfoRoutes } from './index-info-routes.js';
import { registerIndexRoutes } from './index-routes.js';
import { parseJsonBody } from './json-body.js';
import { clusterUuidOf, installProductHeader, registerRootRoutes } from './product-info.js';
import { type AuthOptions, installRouteAuth, type RouteAuth } from './route-auth.js';
import { registerObservabilityRoutes, runtimeObservability } from './observability-routes.js';
import type { RuntimeFeed } from '../observability/runtime-feed.js';
import { applySearchParameters, SEARCH_URL_PARAMETERS } from './search-parameters.js';
import { registerWlmRoutes } from './wlm-routes.js';
import { nodeStatsView, type StatsQuery, sandboxStatsView, sandboxesView } from './stats-views.js';

export interface HttpServerOptions {
  /** Header that carries the user (set by the deployment's authentication layer). Default `x-user`. */
  readonly userHeader?: string;
  /** Header that carries an explicit sandbox choice. Default `x-sandbox-id`. */
  readonly sandboxHeader?: string;
  /** Largest request body, bytes. Default 1 MiB. */
  readonly bodyLimitBytes?: number;
  /** Token that every write and admin route accepts. Default: none, and they answer 401. */
  readonly adminToken?: string | undefined;
  /** Token that document writes and `_bulk` accept (not index management). Default: none. */
  readonly writerToken?: string | undefined;
  /** Secret of the cluster's node-to-node routes (`/_internal/*`, data nodes). Default: none (401). */
  readonly clusterSecret?: string | undefined;
  /** Open every route but the internal ones to everyone: local experiments only. Default false. */
  readonly insecureSkipAuth?: boolean | undefined;
  /** Header and body time-outs and the bound on open connections (see `connection-limits.ts`). */
  readonly connectionLimits?: ConnectionLimits | undefined;
  /** Logger for requests and errors. Default: none. */
  readonly logger?: FastifyBaseLogger;
  /** Largest bulk body, bytes (Elasticsearch `http.max_content_length`). Default 100 MiB. */
  readonly bulkBodyLimitBytes?: number;
  /**
   * Where the node's cluster state is and whether it is reachable (etcd), shown as `cluster_state` in
   * its `GET /_nodes/stats` entry. Default: `{"store": "local"}` (this node's own stores).
   */
  readonly clusterState?: () => unknown;
  /**
   * Where metrics and the dashboard read the runtime: a `RuntimeFeed` attached to it, whose
   * `onTaskEnd` the runtime was created with (then the per-task histograms and latencies are fed).
   * Default: a feed of the runtime's snapshots alone.
   */
  readonly feed?: RuntimeFeed;
}

/**
 * What an `If-Match` header asks of a sandbox change (RFC 9110 §13.1.1): `undefined` when absent or
 * `*` (any current version); otherwise the versions it names, each a quoted strong entity tag such as
 * `"3"` (`"1", "2"` lists several; the change applies if the current version is one of them).
 * A weak tag (`W/"3"`) never matches in `If-Match`, which uses the strong comparison.
 * @throws InvalidArgumentError (400) naming `If-Match` and the value for anything that is not a list of
 *   entity tags (an unquoted `3`); SandboxConflictError (409) for a list that can never match (weak
 *   tags, or tags that are not versions).
 */
export function ifMatchVersions(header: string | undefined): readonly number[] | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (text === '*') return undefined;
  const tags = text.split(',').map((t) => t.trim());
  const versions: number[] = [];
  let weak = false;
  for (const tag of tags) {
    const match = /^(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"$/.exec(tag);
    if (match === null) {
      throw new InvalidArgumentError(
        'If-Match',
        'must be * or quoted entity tags such as "3" (the sandbox version from its ETag, in double quotes)',
        header,
      );
    }
    if (match[1] !== undefined) weak = true;
    else if (/^\d{1,15}$/.test(match[2]!)) versions.push(Number(match[2]));
  }
  if (versions.length === 0) {
    throw new SandboxConflictError(
      'version',
      `If-Match ${JSON.stringify(header)} can never match: ${weak ? 'a weak entity tag (W/"...") never matches in If-Match, which uses the strong comparison (RFC 9110 §13.1.1); send the version as "N"' : 'a sandbox version is a quoted integer such as "3"'}`,
    );
  }
  return versions;
}

/** The version to pass for a compare-and-swap: the current one when `versions` names it, else one that fails. */
function expectedVersion(
  versions: readonly number[] | undefined,
  current: number | undefined,
): number | undefined {
  if (versions === undefined) return undefined;
  return current !== undefined && versions.includes(current) ? current : versions[0];
}

/**
 * The header that names a workload group in OpenSearch (`queryGroupId` before 3.0), an alias of the
 * explicit-sandbox header: its value is a sandbox `_id`, honoured under the same rule.
 */
export const WORKLOAD_GROUP_HEADER = 'workloadgroupid';

/** URL parameters each route takes (`*`: the others), and the hint a refusal gives. */
const URL_PARAMETERS: Record<string, { readonly names: readonly string[]; readonly hint: string }> = {
  '/_sandbox/_stats': { names: ['breach', 'from', 'size', 'pretty'], hint: '(breach, from, size, pretty)' },
  '*': { names: ['pretty'], hint: '(only pretty)' },
};

/** `GET /_sandbox/_stats?breach=&from=&size=`: checked by the route's schema, converted here. */
export const SANDBOX_STATS_QUERY_SCHEMA = querySchema({
  breach: booleanParameter(),
  from: integerParameter(0, 100_000, '^0*(?:\\d{1,5}|100000)$'),
  size: integerParameter(1, 1000, '^0*(?:[1-9]\\d{0,2}|1000)$'),
});

function statsQuery(query: Record<string, unknown>): StatsQuery {
  const int = (name: string, fallback: number) =>
    query[name] === undefined ? fallback : Number(query[name]);
  return { breach: query['breach'] === 'true', from: int('from', 0), size: int('size', 100) };
}

/**
 * Route config this server reads: `rawBody` (hand the handler the raw bytes), `urlParameters` (allowed),
 * `auth` (who may call it; see `route-auth.ts`).
 */
export interface RouteConfig {
  readonly rawBody?: boolean;
  readonly urlParameters?: { readonly names: readonly string[]; readonly hint: string };
  readonly auth?: RouteAuth;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Hand the handler the raw body bytes (NDJSON bulks). */
    rawBody?: boolean;
    /** The URL parameters the route accepts; others answer 400. */
    urlParameters?: { readonly names: readonly string[]; readonly hint: string };
  }
}

/**
 * The media types a request body may be sent as (Elasticsearch reads JSON and NDJSON as such, with the
 * `vnd.elasticsearch` forms its clients send: `application/vnd.elasticsearch+json; compatible-with=8`,
 * `application/vnd.elasticsearch+x-ndjson`), plus `application/x-www-form-urlencoded`, which
 * curl's `-d` sends by default and which is read as JSON here (Elasticsearch refuses it).
 */
const READABLE_MEDIA_TYPE =
  /^application\/(?:json|x-ndjson|x-www-form-urlencoded|[\w.+-]*\+(?:json|x-ndjson))$/;

/**
 * The `Content-Type` of a body that the server does not read (`text/plain`, `application/cbor`), as
 * sent; `undefined` for a readable one or none. Internal cluster calls (`/_internal/`) are not checked:
 * the nodes send JSON to each other.
 */
export function unsupportedContentType(request: FastifyRequest): string | undefined {
  if (request.url.startsWith('/_internal/')) return undefined;
  const header = request.headers['content-type'];
  if (header === undefined || header === '') return undefined;
  const mediaType = (header.split(';')[0] ?? '').trim().toLowerCase();
  return READABLE_MEDIA_TYPE.test(mediaType) ? undefined : header;
}

/**
 * The one body parser of both servers: JSON for any readable content type (`READABLE_MEDIA_TYPE`;
 * another one answers 406, `UnsupportedContentTypeError`), `undefined` for an empty body,
 * JSON.parse's own message (400) on a syntax error, a 400 naming the field and the literal for a number
 * beyond a double (`json-body.ts`; not checked on internal routes, whose bodies nodes serialised); the
 * raw bytes for a route with `config.rawBody`.
 */
export function parseBody(
  request: FastifyRequest,
  body: Buffer | string,
  done: (error: Error | null, body?: unknown) => void,
): void {
  if ((request.routeOptions.config as RouteConfig | undefined)?.rawBody === true) {
    const refusedRaw = unsupportedContentType(request);
    done(
      refusedRaw === undefined ? null : new UnsupportedContentTypeError(refusedRaw),
      refusedRaw === undefined ? body : undefined,
    );
    return;
  }
  // A route that does not exist answers 404, whatever its body (an NDJSON `_msearch` is no JSON).
  if (request.is404) {
    done(null, undefined);
    return;
  }
  const refused = unsupportedContentType(request);
  if (refused !== undefined) {
    done(new UnsupportedContentTypeError(refused), undefined);
    return;
  }
  const text = typeof body === 'string' ? body : body.toString('utf8');
  if (text.trim().length === 0) {
    done(null, undefined);
    return;
  }
  try {
    done(null, request.url.startsWith('/_internal/') ? JSON.parse(text) : parseJsonBody(text));
  } catch (error) {
    done(
      error instanceof SyntaxError ? Object.assign(error, { statusCode: 400 }) : (error as Error),
      undefined,
    );
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
    auth: {
      adminToken: options.adminToken,
      writerToken: options.writerToken,
      clusterSecret: options.clusterSecret,
      insecureSkipAuth: options.insecureSkipAuth,
    },
    connectionLimits: options.connectionLimits,
  });
  registerSearchRoutes(app, runtime, sendError, { userHeader, sandboxHeader });
  app.get('/_sandbox', async () => sandboxesView(runtime));
  app.get('/_sandbox/_stats', { schema: SANDBOX_STATS_QUERY_SCHEMA }, async (request, reply) => {
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
  const admin = { config: { auth: 'admin' as const } };
  app.put('/_sandbox', admin, async (request, reply) => {
    try {
      // Checked by the registry, whatever the body holds.
      const sandbox = await runtime.sandboxRegistry.create(request.body as SandboxInput);
      return reply.code(201).header('etag', `"${sandbox.version}"`).send(toSandboxDocument(sandbox));
    } catch (error) {
      return sendError(reply, error);
    }
  });
  app.put<{ Params: { id: string } }>('/_sandbox/:id', admin, async (request, reply) => {
    try {
      const versions = ifMatchVersions(headerValue(request, 'if-match'));
      const current = runtime.sandboxRegistry.get(request.params.id)?.version;
      const sandbox = await runtime.sandboxRegistry.update(
        request.params.id,
        request.body as SandboxPatch,
        expectedVersion(versions, current),
      );
      return reply.header('etag', `"${sandbox.version}"`).send(toSandboxDocument(sandbox));
    } catch (error) {
      return sendError(reply, error);
    }
  });
  app.delete<{ Params: { id: string } }>('/_sandbox/:id', admin, async (request, reply) => {
    try {
      const versions = ifMatchVersions(headerValue(request, 'if-match'));
      const current = runtime.sandboxRegistry.get(request.params.id)?.version;
      const sandbox = await runtime.sandboxRegistry.delete(
        request.params.id,
        expectedVersion(versions, current),
      );
      return reply.send({ acknowledged: true, _id: sandbox.id });
    } catch (error) {
      return sendError(reply, error);
    }
  });
  registerWlmRoutes(app, runtime, { sendError });
  app.get('/_query_priority', async () => runtime.queryPriority());
  app.put('/_query_priority', admin, async (request, reply) => {
    try {
      return reply.send(await runtime.setQueryPriority(request.body as QueryPriorityInput));
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
  registerObservabilityRoutes(app, runtimeObservability(runtime, options.feed));
  registerIndexInfoRoutes(app, nodeCatalog(runtime), { userHeader, sandboxHeader });
  const clusterUuid = clusterUuidOf([runtime.options.nodeId]);
  registerRootRoutes(app, () => ({
    name: runtime.options.nodeId,
    clusterUuid,
    extra: { indices: runtime.nodeStats().engineIndices ?? null },
  }));
  return app;
}

/**
 * What the node's and the coordinator's servers answer alike: `?pretty` indents a JSON answer (as
 * OpenSearch does), a thrown error becomes the error body (5xx ones are logged), and an unknown route
 * answers 404 `no_handler_found_exception`.
 */
export function installResponseHandlers(app: FastifyInstance, log: FastifyBaseLogger | undefined): void {
  installProductHeader(app);
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

  app.setErrorHandler((raw, request, reply) => {
    const error = bodyTooLarge(raw, request) ?? raw;
    const { status } = toErrorResponse(error);
    if (status >= 500) log?.error({ err: error, url: request.url }, 'request failed');
    return sendError(reply, error);
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .send(
        errorBody(
          404,
          'no_handler_found_exception',
          `no handler found for uri [${request.url}] and method [${request.method}]`,
        ),
      ),
  );
}

/**
 * fastify's 413 ("Request body is too large") with the limit and the size received, so the caller
 * learns what to change: `body is larger than the limit of 65536 bytes for POST /_bulk; received 71710
 * bytes (Content-Length)`. Undefined for any other error.
 */
function bodyTooLarge(error: unknown, request: FastifyRequest): Error | undefined {
  if ((error as { code?: unknown } | null)?.code !== 'FST_ERR_CTP_BODY_TOO_LARGE') return undefined;
  const length = headerValue(request, 'content-length');
  const limit = request.routeOptions.bodyLimit;
  return Object.assign(
    new Error(
      `body is larger than the limit of ${limit} bytes for ${request.method} ${request.routeOptions.url ?? request.url}; ` +
        `received ${length === undefined ? 'more (chunked)' : `${length} bytes (Content-Length)`}`,
    ),
    { statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE' },
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
  /** The credentials the routes accept (see `route-auth.ts`). @default none: writes answer 401 */
  readonly auth?: AuthOptions | undefined;
  /** Header and body time-outs, the bound on open connections. @default 30 s, 30 s, 1024 */
  readonly connectionLimits?: ConnectionLimits | undefined;
}

/**
 * The fastify instance both the node's and the coordinator's servers start from: every route's role
 * checked before its body is read (`route-auth.ts`), header and body time-outs and a bound on
 * connections (`connection-limits.ts`), bodies parsed as JSON whatever the content type (raw bytes for
 * `config.rawBody` routes), unknown URL parameters refused as OpenSearch does, and the shared response
 * handlers (`installResponseHandlers`).
 * @throws InvalidArgumentError for invalid `connectionLimits`.
 */
export function createApiServer(options: ApiServerOptions): FastifyInstance {
  const limits = resolveConnectionLimits(options.connectionLimits);
  // Request logging stays off (one line per search is too much); errors are logged by the handlers.
  const app = Fastify({
    ...fastifyConnectionOptions(limits, options.logger),
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
  // Bodies are JSON for every readable content type (curl -d sends form-urlencoded by default), and a
  // syntax error reports JSON.parse's own message, which says where the text went wrong. Routes with
  // `config.rawBody` (bulk: NDJSON) get the raw bytes instead.
  applyConnectionLimits(app, limits, options.logger);
  // Route schemas: compiled once, failures answer 400 naming the field and the value (route-schemas.ts).
  installSchemaValidation(app);
  // First of all hooks: a caller without the right token learns nothing else, and its body is never read.
  installRouteAuth(app, options.auth ?? {}, sendError);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, parseBody);
  // OpenSearch refuses URL parameters it does not know: silently ignoring `?size=1` would mislead.
  app.addHook('preHandler', async (request, reply) => {
    // A route that does not exist answers 404 whatever its parameters (the not-found handler runs hooks too).
    if (request.is404) return;
    const allowed =
      (request.routeOptions.config as RouteConfig | undefined)?.urlParameters ??
      options.urlParameters(request.routeOptions.url ?? '');
    const query = (request.query as Record<string, unknown> | undefined) ?? {};
    for (const name of Object.keys(query)) {
      if (!allowed.names.includes(name)) {
        return sendError(
          reply,
          new InvalidArgumentError(
            `url parameter [${name}]`,
            `is not supported ${allowed.hint}`,
            query[name],
          ),
        );
      }
    }
  });
  installResponseHandlers(app, options.logger);
  return app;
}

/**
 * The explicit sandbox of a request: the explicit-sandbox header or the `workloadGroupId` header,
 * which name the same thing (a sandbox `_id`) and go through the same check (`resolveExplicit`).
 * @throws InvalidArgumentError when both are sent with different values, or either is sent twice.
 */
export function explicitSandboxOf(request: FastifyRequest, sandboxHeader: string): string | undefined {
  const sandboxId = singleHeaderValue(request, sandboxHeader);
  const group = singleHeaderValue(request, WORKLOAD_GROUP_HEADER);
  if (sandboxId !== undefined && group !== undefined && sandboxId !== group) {
    throw new InvalidArgumentError(
      'workloadGroupId',
      `must name the same sandbox as the ${sandboxHeader} header (${JSON.stringify(sandboxId)}) when both are sent`,
      group,
    );
  }
  return sandboxId ?? group;
}

/** `?max_concurrent_shard_requests=`: an integer in 1..65536. @throws InvalidArgumentError. */
function shardRequestsParameter(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (typeof value !== 'string' || !/^\d+$/.test(value) || n < 1 || n > 65_536) {
    throw new InvalidArgumentError('max_concurrent_shard_requests', 'must be an integer in 1..65536', value);
  }
  return n;
}

/**
 * `GET|POST /{index}/_search` and `/_search`: the body must be a JSON object (or absent); the URL
 * parameters of `search-parameters.ts` are folded into it, and `timeout`, `cancel_after_time_interval`
 * and `max_concurrent_shard_requests` are also handed on as such (the runtime resolves them against
 * the sandbox's `search_settings`); the user and explicit sandbox come from the named headers (or
 * `workloadGroupId`); `service` answers (a single node's runtime or a cluster's coordinator: one
 * route for both), `sendFailure` turns its errors into the error body.
 *
 * A client that goes away gives up its search: when the request's connection closes before the
 * answer is ready, the call's `signal` aborts (`clientGoneSignal`), so a single node removes a queued
 * task without running it and cancels a running one, and a coordinator aborts its calls to the data
 * nodes (the answer, `QS_ABORTED`, has nobody to go to).
 */
export function registerSearchRoutes(
  app: FastifyInstance,
  service: SearchService<unknown>,
  sendFailure: (reply: FastifyReply, error: unknown) => FastifyReply,
  headers: { readonly userHeader: string; readonly sandboxHeader: string },
): void {
  const handle = async (request: FastifyRequest, reply: FastifyReply, index: string) => {
    const body = request.body;
    if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body))) {
      return sendError(reply, new InvalidArgumentError('body', 'must be a JSON object', body));
    }
    const gone = clientGoneSignal(request);
    try {
      const query = (request.query as Record<string, unknown> | undefined) ?? {};
      const text = (name: string) => (typeof query[name] === 'string' ? (query[name] as string) : undefined);
      const result = await service.search(
        {
          index,
          body: applySearchParameters(query, (body as Record<string, unknown> | undefined) ?? {}),
          user: headerValue(request, headers.userHeader),
          sandboxId: explicitSandboxOf(request, headers.sandboxHeader),
          timeout: text('timeout'),
          cancelAfterTimeInterval: text('cancel_after_time_interval'),
          maxConcurrentShardRequests: shardRequestsParameter(query['max_concurrent_shard_requests']),
        },
        { signal: gone.signal },
      );
      return reply.send(result);
    } catch (error) {
      return sendFailure(reply, error);
    } finally {
      gone.dispose();
    }
  };
  // A search is a read whatever its method (POST carries the body).
  const names = [...SEARCH_URL_PARAMETERS, 'pretty'];
  const config = { auth: 'read' as const, urlParameters: { names, hint: `(${names.join(', ')})` } };
  for (const method of ['GET', 'POST'] as const) {
    app.route<{ Params: { index: string } }>({
      method,
      url: '/:index/_search',
      config,
      handler: (request, reply) => handle(request, reply, request.params.index),
    });
    app.route({
      method,
      url: '/_search',
      config,
      handler: (request, reply) => handle(request, reply, '_all'),
    });
  }
}
