/**
 * Where the copies of each shard live in a cluster: a deterministic assignment of one primary and
 * `replicas` replicas per shard over the data nodes, which every node computes the same way from the
 * same inputs (the cluster file), so no master is needed to agree on it.
 *
 * Rule: the shards of all indices are numbered in order (index by index, in the order given, shard by
 * shard), `k = indexPosition × shardsPerIndex + shard`; the primary goes to data node `k mod N` and
 * replica `r` (1-based) to node `(k + r) mod N`, where N is the number of data nodes. Copies of one
 * shard are therefore always on distinct nodes (replicas are capped at N − 1, as Elasticsearch leaves
 * a replica unassigned rather than put it next to its primary), and consecutive shards rotate over
 * the nodes, so every node holds `copies / N` copies, ±1. With 3 shards, 1 replica and 3 nodes, each
 * index has the copy pairs (0,1), (1,2), (2,0): every pair of nodes shares a shard.
 *
 * Elasticsearch's allocator balances by weights and disk and moves shards later; this layout is
 * static, which is all a loopback cluster without writes needs.
 */
import { InvalidArgumentError } from '../errors.js';
import { optionChecks } from '../common/option-checks.js';

/** The nodes holding one shard's copies. */
export interface ShardCopies {
  /** The node holding the primary. */
  readonly primary: string;
  /** The nodes holding the replicas, in replica order (distinct from the primary and each other). */
  readonly replicas: readonly string[];
}

/** Index name to its shards' copies, shard by shard (`layout.get(index)[shard]`). */
export type ShardLayout = ReadonlyMap<string, readonly ShardCopies[]>;

export interface ShardLayoutOptions {
  /** Index names, in the order that numbers their shards (every node must use the same order). */
  readonly indices: readonly string[];
  /** Shards per index, integer 1..1024. */
  readonly shardsPerIndex: number;
  /** Data node ids, in cluster-file order, distinct, at least one. */
  readonly nodeIds: readonly string[];
  /** Replicas per shard, integer 0..16; more than `nodeIds.length − 1` are left unassigned. */
  readonly replicas: number;
}

/** One copy a node holds. */
export interface HeldCopy {
  readonly index: string;
  readonly shard: number;
  readonly primary: boolean;
}

/**
 * The copies of every shard (see module doc).
 * @throws InvalidArgumentError naming `shardsPerIndex`, `replicas` or `nodeIds` and the value.
 */
export function assignShardCopies(options: ShardLayoutOptions): ShardLayout {
  const { indices, shardsPerIndex, nodeIds, replicas } = options;
  optionChecks.integerIn('shardsPerIndex', shardsPerIndex, 1, 1024);
  optionChecks.integerIn('replicas', replicas, 0, 16);
  if (nodeIds.length === 0) throw new InvalidArgumentError('nodeIds', 'must name at least one node', nodeIds);
  if (new Set(nodeIds).size !== nodeIds.length) {
    throw new InvalidArgumentError('nodeIds', 'must not repeat a node id', nodeIds);
  }
  const n = nodeIds.length;
  const assigned = Math.min(replicas, n - 1);
  const layout = new Map<string, readonly ShardCopies[]>();
  indices.forEach((index, position) => {
    const shards: ShardCopies[] = [];
    for (let shard = 0; shard < shardsPerIndex; shard++) {
      const k = position * shardsPerIndex + shard;
      const copies: string[] = [];
      for (let r = 1; r <= assigned; r++) copies.push(nodeIds[(k + r) % n]!);
      shards.push(Object.freeze({ primary: nodeIds[k % n]!, replicas: Object.freeze(copies) }));
    }
    layout.set(index, Object.freeze(shards));
  });
  return layout;
}

/** The copies `nodeId` holds, index by index, shard by shard. */
export function copiesHeldBy(layout: ShardLayout, nodeId: string): HeldCopy[] {
  const held: HeldCopy[] = [];
  for (const [index, shards] of layout) {
    shards.forEach((copies, shard) => {
      if (copies.primary === nodeId) held.push({ index, shard, primary: true });
      else if (copies.replicas.includes(nodeId)) held.push({ index, shard, primary: false });
    });
  }
  return held;
}

/**
 * The engine option `heldShards` for a node: index name to the shard numbers it holds, ascending;
 * every index of the layout is listed (with `[]` when the node holds none of its shards).
 */
export function heldShardsOf(layout: ShardLayout, nodeId: string): Record<string, number[]> {
  const held: Record<string, number[]> = {};
  for (const index of layout.keys()) held[index] = [];
  for (const copy of copiesHeldBy(layout, nodeId)) held[copy.index]!.push(copy.shard);
  return held;
}
