/**
 * The writable indices of one node: the index APIs (`PUT /{index}`, `DELETE /{index}`,
 * `PUT|GET /{index}/_settings`, `PUT|GET|DELETE /_index_template/{name}`, `GET /{index}/_doc/{id}`,
 * `GET /_cat/shards`, `POST /{index}/_refresh`), the bulk API of a single node, and the shard-level
 * operations a cluster data node runs for its coordinator (primary writes, replica writes, recovery).
 *
 * Roles:
 * - `single`: the node owns the metadata (templates included) and holds every shard as a primary;
 *   replicas (`index.number_of_replicas`, default 1) stay unassigned, as on a one-node Elasticsearch.
 *   Bulk requests are parsed, planned (`BulkPlanner`; a single-shard bulk picks its shard at random,
 *   every shard being local) and executed here.
 * - `data`: a cluster data node; the coordinator owns the metadata and sends each index's metadata
 *   (`adoptIndex`); this node holds the copies its layout names and executes shard bulks as primary,
 *   forwarding the operations to the replicas through the `Replicator` it is given.
 *
 * Write path of one shard bulk on its primary (`executePrimary`): decide every item in order and
 * change the live documents (`ShardCopy.write`), append them as one log record and wait until it is
 * durable (fsync, `request` durability), send them to the replicas and wait for their acknowledgement
 * (a replica that fails is reported in `_shards.failed` and catches up later from the primary's log),
 * then apply `?refresh`. Only then is the item acknowledged. Indices are created automatically by a
 * bulk that names a missing one (Elasticsearch `action.auto_create_index`), templates applied. The
 * corpus indices are read-only: an item writing to one fails alone with 403 `cluster_block_exception`.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { RuntimeLogger } from '../runtime-logger.js';
import {
  EngineRequestError,
  IndexNotFoundError,
  IndexReadOnlyError,
  InvalidArgumentError,
  isQuerySandboxError,
  httpStatusOf,
} from '../errors.js';
import { resolveIndexExpression } from '../classify/index-expression.js';
import { BulkPlanner, type ChooseShard, type FailedItem, type PlannedItem } from '../bulk/bulk-planner.js';
import { type BulkItem, BulkRequestParser, type BulkRequestParserOptions } from '../bulk/bulk-request.js';
import { shardId } from '../routing/shard-routing.js';
import {
  type BulkParameters,
  type BulkResponse,
  prepareBulkIndices,
  runBulk,
  parseRefreshPolicy,
  type RefreshPolicy,
  type ShardBulkOutcome,
  shardFailureResponse,
  shardItemResponse,
  toShardWriteItem,
} from '../bulk/bulk-response.js';
import { IndexingPressure } from './indexing-pressure.js';
import { WriteQueue } from './write-queue.js';
import {
  type IndexMetadata,
  IndexMetadataStore,
  type PlaceIndex,
  type ShardPlacement,
} from './index-metadata-store.js';
import {
  type CreateIndexBody,
  explicitSettingsToFlat,
  type IndexSettings,
  indexSettingsToFlat,
  parseCreateIndexBody,
  parseSettingsUpdateBody,
} from './index-settings.js';
import type { IndexTemplate } from './index-templates.js';
import { type LocalCopy, LocalShards } from './local-shards.js';
import type { ShardWriteItem } from '../bulk/shard-write-item.js';
import { decodeShardLogRecords, type LoggedOperation, SHARD_LOG_HEADER_BYTES } from './shard-log.js';

export type { BulkParameters, BulkResponse, RefreshPolicy } from '../bulk/bulk-response.js';

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

/** `GET /_cat/shards?format=json` row, as Elasticsearch prints it (every value a string or null). */
export interface CatShardRow {
  readonly index: string;
  readonly shard: string;
  readonly prirep: 'p' | 'r';
  readonly state: 'STARTED' | 'INITIALIZING' | 'UNASSIGNED';
  readonly docs: string | null;
  readonly node: string | null;
}

/** A real-time GET answer (`GET /{index}/_doc/{id}`): `found` false answers 404. */
export type GetResponse =
  | {
      readonly _index: string;
      readonly _id: string;
      readonly _version: number;
      readonly _seq_no: number;
      readonly _primary_term: 1;
      readonly _routing?: string;
      readonly found: true;
      readonly _source: Readonly<Record<string, unknown>>;
    }
  | { readonly _index: string; readonly _id: string; readonly found: false };

/** Nested `{"index": {...}}` settings from flat `index.*` keys, as `GET /{index}/_settings` prints them. */
export function nestSettings(flat: Readonly<Record<string, string>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(flat)) {
    const parts = key.split('.');
    let node = out;
    for (const part of parts.slice(0, -1)) {
      node[part] ??= {};
      node = node[part] as Record<string, unknown>;
    }
    node[parts[parts.length - 1]!] = value;
  }
  return out;
}

/** `GET /{index}/_settings` entry of one index. */
export function settingsView(meta: IndexMetadata): Record<string, unknown> {
  return {
    settings: nestSettings({
      ...indexSettingsToFlat(meta.settings),
      'index.uuid': meta.uuid,
      'index.creation_date': String(meta.creationDateMs),
      'index.provided_name': meta.name,
    }),
  };
}

/** `GET /{index}/_mapping` entries of `names`: the mappings each index was created with, else `{}`. */
export function mappingsView(metadata: IndexMetadataStore, names: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of names) out[name] = { mappings: metadata.get(name)?.mappings ?? {} };
  return out;
}

/** The routing shard of a GET. @throws InvalidArgumentError (path `routing`) on a partitioned index without one. */
export function getShard(settings: IndexSettings, index: string, id: string, routing: string | undefined): number {
  if (settings.routingPartitionSize !== 1 && routing === undefined) {
    throw new InvalidArgumentError(
      'routing',
      `is required for [${index}]/[${id}]: the index is partitioned (routing_partition_size ${settings.routingPartitionSize})`,
      routing,
    );
  }
  return shardId(settings.routing, id, routing);
}

/**
 * The index and bulk APIs as the HTTP routes call them (`server/index-routes.ts`): a single node's
 * `WritableIndices`, or a cluster coordinator's `ClusterWrites`.
 */
export interface IndexApi {
  /** Writable index names, in creation order. */
  names(): readonly string[];
  createIndex(name: string, body: unknown): Promise<Record<string, unknown>>;
  deleteIndex(expression: string): Promise<Record<string, unknown>>;
  updateSettings(expression: string, body: unknown): Promise<Record<string, unknown>>;
  getSettings(expression: string): Record<string, unknown>;
  /** `GET /{index}/_mapping`: `{"<index>": {"mappings": {...}}}` (the mappings given at creation, else `{}`). */
  getMappings(expression: string): Record<string, unknown>;
  putTemplate(name: string, body: unknown, create: boolean): Promise<Record<string, unknown>>;
  deleteTemplate(name: string): Promise<Record<string, unknown>>;
  getTemplates(name?: string): Record<string, unknown>;
  getDocument(index: string, id: string, routing: string | undefined): GetResponse | Promise<GetResponse>;
  catShards(expression?: string): CatShardRow[] | Promise<CatShardRow[]>;
  refresh(expression?: string): Record<string, unknown> | Promise<Record<string, unknown>>;
  bulk(body: string | Uint8Array, parameters?: BulkParameters): Promise<BulkResponse>;
}

/** The writable indices of one node (see module doc). */
export class WritableIndices implements IndexApi {
  readonly metadata: IndexMetadataStore;
  readonly shards: LocalShards;
  readonly pressure: IndexingPressure;
  /** The bound on shard bulks in flight on this node (primaries). */
  readonly writeQueue: WriteQueue;
  readonly #options: WritableIndicesOptions;
  readonly #parser: BulkRequestParser;
  readonly #planner: BulkPlanner;
  #replicator: Replicator | undefined;
  /** Indices being created (metadata saved, copies opening): a bulk naming one waits for it. */
  readonly #creating = new Map<string, Promise<IndexMetadata>>();

  private constructor(
    options: WritableIndicesOptions,
    metadata: IndexMetadataStore,
    shards: LocalShards,
  ) {
    this.#options = options;
    this.metadata = metadata;
    this.shards = shards;
    this.pressure = new IndexingPressure(options.indexingPressureBytes);
    this.writeQueue = new WriteQueue(options.nodeId, options.writeQueueSize);
    this.#parser = new BulkRequestParser(options.bulk);
    this.#planner = new BulkPlanner({ chooseShard: options.chooseShard });
  }

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
    const shards = new LocalShards({
      dir: options.dir,
      nodeId: options.nodeId,
      holdsEveryShard: options.role === 'single',
      durability: options.durability ?? 'request',
      syncIntervalMs: options.syncIntervalMs ?? 5000,
      log: options.log,
    });
    const service = new WritableIndices(options, metadata, shards);
    try {
      for (const meta of metadata.list()) {
        await shards.addIndex(meta, service.#copyOptions(meta));
      }
    } catch (error) {
      await shards.close();
      throw error;
    }
    return service;
  }

  /** The board buffer the pool workers read (see `index-board.ts`). */
  get board(): SharedArrayBuffer {
    return this.shards.board.buffer;
  }

  /** Writable index names, in creation order. */
  names(): readonly string[] {
    return this.metadata.names();
  }

  has(name: string): boolean {
    return this.metadata.get(name) !== undefined;
  }

  /** Sets how primaries reach their replicas (a data node, once its HTTP client exists). */
  setReplicator(replicator: Replicator): void {
    this.#replicator = replicator;
  }

  /** This node's id. */
  get nodeId(): string {
    return this.#options.nodeId;
  }

  /** Whether the metadata is shared cluster state (etcd) rather than this node's own file. */
  get sharedMetadata(): boolean {
    return this.#options.metadataStore !== undefined;
  }

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

  #syncing: Promise<void> = Promise.resolve();

  async #syncNow(): Promise<void> {
    if (!this.sharedMetadata) return;
    const wanted = new Map(this.metadata.list().map((m) => [m.name, m]));
    for (const copy of this.shards.all()) {
      const meta = wanted.get(copy.meta.name);
      if (meta === undefined || meta.uuid !== copy.meta.uuid) await this.shards.removeIndex(copy.meta.name, true);
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

  // ---- index APIs (single node) -------------------------------------------------------------------

  /**
   * `PUT /{index}`. @returns Elasticsearch's answer `{acknowledged, shards_acknowledged, index}`.
   * @throws InvalidArgumentError naming the field and value; IndexExistsError.
   */
  async createIndex(name: string, body: unknown): Promise<Record<string, unknown>> {
    this.#singleOnly('PUT /{index}');
    const request = parseCreateIndexBody(body);
    await this.#create(name, request);
    return { acknowledged: true, shards_acknowledged: true, index: name };
  }

  /**
   * `DELETE /{index}` (a name or a comma list of names: wildcards are refused, as
   * `action.destructive_requires_name` does). Deletes the shard logs.
   * @throws IndexNotFoundError; IndexReadOnlyError for a corpus index; InvalidArgumentError for a wildcard.
   */
  async deleteIndex(expression: string): Promise<Record<string, unknown>> {
    this.#singleOnly('DELETE /{index}');
    for (const name of this.#concreteNames(expression, 'delete')) {
      const meta = await this.metadata.deleteIndex(name);
      await this.shards.removeIndex(meta.name, true);
      this.#options.log.info({ index: name, uuid: meta.uuid }, 'index deleted');
    }
    return { acknowledged: true };
  }

  /**
   * `PUT /{index}/_settings` for each index of the expression (dynamic settings only).
   * @throws InvalidArgumentError naming the setting and value; IndexNotFoundError; IndexReadOnlyError.
   */
  async updateSettings(expression: string, body: unknown): Promise<Record<string, unknown>> {
    this.#singleOnly('PUT /{index}/_settings');
    const update = parseSettingsUpdateBody(body);
    for (const name of this.#resolve(expression, 'change the settings of')) {
      const meta = await this.metadata.updateSettings(name, update);
      this.shards.updateIndex(meta);
    }
    return { acknowledged: true };
  }

  /** `GET /{index}/_settings`: `{"<index>": {"settings": {"index": {...}}}}`. */
  getSettings(expression: string): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const name of this.#resolve(expression, undefined)) out[name] = settingsView(this.metadata.get(name)!);
    return out;
  }

  /** `GET /{index}/_mapping`: `{"<index>": {"mappings": {...}}}`. */
  getMappings(expression: string): Record<string, unknown> {
    return mappingsView(this.metadata, this.#resolve(expression, undefined));
  }

  /** `PUT /_index_template/{name}` (`?create=true` refuses to replace). */
  async putTemplate(name: string, body: unknown, create: boolean): Promise<Record<string, unknown>> {
    this.#singleOnly('PUT /_index_template/{name}');
    await this.metadata.putTemplate(name, body, create);
    return { acknowledged: true };
  }

  /** `DELETE /_index_template/{name}`. @throws TemplateNotFoundError. */
  async deleteTemplate(name: string): Promise<Record<string, unknown>> {
    this.#singleOnly('DELETE /_index_template/{name}');
    await this.metadata.deleteTemplate(name);
    return { acknowledged: true };
  }

  /** `GET /_index_template[/{name}]`: `{"index_templates": [{"name", "index_template"}]}`. */
  getTemplates(name?: string): Record<string, unknown> {
    const list: IndexTemplate[] =
      name === undefined ? this.metadata.templates() : [this.metadata.template(name)].flatMap((t) => t ?? []);
    return { index_templates: list.map(templateView) };
  }

  /**
   * `GET /{index}/_doc/{id}` (real-time, from the primary's live documents).
   * @throws IndexNotFoundError; InvalidArgumentError (`routing`) on a partitioned index without routing.
   */
  getDocument(index: string, id: string, routing: string | undefined): GetResponse {
    const meta = this.#meta(index);
    const shard = getShard(meta.settings, index, id, routing);
    const local = this.shards.copy(index, shard);
    if (local === undefined) throw new IndexNotFoundError(index);
    return documentView(index, id, local);
  }

  /** `GET /_cat/shards[/{index}]?format=json` rows: every copy, unassigned replicas included. */
  catShards(expression = '_all'): CatShardRow[] {
    const rows: CatShardRow[] = [];
    for (const name of this.#resolve(expression, undefined)) {
      const meta = this.metadata.get(name)!;
      meta.layout.forEach((placement, shard) => {
        const copy = this.shards.copy(name, shard);
        rows.push({
          index: name,
          shard: String(shard),
          prirep: 'p',
          state: 'STARTED',
          docs: copy === undefined ? null : String(copy.copy.docCount),
          node: this.#options.role === 'single' ? this.#options.nodeId : placement.primary,
        });
        for (let r = 0; r < meta.settings.numberOfReplicas; r++) {
          const node = placement.replicas[r];
          const replica = node === this.#options.nodeId ? this.shards.copy(name, shard) : undefined;
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

  /** `POST /{index}/_refresh` (or `/_refresh`): `{"_shards": {total, successful, failed}}`. */
  refresh(expression = '_all'): Record<string, unknown> {
    const names = this.#resolve(expression, undefined);
    this.shards.refresh(names);
    let total = 0;
    for (const name of names) total += this.shards.copiesOf(name).length;
    return { _shards: { total, successful: total, failed: 0 } };
  }

  // ---- bulk (single node) --------------------------------------------------------------------------

  /**
   * `POST /_bulk`, `POST /{index}/_bulk` on a single node.
   * @param body the raw NDJSON body.
   * @returns the Elasticsearch bulk response (items in request order).
   * @throws InvalidBulkError for a body refused as a whole; WriteRejectedError for indexing pressure.
   */
  async bulk(body: string | Uint8Array, parameters: BulkParameters = {}): Promise<BulkResponse> {
    this.#singleOnly('POST /_bulk');
    const started = performance.now();
    const bytes = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
    const release = this.pressure.acquire(bytes, 'coordinating');
    try {
      return await runBulk(body, parameters, started, {
        parser: this.#parser,
        planner: this.#planner,
        prepare: (items) => this.#prepareIndices(items),
        routingOf: (name) => this.metadata.get(name)?.settings,
        execute: (batches, refresh, responses) =>
          Promise.all(
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
          ),
      });
    } finally {
      release();
    }
  }

  /**
   * Auto-creates the missing indices the items name (templates applied) and splits off the items that
   * write to a read-only corpus index.
   */
  #prepareIndices(items: readonly BulkItem[]): ReturnType<typeof prepareBulkIndices> {
    return prepareBulkIndices(items, {
      isReserved: (index) => this.metadata.isReserved(index),
      has: (index) => this.has(index),
      creating: (index) => this.#creating.get(index),
      create: (index) => this.#create(index, { settings: {}, mappings: undefined }),
    });
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
          shards: { total: 1 + local.meta.settings.numberOfReplicas, successful, failed: failures.length, failures },
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
    const { operations } = decodeShardLogRecords(data.subarray(SHARD_LOG_HEADER_BYTES), SHARD_LOG_HEADER_BYTES);
    return operations.filter((op) => op.seqNo >= fromSeqNo);
  }

  /** A document of a local copy (primary or replica), for a coordinator's GET. */
  getLocal(index: string, shard: number, id: string): GetResponse {
    const local = this.shards.copy(index, shard);
    if (local === undefined) throw new IndexNotFoundError(index);
    return documentView(index, id, local);
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

  /** Closes every shard copy (flushing and fsyncing pending appends). */
  close(): Promise<void> {
    return this.shards.close();
  }

  // ---- helpers -------------------------------------------------------------------------------------

  #singleOnly(what: string): void {
    if (this.#options.role !== 'single') {
      throw new InvalidArgumentError(
        'url',
        `is served by the cluster's coordinator, not by a data node (${what})`,
        what,
      );
    }
  }

  #create(name: string, request: CreateIndexBody): Promise<IndexMetadata> {
    const creation = this.#createNow(name, request);
    this.#creating.set(name, creation);
    const forget = () => {
      if (this.#creating.get(name) === creation) this.#creating.delete(name);
    };
    creation.then(forget, forget);
    return creation;
  }

  async #createNow(name: string, request: CreateIndexBody): Promise<IndexMetadata> {
    const nodeId = this.#options.nodeId;
    const place: PlaceIndex = (settings) => ({
      layout: Array.from(
        { length: settings.numberOfShards },
        (): ShardPlacement => ({ primary: nodeId, replicas: [] }),
      ),
    });
    const meta = await this.metadata.createIndex(name, request, place);
    try {
      await this.shards.addIndex(meta);
    } catch (error) {
      await this.metadata.deleteIndex(name).catch(() => undefined);
      throw error;
    }
    this.#options.log.info(
      { index: name, uuid: meta.uuid, shards: meta.settings.numberOfShards },
      'index created',
    );
    return meta;
  }

  #meta(index: string): IndexMetadata {
    const meta = this.metadata.get(index);
    if (meta === undefined) throw new IndexNotFoundError(index);
    return meta;
  }

  #primaryCopy(index: string, shard: number): LocalCopy {
    const local = this.shards.copy(index, shard);
    if (local === undefined || !local.primary) {
      if (!this.has(index)) throw new IndexNotFoundError(index);
      throw new EngineRequestError(
        'shard_not_found_exception',
        `no primary of [${index}][${shard}] on this node`,
        404,
      );
    }
    return local;
  }

  /** Writable names of an expression; a corpus name is refused when `action` says what would change. */
  #resolve(expression: string, action: string | undefined): string[] {
    if (action !== undefined) {
      for (const part of expression.split(',')) {
        if (this.metadata.isReserved(part)) throw new IndexReadOnlyError(part, `cannot ${action} it`);
      }
    }
    return resolveIndexExpression(expression, this.names());
  }

  #concreteNames(expression: string, action: string): string[] {
    for (const part of expression.split(',')) {
      if (part.includes('*') || part === '_all') {
        throw new InvalidArgumentError(
          'index',
          `must name indices to ${action} (wildcard expressions or all indices are not allowed: action.destructive_requires_name)`,
          expression,
        );
      }
    }
    return this.#resolve(expression, action);
  }
}

/** `GET /_index_template` entry of one template, as Elasticsearch prints it. */
export function templateView(template: IndexTemplate): Record<string, unknown> {
  return {
    name: template.name,
    index_template: {
      index_patterns: template.indexPatterns,
      priority: template.priority,
      ...(template.version !== undefined ? { version: template.version } : {}),
      template: {
        settings: nestSettings(
          Object.fromEntries(
            Object.entries(explicitSettingsToFlat(template.settings)).map(([k, v]) => [k, String(v)]),
          ),
        ),
        ...(template.mappings !== undefined ? { mappings: template.mappings } : {}),
      },
      ...(template.meta !== undefined ? { _meta: template.meta } : {}),
      composed_of: [],
    },
  };
}

function documentView(index: string, id: string, local: LocalCopy): GetResponse {
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

/** Fills the responses of a batch from its shard outcome. */
export function assignResults(
  items: readonly PlannedItem[],
  shard: number,
  outcome: ShardBulkOutcome,
  responses: (Record<string, unknown> | undefined)[],
): void {
  const byPosition = new Map(outcome.results.map((r) => [r.position, r]));
  for (const planned of items) {
    const result = byPosition.get(planned.position);
    responses[planned.position] =
      result === undefined
        ? shardFailureResponse(planned, 500, { type: 'exception', reason: 'the shard gave no result for the item' })
        : shardItemResponse(planned, shard, result, outcome);
  }
}

export type { FailedItem, PlannedItem };
export { parseRefreshPolicy };
