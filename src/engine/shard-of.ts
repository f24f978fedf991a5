/**
 * Stable assignment of a document id to a shard: FNV-1a (32 bit) over the id's UTF-16 code units,
 * modulo the shard count. A placeholder until the routing module's Murmur3 (Elasticsearch's formula)
 * is used here too; the index cache key includes the engine's format version, so changing the hash
 * only needs a version bump.
 */

/** FNV-1a 32-bit hash of the string's UTF-16 code units; an unsigned 32-bit integer. */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * The shard of a document id.
 *
 * @param id the document's `_id`.
 * @param shards the number of shards, an integer >= 1.
 * @returns an integer in 0..shards-1.
 */
export function shardOf(id: string, shards: number): number {
  return fnv1a32(id) % shards;
}
