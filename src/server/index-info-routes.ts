/**
 * The calls clients make first, over every index a node or a coordinator serves: the engine's
 * read-only (corpus) indices and the writable ones. Elasticsearch's shapes:
 *
 * - `GET /{index}` (and `HEAD`, for `indices.exists`): `{"<index>": {"aliases", "mappings", "settings"}}`;
 * - `GET /_mapping`, `GET /{index}/_mapping`; `GET /_settings`, `GET /{index}/_settings`;
 *   `PUT /_settings` (the writable indices' dynamic settings);
 * - `GET /_cluster/health[/{index}]` (`level=cluster|indices`, `wait_for_status`, `timeout`): the
 *   status from the shard copies (`indices/cluster-health.ts`);
 * - `GET /_cat/indices[/{index}]` (`v`, `format=json|text`, `h`, `s`, `health`);
 * - `GET|POST /_count`, `/{index}/_count` (`{"query"}`, or `q`, `df`, `default_operator`): a search
 *   with `size: 0` and exact totals, so sandboxes and the governor apply to it as to any search;
 * - `GET|POST /_refresh`, `/{index}/_refresh`: refreshes the writable indices named; a read-only index
 *   is always current, its shards count as refreshed.
 *
 * A read-only index reports `index.blocks.write: true`, no replicas on a single node, and its engine's
 * shard and document counts and mappings. Store sizes are not measured: `_cat/indices` prints them
 * empty (`null` in JSON).
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { resolveIndexExpression } from '../classify/index-expression.js';
import { InvalidArgumentError } from '../errors.js';
import {
  clusterHealth,
  type HealthStatus,
  type IndexShardStates,
  type ShardCopyState,
  statusAtLeast,
} from '../indices/cluster-health.js';
import { parseTimeValueMs } from '../common/time-value.js';
import type { IndexApi } from '../indices/index-api.js';
import { sendError } from './error-body.js';
import { headerValue, singleHeaderValue } from './header-value.js';
import { CAT_FORMAT_PARAMETER, querySchema } from './route-schemas.js';
import { CLUSTER_NAME } from './product-info.js';
import { COUNT_URL_PARAMETERS, queryStringOf } from './search-parameters.js';

/** One of the engine's read-only indices, as the catalog describes it. */
export interface ReadOnlyIndex {
  readonly name: string;
  readonly numberOfShards: number;
  readonly numberOfReplicas: number;
  readonly copies: readonly ShardCopyState[];
  /** Documents in the index, when the engine reports them. */
  readonly docs: number | undefined;
  readonly mappings: Readonly<Record<string, unknown>> | undefined;
}

/** What the routes read: a single node's runtime or a coordinator, behind one interface. */
export interface IndexCatalog {
  readonly numberOfNodes: number;
  readonly numberOfDataNodes: number;
  readOnlyIndices(): readonly ReadOnlyIndex[];
  /** The writable indices, when served. */
  readonly writable: IndexApi | undefined;
  /** Runs a search (the node's runtime or the coordinator). */
  search(request: {
    index: string;
    body: unknown;
    user: string | undefined;
    sandboxId: string | undefined;
  }): Promise<unknown>;
}

/** Headers that carry the user and the sandbox choice (passed on to `_count` searches). */
export interface IdentityHeaders {
  readonly userHeader: string;
  readonly sandboxHeader: string;
}

/** A read-only index's uuid: stable, 22 URL-safe base64 characters, from its name. */
export function readOnlyIndexUuid(name: string): string {
  return createHash('sha256').update(`${CLUSTER_NAME}/read-only/${name}`).digest('base64url').slice(0, 22);
}

type Query = Readonly<Record<string, unknown>>;

function routeConfig(names: readonly string[], auth: 'read' | 'write' | 'admin' = 'read') {
  const all = [...names, 'pretty'];
  return { auth, urlParameters: { names: all, hint: `(${all.join(', ')})` } };
}

/** The states of a writable index's copies from `_cat/shards` rows. */
function writableStates(
  api: IndexApi,
  names: readonly string[],
  rows: Awaited<ReturnType<IndexApi['catShards']>>,
): IndexShardStates[] {
  const settings = names.length === 0 ? {} : api.getSettings(names.join(','));
  return names.map((index) => {
    const flat = ((settings[index] as { settings: { index: Record<string, string> } } | undefined)?.settings
      .index ?? {}) as Record<string, string>;
    return {
      index,
      numberOfShards: Number(flat['number_of_shards'] ?? 1),
      numberOfReplicas: Number(flat['number_of_replicas'] ?? 0),
      copies: rows
        .filter((r) => r.index === index)
        .map((r) => ({ shard: Number(r.shard), primary: r.prirep === 'p', state: r.state })),
    };
  });
}

/** Registers the routes (see module doc) on `app`. */
export function registerIndexInfoRoutes(
  app: FastifyInstance,
  catalog: IndexCatalog,
  headers: IdentityHeaders,
): void {
  const query = (request: FastifyRequest) => (request.query as Query | undefined) ?? {};
  const run =
    <P>(
      handler: (request: FastifyRequest<{ Params: P }>, reply: FastifyReply) => Promise<unknown> | unknown,
    ) =>
    async (request: FastifyRequest<{ Params: P }>, reply: FastifyReply) => {
      try {
        const result = await handler(request, reply);
        return result === reply ? reply : reply.send(result);
      } catch (error) {
        return sendError(reply, error);
      }
    };
  const writableNames = () => catalog.writable?.names() ?? [];
  /** Concrete names of an expression over every index; `readOnly` and `writable` split them. */
  const resolve = (expression: string) => {
    const readOnly = catalog.readOnlyIndices();
    const all = [...readOnly.map((i) => i.name), ...writableNames()];
    const names = resolveIndexExpression(expression, all);
    const byName = new Map(readOnly.map((i) => [i.name, i]));
    return {
      names,
      readOnly: names.flatMap((n) => byName.get(n) ?? []),
      writable: names.filter((n) => !byName.has(n)),
    };
  };
  const readOnlySettings = (i: ReadOnlyIndex) => ({
    index: {
      number_of_shards: String(i.numberOfShards),
      number_of_replicas: String(i.numberOfReplicas),
      uuid: readOnlyIndexUuid(i.name),
      provided_name: i.name,
      blocks: { write: 'true' },
    },
  });
  const settingsOf = (expression: string): Record<string, unknown> => {
    const { names, readOnly, writable } = resolve(expression);
    const out: Record<string, unknown> = {};
    const writableSettings = writable.length === 0 ? {} : catalog.writable!.getSettings(writable.join(','));
    const ro = new Map(readOnly.map((i) => [i.name, i]));
    for (const name of names) {
      const index = ro.get(name);
      out[name] = index === undefined ? writableSettings[name] : { settings: readOnlySettings(index) };
    }
    return out;
  };
  const mappingsOf = (expression: string): Record<string, unknown> => {
    const { names, readOnly, writable } = resolve(expression);
    const writableMappings = writable.length === 0 ? {} : catalog.writable!.getMappings(writable.join(','));
    const ro = new Map(readOnly.map((i) => [i.name, i]));
    const out: Record<string, unknown> = {};
    for (const name of names) {
      const index = ro.get(name);
      out[name] = index === undefined ? writableMappings[name] : { mappings: index.mappings ?? {} };
    }
    return out;
  };
  const shardStates = async (expression: string): Promise<IndexShardStates[]> => {
    const { names, readOnly, writable } = resolve(expression);
    const ro = new Map(readOnly.map((i) => [i.name, i]));
    const rows = writable.length === 0 ? [] : await catalog.writable!.catShards(writable.join(','));
    const w = new Map(writableStates(catalog.writable!, writable, rows).map((s) => [s.index, s]));
    return names.map((name) => {
      const index = ro.get(name);
      return index === undefined
        ? w.get(name)!
        : {
            index: name,
            numberOfShards: index.numberOfShards,
            numberOfReplicas: index.numberOfReplicas,
            copies: index.copies,
          };
    });
  };

  // ---- GET /{index}, _mapping, _settings ----------------------------------------------------------
  app.get<{ Params: { index: string } }>(
    '/:index',
    { config: routeConfig([]) },
    run((r, reply) => {
      // `/_something` is an API name, not an index (names cannot start with `_`): no such route.
      if (r.params.index.startsWith('_')) return reply.callNotFound();
      const settings = settingsOf(r.params.index);
      const mappings = mappingsOf(r.params.index);
      const out: Record<string, unknown> = {};
      for (const [name, value] of Object.entries(settings)) {
        out[name] = {
          aliases: {},
          mappings: (mappings[name] as { mappings: unknown }).mappings,
          settings: (value as { settings: unknown }).settings,
        };
      }
      return out;
    }),
  );
  app.get(
    '/_mapping',
    { config: routeConfig([]) },
    run(() => mappingsOf('_all')),
  );
  app.get<{ Params: { index: string } }>(
    '/:index/_mapping',
    { config: routeConfig([]) },
    run((r) => mappingsOf(r.params.index)),
  );
  app.get(
    '/_settings',
    { config: routeConfig([]) },
    run(() => settingsOf('_all')),
  );
  app.get<{ Params: { index: string } }>(
    '/:index/_settings',
    { config: routeConfig([]) },
    run((r) => settingsOf(r.params.index)),
  );
  app.put(
    '/_settings',
    { config: routeConfig([], 'admin') },
    run((r) => {
      if (catalog.writable === undefined) {
        throw new InvalidArgumentError(
          'url',
          'is not served: the engine serves no writable indices',
          'PUT /_settings',
        );
      }
      return catalog.writable.updateSettings('_all', r.body);
    }),
  );

  // ---- _cluster/health ----------------------------------------------------------------------------
  const health = async (expression: string, q: Query, reply: FastifyReply) => {
    const level = q['level'] ?? 'cluster';
    if (level !== 'cluster' && level !== 'indices') {
      throw new InvalidArgumentError('url parameter [level]', 'must be cluster or indices', level);
    }
    const wanted = q['wait_for_status'];
    if (wanted !== undefined && wanted !== 'green' && wanted !== 'yellow' && wanted !== 'red') {
      throw new InvalidArgumentError(
        'url parameter [wait_for_status]',
        'must be green, yellow or red',
        wanted,
      );
    }
    const timeoutMs =
      q['timeout'] === undefined ? 30_000 : parseTimeValueMs(q['timeout'], 'url parameter [timeout]');
    const deadline = performance.now() + Math.max(0, timeoutMs);
    for (;;) {
      const states = await shardStates(expression);
      const h = clusterHealth(states);
      const met = wanted === undefined || statusAtLeast(h.status, wanted as HealthStatus);
      if (met || performance.now() >= deadline) {
        const body: Record<string, unknown> = {
          cluster_name: CLUSTER_NAME,
          status: h.status,
          timed_out: !met,
          number_of_nodes: catalog.numberOfNodes,
          number_of_data_nodes: catalog.numberOfDataNodes,
          ...h.counts,
          delayed_unassigned_shards: 0,
          number_of_pending_tasks: 0,
          number_of_in_flight_fetch: 0,
          task_max_waiting_in_queue_millis: 0,
          active_shards_percent_as_number: h.activeShardsPercent,
        };
        if (level === 'indices') body['indices'] = Object.fromEntries(h.indices);
        // Elasticsearch answers a wait that timed out with 408 and the health it saw.
        return reply.code(met ? 200 : 408).send(body);
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(100, deadline - performance.now())));
    }
  };
  const healthParameters = [
    'level',
    'wait_for_status',
    'timeout',
    'local',
    'master_timeout',
    'wait_for_no_relocating_shards',
  ];
  app.get(
    '/_cluster/health',
    { config: routeConfig(healthParameters) },
    run((r, reply) => health('_all', query(r), reply)),
  );
  app.get<{ Params: { index: string } }>(
    '/_cluster/health/:index',
    { config: routeConfig(healthParameters) },
    run((r, reply) => health(r.params.index, query(r), reply)),
  );

  // ---- _cat/indices -------------------------------------------------------------------------------
  const CAT_COLUMNS = [
    'health',
    'status',
    'index',
    'uuid',
    'pri',
    'rep',
    'docs.count',
    'docs.deleted',
    'store.size',
    'pri.store.size',
  ];
  const catIndices = async (expression: string, q: Query, reply: FastifyReply) => {
    const states = await shardStates(expression);
    const h = clusterHealth(states);
    const ro = new Map(catalog.readOnlyIndices().map((i) => [i.name, i]));
    const writable = states.filter((s) => !ro.has(s.index)).map((s) => s.index);
    const rows = writable.length === 0 ? [] : await catalog.writable!.catShards(writable.join(','));
    const settings = writable.length === 0 ? {} : catalog.writable!.getSettings(writable.join(','));
    const table = states.map((s) => {
      const readOnly = ro.get(s.index);
      const docs =
        readOnly !== undefined
          ? readOnly.docs
          : rows
              .filter((r) => r.index === s.index && r.prirep === 'p')
              .reduce((n, r) => n + Number(r.docs ?? 0), 0);
      const uuid =
        readOnly !== undefined
          ? readOnlyIndexUuid(s.index)
          : ((settings[s.index] as { settings: { index: { uuid?: string } } } | undefined)?.settings.index
              .uuid ?? null);
      const row: Record<string, string | null> = {
        health: h.indices.get(s.index)!.status,
        status: 'open',
        index: s.index,
        uuid,
        pri: String(s.numberOfShards),
        rep: String(s.numberOfReplicas),
        'docs.count': docs === undefined ? null : String(docs),
        'docs.deleted': '0',
        'store.size': null,
        'pri.store.size': null,
      };
      return row;
    });
    // `health` and `format` are checked by the routes' schema (CAT_INDICES_SCHEMA).
    const wantedHealth = q['health'];
    let out = wantedHealth === undefined ? table : table.filter((row) => row['health'] === wantedHealth);
    const columns = catColumns(q['h'], CAT_COLUMNS);
    const sort = q['s'];
    if (sort !== undefined) out = sortRows(out, String(sort), CAT_COLUMNS);
    out = out.map((row) => Object.fromEntries(columns.map((c) => [c, row[c] ?? null])));
    if (q['format'] === 'json') return out;
    return reply.type('text/plain; charset=UTF-8').send(catText(out, columns, q['v'] !== undefined));
  };
  const catParameters = ['format', 'v', 'h', 's', 'health', 'bytes', 'pri', 'expand_wildcards'];
  const CAT_INDICES_SCHEMA = querySchema({
    format: CAT_FORMAT_PARAMETER,
    health: {
      type: 'string',
      enum: ['green', 'yellow', 'red'],
      'x-field': 'url parameter [health]',
      'x-must': 'must be green, yellow or red',
    },
  });
  app.get(
    '/_cat/indices',
    { config: routeConfig(catParameters), schema: CAT_INDICES_SCHEMA },
    run((r, reply) => catIndices('_all', query(r), reply)),
  );
  app.get<{ Params: { index: string } }>(
    '/_cat/indices/:index',
    { config: routeConfig(catParameters), schema: CAT_INDICES_SCHEMA },
    run((r, reply) => catIndices(r.params.index, query(r), reply)),
  );

  // ---- _count -------------------------------------------------------------------------------------
  const count = async (index: string, request: FastifyRequest) => {
    const body = request.body;
    if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body))) {
      throw new InvalidArgumentError('body', 'must be a JSON object', body);
    }
    const spec = (body ?? {}) as Record<string, unknown>;
    for (const key of Object.keys(spec)) {
      if (key !== 'query')
        throw new InvalidArgumentError(`body.${key}`, 'is not a count key (expected query)', spec[key]);
    }
    const q = query(request);
    const searchQuery = typeof q['q'] === 'string' ? queryStringOf(q, q['q']) : spec['query'];
    const response = (await catalog.search({
      index,
      body: { ...(searchQuery === undefined ? {} : { query: searchQuery }), size: 0, track_total_hits: true },
      user: headerValue(request, headers.userHeader),
      sandboxId: singleHeaderValue(request, headers.sandboxHeader),
    })) as { hits?: { total?: { value?: number } }; _shards?: Record<string, unknown> };
    const total = response.hits?.total?.value;
    if (typeof total !== 'number') {
      throw new InvalidArgumentError(
        'engine',
        'answered the count without hits.total (it must report exact totals)',
        response.hits,
      );
    }
    const shards = response._shards ?? {};
    return {
      count: total,
      _shards: {
        total: shards['total'] ?? 0,
        successful: shards['successful'] ?? 0,
        skipped: shards['skipped'] ?? 0,
        failed: shards['failed'] ?? 0,
      },
    };
  };
  for (const method of ['GET', 'POST'] as const) {
    app.route({
      method,
      url: '/_count',
      config: routeConfig(COUNT_URL_PARAMETERS),
      handler: run((r) => count('_all', r)),
    });
    app.route<{ Params: { index: string } }>({
      method,
      url: '/:index/_count',
      config: routeConfig(COUNT_URL_PARAMETERS),
      handler: run((r) => count(r.params.index, r)),
    });
  }

  // ---- _refresh -----------------------------------------------------------------------------------
  const refresh = async (expression: string) => {
    const { readOnly, writable } = resolve(expression);
    let total = 0;
    let successful = 0;
    let failed = 0;
    if (writable.length > 0) {
      const done = (await catalog.writable!.refresh(writable.join(','))) as {
        _shards: { total: number; successful: number; failed: number };
      };
      total += done._shards.total;
      successful += done._shards.successful;
      failed += done._shards.failed;
    }
    for (const index of readOnly) {
      const active = index.copies.filter((c) => c.state === 'STARTED').length;
      total += index.copies.length;
      successful += active;
      failed += index.copies.length - active;
    }
    return { _shards: { total, successful, failed } };
  };
  // A refresh changes what searches see: the writer's (or the admin's), whatever the method.
  for (const method of ['POST', 'GET'] as const) {
    app.route({
      method,
      url: '/_refresh',
      config: routeConfig([], 'write'),
      handler: run(() => refresh('_all')),
    });
    app.route<{ Params: { index: string } }>({
      method,
      url: '/:index/_refresh',
      config: routeConfig([], 'write'),
      handler: run((r) => refresh(r.params.index)),
    });
  }
}

/** The columns of `?h=` (comma list, `*` wildcards), or all. @throws InvalidArgumentError for an unknown one. */
export function catColumns(raw: unknown, known: readonly string[]): string[] {
  if (raw === undefined) return [...known];
  if (typeof raw !== 'string') throw new InvalidArgumentError('url parameter [h]', 'must be given once', raw);
  const out: string[] = [];
  for (const name of raw
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c.length > 0)) {
    const matches = name.includes('*')
      ? known.filter((k) =>
          new RegExp(
            `^${name
              .split('*')
              .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
              .join('.*')}$`,
          ).test(k),
        )
      : known.filter((k) => k === name);
    if (matches.length === 0) {
      throw new InvalidArgumentError(
        'url parameter [h]',
        `names an unknown column (columns: ${known.join(', ')})`,
        name,
      );
    }
    for (const m of matches) if (!out.includes(m)) out.push(m);
  }
  return out;
}

/** Rows sorted by `?s=col[:asc|desc],...` (numeric columns by value). @throws InvalidArgumentError. */
function sortRows(
  rows: Record<string, string | null>[],
  spec: string,
  known: readonly string[],
): Record<string, string | null>[] {
  const keys = spec.split(',').map((part) => {
    const [column, order = 'asc'] = part.trim().split(':');
    if (!known.includes(column!) || (order !== 'asc' && order !== 'desc')) {
      throw new InvalidArgumentError(
        'url parameter [s]',
        `must be column[:asc|desc],... (columns: ${known.join(', ')})`,
        spec,
      );
    }
    return { column: column!, sign: order === 'asc' ? 1 : -1 };
  });
  return [...rows].sort((a, b) => {
    for (const { column, sign } of keys) {
      const x = a[column] ?? '';
      const y = b[column] ?? '';
      const nx = Number(x);
      const ny = Number(y);
      const c =
        x !== '' && y !== '' && Number.isFinite(nx) && Number.isFinite(ny)
          ? nx - ny
          : x < y
            ? -1
            : x > y
              ? 1
              : 0;
      if (c !== 0) return c * sign;
    }
    return 0;
  });
}

/** A cat table as text: space-aligned columns, a header line with `?v`. */
export function catText<C extends string>(
  rows: readonly { readonly [K in C]?: string | null }[],
  columns: readonly C[],
  header: boolean,
): string {
  const table = rows.map((r) => columns.map((c) => r[c] ?? ''));
  if (header) table.unshift([...columns]);
  const widths = columns.map((_, i) => Math.max(0, ...table.map((row) => row[i]!.length)));
  return table
    .map(
      (row) =>
        `${row
          .map((cell, i) => cell.padEnd(widths[i]!))
          .join(' ')
          .trimEnd()}\n`,
    )
    .join('');
}
