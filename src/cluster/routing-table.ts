/**
 * The coordinator's view of where shard copies are: built once from the data nodes' answers to
 * `GET /_internal/node_info` (the cluster-state routing table of Elasticsearch, learnt by discovery
 * instead of published by a master). Immutable.
 */
import type { NodeInfo } from './internal-protocol.js';

/** What a data node reports about one of its engine's indices. */
export interface IndexDetails {
  readonly docs?: number | undefined;
  readonly mappings?: Readonly<Record<string, unknown>> | undefined;
}

export class RoutingTable {
  /** Every index some data node serves, in the order the first node lists them, then new ones. */
  readonly indices: readonly string[];
  /** The data nodes, in discovery order. */
  readonly nodeIds: readonly string[];
  readonly #shards: ReadonlyMap<string, number>;
  /** `index` -> shard -> node ids holding a copy, the primary's first. */
  readonly #copies: ReadonlyMap<string, readonly (readonly string[])[]>;
  /** What the first node listing an index reported about it (documents, mappings). */
  readonly #details: ReadonlyMap<string, IndexDetails>;

  private constructor(
    indices: readonly string[],
    nodeIds: readonly string[],
    shards: ReadonlyMap<string, number>,
    copies: ReadonlyMap<string, readonly (readonly string[])[]>,
    details: ReadonlyMap<string, IndexDetails>,
  ) {
    this.indices = indices;
    this.nodeIds = nodeIds;
    this.#shards = shards;
    this.#copies = copies;
    this.#details = details;
  }

  /**
   * Builds the table from the data nodes' node info (see `internal-protocol.ts`).
   * @throws Error when two nodes share an id, or disagree on an index's shard count.
   */
  static fromNodeInfos(infos: readonly NodeInfo[]): RoutingTable {
    const nodeIds: string[] = [];
    const indices: string[] = [];
    const shards = new Map<string, number>();
    const shardOwner = new Map<string, string>();
    const copies = new Map<string, { primary: string[]; replica: string[] }[]>();
    const details = new Map<string, IndexDetails>();
    for (const info of infos) {
      if (nodeIds.includes(info.node_id))
        throw new Error(`two data nodes answer with the id [${info.node_id}]`);
      nodeIds.push(info.node_id);
      for (const index of info.indices) {
        const known = shards.get(index);
        if (known === undefined) {
          indices.push(index);
          details.set(index, { docs: info.docs_per_index?.[index], mappings: info.mappings });
          shards.set(index, info.shards_per_index);
          shardOwner.set(index, info.node_id);
          copies.set(
            index,
            Array.from({ length: info.shards_per_index }, () => ({ primary: [], replica: [] })),
          );
        } else if (known !== info.shards_per_index) {
          throw new Error(
            `data nodes disagree on the shards of [${index}]: [${shardOwner.get(index)}] has ${known}, ` +
              `[${info.node_id}] has ${info.shards_per_index}`,
          );
        }
      }
      for (const copy of info.copies) {
        const slot = copies.get(copy.index)?.[copy.shard];
        if (slot === undefined) continue;
        (copy.primary ? slot.primary : slot.replica).push(info.node_id);
      }
    }
    const frozen = new Map<string, readonly (readonly string[])[]>();
    for (const [index, list] of copies) {
      frozen.set(index, Object.freeze(list.map((c) => Object.freeze([...c.primary, ...c.replica]))));
    }
    return new RoutingTable(Object.freeze(indices), Object.freeze(nodeIds), shards, frozen, details);
  }

  /** Documents and mappings of a data nodes' index, as its first node reported them (empty when unknown). */
  detailsOf(index: string): IndexDetails {
    return this.#details.get(index) ?? {};
  }

  /** Shards of `index`; 0 for an unknown index. */
  shardsOf(index: string): number {
    return this.#shards.get(index) ?? 0;
  }

  /** Node ids holding a copy of the shard, the primary's first; `[]` when none (unassigned). */
  copiesOf(index: string, shard: number): readonly string[] {
    return this.#copies.get(index)?.[shard] ?? [];
  }
}
