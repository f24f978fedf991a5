/**
 * OpenSearch's workload-management API over the runtime's sandboxes (an alias, not a second store):
 *
 * - `PUT|POST /_wlm/workload_group` (create), `PUT|POST /_wlm/workload_group/{name}` (partial update),
 *   `GET /_wlm/workload_group[/{name}]` (`{"workload_groups": [...]}`), `DELETE /_wlm/workload_group/{name}`;
 *   bodies and groups in OpenSearch's shape (`wlm-shape.ts`); changes need the admin token.
 * - `GET /_wlm/stats`, `/_wlm/{nodeId}/stats`, `/_wlm/stats/{workloadGroupId}`,
 *   `/_wlm/{nodeId}/stats/{workloadGroupId}` (`?breach=true|false`): OpenSearch's node-keyed stats.
 * - `GET /_list/wlm_stats` (and the same three narrower paths): the paginated table, `size` 1..100
 *   (default 10), `next_token`, `sort` (`node_id` | `workload_group`), `order` (`asc` | `desc`), `v`
 *   (headers), `format=json`.
 *
 * Node ids and group ids are comma lists; `_all` (and, for nodes, `_local`) match everything here.
 */
import { booleanParameter, integerParameter, querySchema } from './route-schemas.js';
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { InvalidArgumentError, SandboxNotFoundError } from '../errors.js';
import type { Runtime, SandboxStats } from '../runtime.js';
import { RESOURCES, ROOT_SANDBOX_ID, type Sandbox } from '../sandbox/sandbox.js';
import type { SandboxInput, SandboxPatch } from '../sandbox/sandbox-input.js';
import { DEFAULT_WORKLOAD_GROUP, sandboxBodyOf, toWorkloadGroup } from './wlm-shape.js';

/**
 * What the routes need from the server: error replies. Who may call them is each route's
 * `config.auth` (`admin` for changes, `read` for reads), checked by `route-auth.ts` before the body is read.
 */
export interface WlmRouteOptions {
  readonly sendError: (reply: FastifyReply, error: unknown) => FastifyReply;
}

const STATS_PARAMETERS = { names: ['breach', 'pretty'], hint: '(breach, pretty)' } as const;
const LIST_PARAMETERS = {
  names: ['size', 'next_token', 'sort', 'order', 'v', 'format', 'pretty'],
  hint: '(size, next_token, sort, order, v, format, pretty)',
} as const;

/** Page size bounds of `_list/wlm_stats` (OpenSearch's). */
export const LIST_DEFAULT_SIZE = 10;
export const LIST_MAX_SIZE = 100;

/** One group's stats on one node, in OpenSearch's shape, with this runtime's figures beside them. */
function groupStatsView(s: SandboxStats): Record<string, unknown> {
  const c = s.counters;
  const view: Record<string, unknown> = {
    total_completions: c.completions,
    total_rejections: c.rejections,
    total_cancellations: c.cancellations,
  };
  for (const r of RESOURCES) {
    view[r] = { current_usage: s.usage[r], cancellations: c[r].cancellations, rejections: c[r].rejections };
  }
  // Not in OpenSearch: the concurrency caps queue instead of refusing (no total_throttled), the watchdog.
  view['running'] = s.concurrency.running;
  view['max_running'] = s.concurrency.peak;
  view['waiting_for_cap'] = s.concurrency.waitingForCap;
  view['wall_clock_cancellations'] = c.wallClockCancellations;
  view['timed_out'] = c.timedOut;
  return view;
}

function groupKey(id: string): string {
  return id === ROOT_SANDBOX_ID ? DEFAULT_WORKLOAD_GROUP : id;
}

function idList(raw: string | undefined): readonly string[] | undefined {
  if (raw === undefined || raw === '' || raw === '_all') return undefined;
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** The rows of the stats: (node, group, stats), filtered by node ids, group ids and breach. */
function statsRows(
  runtime: Runtime,
  params: { nodeId?: string; workloadGroupId?: string },
  breach: boolean | undefined,
): Array<{ nodeId: string; groupId: string; stats: SandboxStats }> {
  const nodeId = runtime.options.nodeId;
  const nodes = idList(params.nodeId);
  if (nodes !== undefined && !nodes.includes(nodeId) && !nodes.includes('_local')) return [];
  const groups = idList(params.workloadGroupId);
  const limits = new Map(runtime.sandboxes().map((s) => [s.id, s.limits]));
  const rows: Array<{ nodeId: string; groupId: string; stats: SandboxStats }> = [];
  const all = runtime.sandboxStats();
  // OpenSearch (`WorkloadGroupService.nodeStats`) refuses an id that names no workload group on the node.
  for (const wanted of groups ?? []) {
    if (![...all.keys()].some((id) => id === wanted || groupKey(id) === wanted)) {
      throw new SandboxNotFoundError(wanted, `WorkloadGroup with id ${wanted} does not exist`);
    }
  }
  for (const [id, stats] of all) {
    const key = groupKey(id);
    if (groups !== undefined && !groups.includes(key) && !groups.includes(id)) continue;
    if (breach !== undefined) {
      const breaching = RESOURCES.some((r) => {
        const limit = limits.get(id)?.[r];
        return limit !== undefined && stats.usage[r] > limit.low;
      });
      if (breaching !== breach) continue;
    }
    rows.push({ nodeId, groupId: key, stats });
  }
  return rows;
}

function breachParameter(query: Record<string, unknown>): boolean | undefined {
  const breach = query['breach'];
  return breach === undefined ? undefined : breach === 'true';
}

/** `GET _wlm/stats?breach=`. */
const STATS_QUERY_SCHEMA = querySchema({ breach: booleanParameter() });

/** `GET _list/wlm_stats?size=&sort=&order=` (`next_token` is checked against the rows by `wlmListView`). */
export const WLM_LIST_QUERY_SCHEMA = querySchema({
  size: integerParameter(1, LIST_MAX_SIZE, '^0*(?:[1-9]\\d?|100)$', ' (the page size)'),
  sort: {
    type: 'string',
    enum: ['node_id', 'workload_group'],
    'x-must': "must be 'node_id' or 'workload_group'",
  },
  order: { type: 'string', enum: ['asc', 'desc'], 'x-must': "must be 'asc' or 'desc'" },
});

/** `GET _wlm/stats`: `{ _nodes, cluster_name, "<nodeId>": { workload_groups: { "<id>": {...} } } }`. */
export function wlmStatsView(
  runtime: Runtime,
  params: { nodeId?: string; workloadGroupId?: string },
  breach: boolean | undefined,
): Record<string, unknown> {
  const nodes = idList(params.nodeId);
  const here = nodes === undefined || nodes.includes(runtime.options.nodeId) || nodes.includes('_local');
  const groups: Record<string, unknown> = {};
  const rows = statsRows(runtime, params, breach).sort((a, b) =>
    a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0,
  );
  for (const row of rows) groups[row.groupId] = groupStatsView(row.stats);
  return {
    _nodes: { total: here ? 1 : 0, successful: here ? 1 : 0, failed: 0 },
    cluster_name: 'query-sandbox',
    ...(here ? { [runtime.options.nodeId]: { workload_groups: groups } } : {}),
  };
}

/** The page token: base64 of `node|group|count|hash|order|sort`, as OpenSearch's `WlmPaginationStrategy`. */
function encodeToken(parts: readonly (string | number)[]): string {
  return Buffer.from(parts.join('|'), 'utf8').toString('base64');
}

const TABLE_HEADERS = [
  'NODE_ID',
  'WORKLOAD_GROUP_ID',
  'TOTAL_COMPLETIONS',
  'TOTAL_REJECTIONS',
  'TOTAL_CANCELLATIONS',
  'CPU_USAGE',
  'MEMORY_USAGE',
] as const;

/**
 * `GET _list/wlm_stats`: one row per (node, group), sorted, paged with a token that is refused (400)
 * when the set of groups changed since it was issued.
 * @returns the text table (or JSON rows with `format=json`) and its content type.
 * `size`, `sort` and `order` arrive checked (the routes' schema).
 * @throws InvalidArgumentError naming `next_token` and the value.
 */
export function wlmListView(
  runtime: Runtime,
  params: { nodeId?: string; workloadGroupId?: string },
  query: Record<string, unknown>,
): { body: string | Record<string, unknown>; contentType: string } {
  // `size`, `sort` and `order` are checked by the routes' schema (WLM_LIST_QUERY_SCHEMA).
  const sizeText = query['size'];
  const size = sizeText === undefined ? LIST_DEFAULT_SIZE : Number(sizeText);
  const sort = query['sort'] ?? 'node_id';
  const order = query['order'] ?? 'asc';
  const rows = statsRows(runtime, params, undefined);
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  rows.sort((a, b) => {
    const c =
      sort === 'node_id'
        ? cmp(a.nodeId, b.nodeId) || cmp(a.groupId, b.groupId)
        : cmp(a.groupId, b.groupId) || cmp(a.nodeId, b.nodeId);
    return order === 'asc' ? c : -c;
  });
  const hash = createHash('sha256')
    .update(
      rows
        .map((r) => `${r.nodeId}|${r.groupId}`)
        .sort()
        .join(','),
    )
    .digest('hex');
  let start = 0;
  const token = query['next_token'];
  if (token !== undefined) {
    const parts = typeof token === 'string' ? Buffer.from(token, 'base64').toString('utf8').split('|') : [];
    if (parts.length !== 6)
      throw new InvalidArgumentError('next_token', 'is not a pagination token of this API', token);
    if (Number(parts[2]) !== rows.length || parts[3] !== hash) {
      throw new InvalidArgumentError(
        'next_token',
        'is outdated: workload group state has changed since it was issued (groups added or removed); ' +
          "restart pagination from the beginning by omitting 'next_token'",
        token,
      );
    }
    const at = rows.findIndex((r) => r.nodeId === parts[0] && r.groupId === parts[1]);
    if (at < 0) throw new InvalidArgumentError('next_token', 'names no row of the current stats', token);
    start = at + 1;
  }
  const page = rows.slice(start, start + size);
  const last = page[page.length - 1];
  const nextToken =
    start + page.length < rows.length && last !== undefined
      ? encodeToken([
          last.nodeId,
          last.groupId,
          rows.length,
          hash,
          String(order).toUpperCase(),
          String(sort).toUpperCase(),
        ])
      : null;
  const cells = page.map((r) => [
    r.nodeId,
    r.groupId,
    String(r.stats.counters.completions),
    String(r.stats.counters.rejections),
    String(r.stats.counters.cancellations),
    String(r.stats.usage.cpu),
    String(r.stats.usage.memory),
  ]);
  if (query['format'] === 'json') {
    return {
      contentType: 'application/json; charset=utf-8',
      body: {
        next_token: nextToken,
        wlm_stats: cells.map((row) => Object.fromEntries(TABLE_HEADERS.map((h, i) => [h, row[i]]))),
      },
    };
  }
  if (query['format'] !== undefined)
    throw new InvalidArgumentError('format', 'must be json when given (text otherwise)', query['format']);
  // The text table as OpenSearch's RestTable writes it: columns padded, `|` cells between them; the
  // last page ends with a "No more pages available" row, the others with the token.
  const table: string[][] = [];
  const withBars = (row: readonly string[]) => row.flatMap((cell, i) => (i === 0 ? [cell] : ['|', cell]));
  const verbose = query['v'] === 'true' || query['v'] === '';
  if (verbose) table.push(withBars(TABLE_HEADERS));
  for (const row of cells) table.push(withBars(row));
  if (nextToken === null)
    table.push([
      'No more pages available',
      ...Array.from({ length: TABLE_HEADERS.length * 2 - 2 }, () => '-'),
    ]);
  const widths = table[0]?.map((_, col) => Math.max(...table.map((row) => row[col]?.length ?? 0))) ?? [];
  const lines = table.map((row) =>
    row.map((cell, col) => (col === row.length - 1 ? cell : cell.padEnd(widths[col]!))).join(' '),
  );
  if (nextToken !== null) lines.push(`next_token ${nextToken}`);
  return { contentType: 'text/plain; charset=UTF-8', body: `${lines.join('\n')}\n` };
}

/** The sandbox named `name` (workload groups are addressed by name). @throws SandboxNotFoundError. */
function byName(runtime: Runtime, name: string): Sandbox {
  const sandbox = runtime.sandboxes().find((s) => s.name === name && s.id !== ROOT_SANDBOX_ID);
  if (sandbox === undefined) {
    throw new SandboxNotFoundError(
      name,
      `workload group [${name}] does not exist (no sandbox has that name)`,
    );
  }
  return sandbox;
}

/** Registers the `_wlm` and `_list/wlm_stats` routes (see module doc). */
export function registerWlmRoutes(app: FastifyInstance, runtime: Runtime, options: WlmRouteOptions): void {
  const { sendError } = options;
  const groups = (list: readonly Sandbox[]) => ({
    workload_groups: list.filter((s) => s.id !== ROOT_SANDBOX_ID).map(toWorkloadGroup),
  });
  app.get('/_wlm/workload_group', { config: { auth: 'read' } }, async () => groups(runtime.sandboxes()));
  app.get<{ Params: { name: string } }>(
    '/_wlm/workload_group/:name',
    { config: { auth: 'read' } },
    async (request, reply) => {
      try {
        return groups([byName(runtime, request.params.name)]);
      } catch (error) {
        return sendError(reply, error);
      }
    },
  );
  const create = async (request: FastifyRequest, reply: FastifyReply) => {
    try {
      const sandbox = await runtime.sandboxRegistry.create(
        sandboxBodyOf(request.body, true, runtime.sandboxes()) as unknown as SandboxInput,
      );
      return reply.send(toWorkloadGroup(sandbox));
    } catch (error) {
      return sendError(reply, error);
    }
  };
  const update = async (request: FastifyRequest<{ Params: { name: string } }>, reply: FastifyReply) => {
    try {
      const current = byName(runtime, request.params.name);
      const sandbox = await runtime.sandboxRegistry.update(
        current.id,
        sandboxBodyOf(request.body, false, runtime.sandboxes()) as SandboxPatch,
      );
      return reply.send(toWorkloadGroup(sandbox));
    } catch (error) {
      return sendError(reply, error);
    }
  };
  for (const method of ['PUT', 'POST'] as const) {
    app.route({ method, url: '/_wlm/workload_group', config: { auth: 'admin' }, handler: create });
    app.route<{ Params: { name: string } }>({
      method,
      url: '/_wlm/workload_group/:name',
      config: { auth: 'admin' },
      handler: update,
    });
  }
  app.delete<{ Params: { name: string } }>(
    '/_wlm/workload_group/:name',
    { config: { auth: 'admin' } },
    async (request, reply) => {
      try {
        await runtime.sandboxRegistry.delete(byName(runtime, request.params.name).id);
        return reply.send({ acknowledged: true });
      } catch (error) {
        return sendError(reply, error);
      }
    },
  );

  type StatsParams = { nodeId?: string; workloadGroupId?: string };
  const stats = async (request: FastifyRequest<{ Params: StatsParams }>, reply: FastifyReply) => {
    try {
      const query = (request.query as Record<string, unknown> | undefined) ?? {};
      return reply.send(wlmStatsView(runtime, request.params, breachParameter(query)));
    } catch (error) {
      return sendError(reply, error);
    }
  };
  const list = async (request: FastifyRequest<{ Params: StatsParams }>, reply: FastifyReply) => {
    try {
      const query = (request.query as Record<string, unknown> | undefined) ?? {};
      const view = wlmListView(runtime, request.params, query);
      return reply.header('content-type', view.contentType).send(view.body);
    } catch (error) {
      return sendError(reply, error);
    }
  };
  for (const url of [
    '/_wlm/stats',
    '/_wlm/:nodeId/stats',
    '/_wlm/stats/:workloadGroupId',
    '/_wlm/:nodeId/stats/:workloadGroupId',
  ]) {
    app.get<{ Params: StatsParams }>(
      url,
      { config: { auth: 'read', urlParameters: STATS_PARAMETERS }, schema: STATS_QUERY_SCHEMA },
      stats,
    );
  }
  for (const url of [
    '/_list/wlm_stats',
    '/_list/wlm_stats/:nodeId/stats',
    '/_list/wlm_stats/stats/:workloadGroupId',
    '/_list/wlm_stats/:nodeId/stats/:workloadGroupId',
  ]) {
    app.get<{ Params: StatsParams }>(
      url,
      { config: { auth: 'read', urlParameters: LIST_PARAMETERS }, schema: WLM_LIST_QUERY_SCHEMA },
      list,
    );
  }
}
