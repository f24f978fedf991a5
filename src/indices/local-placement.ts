/**
 * The local placement: the shard copies this node holds (`LocalShards`: shard copies, shard logs,
 * the refresh board), as the index service places them on a single node, and the shard-level
 * operations a cluster data node runs for its coordinator (primary writes, replica writes, recovery).
 *
 * Roles:
 * - `single`: the node holds every shard as a primary; replicas (`index.number_of_replicas`, default 1)
 *   stay unassigned, as on a one-node Elasticsearch. The index service (index-service.ts) creates,
 *   deletes and writes through this placement.
 * - `data`: a cluster data node; the coordinator owns the metadata and sends each index's metadata
 *   (`adoptIndex`); this node holds the copies its layout names and executes shard bulks as primary,
 *   forwarding the operations to the replicas through the `Replicator` it is given.
 *
 * Write path of one shard bulk on its primary (`executePrimary`): decide every item in order and
 * change the live documents (`ShardCopy.write`), append them as one log record and wait until it is
 * durable (fsync, `request` durability), send them to the replicas and wait for their acknowledgement
 * (a replica that fails is reported in `_shards.failed` and catches up later from the primary's log),
 * then apply `?refresh`. Only then is the item acknowledged.
 */
import { readFile } from 'node:fs/promises';
import type { RuntimeLogger } from '../runtime-logger.js';
import {
  EngineRequestError,
  IndexNotFoundError,
  InvalidArgumentError,
  isQuerySandboxError,
  httpStatusOf,
} from '../errors.js';
import type { ChooseShard, ShardBatch } from '../bulk/bulk-planner.js';
import {
  type RefreshPolicy,
  type ShardBulkOutcome,
  shardFailureResponse,
  toShardWriteItem,
} from '../bulk/bulk-response.js';
import type { ShardWriteItem } from '../bulk/shard-write-item.js';
import { assignResults, type CatShardRow, type GetResponse } from './index-api.js';
import type { IndexPlacement } from './index-service.js';
import type { IndexingPressure } from './indexing-pressure.js';
import type {
  IndexMetadata,
  IndexMetadataStore,
  PlaceIndex,
  ShardPlacement,
} from './index-metadata-store.js';
import type { IndexSettings } from './index-settings.js';
import { type LocalCopy, LocalShards } from './local-shards.js';
import { decodeShardLogRecords, type LoggedOperation, SHARD_LOG_HEADER_BYTES } from './shard-log.js';
import type { WriteQueue } from './write-queue.js';

/** How a primary's operations reach its replicas (a cluster data node passes one; a single node none). */
export interface Replicator {
  /**
   * Sends `operations` (with their sequence numbers) to every assigned replica of `copy`'s shard and
   * resolves when each has acknowledged or failed. Never rejects.
   */
  replicate(
    copy: LocalCopy,
    operations: readonly LoggedOperation[],
    refresh: RefreshPolicy,
  ): Promise<{
    readonly successful: number;
    readonly failures: readonly Record<string, unknown>[];
    readonly timings: readonly ReplicaTiming[];
    /**
     * Set when the write must not be acknowledged: an in-sync replica failed and could not be taken
     * out of the in-sync set (etcd unreachable, or this copy is no longer the primary).
     */
    readonly unacknowledged?: { readonly type: string; readonly reason: string } | undefined;
  }>;
}

/** How long one replica took to acknowledge, as its primary measured it (for the coordinator's ranking). */
export interface ReplicaTiming {
  readonly node: string;
  /** From sending to the answer, at the primary, ns. */
  readonly responseTimeNs: number;
  /** The replica's own handling time, ns. */
  readonly serviceTimeNs: number;
}

/** What `LocalPlacement` is built from (see `WritableIndices.open`). */
export interface LocalPlacementOptions {
  /** `<dataDir>/indices` holds the shard logs. */
  readonly dir: string;
  readonly nodeId: string;
  readonly role: 'single' | 'data';
  readonly metadata: IndexMetadataStore;
  /** Whether `metadata` is shared cluster state (etcd) rather than this node's own file. */
  readonly sharedMetadata: boolean;
  /** The node's indexing pressure (`primary` bytes of the shard bulks a data node takes). */
  readonly pressure: IndexingPressure;
  /** The bound on shard bulks in flight on this node. */
  readonly writeQueue: WriteQueue;
  readonly durability: 'request' | 'async';
  readonly syncIntervalMs: number;
  /** Chooses the shard of single-shard bulks. @default uniform random */
  readonly chooseShard?: ChooseShard | undefined;
  readonly log: RuntimeLogger;
}

/** The local placement (see module doc). */
export class LocalPlacement implements IndexPlacement {
  readonly metadata: IndexMetadataStore;
  readonly shards: LocalShards;
  readonly pressure: IndexingPressure;
  /** The bound on shard bulks in flight on this node (primaries). */
  readonly writeQueue: WriteQueue;
  readonly chooseShard: ChooseShard | undefined;
  readonly #options: LocalPlacementOptions;
  #replicator: Replicator | undefined;
  #syncing: Promise<void> = Promise.resolve();

  private constructor(options: LocalPlacementOptions, shards: LocalShards) {
    this.#options = options;
    this.metadata = options.metadata;
    this.shards = shards;
    this.pressure = options.pressure;
    this.writeQueue = options.writeQueue;
    this.chooseShard = options.chooseShard;
  }

  /**
   * Opens (recovers) every local shard copy of the metadata: every document whose bulk was
   * acknowledged is back in the live documents and published to searches.
   * @throws the errors of `ShardCopy.open` (a corrupted log).
   */
  static async open(options: LocalPlacementOptions): Promise<LocalPlacement> {
    const shards = new LocalShards({
      dir: options.dir,
      nodeId: options.nodeId,
      holdsEveryShard: options.role === 'single',
      durability: options.durability,
      syncIntervalMs: options.syncIntervalMs,
      log: options.log,
    });
    const placement = new LocalPlacement(options, shards);
    try {
      for (const meta of options.metadata.list()) {
        await shards.addIndex(meta, placement.#copyOptions(meta));
      }
    } catch (error) {
      await shards.close();
      throw error;
    }
    return placement;
  }

  /** This node's id. */
  get nodeId(): string {
    return this.#options.nodeId;
  }

  /** Whether the metadata is shared cluster state (etcd) rather than this node's own file. */
  get sharedMetadata(): boolean {
    return this.#options.sharedMetadata;
  }

  /** Sets how primaries reach their replicas (a data node, once its HTTP client exists). */
  setReplicator(replicator: Replicator): void {
    this.#replicator = replicator;
  }

  // ---- the index service's placement (single node) --------------------------------------------------

  /** Every shard's primary on this node, no replica assigned. */
  place(settings: IndexSettings): ReturnType<PlaceIndex> {
    const nodeId = this.#options.nodeId;
    return {
      layout: Array.from(
        { length: settings.numberOfShards },
        (): ShardPlacement => ({ primary: nodeId, replicas: [] }),
      ),
    };
  }

  async openIndex(meta: IndexMetadata): Promise<void> {
    await this.shards.addIndex(meta);
    this.#options.log.info(
      { index: meta.name, uuid: meta.uuid, shards: meta.settings.numberOfShards },
      'index created',
    );
  }

  /** Deletes the copies and their shard logs. */
  async removeIndex(meta: IndexMetadata): Promise<void> {
    await this.shards.removeIndex(meta.name, true);
    this.#options.log.info({ index: meta.name, uuid: meta.uuid }, 'index deleted');
  }

  applySettings(meta: IndexMetadata): void {
    this.shards.updateIndex(meta);
  }

  /** From the shard's local copy (the primary on a single node). */
  getDocument(meta: IndexMetadata, shard: number, id: string): GetResponse {
    return this.getLocal(meta.name, shard, id);
  }

  catShards(metas: readonly IndexMetadata[]): CatShardRow[] {
    const rows: CatShardRow[] = [];
    const nodeId = this.#options.nodeId;
    for (const meta of metas) {
      const name = meta.name;
      meta.layout.forEach((placement, shard) => {
        const copy = this.shards.copy(name, shard);
        rows.push({
          index: name,
          shard: String(shard),
          prirep: 'p',
          state: 'STARTED',
          docs: copy === undefined ? null : String(copy.copy.docCount),
          node: this.#options.role === 'single' ? nodeId : placement.primary,
        });
        for (let r = 0; r < meta.settings.numberOfReplicas; r++) {
          const node = placement.replicas[r];
          const replica = node === nodeId ? this.shards.copy(name, shard) : undefined;
          rows.push({
            index: name,
            shard: String(shard),
            prirep: 'r',
            state: node === undefined ? 'UNASSIGNED' : 'STARTED',
            docs: replica === undefined ? null : String(replica.copy.docCount),
            node: node ?? null,
          });
        }
      });
    }
    return rows;
  }

  refresh(metas: readonly IndexMetadata[]): { total: number; successful: number } {
    const names = metas.map((m) => m.name);
    this.shards.refresh(names);
    let total = 0;
    for (const name of names) total += this.shards.copiesOf(name).length;
    return { total, successful: total };
  }

  /** Each batch on this node's primary (`executePrimary`); a batch that throws fails its items alone. */
  executeBatches(
    batches: readonly ShardBatch[],
    refresh: RefreshPolicy,
    responses: (Record<string, unknown> | undefined)[],
  ): Promise<unknown> {
    return Promise.all(
      batches.map(async (batch) => {
        let outcome: ShardBulkOutcome;
        try {
          outcome = await this.executePrimary(
            batch.index,
            batch.shard,
            batch.items.map(toShardWriteItem),
            refresh,
          );
        } catch (error) {
          const status = isQuerySandboxError(error) ? httpStatusOf(error) : 500;
          const reason = error instanceof Error ? error.message : String(error);
          const type = isQuerySandboxError(error) ? error.type : 'exception';
          for (const planned of batch.items) {
            responses[planned.position] = shardFailureResponse(planned, status, { type, reason });
          }
          return;
        }
        assignResults(batch.items, batch.shard, outcome, responses);
      }),
    );
  }

  // ---- cluster metadata (data node) ----------------------------------------------------------------

  /**
   * Brings the local copies in line with the shared metadata (cluster state in etcd): opens the copies
   * of new indices, removes deleted ones, takes new settings and shard tables (promotions, demotions,
   * replicas back in sync). One run at a time; a no-op with local metadata.
   */
  syncMetadata(): Promise<void> {
    const run = this.#syncing.then(() => this.#syncNow());
    this.#syncing = run.catch((error: unknown) => {
      this.#options.log.warn({ error: String(error) }, 'shard copies could not follow the cluster metadata');
    });
    return run;
  }

  async #syncNow(): Promise<void> {
    if (!this.sharedMetadata) return;
    const wanted = new Map(this.metadata.list().map((m) => [m.name, m]));
    for (const copy of this.shards.all()) {
      const meta = wanted.get(copy.meta.name);
      if (meta === undefined || meta.uuid !== copy.meta.uuid)
        await this.shards.removeIndex(copy.meta.name, true);
    }
    for (const meta of wanted.values()) {
      const open = this.shards.copiesOf(meta.name)[0];
      if (open === undefined || open.meta.uuid !== meta.uuid) {
        await this.shards.addIndex(meta, this.#copyOptions(meta));
        continue;
      }
      for (const change of await this.shards.applyLayout(meta)) {
        this.#options.log.info({ index: meta.name, change }, 'shard copy follows the shard table');
      }
    }
  }

  /** How this node opens its copies of `meta`: replicas recover; with shared metadata, per in-sync set. */
  #copyOptions(meta: IndexMetadata): Parameters<LocalShards['addIndex']>[1] {
    if (this.#options.role !== 'data') return {};
    if (!this.sharedMetadata) return { replicasInitializing: true };
    const me = this.#options.nodeId;
    const inSync = (shard: number) => {
      const p = meta.layout[shard];
      return p !== undefined && (p.inSync === undefined || p.inSync.includes(me));
    };
    // A replica out of the in-sync set may have missed writes or hold a deposed primary's: it starts
    // empty and recovers; one in sync holds every acknowledged write and serves at once.
    return { replicasInitializing: true, resetReplica: (shard) => !inSync(shard), replicaStarted: inSync };
  }

  /** Takes an index the coordinator created (data node): stores its metadata, opens the copies. */
  async adoptIndex(meta: IndexMetadata): Promise<void> {
    if (this.sharedMetadata) {
      // The coordinator wrote it to the cluster state: read that, then open the copies.
      await this.metadata.refresh();
      await this.syncMetadata();
      return;
    }
    const stored = await this.metadata.adoptIndex(meta);
    await this.shards.addIndex(stored);
  }

  /** Drops an index the coordinator deleted (data node); a no-op when unknown. */
  async dropIndex(name: string, uuid: string): Promise<void> {
    if (this.sharedMetadata) {
      await this.metadata.refresh();
      await this.syncMetadata();
      return;
    }
    const meta = this.metadata.get(name);
    if (meta === undefined || meta.uuid !== uuid) return;
    await this.metadata.deleteIndex(name);
    await this.shards.removeIndex(name, true);
  }

  /** Takes the coordinator's new settings of an index (data node). */
  async takeSettings(name: string, uuid: string, settings: IndexSettings): Promise<void> {
    if (this.sharedMetadata) {
      await this.metadata.refresh();
      await this.syncMetadata();
      return;
    }
    const meta = await this.metadata.replaceSettings(name, uuid, settings);
    this.shards.updateIndex(meta);
  }

  // ---- shard level (single node and data node) -----------------------------------------------------

  /**
   * One shard bulk on this node's primary copy (see module doc).
   * @throws IndexNotFoundError / EngineRequestError `shard_not_found_exception` (404) when this node
   *   does not hold the primary; ShardWriteRejectedError (429) when the write queue is full (nothing
   *   is written); EngineFailureError when the copy is failed.
   */
  async executePrimary(
    index: string,
    shard: number,
    items: readonly ShardWriteItem[],
    refresh: RefreshPolicy,
  ): Promise<ShardBulkOutcome> {
    if (this.sharedMetadata && this.shards.copy(index, shard)?.primary !== true) {
      // The coordinator may know of a promotion this node's watch has not delivered yet.
      await this.metadata.refresh();
      await this.syncMetadata();
    }
    const local = this.#primaryCopy(index, shard);
    const release = this.writeQueue.acquire(index, shard);
    try {
      return await this.#executeOnPrimary(local, shard, items, refresh);
    } finally {
      release();
    }
  }

  async #executeOnPrimary(
    local: LocalCopy,
    shard: number,
    items: readonly ShardWriteItem[],
    refresh: RefreshPolicy,
  ): Promise<ShardBulkOutcome> {
    const { results, operations, durable } = local.copy.write(items);
    try {
      await durable;
    } catch (error) {
      const reason = `the shard log could not be written: ${error instanceof Error ? error.message : String(error)}`;
      return {
        results: results.map((r) =>
          r.error === undefined
            ? { position: r.position, status: 500, error: { type: 'translog_exception', reason } }
            : r,
        ),
        shards: { total: 1 + local.meta.settings.numberOfReplicas, successful: 0, failed: 1 },
        forcedRefresh: false,
      };
    }
    let successful = 1;
    let failures: readonly Record<string, unknown>[] = [];
    let timings: readonly ReplicaTiming[] = [];
    const assigned = local.meta.layout[shard]!.replicas.length;
    let replicationNs = 0;
    if (assigned > 0 && operations.length > 0 && this.#replicator !== undefined) {
      const replicationStarted = performance.now();
      const outcome = await this.#replicator.replicate(local, operations, refresh);
      replicationNs = Math.round((performance.now() - replicationStarted) * 1e6);
      successful += outcome.successful;
      failures = outcome.failures;
      timings = outcome.timings;
      if (outcome.unacknowledged !== undefined) {
        const error = outcome.unacknowledged;
        return {
          results: results.map((r) =>
            r.error === undefined ? { position: r.position, status: 503, error } : r,
          ),
          shards: {
            total: 1 + local.meta.settings.numberOfReplicas,
            successful,
            failed: failures.length,
            failures,
          },
          forcedRefresh: false,
          replicaTimings: timings,
          replicationNs,
        };
      }
    } else if (assigned > 0 && operations.length === 0) {
      successful += assigned;
    }
    if (refresh === 'true') this.shards.refreshCopy(local);
    else if (refresh === 'wait_for') await this.shards.waitForRefresh(local, local.copy.log.sizeBytes);
    this.shards.afterWrite(local);
    return {
      results,
      shards: {
        total: 1 + local.meta.settings.numberOfReplicas,
        successful,
        failed: failures.length,
        ...(failures.length > 0 ? { failures } : {}),
      },
      forcedRefresh: refresh === 'true',
      replicaTimings: timings,
      replicationNs,
    };
  }

  /**
   * A replica write from the primary (see `ShardCopy.applyReplica`), then `refresh`.
   * @returns `{ok: false, nextSeqNo}` when operations are missing before `operations[0]`.
   * @throws IndexNotFoundError / EngineRequestError 404 when this node holds no replica of the shard
   *   of that index uuid.
   */
  async applyReplica(
    index: string,
    uuid: string,
    shard: number,
    operations: readonly LoggedOperation[],
    refresh: RefreshPolicy,
    primaryNextSeqNo?: number,
    primaryTerm?: number,
  ): Promise<{ ok: true } | { ok: false; nextSeqNo: number }> {
    let local = this.shards.copy(index, shard);
    if (this.sharedMetadata && primaryTerm !== undefined && local !== undefined && primaryTerm > local.term) {
      // A newer primary than this node knows of: take the shard table first (this copy may be reset).
      await this.metadata.refresh();
      await this.syncMetadata();
      local = this.shards.copy(index, shard);
    }
    if (local === undefined || local.meta.uuid !== uuid || local.primary) {
      throw new InvalidArgumentError(
        'shard',
        `must be a replica this node holds ([${index}/${uuid}][${shard}] is not)`,
        shard,
      );
    }
    if (primaryTerm !== undefined && primaryTerm < local.term) {
      throw new InvalidArgumentError(
        'primary_term',
        `is stale: [${index}][${shard}] follows primary term ${local.term} (a deposed primary sent this)`,
        primaryTerm,
      );
    }
    const outcome = await local.copy.applyReplica(operations, primaryNextSeqNo);
    if (!outcome.ok) return outcome;
    if (refresh === 'true') this.shards.refreshCopy(local);
    else if (refresh === 'wait_for') await this.shards.waitForRefresh(local, local.copy.log.sizeBytes);
    this.shards.afterWrite(local);
    return { ok: true };
  }

  /**
   * The operations of a local copy from `fromSeqNo` on, read from its log (for a replica that is
   * behind: a gap in replication, or recovery after a restart).
   */
  async operationsSince(index: string, shard: number, fromSeqNo: number): Promise<LoggedOperation[]> {
    const local = this.#primaryCopy(index, shard);
    const data = await readFile(local.copy.log.path);
    const { operations } = decodeShardLogRecords(
      data.subarray(SHARD_LOG_HEADER_BYTES),
      SHARD_LOG_HEADER_BYTES,
    );
    return operations.filter((op) => op.seqNo >= fromSeqNo);
  }

  /** A document of a local copy (primary or replica), for a coordinator's GET. */
  getLocal(index: string, shard: number, id: string): GetResponse {
    const local = this.shards.copy(index, shard);
    if (local === undefined) throw new IndexNotFoundError(index);
    const doc = local.copy.get(id);
    if (doc === undefined) return { _index: index, _id: id, found: false };
    return {
      _index: index,
      _id: id,
      _version: doc.version,
      _seq_no: doc.seqNo,
      _primary_term: 1,
      ...(doc.routing !== undefined ? { _routing: doc.routing } : {}),
      found: true,
      _source: doc.source,
    };
  }

  /** Rows of this node's own copies (a coordinator merges every node's). */
  catLocal(): CatShardRow[] {
    return this.shards.all().map((c) => ({
      index: c.meta.name,
      shard: String(c.shard),
      prirep: c.primary ? 'p' : 'r',
      state: c.state,
      docs: String(c.copy.docCount),
      node: this.#options.nodeId,
    }));
  }

  /** Closes every shard copy (flushing and fsyncing pending appends). */
  close(): Promise<void> {
    return this.shards.close();
  }

  #primaryCopy(index: string, shard: number): LocalCopy {
    const local = this.shards.copy(index, shard);
    if (local === undefined || !local.primary) {
      if (this.metadata.get(index) === undefined) throw new IndexNotFoundError(index);
      throw new EngineRequestError(
        'shard_not_found_exception',
        `no primary of [${index}][${shard}] on this node`,
        404,
      );
    }
    return local;
  }
}
