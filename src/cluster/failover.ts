/**
 * Primary failover: the shard-table change made when a data node's membership lease expires. For
 * each shard whose primary is on a node that is gone, the first replica that is in sync (it holds
 * every acknowledged write) and alive becomes the primary; the primary term goes up by one; the old
 * primary's node stays in the replicas (it rejoins as a replica when it returns, emptied, and recovers
 * from the new primary); the in-sync set becomes the new primary alone (other replicas may hold
 * operations of the old primary that were never acknowledged: they are reset and recover too, then
 * are put back by the new primary). A shard without a live in-sync replica keeps its dead primary: its
 * writes fail (503) until that node returns, as Elasticsearch leaves such a shard red rather than
 * lose acknowledged writes.
 *
 * The coordinator applies it to every index in one metadata transaction (`RemotePlacement.failOver`).
 */
import type { ShardPlacement } from '../indices/index-metadata-store.js';

/** The placement after failover, or `p` itself when nothing changes (see module doc). */
export function failOverPlacement(p: ShardPlacement, isLive: (nodeId: string) => boolean): ShardPlacement {
  if (isLive(p.primary)) return p;
  const inSync = p.inSync ?? [p.primary, ...p.replicas];
  const promoted = p.replicas.find((r) => inSync.includes(r) && isLive(r));
  if (promoted === undefined) return p;
  return {
    primary: promoted,
    replicas: [...p.replicas.filter((r) => r !== promoted), p.primary],
    inSync: [promoted],
    primaryTerm: (p.primaryTerm ?? 1) + 1,
  };
}
