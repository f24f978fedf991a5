/**
 * The index service: the index and bulk APIs (`IndexApi`) with their rules held once, for a single
 * node and for a cluster coordinator alike. Where the shard copies live is the placement's
 * (`IndexPlacement`): `LocalPlacement` (indices/local-placement.ts) holds them on this node,
 * `RemotePlacement` (cluster/remote-placement.ts) on the data nodes, reached over the internal protocol.
 *
 * The service holds:
 * - names: a corpus (read-only) index is refused by every API that would change it
 *   (`IndexReadOnlyError`, 403); index expressions resolve over the writable names only;
 * - `DELETE /{index}` names its indices: a wildcard or `_all` is refused with 400, as Elasticsearch's
 *   `action.destructive_requires_name` (true by default since 8.0) does;
 * - the create and settings bodies (`parseCreateIndexBody`, `parseSettingsUpdateBody`: 400 naming the
 *   field and value), a creation in flight that a bulk naming the index waits for, and a creation
 *   undone in the metadata when the placement cannot open its copies;
 * - the bulk path: indexing pressure (`coordinating`, the body's bytes; 429 over the limit), parse,
 *   auto-create (`action.auto_create_index`, templates applied), plan, then the placement runs the
 *   shard batches;
 * - the answers' shapes (index-api.ts), and the searchable-index list a search resolves over (the
 *   engine's or the data nodes' read-only indices followed by the writable ones), rebuilt only when
 *   either changes.
 */
import { resolveIndexExpression } from '../classify/index-expression.js';
import { IndexNotFoundError, IndexReadOnlyError, InvalidArgumentError } from '../errors.js';
import { BulkPlanner, type ChooseShard, type ShardBatch } from '../bulk/bulk-planner.js';
import { type BulkItem, BulkRequestParser, type BulkRequestParserOptions } from '../bulk/bulk-request.js';
import {
  type BulkParameters,
  type BulkResponse,
  prepareBulkIndices,
  type RefreshPolicy,
  runBulk,
} from '../bulk/bulk-response.js';
import {
  type CatShardRow,
  type GetResponse,
  getShard,
  type IndexApi,
  mappingsView,
  settingsView,
  templateView,
} from './index-api.js';
import type { IndexMetadata, IndexMetadataStore, PlaceIndex } from './index-metadata-store.js';
import {
  type CreateIndexBody,
  type IndexSettings,
  parseCreateIndexBody,
  parseSettingsUpdateBody,
} from './index-settings.js';
import { IndexingPressure } from './indexing-pressure.js';

/**
 * Where the shard copies of the writable indices live, and how the service reaches them. Every method
 * gets metadata the service already checked (the index exists, the name is writable).
 */
export interface IndexPlacement {
  /** Where the copies of a new index go (the metadata store saves it with the index). */
  place(settings: IndexSettings): ReturnType<PlaceIndex>;
  /** Opens the copies of an index just saved in the metadata. @throws when it cannot: the creation is undone. */
  openIndex(meta: IndexMetadata): Promise<void>;
  /** Removes what a failed `openIndex` left (the metadata is already deleted); never throws. */
  abandonIndex?(meta: IndexMetadata): Promise<void>;
  /** Removes the copies of an index deleted from the metadata. */
  removeIndex(meta: IndexMetadata): Promise<void>;
  /** Refuses a settings change the placement cannot follow (throws InvalidArgumentError). */
  checkSettings?(before: IndexSettings, after: IndexSettings): void;
  /** Applies an index's new settings to its copies. */
  applySettings(meta: IndexMetadata): void | Promise<void>;
  /** A real-time GET of document `id` in shard `shard` of the index. */
  getDocument(meta: IndexMetadata, shard: number, id: string): GetResponse | Promise<GetResponse>;
  /** `_cat/shards` rows of the indices' copies (every copy, unassigned replicas included). */
  catShards(metas: readonly IndexMetadata[]): CatShardRow[] | Promise<CatShardRow[]>;
  /** Refreshes every copy of the indices. @returns the copies counted and those refreshed. */
  refresh(
    metas: readonly IndexMetadata[],
  ): { total: number; successful: number } | Promise<{ total: number; successful: number }>;
  /** Runs a bulk's shard batches, writing each item's response at its position; never rejects for one shard. */
  executeBatches(
    batches: readonly ShardBatch[],
    refresh: RefreshPolicy,
    responses: (Record<string, unknown> | undefined)[],
  ): Promise<unknown>;
  /** The shard of a single-shard bulk. @default uniform random */
  readonly chooseShard?: ChooseShard | undefined;
}

/** Options of `IndexService`. */
export interface IndexServiceOptions {
  /** Indexing-pressure limit, bytes (shared with the placement when it takes one). @default 10 % of the heap limit */
  readonly pressure?: IndexingPressure | undefined;
  /** Bulk parser limits. */
  readonly bulk?: BulkRequestParserOptions | undefined;
  /**
   * Set on a cluster data node: the APIs that change indices or templates (create, delete, settings,
   * templates, bulk) are the coordinator's, and answer 400 with this text. @default served
   */
  readonly refuseChanges?: string | undefined;
  /** Logs a created index (`{index, uuid, ...}`). @default nothing */
  readonly onCreated?: ((meta: IndexMetadata) => void) | undefined;
}

/** Counters of the service (a plain snapshot). */
export interface IndexServiceStats {
  /** Bulks taken (past the coordinating indexing pressure). */
  readonly bulks: number;
  /** Bulks refused as a whole for indexing pressure. */
  readonly rejectedBulks: number;
  readonly pressure: ReturnType<IndexingPressure['stats']>;
}

/** The index service (see module doc). */
export class IndexService<P extends IndexPlacement = IndexPlacement> implements IndexApi {
  readonly metadata: IndexMetadataStore;
  readonly placement: P;
  readonly pressure: IndexingPressure;
  readonly #options: IndexServiceOptions;
  readonly #parser: BulkRequestParser;
  readonly #planner: BulkPlanner;
  /** Indices being created (metadata saved, copies opening): a bulk naming one waits for it. */
  readonly #creating = new Map<string, Promise<IndexMetadata>>();
  /** `searchableIndices()` for `#searchableOf` (the base and the writable names it was built from). */
  #searchable: readonly string[] | undefined;
  #searchableOf: { base: readonly string[] | undefined; names: readonly string[] } | undefined;
  #bulks = 0;
  #rejectedBulks = 0;

  constructor(metadata: IndexMetadataStore, placement: P, options: IndexServiceOptions = {}) {
    this.metadata = metadata;
    this.placement = placement;
    this.#options = options;
    this.pressure = options.pressure ?? new IndexingPressure();
    this.#parser = new BulkRequestParser(options.bulk);
    this.#planner = new BulkPlanner({ chooseShard: placement.chooseShard });
  }

  /** Writable index names, in creation order (the same array until they change). */
  names(): readonly string[] {
    return this.metadata.names();
  }

  has(name: string): boolean {
    return this.metadata.get(name) !== undefined;
  }

  /**
   * The indices a search resolves over: `base` (the engine's or the data nodes' read-only indices)
   * followed by the writable ones; `base` itself while there are none. Read on every search: the
   * array is rebuilt only when `base` or the writable names change.
   */
  searchableIndices(base: readonly string[]): readonly string[];
  searchableIndices(base: readonly string[] | undefined): readonly string[] | undefined;
  searchableIndices(base: readonly string[] | undefined): readonly string[] | undefined {
    const names = this.metadata.names();
    if (names.length === 0) return base;
    const of = this.#searchableOf;
    if (of === undefined || of.base !== base || of.names !== names) {
      this.#searchable = [...(base ?? []), ...names];
      this.#searchableOf = { base, names };
    }
    return this.#searchable;
  }

  stats(): IndexServiceStats {
    return { bulks: this.#bulks, rejectedBulks: this.#rejectedBulks, pressure: this.pressure.stats() };
  }

  // ---- index APIs ----------------------------------------------------------------------------------

  /**
   * `PUT /{index}`. @returns Elasticsearch's answer `{acknowledged, shards_acknowledged, index}`.
   * @throws InvalidArgumentError naming the field and value; IndexExistsError; the placement's error
   *   when it cannot open the copies (the index is not created).
   */
  async createIndex(name: string, body: unknown): Promise<Record<string, unknown>> {
    this.#changes('PUT /{index}');
    const request = parseCreateIndexBody(body);
    await this.#create(name, request);
    return { acknowledged: true, shards_acknowledged: true, index: name };
  }

  /**
   * `DELETE /{index}` (a name or a comma list of names: wildcards are refused, as
   * `action.destructive_requires_name` does). The placement removes the copies.
   * @throws IndexNotFoundError; IndexReadOnlyError for a corpus index; InvalidArgumentError for a wildcard.
   */
  async deleteIndex(expression: string): Promise<Record<string, unknown>> {
    this.#changes('DELETE /{index}');
    for (const name of this.#concreteNames(expression, 'delete')) {
      const meta = await this.metadata.deleteIndex(name);
      await this.placement.removeIndex(meta);
    }
    return { acknowledged: true };
  }

  /**
   * `PUT /{index}/_settings` for each index of the expression (dynamic settings only).
   * @throws InvalidArgumentError naming the setting and value (the placement's refusals included);
   *   IndexNotFoundError; IndexReadOnlyError.
   */
  async updateSettings(expression: string, body: unknown): Promise<Record<string, unknown>> {
    this.#changes('PUT /{index}/_settings');
    const update = parseSettingsUpdateBody(body);
    const check = this.placement.checkSettings?.bind(this.placement);
    for (const name of this.#resolve(expression, 'change the settings of')) {
      const meta = await this.metadata.updateSettings(name, update, check);
      await this.placement.applySettings(meta);
    }
    return { acknowledged: true };
  }

  /** `GET /{index}/_settings`: `{"<index>": {"settings": {"index": {...}}}}`. */
  getSettings(expression: string): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const name of this.#resolve(expression, undefined))
      out[name] = settingsView(this.metadata.get(name)!);
    return out;
  }

  /** `GET /{index}/_mapping`: `{"<index>": {"mappings": {...}}}`. */
  getMappings(expression: string): Record<string, unknown> {
    return mappingsView(this.metadata, this.#resolve(expression, undefined));
  }

  /** `PUT /_index_template/{name}` (`?create=true` refuses to replace). */
  async putTemplate(name: string, body: unknown, create: boolean): Promise<Record<string, unknown>> {
    this.#changes('PUT /_index_template/{name}');
    await this.metadata.putTemplate(name, body, create);
    return { acknowledged: true };
  }

  /** `DELETE /_index_template/{name}`. @throws TemplateNotFoundError. */
  async deleteTemplate(name: string): Promise<Record<string, unknown>> {
    this.#changes('DELETE /_index_template/{name}');
    await this.metadata.deleteTemplate(name);
    return { acknowledged: true };
  }

  /** `GET /_index_template[/{name}]`: `{"index_templates": [{"name", "index_template"}]}`. */
  getTemplates(name?: string): Record<string, unknown> {
    const list =
      name === undefined ? this.metadata.templates() : [this.metadata.template(name)].flatMap((t) => t ?? []);
    return { index_templates: list.map(templateView) };
  }

  /**
   * `GET /{index}/_doc/{id}` (real-time: the placement reads the shard's live documents).
   * @throws IndexNotFoundError; InvalidArgumentError (`routing`) on a partitioned index without routing;
   *   the placement's error when no copy answers.
   */
  getDocument(index: string, id: string, routing: string | undefined): GetResponse | Promise<GetResponse> {
    const meta = this.metadata.get(index);
    if (meta === undefined) throw new IndexNotFoundError(index);
    return this.placement.getDocument(meta, getShard(meta.settings, index, id, routing), id);
  }

  /** `GET /_cat/shards[/{index}]?format=json` rows: every copy, unassigned replicas included. */
  catShards(expression = '_all'): CatShardRow[] | Promise<CatShardRow[]> {
    return this.placement.catShards(this.#metas(expression));
  }

  /** `POST /{index}/_refresh` (or `/_refresh`): `{"_shards": {total, successful, failed}}`. */
  refresh(expression = '_all'): Record<string, unknown> | Promise<Record<string, unknown>> {
    const counted = this.placement.refresh(this.#metas(expression));
    const view = ({ total, successful }: { total: number; successful: number }) => ({
      _shards: { total, successful, failed: total - successful },
    });
    return counted instanceof Promise ? counted.then(view) : view(counted);
  }

  // ---- bulk ----------------------------------------------------------------------------------------

  /**
   * `POST /_bulk`, `POST /{index}/_bulk` (see module doc).
   * @param body the raw NDJSON body.
   * @returns the Elasticsearch bulk response (items in request order).
   * @throws InvalidBulkError for a body refused as a whole; WriteRejectedError for indexing pressure.
   */
  async bulk(body: string | Uint8Array, parameters: BulkParameters = {}): Promise<BulkResponse> {
    this.#changes('POST /_bulk');
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
        execute: (batches, refresh, responses) => this.placement.executeBatches(batches, refresh, responses),
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

  // ---- helpers -------------------------------------------------------------------------------------

  #changes(what: string): void {
    const refusal = this.#options.refuseChanges;
    if (refusal !== undefined) throw new InvalidArgumentError('url', `${refusal} (${what})`, what);
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
    const meta = await this.metadata.createIndex(name, request, (settings) => this.placement.place(settings));
    try {
      await this.placement.openIndex(meta);
    } catch (error) {
      await this.metadata.deleteIndex(name).catch(() => undefined);
      await this.placement.abandonIndex?.(meta);
      throw error;
    }
    this.#options.onCreated?.(meta);
    return meta;
  }

  /** The metadata of the writable indices of an expression. */
  #metas(expression: string): IndexMetadata[] {
    return this.#resolve(expression, undefined).map((name) => this.metadata.get(name)!);
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

  /** Names of a destructive action: wildcards and `_all` refused (`action.destructive_requires_name`). */
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
