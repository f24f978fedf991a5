/**
 * Cluster and index health from the state of every shard copy, as Elasticsearch's
 * `ClusterShardHealth` / `ClusterIndexHealth` / `ClusterStateHealth` compute it:
 * - a shard is `red` when its primary is not active, `yellow` when its primary is active but a replica
 *   is not (unassigned or initializing), else `green`;
 * - an index, and the cluster, take the worst status of their shards (an index without shards is green);
 * - `active_shards_percent_as_number` = active copies / all copies × 100 (100 with no copies).
 */

/** The state of one shard copy, as `_cat/shards` prints it. */
export type CopyState = 'STARTED' | 'INITIALIZING' | 'UNASSIGNED';

/** One copy of a shard. */
export interface ShardCopyState {
  readonly shard: number;
  readonly primary: boolean;
  readonly state: CopyState;
}

/** The copies of one index's shards. */
export interface IndexShardStates {
  readonly index: string;
  readonly numberOfShards: number;
  readonly numberOfReplicas: number;
  readonly copies: readonly ShardCopyState[];
}

export type HealthStatus = 'green' | 'yellow' | 'red';

/** The counters of `GET /_cluster/health` (Elasticsearch's names). */
export interface ShardCounts {
  readonly active_primary_shards: number;
  readonly active_shards: number;
  readonly relocating_shards: 0;
  readonly initializing_shards: number;
  readonly unassigned_shards: number;
  readonly unassigned_primary_shards: number;
}

/** The health of one index. */
export interface IndexHealth extends ShardCounts {
  readonly status: HealthStatus;
  readonly number_of_shards: number;
  readonly number_of_replicas: number;
}

const RANK: Readonly<Record<HealthStatus, number>> = { green: 0, yellow: 1, red: 2 };

/** The worse of two statuses. */
export function worseStatus(a: HealthStatus, b: HealthStatus): HealthStatus {
  return RANK[a] >= RANK[b] ? a : b;
}

/** Whether `status` is at least as good as `wanted` (`wait_for_status`). */
export function statusAtLeast(status: HealthStatus, wanted: HealthStatus): boolean {
  return RANK[status] <= RANK[wanted];
}

/** The health of one index from its copies (see module doc). */
export function indexHealth(index: IndexShardStates): IndexHealth {
  let status: HealthStatus = 'green';
  let activePrimaries = 0;
  let active = 0;
  let initializing = 0;
  let unassigned = 0;
  let unassignedPrimaries = 0;
  for (let shard = 0; shard < index.numberOfShards; shard++) {
    const copies = index.copies.filter((c) => c.shard === shard);
    const primary = copies.find((c) => c.primary);
    let shardStatus: HealthStatus = 'green';
    if (primary === undefined || primary.state !== 'STARTED') shardStatus = 'red';
    else if (copies.some((c) => !c.primary && c.state !== 'STARTED')) shardStatus = 'yellow';
    status = worseStatus(status, shardStatus);
    for (const c of copies) {
      if (c.state === 'STARTED') {
        active++;
        if (c.primary) activePrimaries++;
      } else if (c.state === 'INITIALIZING') initializing++;
      else {
        unassigned++;
        if (c.primary) unassignedPrimaries++;
      }
    }
    if (primary === undefined) {
      unassigned++;
      unassignedPrimaries++;
    }
  }
  return {
    status,
    number_of_shards: index.numberOfShards,
    number_of_replicas: index.numberOfReplicas,
    active_primary_shards: activePrimaries,
    active_shards: active,
    relocating_shards: 0,
    initializing_shards: initializing,
    unassigned_shards: unassigned,
    unassigned_primary_shards: unassignedPrimaries,
  };
}

/** The cluster's status and counters over `indices`. */
export function clusterHealth(indices: readonly IndexShardStates[]): {
  status: HealthStatus;
  counts: ShardCounts;
  activeShardsPercent: number;
  indices: ReadonlyMap<string, IndexHealth>;
} {
  let status: HealthStatus = 'green';
  const counts = {
    active_primary_shards: 0,
    active_shards: 0,
    relocating_shards: 0 as const,
    initializing_shards: 0,
    unassigned_shards: 0,
    unassigned_primary_shards: 0,
  };
  const byIndex = new Map<string, IndexHealth>();
  for (const index of indices) {
    const health = indexHealth(index);
    byIndex.set(index.index, health);
    status = worseStatus(status, health.status);
    counts.active_primary_shards += health.active_primary_shards;
    counts.active_shards += health.active_shards;
    counts.initializing_shards += health.initializing_shards;
    counts.unassigned_shards += health.unassigned_shards;
    counts.unassigned_primary_shards += health.unassigned_primary_shards;
  }
  const all = counts.active_shards + counts.initializing_shards + counts.unassigned_shards;
  return {
    status,
    counts,
    activeShardsPercent: all === 0 ? 100 : (counts.active_shards / all) * 100,
    indices: byIndex,
  };
}
