/**
 * The HTTP face of a cluster coordinator (`serve --role coordinator`), fastify. Thin: the decisions are
 * the `Coordinator`'s.
 *
 * Routes: `POST|GET /{index}/_search` and `/_search` (as a single node's), `GET /_nodes/stats` (the
 * coordinator and every data node with its latest piggy-backed stats and their age), `GET /`.
 * Bodies are JSON whatever the content type says; the only URL parameter is `pretty`. Writes and index
 * management need the writer or admin token as on a single node (`route-auth.ts`); the coordinator
 * itself serves no internal routes.
 *
 * The `Resource_Usage_Stats` header never crosses this edge: one sent by an end client is removed
 * before anything reads the request (stats are believed only from the data nodes the coordinator
 * called), and none is ever sent back (removed from every answer as a last guard).
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { stripStatsHeader } from '../admission/stats-header.js';
import type { Coordinator, CoordinatorStats } from '../cluster/coordinator.js';
import type { ConnectionLimits } from './connection-limits.js';
import { sendError } from './error-body.js';
import { createApiServer, registerSearchRoutes } from './http-server.js';
import { coordinatorCatalog } from './index-catalogs.js';
import { registerIndexInfoRoutes } from './index-info-routes.js';
import { registerIndexRoutes } from './index-routes.js';
import { coordinatorObservability, registerObservabilityRoutes } from './observability-routes.js';
import { clusterUuidOf, registerRootRoutes } from './product-info.js';

export interface CoordinatorServerOptions {
  /** Header carrying the end user, passed on to the data nodes. @default 'x-user' */
  readonly userHeader?: string;
  /** Header carrying an explicit sandbox choice, passed on. @default 'x-sandbox-id' */
  readonly sandboxHeader?: string;
  /** Largest request body, bytes. @default 1 MiB */
  readonly bodyLimitBytes?: number;
  /** Logger for errors. @default none */
  readonly logger?: FastifyBaseLogger;
  /** Largest bulk body, bytes. @default 100 MiB */
  readonly bulkBodyLimitBytes?: number;
  /** Token that every write and admin route accepts. @default none: writes answer 401 */
  readonly adminToken?: string | undefined;
  /** Token that `_bulk` and document writes accept. @default none */
  readonly writerToken?: string | undefined;
  /** Open every route to everyone: local experiments only. @default false */
  readonly insecureSkipAuth?: boolean | undefined;
  /** Header and body time-outs, the bound on open connections (`connection-limits.ts`). */
  readonly connectionLimits?: ConnectionLimits | undefined;
}

const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;

/**
 * `GET /_nodes/stats` of a coordinator: `{"_nodes", "cluster_name", "nodes": {"<id>": {...}}}` with
 * the coordinator (roles `["coordinator"]`: searches, admission, stats collector) and every data node
 * (roles `["data"]`): `resource_usage_stats` (`state` fresh | stale | unknown; when known, the ratios
 * `cpu`, `heap`, `io` (null: none measured), the node's `timestamp_ms` and their `age_ms` at the
 * coordinator, and whether the ranking counts the node in `duress`), `requests` sent, `shard_requests`,
 * `failures`, `last_call_failed`, `retried_away`, and the ranking's EWMAs (ms) with the shards in
 * flight. `_nodes.failed` counts the data nodes without fresh stats whose last call failed (the
 * coordinator itself always answers).
 */
export function coordinatorStatsView(stats: CoordinatorStats): Record<string, unknown> {
  const nodes: Record<string, unknown> = {
    [stats.nodeId]: {
      name: stats.nodeId,
      roles: ['coordinator'],
      indices: stats.indices,
      ...(stats.membership !== undefined ? { membership: stats.membership } : {}),
      searches: stats.searches,
      admission: {
        mode: stats.admission.mode,
        search: {
          evaluated: stats.admission.search.evaluated,
          rejected: stats.admission.search.rejected,
          would_reject: stats.admission.search.wouldReject,
          limits: stats.admission.limits.search,
        },
      },
      ranking: { duress_thresholds: stats.duressThresholds },
      stats_collector: {
        ttl_ms: stats.statsCollector.ttlMs,
        min_refresh_ms: stats.statsCollector.minRefreshMs,
        accepted: stats.statsCollector.accepted,
        foreign: stats.statsCollector.foreign,
        throttled: stats.statsCollector.throttled,
        malformed: stats.statsCollector.malformed,
        stale: stats.statsCollector.stale,
        delayed: stats.statsCollector.delayed,
        dropped: stats.statsCollector.dropped,
        unknown_version: stats.statsCollector.unknownVersion,
      },
    },
  };
  for (const n of stats.dataNodes) {
    const usage =
      n.usage.state === 'unknown'
        ? { state: 'unknown' }
        : {
            state: n.usage.state,
            cpu: n.usage.stats.cpu,
            heap: n.usage.stats.heap,
            io: n.usage.stats.io ?? null,
            timestamp_ms: n.usage.stats.timestampMs,
            age_ms: n.usage.ageMs,
            duress: n.usage.duress,
          };
    nodes[n.nodeId] = {
      name: n.nodeId,
      roles: ['data'],
      url: n.url,
      resource_usage_stats: usage,
      requests: n.requests,
      shard_requests: n.shardRequests,
      failures: n.failures,
      last_call_failed: n.lastCallFailed,
      retried_away: n.retriedAway,
      admission_rejections: { cpu: n.admissionRejections.cpu, heap: n.admissionRejections.heap },
      ranking: {
        outstanding_shards: n.outstandingShards,
        ...(n.ranking === undefined
          ? { observations: 0 }
          : {
              observations: n.ranking.observations,
              queue_size: n.ranking.queueSize,
              response_time_ms: round(n.ranking.responseTimeNs / 1e6, 3),
              service_time_ms: round(n.ranking.serviceTimeNs / 1e6, 3),
            }),
      },
    };
  }
  if (stats.writes !== undefined) {
    const w = stats.writes;
    (nodes[stats.nodeId] as Record<string, unknown>)['writes'] = {
      bulks: w.bulks,
      rejected_bulks: w.rejectedBulks,
      rejected_items: w.rejectedItems,
      failed_items: w.failedItems,
      shard_bulk_requests: w.shardBulkRequests,
      chosen_shards_by_primary_node: w.chosenShards,
      indexing_pressure: {
        in_flight_bytes: w.pressure.inFlightBytes,
        limit_bytes: w.pressure.limitBytes,
        rejections: w.pressure.rejections,
      },
    };
  }
  // A data node counts as failed when nothing recent vouches for it: no fresh stats and its last call failed.
  const failed = stats.dataNodes.filter((n) => n.usage.state !== 'fresh' && n.lastCallFailed).length;
  const total = stats.dataNodes.length + 1;
  return { _nodes: { total, successful: total - failed, failed }, cluster_name: 'query-sandbox', nodes };
}

/** Builds (does not listen) the fastify instance for `coordinator`. */
export function buildCoordinatorServer(
  coordinator: Coordinator,
  options: CoordinatorServerOptions = {},
): FastifyInstance {
  const userHeader = (options.userHeader ?? 'x-user').toLowerCase();
  const sandboxHeader = (options.sandboxHeader ?? 'x-sandbox-id').toLowerCase();
  const log = options.logger;
  const app = createApiServer({
    bodyLimitBytes: options.bodyLimitBytes,
    logger: log,
    urlParameters: () => ({ names: ['pretty'], hint: '(only pretty)' }),
    auth: {
      adminToken: options.adminToken,
      writerToken: options.writerToken,
      insecureSkipAuth: options.insecureSkipAuth,
    },
    connectionLimits: options.connectionLimits,
  });
  // A stats header sent by a client is never believed, and none ever reaches a client.
  app.addHook('onRequest', async (request) => {
    stripStatsHeader(request.headers);
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    stripStatsHeader(reply);
    return payload;
  });
  registerSearchRoutes(app, coordinator, sendError, { userHeader, sandboxHeader });
  app.get('/_nodes/stats', async () => coordinatorStatsView(coordinator.nodesStats()));
  registerIndexRoutes(app, coordinator.writes, { bulkBodyLimitBytes: options.bulkBodyLimitBytes });
  registerObservabilityRoutes(app, coordinatorObservability(coordinator));
  registerIndexInfoRoutes(app, coordinatorCatalog(coordinator), { userHeader, sandboxHeader });
  const clusterUuid = clusterUuidOf(coordinator.routingTable.nodeIds);
  registerRootRoutes(app, () => ({
    name: coordinator.nodeId,
    clusterUuid,
    extra: {
      roles: ['coordinator'],
      indices: coordinator.routingTable.indices,
      data_nodes: coordinator.routingTable.nodeIds,
    },
  }));
  app.addHook('onClose', async () => coordinator.close());
  return app;
}
