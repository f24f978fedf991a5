/**
 * The writable indices of one node: the index service (index-service.ts: the index APIs, `_bulk`, the
 * real-time GET, `_cat/shards`, `_refresh`) over the local placement (local-placement.ts: the shard
 * copies this node holds, and the shard-level operations a cluster data node runs for its coordinator).
 *
 * On a single node (`role: 'single'`) the node owns the metadata (templates included) and holds every
 * shard as a primary. On a cluster data node (`role: 'data'`) the coordinator owns the metadata and
 * serves the index APIs: the ones that change indices or templates answer 400 here, and the data-node
 * routes reach the copies through `placement`. The corpus indices are read-only: an item writing to
 * one fails alone with 403 `cluster_block_exception`.
 */
import path from 'node:path';
import type { RuntimeLogger } from '../runtime-logger.js';
import type { BulkRequestParserOptions } from '../bulk/bulk-request.js';
import type { ChooseShard } from '../bulk/bulk-planner.js';
import { IndexingPressure } from './indexing-pressure.js';
import { IndexMetadataStore } from './index-metadata-store.js';
import { IndexService } from './index-service.js';
import type { LocalShards } from './local-shards.js';
import { LocalPlacement } from './local-placement.js';
import { WriteQueue } from './write-queue.js';

/** Options of `WritableIndices.open`. */
export interface WritableIndicesOptions {
  /** `<dataDir>/indices` holds `metadata.json` and the shard logs. */
  readonly dir: string;
  readonly nodeId: string;
  readonly role: 'single' | 'data';
  /** The corpus indices: read-only, and their names are taken. */
  readonly readOnlyIndices: readonly string[];
  /** Shard-log durability. @default 'request' (fsync before acknowledging) */
  readonly durability?: 'request' | 'async' | undefined;
  /** fsync period with `async`, ms. @default 5000 */
  readonly syncIntervalMs?: number | undefined;
  /** Indexing-pressure limit, bytes. @default 10 % of the heap limit */
  readonly indexingPressureBytes?: number | undefined;
  /** Shard bulks this node holds at once before it refuses a shard's items with 429 (`write-queue.ts`). @default 10000 */
  readonly writeQueueSize?: number | undefined;
  /** Bulk parser limits. */
  readonly bulk?: BulkRequestParserOptions | undefined;
  /** Chooses the shard of single-shard bulks. @default uniform random */
  readonly chooseShard?: ChooseShard | undefined;
  /**
   * A data node's metadata kept in the cluster state (etcd) instead of `<dir>/metadata.json`: the
   * coordinator's and the primaries' changes arrive through it (`syncMetadata`), and at start replicas
   * that are not in sync are emptied to recover anew. @default the local file
   */
  readonly metadataStore?: IndexMetadataStore | undefined;
  readonly log: RuntimeLogger;
}

/** The writable indices of one node (see module doc). */
export class WritableIndices extends IndexService<LocalPlacement> {
  /**
   * Loads the metadata and opens (recovers) every local shard copy: every document whose bulk was
   * acknowledged is back in the live documents and published to searches.
   * @throws the errors of `IndexMetadataStore.open` and `ShardCopy.open` (a corrupted log).
   */
  static async open(options: WritableIndicesOptions): Promise<WritableIndices> {
    const metadata =
      options.metadataStore ??
      (await IndexMetadataStore.open({
        path: path.join(options.dir, 'metadata.json'),
        reservedNames: options.readOnlyIndices,
      }));
    const pressure = new IndexingPressure(options.indexingPressureBytes);
    const placement = await LocalPlacement.open({
      dir: options.dir,
      nodeId: options.nodeId,
      role: options.role,
      metadata,
      sharedMetadata: options.metadataStore !== undefined,
      pressure,
      writeQueue: new WriteQueue(options.nodeId, options.writeQueueSize),
      durability: options.durability ?? 'request',
      syncIntervalMs: options.syncIntervalMs ?? 5000,
      chooseShard: options.chooseShard,
      log: options.log,
    });
    return new WritableIndices(metadata, placement, {
      pressure,
      bulk: options.bulk,
      refuseChanges:
        options.role === 'data' ? "is served by the cluster's coordinator, not by a data node" : undefined,
    });
  }

  /** The shard copies this node holds. */
  get shards(): LocalShards {
    return this.placement.shards;
  }

  /** The bound on shard bulks in flight on this node (primaries). */
  get writeQueue(): WriteQueue {
    return this.placement.writeQueue;
  }

  /** The board buffer the pool workers read (see `index-board.ts`). */
  get board(): SharedArrayBuffer {
    return this.placement.shards.board.buffer;
  }

  /** This node's id. */
  get nodeId(): string {
    return this.placement.nodeId;
  }

  /** Closes every shard copy (flushing and fsyncing pending appends). */
  close(): Promise<void> {
    return this.placement.close();
  }
}
