/**
 * Which primary shard of an Elasticsearch index a document goes to, from its `_id` and optional
 * `_routing`, so that shard numbers match a real cluster's.
 *
 * Sources (Elasticsearch, read for the facts, not copied):
 * - `IndexRouting.hashToShardId`: `shard = floorMod(hash, routing_num_shards) / routing_factor`;
 *   `IndexRouting.Unpartitioned`: `hash = Murmur3HashFunction.hash(routing ?? id)`;
 *   `IndexRouting.Partitioned`: `hash = hash(routing) + floorMod(hash(id), routing_partition_size)`
 *   (Java `int` addition, so it wraps around at 2^31) and a routing value is required.
 * - `MetadataCreateIndexService.calculateNumRoutingShards`: the default `routing_num_shards`.
 * - `IndexMetadata` (`getRoutingFactor`, the `index.number_of_routing_shards` validator, and the
 *   `routing partition size` check in `IndexMetadata.Builder.build`): what is accepted.
 *
 * This is the routing of indices created before Elasticsearch 9.4; the 9.4 docs give
 * `hash % number_of_shards` for newer indices (elastic/elasticsearch#137062). With
 * `numberOfRoutingShards` equal to `numberOfShards` the formula here reduces to
 * `floorMod(hash, number_of_shards)`.
 */
import { InvalidArgumentError } from '../errors.js';
import { murmur3Hash } from './murmur3.js';

/** The largest `index.number_of_shards` Elasticsearch accepts by default (`es.index.max_number_of_shards`). */
export const MAX_NUMBER_OF_SHARDS = 1024;
/** The largest Java `int`: the upper bound of `index.number_of_routing_shards`. */
const MAX_INT = 0x7fffffff;

/** Index settings that decide routing, as given by a caller (names follow the `index.*` settings). */
export interface ShardRoutingOptions {
  /**
   * `index.number_of_shards`: primary shards. An integer in 1..1024.
   */
  readonly numberOfShards: number;
  /**
   * `index.number_of_routing_shards`: the hash space that is divided among the shards. An integer in
   * `numberOfShards`..2^31-1 that `numberOfShards` divides exactly.
   * @default defaultRoutingNumShards(numberOfShards), e.g. 5 -> 640
   */
  readonly numberOfRoutingShards?: number | undefined;
  /**
   * `index.routing_partition_size`: how many shards one routing value spreads over. An integer,
   * 1 (no partitioning) or in 2..`numberOfRoutingShards`-1, as `IndexMetadata` checks it. Above 1 every
   * document needs a routing value.
   * @default 1
   */
  readonly routingPartitionSize?: number | undefined;
}

/** Checked, frozen routing settings: what `shardId` reads. Build with `resolveShardRouting`. */
export interface ShardRouting {
  readonly numberOfShards: number;
  /** `routing_num_shards`, explicit or the default. */
  readonly routingNumShards: number;
  /** `routing_num_shards / number_of_shards`, an integer >= 1. */
  readonly routingFactor: number;
  /** 1 when the index is not partitioned. */
  readonly routingPartitionSize: number;
}

/**
 * The default `routing_num_shards` of a new index (Elasticsearch >= 7.0,
 * `MetadataCreateIndexService.calculateNumRoutingShards`): the largest `numberOfShards × 2^k` that is
 * at most 1024, with k >= 1 so the index can be split at least once:
 * `numberOfShards << max(1, 10 − ceil(log2(numberOfShards)))`. 1 -> 1024, 5 -> 640, 8 -> 1024, 30 -> 960,
 * 1000 -> 2000.
 *
 * @param numberOfShards an integer in 1..1024.
 * @throws InvalidArgumentError (path `numberOfShards`) outside that range.
 */
export function defaultRoutingNumShards(numberOfShards: number): number {
  checkNumberOfShards(numberOfShards);
  const log2Ceil = 32 - Math.clz32(numberOfShards - 1); // ceil(log2(n)); 0 for n = 1
  return numberOfShards * 2 ** Math.max(1, 10 - log2Ceil);
}

function checkNumberOfShards(n: number): void {
  if (!Number.isInteger(n) || n < 1 || n > MAX_NUMBER_OF_SHARDS) {
    throw new InvalidArgumentError('numberOfShards', `must be an integer in 1..${MAX_NUMBER_OF_SHARDS}`, n);
  }
}

/**
 * Checks `options` as Elasticsearch checks the index settings and returns the frozen settings that
 * `shardId` uses.
 *
 * @throws InvalidArgumentError naming the option and the received value when `numberOfShards` is not an
 *   integer in 1..1024; when `numberOfRoutingShards` is not an integer, is below `numberOfShards`, or is
 *   not a multiple of it (Elasticsearch: "the number of source shards [N] must be a factor of [M]");
 *   when `routingPartitionSize` is not 1 or an integer in 2..routingNumShards-1.
 */
export function resolveShardRouting(options: ShardRoutingOptions): ShardRouting {
  const { numberOfShards } = options;
  checkNumberOfShards(numberOfShards);
  let routingNumShards = options.numberOfRoutingShards;
  if (routingNumShards === undefined) {
    routingNumShards = defaultRoutingNumShards(numberOfShards);
  } else if (!Number.isInteger(routingNumShards) || routingNumShards < 1 || routingNumShards > MAX_INT) {
    throw new InvalidArgumentError(
      'numberOfRoutingShards',
      `must be an integer in 1..${MAX_INT}`,
      routingNumShards,
    );
  } else if (routingNumShards < numberOfShards) {
    throw new InvalidArgumentError(
      'numberOfRoutingShards',
      `must be >= the number of shards (${numberOfShards})`,
      routingNumShards,
    );
  } else if (routingNumShards % numberOfShards !== 0) {
    throw new InvalidArgumentError(
      'numberOfRoutingShards',
      `must be a multiple of the number of shards (${numberOfShards})`,
      routingNumShards,
    );
  }
  const routingPartitionSize = options.routingPartitionSize ?? 1;
  if (
    !Number.isInteger(routingPartitionSize) ||
    routingPartitionSize < 1 ||
    (routingPartitionSize !== 1 && routingPartitionSize >= routingNumShards)
  ) {
    throw new InvalidArgumentError(
      'routingPartitionSize',
      `must be 1 or an integer in 2..${routingNumShards - 1} (below the number of routing shards)`,
      routingPartitionSize,
    );
  }
  return Object.freeze({
    numberOfShards,
    routingNumShards,
    routingFactor: routingNumShards / numberOfShards,
    routingPartitionSize,
  });
}

/**
 * `IndexRouting.hashToShardId`: the shard of a routing hash.
 *
 * @param hash a signed 32-bit hash (as `murmur3Hash` returns).
 * @returns a shard number in 0..numberOfShards-1.
 */
export function hashToShardId(routing: ShardRouting, hash: number): number {
  const n = routing.routingNumShards;
  const mod = hash % n; // JS `%` keeps the dividend's sign, as Java's does (and gives -0 for -n)
  // `| 0` truncates the non-negative quotient (integer division) and turns -0 into 0.
  return ((mod < 0 ? mod + n : mod) / routing.routingFactor) | 0;
}

/**
 * The shard of a document, as Elasticsearch's `IndexRouting.indexShard`/`getShard` compute it.
 *
 * @param id the document `_id` (any string; Elasticsearch refuses an empty `_id` before routing).
 * @param routingValue the `_routing` value, or `undefined` to route by `id`. Used as given, `''` included.
 * @returns a shard number in 0..numberOfShards-1.
 * @throws InvalidArgumentError (path `routing`) for a partitioned index (`routingPartitionSize > 1`)
 *   without a routing value, as Elasticsearch refuses it.
 */
export function shardId(routing: ShardRouting, id: string, routingValue?: string): number {
  const p = routing.routingPartitionSize;
  if (p === 1) return hashToShardId(routing, murmur3Hash(routingValue ?? id));
  if (routingValue === undefined) {
    throw new InvalidArgumentError(
      'routing',
      `is required for a partitioned index (routingPartitionSize ${p})`,
      routingValue,
    );
  }
  const idHash = murmur3Hash(id) % p;
  const offset = idHash < 0 ? idHash + p : idHash;
  return hashToShardId(routing, (murmur3Hash(routingValue) + offset) | 0);
}

/**
 * The shards that documents with `routingValue` can be on (Elasticsearch
 * `IndexRouting.collectSearchShards`): one shard, or for a partitioned index the shards of
 * `hash(routingValue) + 0 .. p-1`, so at most `routingPartitionSize` distinct shards, in that order,
 * without repeats.
 */
export function searchShards(routing: ShardRouting, routingValue: string): number[] {
  const hash = murmur3Hash(routingValue);
  const shards: number[] = [];
  for (let i = 0; i < routing.routingPartitionSize; i++) {
    const shard = hashToShardId(routing, (hash + i) | 0);
    if (!shards.includes(shard)) shards.push(shard);
  }
  return shards;
}
