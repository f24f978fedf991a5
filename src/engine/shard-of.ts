/**
 * The shard of a document id, routed as Elasticsearch routes it, so that shard numbers match a real
 * cluster's: `shardId(resolveShardRouting({ numberOfShards }), id)` from `src/routing/` (Murmur3
 * x86_32 over the id's UTF-16 code units, the default `routing_num_shards` for that shard count,
 * routing factor; no custom routing, no partitioning). The index cache key includes the engine's
 * format version (`INDEX_FORMAT_VERSION`), which changes whenever this assignment changes.
 */
import { resolveShardRouting, type ShardRouting, shardId } from '../routing/shard-routing.js';

/** Resolved routing per shard count (at most 64 entries: the engine's shard range). */
const routings = new Map<number, ShardRouting>();

/**
 * The shard of a document id.
 *
 * @param id the document's `_id`.
 * @param shards the number of shards (`index.number_of_shards`), an integer in 1..1024.
 * @returns an integer in 0..shards-1, equal to Elasticsearch's primary shard for that `_id` in an
 *   index with `shards` shards and the default `number_of_routing_shards`.
 * @throws InvalidArgumentError (path `numberOfShards`) for a shard count outside 1..1024.
 */
export function shardOf(id: string, shards: number): number {
  let routing = routings.get(shards);
  if (routing === undefined) {
    routing = resolveShardRouting({ numberOfShards: shards });
    routings.set(shards, routing);
  }
  return shardId(routing, id);
}
