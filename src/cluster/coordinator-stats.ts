/** The plain snapshots `Coordinator.nodesStats()` returns (shown by `GET /_nodes/stats`). */
import type { ClusterWriteStats } from './remote-placement.js';
import type { AdmissionCounters } from '../admission/admission-controller.js';
import type { ComputedNodeStats } from '../admission/replica-ranking.js';
import type { StatsCollectorCounters } from '../admission/stats-collector.js';
import type { NodeResourceStats } from '../admission/stats-header.js';

/** What `nodesStats` reports about one data node (a plain snapshot). */
export interface DataNodeStats {
  readonly nodeId: string;
  readonly url: string;
  /** The last piggy-backed stats: `fresh` (used), `stale` (older than the TTL: not used), `unknown` (none yet). */
  readonly usage:
    | { readonly state: 'unknown' }
    | {
        readonly state: 'fresh' | 'stale';
        readonly stats: NodeResourceStats;
        /** Coordinator now − the data node's timestamp of the figures, ms. */
        readonly ageMs: number;
        /** Whether the ranking counts the node in duress on these figures (fresh only). */
        readonly duress: boolean;
      };
  /** HTTP requests sent to the node (one per search it took part in, plus retries). */
  readonly requests: number;
  /** Shard searches sent to it (a request carries one or more). */
  readonly shardRequests: number;
  /** Requests that failed (no answer, 5xx, 429 from its governor; a client's 4xx is no failure). */
  readonly failures: number;
  /** The last call to the node (a search, or a write that got no answer) failed. */
  readonly lastCallFailed: boolean;
  /** Shards retried on another copy after this node failed them. */
  readonly retriedAway: number;
  /** Searches this coordinator refused before fan-out because this node was over its admission limit. */
  readonly admissionRejections: { readonly cpu: number; readonly heap: number };
  readonly outstandingShards: number;
  readonly ranking: ComputedNodeStats | undefined;
}

/** `nodesStats()`: the coordinator's own figures and one entry per data node. */
export interface CoordinatorStats {
  readonly nodeId: string;
  /** With cluster state in etcd: the registered data nodes and the promotions made since start. */
  readonly membership?: { readonly live: readonly string[]; readonly promotions: number };
  readonly indices: readonly string[];
  readonly searches: {
    readonly total: number;
    readonly rejected: number;
    readonly failed: number;
    readonly partial: number;
  };
  readonly admission: AdmissionCounters & {
    readonly limits: { readonly search: { readonly cpu: number; readonly heap: number } };
  };
  readonly statsCollector: StatsCollectorCounters & { readonly ttlMs: number; readonly minRefreshMs: number };
  readonly duressThresholds: { readonly cpu: number; readonly heap: number };
  readonly dataNodes: readonly DataNodeStats[];
  /** The write side: bulks, rejections, shard bulks per node, shards chosen per primary node. */
  readonly writes?: ClusterWriteStats;
}
