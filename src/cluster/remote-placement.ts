/**
 * The remote placement: a cluster coordinator's writable indices live on the data nodes, reached over
 * the internal protocol (`internal-protocol.ts`, `callInternal`; every body encoded and every answer
 * decoded by `internal-codecs.ts`). The index service
 * (indices/index-service.ts) holds the index rules; this placement decides where copies go and
 * carries each change and write to the nodes that hold them.
 *
 * Index creation (`PUT /{index}`, or a bulk naming a missing index): one primary and
 * `min(number_of_replicas, data nodes − 1)` replicas per shard placed round-robin over the data nodes
 * (shard `k` of the n-th shard created on the cluster: primary on node `n mod N`, replica on the
 * next), and the metadata sent to every data node (`PUT /_internal/indices/{index}`); a node that
 * refuses undoes the creation everywhere. `number_of_replicas` cannot change afterwards (copies are
 * placed once).
 *
 * A bulk: the service parses, auto-creates and plans; here, one `POST /_internal/bulk` per primary
 * node with all of that node's shard bulks; each primary writes its log, waits for its replicas and
 * answers per item. Items whose node does not answer fail with 503 `unavailable_shards_exception`
 * (429 when the node refused for its own indexing pressure); the others stand.
 *
 * Single-shard bulks (`index.bulk_routing.enabled`) draw their shard away from sick nodes
 * (`write-shard-choice.ts`).
 */
import type pino from 'pino';
import type { ReplicaRanking } from '../admission/replica-ranking.js';
import type { StatsCollector } from '../admission/stats-collector.js';
import { EngineFailureError, InvalidArgumentError } from '../errors.js';
import type { PlannedItem, ShardBatch } from '../bulk/bulk-planner.js';
import type { BulkRequestParserOptions } from '../bulk/bulk-request.js';
import { type RefreshPolicy, shardFailureResponse, toShardWriteItem } from '../bulk/bulk-response.js';
import { assignResults, type CatShardRow, type GetResponse } from '../indices/index-api.js';
import {
  type IndexMetadata,
  IndexMetadataStore,
  inSyncCopies,
  type MetadataPersistence,
  type PlaceIndex,
  type ShardPlacement,
} from '../indices/index-metadata-store.js';
import { type IndexPlacement, IndexService, type IndexServiceStats } from '../indices/index-service.js';
import type { IndexSettings } from '../indices/index-settings.js';
import { IndexingPressure } from '../indices/indexing-pressure.js';
import { failOverPlacement } from './failover.js';
import { WriteShardChoice } from './write-shard-choice.js';
import { callInternal, type InternalCallOptions } from './internal-call.js';
import {
  decodeCatShardsAnswer,
  decodeGetAnswer,
  decodeShardBulkAnswer,
  encodeGetRequest,
  encodeIndexMetadataRequest,
  encodeRefreshRequest,
  encodeSettingsRequest,
  encodeShardBulkRequest,
  indexPath,
  indexSettingsPath,
} from './internal-codecs.js';
import { CAT_SHARDS_PATH, GET_PATH, REFRESH_PATH, SHARD_BULK_PATH } from './internal-protocol.js';

/** What the coordinator lends its remote placement. */
export interface RemotePlacementOptions {
  /** The data nodes, in discovery order, and their URLs. */
  readonly nodes: ReadonlyMap<string, string>;
  /** The coordinator's index metadata (the service's). */
  readonly metadata: IndexMetadataStore;
  /** Whether the metadata is the cluster state (etcd): copies start in sync at term 1, failover runs. */
  readonly tracked: boolean;
  /** Whether a data node is registered (alive); with cluster state in etcd. @default every node */
  readonly isLive?: ((nodeId: string) => boolean) | undefined;
  readonly collector: StatsCollector;
  /** The write-side ranking (not the search one: other requests, other times). */
  readonly ranking: ReplicaRanking;
  /** Whether a node failed to answer recently (the coordinator's back-off), and to report one. */
  readonly isDown: (nodeId: string) => boolean;
  readonly markDown: (nodeId: string) => void;
  /** Time a data node has to answer a shard bulk or an index call, ms. */
  readonly timeoutMs: number;
  /** The cluster secret the data nodes' internal routes need. */
  readonly clusterSecret: string | undefined;
  /** Unhealthy above this × the median response-time EWMA, > 1. @default 2 */
  readonly slowNodeFactor?: number | undefined;
  /** A slow node's figures older than this no longer exclude it, ms, >= 0. @default 5000 */
  readonly slowNodeRetryMs?: number | undefined;
  readonly signal: AbortSignal;
  readonly log: pino.Logger;
  /** Random draws of the shard choice, in [0, 1). @default Math.random */
  readonly random?: (() => number) | undefined;
}

/** Counters of the remote placement (a plain snapshot). */
export interface RemotePlacementStats {
  /** Items answered 429 (a data node's indexing pressure). */
  readonly rejectedItems: number;
  /** Items that failed for an unreachable or failing primary node. */
  readonly failedItems: number;
  /** Shard-bulk requests sent, per data node. */
  readonly shardBulkRequests: Readonly<Record<string, number>>;
  /** Shards chosen for single-shard bulks, per primary node. */
  readonly chosenShards: Readonly<Record<string, number>>;
}

/** Counters of the coordinator's write side (`nodesStats().writes`; a plain snapshot). */
export interface ClusterWriteStats extends RemotePlacementStats {
  readonly bulks: number;
  /** Bulks refused as a whole for indexing pressure at the coordinator. */
  readonly rejectedBulks: number;
  readonly pressure: IndexServiceStats['pressure'];
}

/** The coordinator's writable indices: the index service over the data nodes. */
export type ClusterIndices = IndexService<RemotePlacement>;

/** The remote placement (see module doc). */
export class RemotePlacement implements IndexPlacement {
  readonly #options: RemotePlacementOptions;
  readonly #metadata: IndexMetadataStore;
  readonly #nodeIds: readonly string[];
  readonly #choice: WriteShardChoice;
  #rejectedItems = 0;
  #failedItems = 0;
  readonly #requests = new Map<string, number>();

  /** @throws InvalidArgumentError for a bad `slowNodeFactor` or `slowNodeRetryMs`. */
  constructor(options: RemotePlacementOptions) {
    this.#options = options;
    this.#metadata = options.metadata;
    this.#nodeIds = [...options.nodes.keys()];
    this.#choice = new WriteShardChoice(options);
  }

  /** Shards of a writable index; undefined for another name. */
  shardsOf(index: string): number | undefined {
    return this.#metadata.get(index)?.settings.numberOfShards;
  }

  /** Nodes holding a copy of the shard that may serve searches (in sync), the primary's first. */
  copiesOf(index: string, shard: number): readonly string[] {
    const placement = this.#metadata.get(index)?.layout[shard];
    if (placement === undefined) return [];
    const inSync = inSyncCopies(placement);
    return [placement.primary, ...placement.replicas.filter((r) => inSync.includes(r))];
  }

  /**
   * Failover (see `failover.ts`): promotes an in-sync live replica of every shard whose primary's node
   * is not registered, all indices in one metadata transaction.
   * @returns the promotions made (`[index][shard] node -> node`), for the log.
   * @throws ClusterStateUnavailableError when etcd does not answer.
   */
  async failOver(): Promise<string[]> {
    const isLive = this.#options.isLive;
    if (isLive === undefined) return [];
    // Keyed: a transaction that lost to another writer computes again.
    const made = new Map<string, string>();
    await this.#metadata.updateShardTables((meta, p, shard) => {
      const next = failOverPlacement(p, isLive);
      if (next !== p)
        made.set(`[${meta.name}][${shard}]`, `${p.primary} -> ${next.primary} (term ${next.primaryTerm})`);
      return next;
    });
    const promotions = [...made].map(([shard, change]) => `${shard} ${change}`);
    if (promotions.length > 0)
      this.#options.log.warn({ promotions }, 'primaries failed over to in-sync replicas');
    return promotions;
  }

  stats(): RemotePlacementStats {
    return {
      rejectedItems: this.#rejectedItems,
      failedItems: this.#failedItems,
      shardBulkRequests: Object.fromEntries(this.#requests),
      chosenShards: this.#choice.chosen(),
    };
  }

  // ---- the index service's placement ---------------------------------------------------------------

  /** Round-robin over the data nodes (see module doc). */
  place(settings: IndexSettings): ReturnType<PlaceIndex> {
    const nodes = this.#nodeIds;
    const n = nodes.length;
    const offset = this.#metadata.list().reduce((sum, m) => sum + m.settings.numberOfShards, 0);
    const replicas = Math.min(settings.numberOfReplicas, n - 1);
    const tracked = this.#options.tracked;
    const layout = Array.from({ length: settings.numberOfShards }, (_, shard): ShardPlacement => {
      const k = offset + shard;
      const primary = nodes[k % n]!;
      const copies = Array.from({ length: replicas }, (_, r) => nodes[(k + r + 1) % n]!);
      // With cluster state: every copy starts empty, hence in sync, at term 1.
      return tracked
        ? { primary, replicas: copies, inSync: [primary, ...copies], primaryTerm: 1 }
        : { primary, replicas: copies };
    });
    return { layout, nodes: Object.fromEntries(this.#options.nodes) };
  }

  /** Sends the metadata to every live data node. @throws EngineFailureError naming the nodes that refused. */
  async openIndex(meta: IndexMetadata): Promise<void> {
    await this.#everyNode((url) =>
      callInternal(url, indexPath(meta.name), 'PUT', encodeIndexMetadataRequest(meta), this.#callOptions()),
    );
    this.#options.log.info(
      { index: meta.name, uuid: meta.uuid, layout: meta.layout },
      'index created on the cluster',
    );
  }

  async abandonIndex(meta: IndexMetadata): Promise<void> {
    await this.#deleteEverywhere(meta).catch(() => undefined);
  }

  /** Deletes the copies on every data node; a node that does not answer reads the deletion later. */
  async removeIndex(meta: IndexMetadata): Promise<void> {
    await this.#deleteEverywhere(meta).catch((error: unknown) => {
      this.#options.log.warn(
        { index: meta.name, error: String(error) },
        'index deleted, but not on every data node',
      );
    });
  }

  /** @throws InvalidArgumentError when `number_of_replicas` changes (copies are placed once). */
  checkSettings(before: IndexSettings, after: IndexSettings): void {
    if (before.numberOfReplicas !== after.numberOfReplicas) {
      throw new InvalidArgumentError(
        'settings.index.number_of_replicas',
        `cannot change on this cluster after the index is created (copies are placed once; it is ${before.numberOfReplicas})`,
        after.numberOfReplicas,
      );
    }
  }

  async applySettings(meta: IndexMetadata): Promise<void> {
    await this.#everyNode((url) =>
      callInternal(
        url,
        indexSettingsPath(meta.name),
        'PUT',
        encodeSettingsRequest(meta.uuid, meta.settings.explicit),
        this.#callOptions(),
      ),
    );
  }

  /**
   * Real-time GET on the shard's primary, or a replica when the primary's node does not answer.
   * @throws EngineFailureError when no copy answers.
   */
  async getDocument(meta: IndexMetadata, shard: number, id: string): Promise<GetResponse> {
    const index = meta.name;
    const copies = this.copiesOf(index, shard);
    const isDown = this.#options.isDown;
    const order = [...copies.filter((n) => !isDown(n)), ...copies.filter((n) => isDown(n))];
    let last = 'no copy';
    for (const node of order) {
      const outcome = await callInternal(
        this.#options.nodes.get(node)!,
        GET_PATH,
        'POST',
        encodeGetRequest({ index, shard, id }),
        this.#callOptions(),
      );
      this.#options.collector.ingest(node, outcome.statsHeader);
      if (outcome.ok) {
        try {
          return decodeGetAnswer(outcome.body);
        } catch (error) {
          last = `[${node}]: ${(error as Error).message}`;
          continue;
        }
      }
      if (outcome.status === 0) this.#options.markDown(node);
      last = `[${node}]: ${outcome.reason.reason}`;
    }
    throw new EngineFailureError(`no copy of [${index}][${shard}] answered the GET; last ${last}`);
  }

  /** Every copy, from the data nodes' own rows; a copy whose node did not answer is `UNASSIGNED`. */
  async catShards(metas: readonly IndexMetadata[]): Promise<CatShardRow[]> {
    const found = new Map<string, CatShardRow>();
    await Promise.all(
      this.#nodeIds.map(async (node) => {
        const outcome = await callInternal(
          this.#options.nodes.get(node)!,
          CAT_SHARDS_PATH,
          'GET',
          undefined,
          {
            ...this.#callOptions(),
            timeoutMs: Math.min(5000, this.#options.timeoutMs),
          },
        );
        if (!outcome.ok) return;
        let answered: CatShardRow[];
        try {
          answered = decodeCatShardsAnswer(outcome.body);
        } catch {
          return;
        }
        for (const row of answered) found.set(`${row.index}/${row.shard}/${row.node}`, row);
      }),
    );
    const rows: CatShardRow[] = [];
    for (const meta of metas) {
      const name = meta.name;
      meta.layout.forEach((placement, shard) => {
        const copy = (node: string, prirep: 'p' | 'r'): CatShardRow => {
          const row = found.get(`${name}/${shard}/${node}`);
          return row === undefined
            ? { index: name, shard: String(shard), prirep, state: 'UNASSIGNED', docs: null, node: null }
            : { ...row, prirep };
        };
        rows.push(copy(placement.primary, 'p'));
        for (const node of placement.replicas) rows.push(copy(node, 'r'));
        for (let r = placement.replicas.length; r < meta.settings.numberOfReplicas; r++) {
          rows.push({
            index: name,
            shard: String(shard),
            prirep: 'r',
            state: 'UNASSIGNED',
            docs: null,
            node: null,
          });
        }
      });
    }
    return rows;
  }

  /** Every data node refreshes its copies; the copies of a node that does not answer count as failed. */
  async refresh(metas: readonly IndexMetadata[]): Promise<{ total: number; successful: number }> {
    const names = metas.map((m) => m.name);
    let total = 0;
    for (const meta of metas) total += meta.layout.reduce((n, p) => n + 1 + p.replicas.length, 0);
    let successful = 0;
    await Promise.all(
      this.#nodeIds.map(async (node) => {
        const outcome = await callInternal(
          this.#options.nodes.get(node)!,
          REFRESH_PATH,
          'POST',
          encodeRefreshRequest(names),
          this.#callOptions(),
        );
        if (outcome.ok) {
          for (const meta of metas) {
            for (const p of meta.layout) {
              if (p.primary === node) successful++;
              successful += p.replicas.filter((r) => r === node).length;
            }
          }
        }
      }),
    );
    return { total, successful };
  }

  /** One request per primary's node, carrying all its shard batches. */
  executeBatches(
    batches: readonly ShardBatch[],
    refresh: RefreshPolicy,
    responses: (Record<string, unknown> | undefined)[],
  ): Promise<unknown> {
    const byNode = new Map<string, ShardBatch[]>();
    for (const batch of batches) {
      const node = this.#metadata.get(batch.index)!.layout[batch.shard]!.primary;
      const list = byNode.get(node);
      if (list === undefined) byNode.set(node, [batch]);
      else list.push(batch);
    }
    return Promise.all(
      [...byNode].map(([node, nodeBatches]) => this.#sendShardBulks(node, nodeBatches, refresh, responses)),
    );
  }

  /** The shard of a single-shard bulk (see module doc). */
  readonly chooseShard = (index: string, candidates: readonly number[]): number =>
    this.#choice.choose(this.#metadata.get(index)!, candidates);

  // ---- helpers -------------------------------------------------------------------------------------

  async #sendShardBulks(
    node: string,
    batches: readonly ShardBatch[],
    refresh: RefreshPolicy,
    responses: (Record<string, unknown> | undefined)[],
  ): Promise<void> {
    this.#requests.set(node, (this.#requests.get(node) ?? 0) + 1);
    const ranking = this.#options.ranking;
    ranking.onSend(node);
    let outcome: Awaited<ReturnType<typeof callInternal>>;
    try {
      outcome = await callInternal(
        this.#options.nodes.get(node)!,
        SHARD_BULK_PATH,
        'POST',
        encodeShardBulkRequest({
          refresh,
          shards: batches.map((b) => ({
            index: b.index,
            shard: b.shard,
            items: b.items.map(toShardWriteItem),
          })),
        }),
        this.#callOptions(),
      );
    } finally {
      ranking.onDone(node);
    }
    this.#options.collector.ingest(node, outcome.statsHeader);
    const failAll = (
      items: readonly PlannedItem[],
      status: number,
      error: { type: string; reason: string },
    ) => {
      if (status === 429) this.#rejectedItems += items.length;
      else this.#failedItems += items.length;
      for (const planned of items) responses[planned.position] = shardFailureResponse(planned, status, error);
    };
    if (!outcome.ok) {
      if (outcome.status === 0) this.#options.markDown(node);
      const status = outcome.status === 429 ? 429 : 503;
      const type =
        outcome.status === 429 ? 'es_rejected_execution_exception' : 'unavailable_shards_exception';
      for (const b of batches) {
        failAll(b.items, status, {
          type,
          reason: `primary shard [${b.index}][${b.shard}] on [${node}] failed: ${outcome.reason.reason}`,
        });
      }
      return;
    }
    // `ok` answers are objects (`callInternal`), so this cannot throw.
    const answer = decodeShardBulkAnswer(outcome.body);
    // The primary's answer waited for its replicas: their time is theirs (reported below), not its own.
    let replicationNs = 0;
    for (const r of answer.shards) {
      const ns = r.ok ? Number(r.outcome.replicationNs ?? 0) : 0;
      if (Number.isFinite(ns) && ns > replicationNs) replicationNs = ns;
    }
    const own = Math.max(0, outcome.responseTimeNs - replicationNs);
    this.#choice.sampled(node);
    ranking.recordResponse(node, {
      responseTimeNs: own,
      serviceTimeNs: Math.min(Math.max(0, answer.serviceTimeNs - replicationNs), own),
      queueSize: 0,
    });
    for (const batch of batches) {
      const result = answer.shards.find((r) => r.index === batch.index && r.shard === batch.shard);
      if (result === undefined) {
        failAll(batch.items, 502, { type: 'exception', reason: `[${node}] gave no result for the shard` });
        continue;
      }
      if (!result.ok) {
        failAll(batch.items, result.status, result.error);
        continue;
      }
      const shardOutcome = result.outcome;
      for (const timing of shardOutcome.replicaTimings ?? []) {
        this.#choice.sampled(timing.node);
        ranking.recordResponse(timing.node, {
          responseTimeNs: timing.responseTimeNs,
          serviceTimeNs: Math.min(timing.serviceTimeNs, timing.responseTimeNs),
          queueSize: 0,
        });
      }
      assignResults(batch.items, batch.shard, shardOutcome, responses);
    }
  }

  #deleteEverywhere(meta: IndexMetadata): Promise<void> {
    return this.#everyNode((url) =>
      callInternal(url, indexPath(meta.name, meta.uuid), 'DELETE', undefined, this.#callOptions()),
    );
  }

  /** How every internal call of the write side is made: the shard time-out, the secret, the closing signal. */
  #callOptions(): InternalCallOptions {
    return {
      timeoutMs: this.#options.timeoutMs,
      secret: this.#options.clusterSecret,
      signal: this.#options.signal,
    };
  }

  /** Runs `call` on every data node; throws EngineFailureError naming the nodes that failed. */
  async #everyNode(call: (url: string) => ReturnType<typeof callInternal>): Promise<void> {
    const failures: string[] = [];
    // With cluster state, a node that is not registered reads the metadata from etcd when it returns.
    const isLive = this.#options.isLive ?? (() => true);
    await Promise.all(
      this.#nodeIds.filter(isLive).map(async (node) => {
        const outcome = await call(this.#options.nodes.get(node)!);
        this.#options.collector.ingest(node, outcome.statsHeader);
        if (!outcome.ok) failures.push(`[${node}] ${outcome.status}: ${outcome.reason.reason}`);
      }),
    );
    if (failures.length > 0) {
      throw new EngineFailureError(`data nodes refused or did not answer: ${failures.join('; ')}`);
    }
  }
}

/** Options of `openClusterIndices`: the placement's, less the metadata it opens. */
export interface ClusterIndicesOptions extends Omit<RemotePlacementOptions, 'metadata' | 'tracked'> {
  /** Index names served read-only by the data nodes' engine (the corpus). */
  readonly readOnlyIndices: readonly string[];
  /** `<dataDir>/indices/metadata.json`. */
  readonly metadataPath: string;
  /**
   * The metadata in the cluster state (etcd) instead of the file: shared with the data nodes, with
   * in-sync sets and primary terms, and failover (`failOver`). @default the file
   */
  readonly metadataPersistence?: MetadataPersistence | undefined;
  /** Indexing-pressure limit, bytes. @default 10 % of the heap limit */
  readonly indexingPressureBytes?: number | undefined;
  readonly bulk?: BulkRequestParserOptions | undefined;
}

/**
 * Loads the coordinator's metadata and builds the index service over the data nodes.
 * @throws the errors of `IndexMetadataStore.open`; InvalidArgumentError for a bad option.
 */
export async function openClusterIndices(options: ClusterIndicesOptions): Promise<ClusterIndices> {
  const metadata = await IndexMetadataStore.open({
    path: options.metadataPath,
    persistence: options.metadataPersistence,
    reservedNames: options.readOnlyIndices,
    maxShardCopies: 1000 * Math.max(1, options.nodes.size),
  });
  const placement = new RemotePlacement({
    ...options,
    metadata,
    tracked: options.metadataPersistence !== undefined,
  });
  return new IndexService(metadata, placement, {
    pressure: new IndexingPressure(options.indexingPressureBytes),
    bulk: options.bulk,
  });
}

/** The write side's counters: the service's and the placement's. */
export function clusterWriteStats(indices: ClusterIndices): ClusterWriteStats {
  const service = indices.stats();
  const placement = indices.placement.stats();
  return {
    bulks: service.bulks,
    rejectedBulks: service.rejectedBulks,
    ...placement,
    pressure: service.pressure,
  };
}
