/**
 * Prometheus metrics of a cluster coordinator (prom-client), from `Coordinator.nodesStats()` read at
 * scrape time (kept 100 ms so one scrape reads one snapshot). Labels: `node_id` (the data nodes,
 * at most 64), `resource`, `state`; nothing per user or per request.
 *
 * | series | type | labels |
 * |---|---|---|
 * | `coordinator_searches_total`, `coordinator_search_rejections_total`, `coordinator_search_failures_total`, `coordinator_partial_searches_total` | counter | |
 * | `coordinator_admission_evaluated_total` | counter | |
 * | `coordinator_admission_rejections_total`, `coordinator_admission_would_rejections_total` | counter | resource (`cpu`, `heap`) |
 * | `data_node_stats_state` (1 for the current one) | gauge | node_id, state (`fresh`, `stale`, `unknown`) |
 * | `data_node_stats_age_seconds` | gauge | node_id (absent while unknown) |
 * | `data_node_usage_ratio` | gauge | node_id, resource (`cpu`, `heap`, `io`) |
 * | `data_node_duress` | gauge | node_id |
 * | `data_node_admission_rejections_total` | counter | node_id, resource |
 * | `data_node_requests_total`, `data_node_shard_requests_total`, `data_node_failures_total`, `data_node_retried_away_total` | counter | node_id |
 * | `data_node_outstanding_shards` | gauge | node_id |
 * | `data_node_rank` | gauge | node_id (Elasticsearch's C3 rank, lower is better; absent without response stats) |
 * | `data_node_ranking_queue_size`, `data_node_ranking_response_time_seconds`, `data_node_ranking_service_time_seconds` | gauge | node_id |
 */
import { Registry } from 'prom-client';
import { c3Rank } from '../admission/replica-ranking.js';
import type { Coordinator, CoordinatorStats } from '../cluster/coordinator.js';
import { SnapshotMetrics } from './metric-builders.js';
import { checkPrefix, type MetricsOptions, processMetricsRegistry } from './runtime-metrics.js';

/** A coordinator's stats read at most every `maxAgeMs`. */
export class CoordinatorFeed {
  readonly coordinator: Coordinator;
  readonly #maxAgeMs: number;
  #last: { readonly atMs: number; readonly stats: CoordinatorStats } | undefined;

  constructor(coordinator: Coordinator, maxAgeMs = 100) {
    this.coordinator = coordinator;
    this.#maxAgeMs = maxAgeMs;
  }

  snapshot(): CoordinatorStats {
    const nowMs = performance.now();
    if (this.#last !== undefined && nowMs - this.#last.atMs <= this.#maxAgeMs) return this.#last.stats;
    const stats = this.coordinator.nodesStats();
    this.#last = { atMs: nowMs, stats };
    return stats;
  }
}

/** The C3 rank of every data node with response stats (`clientNum`: how many have them). */
export function ranksOf(stats: CoordinatorStats): Map<string, number> {
  const withStats = stats.dataNodes.filter((n) => n.ranking !== undefined);
  return new Map(
    withStats.map((n) => [n.nodeId, c3Rank(n.ranking!, n.outstandingShards, withStats.length)] as const),
  );
}

export class CoordinatorMetrics {
  readonly registry: Registry;

  /** @throws RangeError for a bad prefix. */
  constructor(feed: CoordinatorFeed, options: MetricsOptions = {}) {
    const prefix = checkPrefix(options.prefix ?? 'query_sandbox_');
    const own = new Registry();
    const m = new SnapshotMetrics<CoordinatorStats>(own, prefix, () => feed.snapshot());
    coordinatorSeries(m);
    dataNodeSeries(m);
    this.registry =
      (options.processMetrics ?? true) ? Registry.merge([own, processMetricsRegistry(prefix)]) : own;
  }

  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

function coordinatorSeries(m: SnapshotMetrics<CoordinatorStats>): void {
  m.counter('coordinator_searches_total', 'Searches the coordinator took.', [], (emit, s) =>
    emit({}, s.searches.total),
  );
  m.counter(
    'coordinator_search_rejections_total',
    'Searches refused by admission control (429).',
    [],
    (emit, s) => emit({}, s.searches.rejected),
  );
  m.counter('coordinator_search_failures_total', 'Searches whose every shard failed.', [], (emit, s) =>
    emit({}, s.searches.failed),
  );
  m.counter(
    'coordinator_partial_searches_total',
    'Searches answered with some shards failed.',
    [],
    (emit, s) => emit({}, s.searches.partial),
  );
  m.counter('coordinator_admission_evaluated_total', 'Searches admission control evaluated.', [], (emit, s) =>
    emit({}, s.admission.search.evaluated),
  );
  m.counter(
    'coordinator_admission_rejections_total',
    'Searches admission control refused, by the resource over its limit.',
    ['resource'],
    (emit, s) => {
      emit({ resource: 'cpu' }, s.admission.search.rejected.cpu);
      emit({ resource: 'heap' }, s.admission.search.rejected.heap);
    },
  );
  m.counter(
    'coordinator_admission_would_rejections_total',
    'Searches admission control would have refused in monitor_only mode.',
    ['resource'],
    (emit, s) => {
      emit({ resource: 'cpu' }, s.admission.search.wouldReject.cpu);
      emit({ resource: 'heap' }, s.admission.search.wouldReject.heap);
    },
  );
}

function dataNodeSeries(m: SnapshotMetrics<CoordinatorStats>): void {
  const N = ['node_id'] as const;
  m.gauge(
    'data_node_stats_state',
    "State of the data node's last piggy-backed stats: 1 for the current one (fresh: used; stale: older than the TTL).",
    [...N, 'state'],
    (emit, s) => {
      for (const n of s.dataNodes) {
        for (const state of ['fresh', 'stale', 'unknown'] as const) {
          emit({ node_id: n.nodeId, state }, n.usage.state === state ? 1 : 0);
        }
      }
    },
  );
  m.gauge(
    'data_node_stats_age_seconds',
    "Age of the data node's last stats at the coordinator.",
    N,
    (emit, s) => {
      for (const n of s.dataNodes)
        if (n.usage.state !== 'unknown') emit({ node_id: n.nodeId }, n.usage.ageMs / 1000);
    },
  );
  m.gauge(
    'data_node_usage_ratio',
    "The data node's last reported usage (moving averages), ratio 0..1.",
    [...N, 'resource'],
    (emit, s) => {
      for (const n of s.dataNodes) {
        if (n.usage.state === 'unknown') continue;
        emit({ node_id: n.nodeId, resource: 'cpu' }, n.usage.stats.cpu);
        emit({ node_id: n.nodeId, resource: 'heap' }, n.usage.stats.heap);
        if (n.usage.stats.io !== undefined) emit({ node_id: n.nodeId, resource: 'io' }, n.usage.stats.io);
      }
    },
  );
  m.gauge(
    'data_node_duress',
    'The ranking counts the data node in duress (1) on fresh stats.',
    N,
    (emit, s) => {
      for (const n of s.dataNodes)
        emit({ node_id: n.nodeId }, n.usage.state === 'fresh' && n.usage.duress ? 1 : 0);
    },
  );
  m.counter(
    'data_node_admission_rejections_total',
    'Searches refused before fan-out naming this data node as over its admission limit.',
    [...N, 'resource'],
    (emit, s) => {
      for (const n of s.dataNodes) {
        emit({ node_id: n.nodeId, resource: 'cpu' }, n.admissionRejections.cpu);
        emit({ node_id: n.nodeId, resource: 'heap' }, n.admissionRejections.heap);
      }
    },
  );
  const perNode = (name: string, help: string, value: (n: CoordinatorStats['dataNodes'][number]) => number) =>
    m.counter(name, help, N, (emit, s) => {
      for (const n of s.dataNodes) emit({ node_id: n.nodeId }, value(n));
    });
  perNode('data_node_requests_total', 'HTTP requests sent to the data node.', (n) => n.requests);
  perNode('data_node_shard_requests_total', 'Shard searches sent to the data node.', (n) => n.shardRequests);
  perNode('data_node_failures_total', 'Requests to the data node that failed.', (n) => n.failures);
  perNode(
    'data_node_retried_away_total',
    'Shards retried on another copy after this node failed them.',
    (n) => n.retriedAway,
  );
  m.gauge('data_node_outstanding_shards', 'Shard searches in flight to the data node.', N, (emit, s) => {
    for (const n of s.dataNodes) emit({ node_id: n.nodeId }, n.outstandingShards);
  });
  m.gauge(
    'data_node_rank',
    "Adaptive replica selection rank (Elasticsearch's C3: R − S + qHat³ × S, ms; lower is preferred).",
    N,
    (emit, s) => {
      for (const [nodeId, rank] of ranksOf(s)) emit({ node_id: nodeId }, rank);
    },
  );
  const ranking = (
    name: string,
    help: string,
    value: (r: NonNullable<CoordinatorStats['dataNodes'][number]['ranking']>) => number,
  ) =>
    m.gauge(name, help, N, (emit, s) => {
      for (const n of s.dataNodes) if (n.ranking !== undefined) emit({ node_id: n.nodeId }, value(n.ranking));
    });
  ranking(
    'data_node_ranking_queue_size',
    'Queue-size EWMA the data node reported (truncated).',
    (r) => r.queueSize,
  );
  ranking(
    'data_node_ranking_response_time_seconds',
    'Response-time EWMA seen by the coordinator.',
    (r) => r.responseTimeNs / 1e9,
  );
  ranking(
    'data_node_ranking_service_time_seconds',
    'Service-time EWMA the data node reported.',
    (r) => r.serviceTimeNs / 1e9,
  );
}
