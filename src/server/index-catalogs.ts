/**
 * The two `IndexCatalog`s of `index-info-routes.ts`: a single node (its runtime: the engine's indices
 * on this node alone, no replicas) and a cluster coordinator (the data nodes' indices with the copies
 * the routing table learnt, a copy being active unless its node's last call failed and it has sent no
 * fresh stats since).
 */
import type { Coordinator } from '../cluster/coordinator.js';
import type { ShardCopyState } from '../indices/cluster-health.js';
import type { Runtime } from '../runtime.js';
import type { IndexCatalog, ReadOnlyIndex } from './index-info-routes.js';

/** The catalog of a single node (or of a data node, whose writable APIs refuse with 400). */
export function nodeCatalog(runtime: Runtime): IndexCatalog {
  return {
    numberOfNodes: 1,
    numberOfDataNodes: 1,
    writable: runtime.indices,
    readOnlyIndices(): ReadOnlyIndex[] {
      const description = runtime.engineDescription;
      const shards = description.shardsPerIndex ?? 1;
      return (description.indices ?? []).map((name) => ({
        name,
        numberOfShards: shards,
        numberOfReplicas: 0,
        copies: Array.from(
          { length: shards },
          (_, shard): ShardCopyState => ({ shard, primary: true, state: 'STARTED' }),
        ),
        docs: description.docsPerIndex?.[name],
        mappings: description.mappings,
      }));
    },
    search: (request) => runtime.search(request),
  };
}

/** The catalog of a cluster coordinator. */
export function coordinatorCatalog(coordinator: Coordinator): IndexCatalog {
  const table = coordinator.routingTable;
  return {
    numberOfNodes: table.nodeIds.length + 1,
    numberOfDataNodes: table.nodeIds.length,
    writable: coordinator.writes,
    readOnlyIndices(): ReadOnlyIndex[] {
      const down = new Set(
        coordinator
          .nodesStats()
          .dataNodes.filter((n) => n.lastCallFailed && n.usage.state !== 'fresh')
          .map((n) => n.nodeId),
      );
      return table.indices.map((name) => {
        const shards = table.shardsOf(name);
        const copies: ShardCopyState[] = [];
        let replicas = 0;
        for (let shard = 0; shard < shards; shard++) {
          // Any copy of a read-only shard serves it: an active one counts as the primary.
          const nodes = [...table.copiesOf(name, shard)].sort(
            (a, b) => Number(down.has(a)) - Number(down.has(b)),
          );
          replicas = Math.max(replicas, nodes.length - 1);
          if (nodes.length === 0) copies.push({ shard, primary: true, state: 'UNASSIGNED' });
          nodes.forEach((node, i) => {
            copies.push({ shard, primary: i === 0, state: down.has(node) ? 'UNASSIGNED' : 'STARTED' });
          });
        }
        const details = table.detailsOf(name);
        return {
          name,
          numberOfShards: shards,
          numberOfReplicas: replicas,
          copies,
          docs: details.docs,
          mappings: details.mappings,
        };
      });
    },
    search: (request) => coordinator.search(request),
  };
}
