/**
 * What a data node holds, decided before its runtime starts (`serve --role data`): with a cluster
 * file, the copies `shard-layout.ts` assigns to its `--node-id`; without one, every shard of every
 * index (a lone data node). For the built-in engine the held shards become the engine option
 * `heldShards`, so the node loads only those; another engine holds whatever it holds, and the node
 * reports the layout's copies for it (the coordinator routes only to those).
 */
import { parseEngineOptions } from '../engine/engine-options.js';
import { InvalidArgumentError } from '../errors.js';
import type { ClusterSpec } from './cluster-spec.js';
import type { NodeInfoCopy } from './internal-protocol.js';
import { assignShardCopies, copiesHeldBy, heldShardsOf } from './shard-layout.js';

export interface DataNodePlacement {
  /** The engine options to start the runtime with (the given ones, plus `shardsPerIndex` and `heldShards` for the built-in engine). */
  readonly engineOptions: Record<string, unknown>;
  /** Shards per index the node reports. */
  readonly shardsPerIndex: number;
  /** The copies the node holds, given the indices its engine serves (known once it started). */
  copiesFor(indices: readonly string[]): NodeInfoCopy[];
}

/** Default shards per index of a node without a cluster file: the built-in engine's default, 1 for others. */
const BUILT_IN_DEFAULT_SHARDS = 2;

/**
 * Places a data node.
 * @param builtInEngine whether the node runs the built-in MiniSearch engine.
 * @throws InvalidArgumentError when `nodeId` is not a data node of the cluster file (naming
 *   `--node-id`), or the engine options are invalid.
 */
export function placeDataNode(options: {
  readonly nodeId: string;
  readonly cluster: ClusterSpec | undefined;
  readonly engineOptions: Readonly<Record<string, unknown>>;
  readonly builtInEngine: boolean;
}): DataNodePlacement {
  const { nodeId, cluster, builtInEngine } = options;
  const given = options.engineOptions['shardsPerIndex'];
  const shardsPerIndex =
    cluster?.shardsPerIndex ??
    (typeof given === 'number' ? given : builtInEngine ? BUILT_IN_DEFAULT_SHARDS : 1);
  if (cluster === undefined) {
    const all = (indices: readonly string[]): NodeInfoCopy[] =>
      indices.flatMap((index) =>
        Array.from({ length: shardsPerIndex }, (_, shard) => ({ index, shard, primary: true })),
      );
    return { engineOptions: { ...options.engineOptions }, shardsPerIndex, copiesFor: all };
  }
  const nodeIds = cluster.dataNodes.map((n) => n.id);
  if (!nodeIds.includes(nodeId)) {
    throw new InvalidArgumentError(
      '--node-id',
      `must name a data node of the cluster file (${nodeIds.join(', ')})`,
      nodeId,
    );
  }
  const layoutFor = (indices: readonly string[]) =>
    assignShardCopies({ indices, shardsPerIndex, nodeIds, replicas: cluster.replicas });
  const copiesFor = (indices: readonly string[]): NodeInfoCopy[] => copiesHeldBy(layoutFor(indices), nodeId);
  if (!builtInEngine) return { engineOptions: { ...options.engineOptions }, shardsPerIndex, copiesFor };
  const indices = parseEngineOptions({ ...options.engineOptions, shardsPerIndex }).indices;
  return {
    engineOptions: {
      ...options.engineOptions,
      shardsPerIndex,
      heldShards: heldShardsOf(layoutFor(indices), nodeId),
    },
    shardsPerIndex,
    copiesFor,
  };
}
