/**
 * The write side of a cluster coordinator: it owns the writable indices' metadata (settings,
 * templates, where each shard's copies live), serves the index APIs, and routes bulks to primaries.
 *
 * Index creation (`PUT /{index}`, or a bulk naming a missing index): settings resolved with the
 * templates, then one primary and `min(number_of_replicas, data nodes − 1)` replicas per shard placed
 * round-robin over the data nodes (shard `k` of the n-th shard created on the cluster: primary on node
 * `n mod N`, replica on the next), saved in `<dataDir>/indices/metadata.json`, and sent to every data
 * node (`PUT /_internal/indices/{index}`); a node that refuses undoes the creation everywhere.
 *
 * A bulk: indexing pressure (`coordinating`: the body's bytes in flight, 429 over the limit), parse
 * (`BulkRequestParser`), auto-create, plan (`BulkPlanner`), then one `POST /_internal/bulk` per primary
 * node with all of that node's shard bulks; each primary writes its log, waits for its replicas and
 * answers per item. Items whose node does not answer fail with 503 `unavailable_shards_exception`
 * (429 when the node refused for its own indexing pressure); the others stand.
 *
 * Single-shard bulks (`index.bulk_routing.enabled`): the planner asks `chooseShard` for one shard per
 * index and bulk. The choice avoids sick nodes, as the seed's long-tail shards:
 * 1. every data node holding a copy of the index has write-side figures in a `ReplicaRanking` of its
 *    own (EWMAs, α 0.3, of the response and service times of the shard bulks sent to it, less the time
 *    its primaries waited for their replicas, and of the replication requests its primaries measured:
 *    a replica's slowness is charged to the replica's node, not to its primary's);
 * 2. a node is unhealthy when its fresh piggy-backed stats put it in duress (CPU ≥ 0.9 or heap ≥ 0.7),
 *    when it did not answer within the last `failedNodeBackoffMs`, or when its response-time EWMA is
 *    above `slowNodeFactor` (2) × the median of the nodes' EWMAs; a slow node without news for
 *    `slowNodeRetryMs` (5 s) takes one probe bulk, and stays excluded until its answer comes (then for
 *    another 5 s if it is still slow), as Elasticsearch's ARS probes stat-less nodes with a bounded
 *    number of requests in flight (its blending of figures kept sending a sick node one bulk in five);
 * 3. the shard is drawn at random among those whose primary and replicas are all on healthy nodes;
 *    if none, among those whose primary is; if none, among all. Without any stats every node is healthy,
 *    so the choice is uniformly random, as in the seed's proposal.
 */
import type pino from 'pino';
import type { ReplicaRanking } from '../admission/replica-ranking.js';
import type { StatsCollector } from '../admission/stats-collector.js';
import { resolveIndexExpression } from '../classify/index-expression.js';
import {
  EngineFailureError,
  IndexNotFoundError,
  IndexReadOnlyError,
  InvalidArgumentError,
} from '../errors.js';
import {
  prepareBulkIndices,
  runBulk,
  type RefreshPolicy,
  shardFailureResponse,
  toShardWriteItem,
} from '../bulk/bulk-response.js';
import { IndexingPressure } from '../indices/indexing-pressure.js';
import {
  type IndexMetadata,
  IndexMetadataStore,
  inSyncCopies,
  type MetadataPersistence,
  type ShardPlacement,
} from '../indices/index-metadata-store.js';
import { failOverPlacement } from './failover.js';
import {
  type CreateIndexBody,
  parseCreateIndexBody,
  parseSettingsUpdateBody,
} from '../indices/index-settings.js';
import {
  assignResults,
  type BulkParameters,
  type BulkResponse,
  type CatShardRow,
  type GetResponse,
  getShard,
  type IndexApi,
  mappingsView,
  settingsView,
  templateView,
} from '../indices/writable-indices.js';
import { BulkPlanner, type PlannedItem, type ShardBatch } from '../bulk/bulk-planner.js';
import { type BulkItem, BulkRequestParser, type BulkRequestParserOptions } from '../bulk/bulk-request.js';
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

/** What the coordinator lends its write side. */
export interface ClusterWritesOptions {
  /** The data nodes, in discovery order, and their URLs. */
  readonly nodes: ReadonlyMap<string, string>;
  /** Index names served read-only by the data nodes' engine (the corpus). */
  readonly readOnlyIndices: readonly string[];
  /** `<dataDir>/indices/metadata.json`. */
  readonly metadataPath: string;
  /**
   * The metadata in the cluster state (etcd) instead of the file: shared with the data nodes, with
   * in-sync sets and primary terms, and failover (`failOver`). @default the file
   */
  readonly metadataPersistence?: MetadataPersistence | undefined;
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
  /** Indexing-pressure limit, bytes. @default 10 % of the heap limit */
  readonly indexingPressureBytes?: number | undefined;
  /** Unhealthy above this × the median response-time EWMA. @default 2 */
  readonly slowNodeFactor?: number | undefined;
  /** A slow node's figures older than this no longer exclude it, ms. @default 5000 */
  readonly slowNodeRetryMs?: number | undefined;
  readonly bulk?: BulkRequestParserOptions | undefined;
  readonly signal: AbortSignal;
  readonly log: pino.Logger;
  /** Random draws of the shard choice, in [0, 1). @default Math.random */
  readonly random?: (() => number) | undefined;
}

/** Counters of the write side (a plain snapshot). */
export interface ClusterWriteStats {
  readonly bulks: number;
  /** Bulks refused as a whole for indexing pressure at the coordinator. */
  readonly rejectedBulks: number;
  /** Items answered 429 (a data node's indexing pressure). */
  readonly rejectedItems: number;
  /** Items that failed for an unreachable or failing primary node. */
  readonly failedItems: number;
  /** Shard-bulk requests sent, per data node. */
  readonly shardBulkRequests: Readonly<Record<string, number>>;
  /** Shards chosen for single-shard bulks, per primary node. */
  readonly chosenShards: Readonly<Record<string, number>>;
  readonly pressure: ReturnType<IndexingPressure['stats']>;
}

/** The coordinator's write side (see module doc). */
export class ClusterWrites implements IndexApi {
  readonly metadata: IndexMetadataStore;
  readonly pressure: IndexingPressure;
  readonly #options: ClusterWritesOptions;
  readonly #nodeIds: readonly string[];
  readonly #parser: BulkRequestParser;
  readonly #planner: BulkPlanner;
  readonly #slowFactor: number;
  readonly #slowRetryMs: number;
  /** When each node's write figures last changed, ms (performance.now()). */
  readonly #lastSampleMs = new Map<string, number>();
  /** When a slow node last got a probe bulk, ms (performance.now()). */
  readonly #probeSentMs = new Map<string, number>();
  readonly #random: () => number;
  readonly #creating = new Map<string, Promise<IndexMetadata>>();
  #bulks = 0;
  #rejectedBulks = 0;
  #rejectedItems = 0;
  #failedItems = 0;
  readonly #requests = new Map<string, number>();
  readonly #chosen = new Map<string, number>();

  private constructor(options: ClusterWritesOptions, metadata: IndexMetadataStore) {
    this.#options = options;
    this.metadata = metadata;
    this.#nodeIds = [...options.nodes.keys()];
    this.pressure = new IndexingPressure(options.indexingPressureBytes);
    this.#parser = new BulkRequestParser(options.bulk);
    this.#planner = new BulkPlanner({ chooseShard: (index, candidates) => this.#chooseShard(index, candidates) });
    const factor = options.slowNodeFactor ?? 2;
    if (typeof factor !== 'number' || !(factor > 1)) {
      throw new InvalidArgumentError('options.slowNodeFactor', 'must be a number > 1', factor);
    }
    this.#slowFactor = factor;
    const retry = options.slowNodeRetryMs ?? 5000;
    if (!Number.isFinite(retry) || retry < 0) {
      throw new InvalidArgumentError('options.slowNodeRetryMs', 'must be a number of ms >= 0', retry);
    }
    this.#slowRetryMs = retry;
    this.#random = options.random ?? Math.random;
  }

  /** Loads the metadata. @throws the errors of `IndexMetadataStore.open`. */
  static async open(options: ClusterWritesOptions): Promise<ClusterWrites> {
    const metadata = await IndexMetadataStore.open({
      path: options.metadataPath,
      persistence: options.metadataPersistence,
      reservedNames: options.readOnlyIndices,
      maxShardCopies: 1000 * Math.max(1, options.nodes.size),
    });
    return new ClusterWrites(options, metadata);
  }

  /** Writable index names, creation order. */
  names(): readonly string[] {
    return this.metadata.names();
  }

  /** Shards of a writable index; undefined for another name. */
  shardsOf(index: string): number | undefined {
    return this.metadata.get(index)?.settings.numberOfShards;
  }

  /** Nodes holding a copy of the shard that may serve searches (in sync), the primary's first. */
  copiesOf(index: string, shard: number): readonly string[] {
    const placement = this.metadata.get(index)?.layout[shard];
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
    await this.metadata.updateShardTables((meta, p, shard) => {
      const next = failOverPlacement(p, isLive);
      if (next !== p) made.set(`[${meta.name}][${shard}]`, `${p.primary} -> ${next.primary} (term ${next.primaryTerm})`);
      return next;
    });
    const promotions = [...made].map(([shard, change]) => `${shard} ${change}`);
    if (promotions.length > 0) this.#options.log.warn({ promotions }, 'primaries failed over to in-sync replicas');
    return promotions;
  }

  stats(): ClusterWriteStats {
    return {
      bulks: this.#bulks,
      rejectedBulks: this.#rejectedBulks,
      rejectedItems: this.#rejectedItems,
      failedItems: this.#failedItems,
      shardBulkRequests: Object.fromEntries(this.#requests),
      chosenShards: Object.fromEntries(this.#chosen),
      pressure: this.pressure.stats(),
    };
  }

  // ---- index APIs ----------------------------------------------------------------------------------

  async createIndex(name: string, body: unknown): Promise<Record<string, unknown>> {
    const request = parseCreateIndexBody(body);
    await this.#create(name, request);
    return { acknowledged: true, shards_acknowledged: true, index: name };
  }

  async deleteIndex(expression: string): Promise<Record<string, unknown>> {
    for (const part of expression.split(',')) {
      if (part.includes('*') || part === '_all') {
        throw new InvalidArgumentError(
          'index',
          'must name indices to delete (wildcard expressions or all indices are not allowed: action.destructive_requires_name)',
          expression,
        );
      }
    }
    for (const name of this.#resolve(expression, 'delete')) {
      const meta = await this.metadata.deleteIndex(name);
      await this.#everyNode((url) =>
        callInternal(
          url,
          indexPath(name, meta.uuid),
          'DELETE',
          undefined,
          this.#callOptions(),
        ),
      ).catch((error: unknown) => {
        this.#options.log.warn({ index: name, error: String(error) }, 'index deleted, but not on every data node');
      });
    }
    return { acknowledged: true };
  }

  async updateSettings(expression: string, body: unknown): Promise<Record<string, unknown>> {
    const update = parseSettingsUpdateBody(body);
    for (const name of this.#resolve(expression, 'change the settings of')) {
      const meta = await this.metadata.updateSettings(name, update, (before, after) => {
        if (before.numberOfReplicas !== after.numberOfReplicas) {
          throw new InvalidArgumentError(
            'settings.index.number_of_replicas',
            `cannot change on this cluster after the index is created (copies are placed once; it is ${before.numberOfReplicas})`,
            after.numberOfReplicas,
          );
        }
      });
      await this.#everyNode((url) =>
        callInternal(
          url,
          indexSettingsPath(name),
          'PUT',
          encodeSettingsRequest(meta.uuid, meta.settings.explicit),
          this.#callOptions(),
        ),
      );
    }
    return { acknowledged: true };
  }

  getSettings(expression: string): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const name of this.#resolve(expression, undefined)) out[name] = settingsView(this.metadata.get(name)!);
    return out;
  }

  getMappings(expression: string): Record<string, unknown> {
    return mappingsView(this.metadata, this.#resolve(expression, undefined));
  }

  async putTemplate(name: string, body: unknown, create: boolean): Promise<Record<string, unknown>> {
    await this.metadata.putTemplate(name, body, create);
    return { acknowledged: true };
  }

  async deleteTemplate(name: string): Promise<Record<string, unknown>> {
    await this.metadata.deleteTemplate(name);
    return { acknowledged: true };
  }

  getTemplates(name?: string): Record<string, unknown> {
    const list = name === undefined ? this.metadata.templates() : [this.metadata.template(name)].flatMap((t) => t ?? []);
    return { index_templates: list.map(templateView) };
  }

  /**
   * Real-time GET on the shard's primary, or a replica when the primary's node does not answer.
   * @throws IndexNotFoundError; InvalidArgumentError (`routing`); EngineFailureError when no copy answers.
   */
  async getDocument(index: string, id: string, routing: string | undefined): Promise<GetResponse> {
    const meta = this.metadata.get(index);
    if (meta === undefined) throw new IndexNotFoundError(index);
    const shard = getShard(meta.settings, index, id, routing);
    const copies = this.copiesOf(index, shard);
    const order = [...copies.filter((n) => !this.#options.isDown(n)), ...copies.filter((n) => this.#options.isDown(n))];
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

  /** Every copy of the writable indices, from the data nodes' own rows; a copy whose node did not answer is `UNASSIGNED`. */
  async catShards(expression = '_all'): Promise<CatShardRow[]> {
    const names = this.#resolve(expression, undefined);
    const found = new Map<string, CatShardRow>();
    await Promise.all(
      this.#nodeIds.map(async (node) => {
        const outcome = await callInternal(
          this.#options.nodes.get(node)!,
          CAT_SHARDS_PATH,
          'GET',
          undefined,
          { ...this.#callOptions(), timeoutMs: Math.min(5000, this.#options.timeoutMs) },
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
    for (const name of names) {
      const meta = this.metadata.get(name)!;
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
          rows.push({ index: name, shard: String(shard), prirep: 'r', state: 'UNASSIGNED', docs: null, node: null });
        }
      });
    }
    return rows;
  }

  async refresh(expression = '_all'): Promise<Record<string, unknown>> {
    const names = this.#resolve(expression, undefined);
    let total = 0;
    for (const name of names) total += this.metadata.get(name)!.layout.reduce((n, p) => n + 1 + p.replicas.length, 0);
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
          for (const name of names) {
            for (const p of this.metadata.get(name)!.layout) {
              if (p.primary === node) successful++;
              successful += p.replicas.filter((r) => r === node).length;
            }
          }
        }
      }),
    );
    return { _shards: { total, successful, failed: total - successful } };
  }

  // ---- bulk ----------------------------------------------------------------------------------------

  /**
   * A bulk over the cluster (see module doc).
   * @throws InvalidBulkError for a body refused as a whole; WriteRejectedError for indexing pressure.
   */
  async bulk(body: string | Uint8Array, parameters: BulkParameters = {}): Promise<BulkResponse> {
    const started = performance.now();
    const bytes = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
    let release: () => void;
    try {
      release = this.pressure.acquire(bytes, 'coordinating');
    } catch (error) {
      this.#rejectedBulks++;
      throw error;
    }
    this.#bulks++;
    try {
      return await runBulk(body, parameters, started, {
        parser: this.#parser,
        planner: this.#planner,
        prepare: (items) => this.#prepareIndices(items),
        routingOf: (name) => this.metadata.get(name)?.settings,
        execute: (batches, refresh, responses) => {
          // One request per primary's node, carrying all its shard batches.
          const byNode = new Map<string, ShardBatch[]>();
          for (const batch of batches) {
            const node = this.metadata.get(batch.index)!.layout[batch.shard]!.primary;
            const list = byNode.get(node);
            if (list === undefined) byNode.set(node, [batch]);
            else list.push(batch);
          }
          return Promise.all(
            [...byNode].map(([node, nodeBatches]) => this.#sendShardBulks(node, nodeBatches, refresh, responses)),
          );
        },
      });
    } finally {
      release();
    }
  }

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
          shards: batches.map((b) => ({ index: b.index, shard: b.shard, items: b.items.map(toShardWriteItem) })),
        }),
        this.#callOptions(),
      );
    } finally {
      ranking.onDone(node);
    }
    this.#options.collector.ingest(node, outcome.statsHeader);
    const failAll = (items: readonly PlannedItem[], status: number, error: { type: string; reason: string }) => {
      if (status === 429) this.#rejectedItems += items.length;
      else this.#failedItems += items.length;
      for (const planned of items) responses[planned.position] = shardFailureResponse(planned, status, error);
    };
    if (!outcome.ok) {
      if (outcome.status === 0) this.#options.markDown(node);
      const status = outcome.status === 429 ? 429 : 503;
      const type = outcome.status === 429 ? 'es_rejected_execution_exception' : 'unavailable_shards_exception';
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
    this.#lastSampleMs.set(node, performance.now());
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
        this.#lastSampleMs.set(timing.node, performance.now());
        ranking.recordResponse(timing.node, {
          responseTimeNs: timing.responseTimeNs,
          serviceTimeNs: Math.min(timing.serviceTimeNs, timing.responseTimeNs),
          queueSize: 0,
        });
      }
      assignResults(batch.items, batch.shard, shardOutcome, responses);
    }
  }

  /** The shard of a single-shard bulk (see module doc). */
  #chooseShard(index: string, candidates: readonly number[]): number {
    const meta = this.metadata.get(index)!;
    const nodes = [...new Set(meta.layout.flatMap((p) => [p.primary, ...p.replicas]))];
    const ranking = this.#options.ranking;
    const nowMs = performance.now();
    const times = nodes
      .map((n) => ranking.nodeStats(n)?.responseTimeNs)
      .filter((t): t is number => t !== undefined)
      .sort((a, b) => a - b);
    const median = times.length >= 2 ? times[Math.floor((times.length - 1) / 2)]! : undefined;
    const healthy = new Map<string, boolean>();
    const probes = new Set<string>();
    for (const n of nodes) {
      const stats = ranking.nodeStats(n);
      let slow = median !== undefined && stats !== undefined && stats.responseTimeNs > this.#slowFactor * median;
      if (slow) {
        // Slow figures go stale after slowNodeRetryMs without news: the node may take one probe bulk.
        const since = Math.max(this.#lastSampleMs.get(n) ?? 0, this.#probeSentMs.get(n) ?? 0);
        if (nowMs - since >= this.#slowRetryMs) {
          slow = false;
          probes.add(n);
        }
      }
      healthy.set(
        n,
        !slow && !this.#options.isDown(n) && !ranking.isInDuress(this.#options.collector.get(n)),
      );
    }
    const ok = (n: string) => healthy.get(n) === true;
    const tiers = [
      candidates.filter((s) => {
        const p = meta.layout[s]!;
        return ok(p.primary) && p.replicas.every(ok);
      }),
      candidates.filter((s) => ok(meta.layout[s]!.primary)),
      candidates,
    ];
    const tier = tiers.find((t) => t.length > 0)!;
    const shard = tier[Math.min(tier.length - 1, Math.floor(this.#random() * tier.length))]!;
    const primary = meta.layout[shard]!.primary;
    for (const n of [primary, ...meta.layout[shard]!.replicas]) if (probes.has(n)) this.#probeSentMs.set(n, nowMs);
    this.#chosen.set(primary, (this.#chosen.get(primary) ?? 0) + 1);
    return shard;
  }

  #prepareIndices(items: readonly BulkItem[]): ReturnType<typeof prepareBulkIndices> {
    return prepareBulkIndices(items, {
      isReserved: (index) => this.metadata.isReserved(index),
      has: (index) => this.metadata.get(index) !== undefined,
      creating: (index) => this.#creating.get(index),
      create: (index) => this.#create(index, { settings: {}, mappings: undefined }),
    });
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
    const nodes = this.#nodeIds;
    const n = nodes.length;
    const offset = this.metadata.list().reduce((sum, m) => sum + m.settings.numberOfShards, 0);
    const meta = await this.metadata.createIndex(name, request, (settings) => {
      const replicas = Math.min(settings.numberOfReplicas, n - 1);
      const tracked = this.#options.metadataPersistence !== undefined;
      const layout = Array.from({ length: settings.numberOfShards }, (_, shard): ShardPlacement => {
        const k = offset + shard;
        const primary = nodes[k % n]!;
        const copies = Array.from({ length: replicas }, (_, r) => nodes[(k + r + 1) % n]!);
        // With cluster state: every copy starts empty, hence in sync, at term 1.
        return tracked ? { primary, replicas: copies, inSync: [primary, ...copies], primaryTerm: 1 } : { primary, replicas: copies };
      });
      return { layout, nodes: Object.fromEntries(this.#options.nodes) };
    });
    try {
      await this.#everyNode((url) =>
        callInternal(
          url,
          indexPath(name),
          'PUT',
          encodeIndexMetadataRequest(meta),
          this.#callOptions(),
        ),
      );
    } catch (error) {
      await this.metadata.deleteIndex(name).catch(() => undefined);
      await this.#everyNode((url) =>
        callInternal(
          url,
          indexPath(name, meta.uuid),
          'DELETE',
          undefined,
          this.#callOptions(),
        ),
      ).catch(() => undefined);
      throw error;
    }
    this.#options.log.info({ index: name, uuid: meta.uuid, layout: meta.layout }, 'index created on the cluster');
    return meta;
  }

  /** How every internal call of the write side is made: the shard time-out, the secret, the closing signal. */
  #callOptions(): InternalCallOptions {
    return { timeoutMs: this.#options.timeoutMs, secret: this.#options.clusterSecret, signal: this.#options.signal };
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

  #resolve(expression: string, action: string | undefined): string[] {
    if (action !== undefined) {
      for (const part of expression.split(',')) {
        if (this.metadata.isReserved(part)) throw new IndexReadOnlyError(part, `cannot ${action} it`);
      }
    }
    return resolveIndexExpression(expression, this.names());
  }
}
