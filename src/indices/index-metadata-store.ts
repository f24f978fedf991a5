/**
 * The metadata of writable indices (name, uuid, settings, mappings, where each shard's copies live)
 * and the index templates, kept durably in one JSON file (`<dataDir>/indices/metadata.json`, replaced
 * atomically: temp file, fsync, rename, directory fsync) — the analogue of Elasticsearch's persisted
 * cluster-state metadata. A single node and a cluster coordinator own the full metadata (templates
 * included); a data node keeps the metadata of the indices the coordinator created on it.
 *
 * Changes are validated, then saved, then applied, one at a time in call order: a refused change or a
 * failed save leaves both the file and the memory as they were.
 *
 * File format (`format` 1): `{"format": 1, "indices": [{"name", "uuid", "creation_date_ms",
 * "settings": {"index.number_of_shards": 3, ...} (the explicit values, flat), "mappings",
 * "layout": [{"primary": "<node id>", "replicas": ["<node id>"]}, ...] (one per shard),
 * "nodes": {"<node id>": "http://host:port"}}], "templates": [{"name", "body"}]}`. Everything is checked
 * again when loaded (a template body by `parseIndexTemplate`, settings by `parseSettingValues`).
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { writeFileAtomically } from '../common/durable-file.js';
import {
  IndexExistsError,
  IndexNotFoundError,
  InvalidArgumentError,
  TemplateNotFoundError,
} from '../errors.js';
import { isPlainObject } from '../common/is-plain-object.js';
import { assertIndexName } from '../common/index-name.js';
import {
  applySettingsUpdate,
  type CreateIndexBody,
  explicitSettingsToFlat,
  type IndexSettings,
  type IndexSettingsUpdate,
  parseSettingValues,
  resolveIndexSettings,
} from './index-settings.js';
import { type IndexTemplate, IndexTemplateRegistry, parseIndexTemplate } from './index-templates.js';

/** Where one shard's copies live: node ids (a replica that no node holds is unassigned, not listed). */
export interface ShardPlacement {
  readonly primary: string;
  readonly replicas: readonly string[];
  /**
   * With cluster state in etcd: the copies that hold every acknowledged write (Elasticsearch's in-sync
   * allocation ids), the primary's included. A replica that fails a write is removed before the write
   * is acknowledged; only an in-sync replica may be promoted. Absent: every copy counts as in sync.
   */
  readonly inSync?: readonly string[] | undefined;
  /** With cluster state in etcd: +1 at every promotion of a replica (Elasticsearch's primary term). @default 1 */
  readonly primaryTerm?: number | undefined;
}

/**
 * Where the metadata is kept: a file (one node's), or etcd (a cluster's, shared; see
 * `cluster/etcd-index-metadata.ts`). The store computes every change on the state it holds and saves
 * the whole text; a shared backend compares revisions and says when another writer got there first.
 */
export interface MetadataPersistence {
  /** For messages: a path, an etcd key. */
  readonly location: string;
  /** The stored text, or undefined when nothing is stored. @throws when it cannot be read. */
  load(): Promise<string | undefined>;
  /**
   * Saves `text` if what is stored is still what this backend last loaded or saved.
   * @returns false when another writer changed it first (the store then loads again and recomputes).
   */
  save(text: string): Promise<boolean>;
  /** A shared backend: calls `listener` with each text another writer saved. @returns an unsubscribe. */
  watch?(listener: (text: string) => void): () => void;
}

/** The one-file backend: `writeFileAtomically` (temp file, fsync, rename, directory fsync). */
export class FileMetadataPersistence implements MetadataPersistence {
  readonly location: string;
  constructor(path: string) {
    this.location = path;
  }
  async load(): Promise<string | undefined> {
    try {
      return await readFile(this.location, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      return undefined;
    }
  }
  async save(text: string): Promise<boolean> {
    await writeFileAtomically(this.location, text);
    return true;
  }
}

/** One writable index. */
export interface IndexMetadata {
  readonly name: string;
  /** 22 URL-safe base64 characters, new for every creation. */
  readonly uuid: string;
  readonly creationDateMs: number;
  readonly settings: IndexSettings;
  readonly mappings: Readonly<Record<string, unknown>> | undefined;
  /** One entry per shard, shard order. */
  readonly layout: readonly ShardPlacement[];
  /** Node id to base URL, for the nodes of `layout` (empty on a single node). */
  readonly nodes: Readonly<Record<string, string>>;
}

/** Options of `IndexMetadataStore.open`. */
export interface IndexMetadataStoreOptions {
  /** The metadata file (when no `persistence` is given). */
  readonly path: string;
  /** Where to keep it instead of the file (etcd). @default a FileMetadataPersistence on `path` */
  readonly persistence?: MetadataPersistence | undefined;
  /** Names that are taken by read-only indices (the corpus); creating one answers `IndexExistsError`. */
  readonly reservedNames?: readonly string[] | undefined;
  /**
   * Most shard copies (primaries and assigned replicas, over all indices) the store accepts
   * (Elasticsearch `cluster.max_shards_per_node` × data nodes). @default 1000
   */
  readonly maxShardCopies?: number | undefined;
}

/** What `createIndex` places: the layout and node URLs of a new index, from its resolved settings. */
export type PlaceIndex = (settings: IndexSettings) => {
  readonly layout: readonly ShardPlacement[];
  readonly nodes?: Readonly<Record<string, string>> | undefined;
};

interface StoredTemplate {
  readonly template: IndexTemplate;
  readonly body: unknown;
}

interface State {
  readonly indices: ReadonlyMap<string, IndexMetadata>;
  readonly templates: ReadonlyMap<string, StoredTemplate>;
}

const FORMAT = 1;

function newUuid(): string {
  return randomBytes(16).toString('base64url').slice(0, 22);
}

function copiesOf(meta: IndexMetadata): number {
  return meta.layout.reduce((sum, p) => sum + 1 + p.replicas.length, 0);
}

/** The store (see module doc). */
export class IndexMetadataStore {
  readonly path: string;
  readonly #reserved: ReadonlySet<string>;
  readonly #maxShardCopies: number;
  readonly #persistence: MetadataPersistence;
  readonly #listeners = new Set<() => void>();
  #unwatch: (() => void) | undefined;
  #state: State;
  /** `names()` of `#namesOf`. */
  #names: readonly string[] = [];
  #namesOf: State | undefined;
  #registry: IndexTemplateRegistry;
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(
    path: string,
    reserved: ReadonlySet<string>,
    maxShardCopies: number,
    state: State,
    persistence: MetadataPersistence,
  ) {
    this.path = path;
    this.#persistence = persistence;
    this.#reserved = reserved;
    this.#maxShardCopies = maxShardCopies;
    this.#state = state;
    this.#registry = IndexMetadataStore.#registryOf(state.templates);
  }

  /**
   * Loads the file (an absent file is an empty store).
   * @throws InvalidArgumentError naming the file and the bad entry when it is not a metadata file.
   */
  static async open(options: IndexMetadataStoreOptions): Promise<IndexMetadataStore> {
    const maxShardCopies = options.maxShardCopies ?? 1000;
    if (!Number.isSafeInteger(maxShardCopies) || maxShardCopies < 1) {
      throw new InvalidArgumentError('maxShardCopies', 'must be a positive integer', maxShardCopies);
    }
    const persistence: MetadataPersistence = options.persistence ?? new FileMetadataPersistence(options.path);
    const text = await persistence.load();
    const state =
      text === undefined
        ? { indices: new Map(), templates: new Map() }
        : parseFile(text, persistence.location);
    const store = new IndexMetadataStore(
      options.path,
      new Set(options.reservedNames ?? []),
      maxShardCopies,
      state,
      persistence,
    );
    store.#unwatch = persistence.watch?.((next) => store.#take(next));
    return store;
  }

  /** Calls `listener` after every change of the state (made here or, with a shared backend, elsewhere). */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Reads the stored state again (a shared backend: to be sure of another writer's last change). */
  refresh(): Promise<void> {
    return this.#enqueue(async () => {
      const text = await this.#persistence.load();
      if (text !== undefined) this.#swap(parseFile(text, this.#persistence.location));
    });
  }

  /** Stops taking other writers' changes. */
  close(): void {
    this.#unwatch?.();
    this.#unwatch = undefined;
  }

  /**
   * Changes the shard table of one index: `change(placement, shard)` returns the new placement of a
   * shard, or the same object to keep it. The whole index changes in one save (one etcd transaction).
   * @returns the new metadata, or undefined when nothing changed.
   * @throws IndexNotFoundError when there is no index of that name and uuid; what `change` throws.
   */
  updateShardTable(
    name: string,
    uuid: string,
    change: (placement: ShardPlacement, shard: number) => ShardPlacement,
  ): Promise<IndexMetadata | undefined> {
    return this.#change(async (state) => {
      const existing = state.indices.get(name);
      if (existing === undefined || existing.uuid !== uuid) throw new IndexNotFoundError(name);
      let changed = false;
      const layout = existing.layout.map((p, shard) => {
        const next = change(p, shard);
        if (next !== p) changed = true;
        return next === p ? p : freezePlacement(next);
      });
      if (!changed) return { state, result: undefined };
      const meta = Object.freeze({ ...existing, layout: Object.freeze(layout) });
      const indices = new Map(state.indices);
      indices.set(name, meta);
      return { state: { ...state, indices }, result: meta };
    });
  }

  /**
   * Changes the shard tables of every index in one save (failover): `change(meta, placement, shard)`
   * as in `updateShardTable`. @returns how many indices changed.
   */
  updateShardTables(
    change: (meta: IndexMetadata, placement: ShardPlacement, shard: number) => ShardPlacement,
  ): Promise<number> {
    return this.#change(async (state) => {
      const indices = new Map(state.indices);
      let changedIndices = 0;
      for (const meta of state.indices.values()) {
        let changed = false;
        const layout = meta.layout.map((p, shard) => {
          const next = change(meta, p, shard);
          if (next !== p) changed = true;
          return next === p ? p : freezePlacement(next);
        });
        if (!changed) continue;
        changedIndices++;
        indices.set(meta.name, Object.freeze({ ...meta, layout: Object.freeze(layout) }));
      }
      return changedIndices === 0
        ? { state, result: 0 }
        : { state: { ...state, indices }, result: changedIndices };
    });
  }

  #take(text: string): void {
    let state: State;
    try {
      state = parseFile(text, this.#persistence.location);
    } catch {
      return; // not a metadata document: keep what we have
    }
    this.#swap(state);
  }

  #swap(state: State): void {
    this.#state = state;
    this.#registry = IndexMetadataStore.#registryOf(state.templates);
    for (const listener of this.#listeners) listener();
  }

  /** Writable index names, in creation order. */
  /** Index names in creation order; the same frozen array until the indices change (read per search). */
  names(): readonly string[] {
    if (this.#namesOf !== this.#state) {
      this.#names = Object.freeze([...this.#state.indices.keys()]);
      this.#namesOf = this.#state;
    }
    return this.#names;
  }

  get(name: string): IndexMetadata | undefined {
    return this.#state.indices.get(name);
  }

  /** Every writable index, in creation order. */
  list(): IndexMetadata[] {
    return [...this.#state.indices.values()];
  }

  /** The templates, by name. */
  templates(): IndexTemplate[] {
    return this.#registry.list();
  }

  /** A template, or undefined. */
  template(name: string): IndexTemplate | undefined {
    return this.#registry.get(name);
  }

  /** Whether `name` is a read-only (corpus) index of this node. */
  isReserved(name: string): boolean {
    return this.#reserved.has(name);
  }

  /**
   * Creates an index: checks the name, resolves its settings (the matching template's settings
   * overlaid by the request's), places its shard copies, saves.
   * @throws InvalidArgumentError for a bad name (path `index`) or settings; IndexExistsError for a taken
   *   name; InvalidArgumentError (path `settings.index.number_of_shards`) when the node(s) would hold
   *   more than `maxShardCopies` copies.
   */
  createIndex(name: string, request: CreateIndexBody, place: PlaceIndex): Promise<IndexMetadata> {
    return this.#change(async (state) => {
      assertIndexName(name, 'index');
      if (this.#reserved.has(name)) throw new IndexExistsError(name);
      const existing = state.indices.get(name);
      if (existing !== undefined) throw new IndexExistsError(name, existing.uuid);
      const { settings, mappings } = this.#registry.resolveNewIndex(name, request);
      const placed = place(settings);
      const meta: IndexMetadata = Object.freeze({
        name,
        uuid: newUuid(),
        creationDateMs: Date.now(),
        settings,
        mappings,
        layout: placed.layout,
        nodes: placed.nodes ?? {},
      });
      this.#checkCapacity(state, meta);
      const indices = new Map(state.indices);
      indices.set(name, meta);
      return { state: { ...state, indices }, result: meta };
    });
  }

  /**
   * Stores an index created elsewhere (a data node takes the coordinator's metadata as it is). Taking
   * the same uuid again is a no-op (a retried call).
   * @throws IndexExistsError when another index (another uuid) holds the name.
   */
  adoptIndex(meta: IndexMetadata): Promise<IndexMetadata> {
    return this.#change(async (state) => {
      const existing = state.indices.get(meta.name);
      if (existing !== undefined) {
        if (existing.uuid === meta.uuid) return { state, result: existing };
        throw new IndexExistsError(meta.name, existing.uuid);
      }
      if (this.#reserved.has(meta.name)) throw new IndexExistsError(meta.name);
      const indices = new Map(state.indices);
      indices.set(meta.name, Object.freeze({ ...meta }));
      return { state: { ...state, indices }, result: indices.get(meta.name)! };
    });
  }

  /**
   * Deletes an index's metadata. @returns the deleted metadata.
   * @throws IndexNotFoundError when there is none.
   */
  deleteIndex(name: string): Promise<IndexMetadata> {
    return this.#change(async (state) => {
      const existing = state.indices.get(name);
      if (existing === undefined) throw new IndexNotFoundError(name);
      const indices = new Map(state.indices);
      indices.delete(name);
      return { state: { ...state, indices }, result: existing };
    });
  }

  /**
   * Applies a `_settings` change (dynamic settings only). `check` may refuse the new settings (a
   * cluster refuses a replica count change) by throwing.
   * @returns the new metadata. @throws IndexNotFoundError; InvalidArgumentError from
   *   `applySettingsUpdate` or `check`.
   */
  updateSettings(
    name: string,
    update: IndexSettingsUpdate,
    check?: (before: IndexSettings, after: IndexSettings) => void,
  ): Promise<IndexMetadata> {
    return this.#change(async (state) => {
      const existing = state.indices.get(name);
      if (existing === undefined) throw new IndexNotFoundError(name);
      const settings = applySettingsUpdate(existing.settings, update, { name, uuid: existing.uuid });
      check?.(existing.settings, settings);
      const meta = Object.freeze({ ...existing, settings });
      const indices = new Map(state.indices);
      indices.set(name, meta);
      return { state: { ...state, indices }, result: meta };
    });
  }

  /**
   * Sets (replaces) the explicit settings of an index as another node decided them (a data node takes
   * the coordinator's). @throws IndexNotFoundError.
   */
  replaceSettings(name: string, uuid: string, settings: IndexSettings): Promise<IndexMetadata> {
    return this.#change(async (state) => {
      const existing = state.indices.get(name);
      if (existing === undefined || existing.uuid !== uuid) throw new IndexNotFoundError(name);
      const meta = Object.freeze({ ...existing, settings });
      const indices = new Map(state.indices);
      indices.set(name, meta);
      return { state: { ...state, indices }, result: meta };
    });
  }

  /**
   * Adds or replaces a template (`PUT /_index_template/{name}`).
   * @throws the errors of `parseIndexTemplate` and `IndexTemplateRegistry.put`.
   */
  putTemplate(name: string, body: unknown, create = false): Promise<IndexTemplate> {
    return this.#change(async (state) => {
      const template = parseIndexTemplate(name, body);
      const trial = IndexMetadataStore.#registryOf(state.templates);
      trial.put(template, create);
      const templates = new Map(state.templates);
      templates.set(name, { template, body });
      return { state: { ...state, templates }, result: template };
    });
  }

  /** Deletes a template. @throws TemplateNotFoundError when there is none. */
  deleteTemplate(name: string): Promise<IndexTemplate> {
    return this.#change(async (state) => {
      const existing = state.templates.get(name);
      if (existing === undefined) throw new TemplateNotFoundError(name);
      const templates = new Map(state.templates);
      templates.delete(name);
      return { state: { ...state, templates }, result: existing.template };
    });
  }

  /** The settings a new index named `name` would get (templates applied), without creating it. */
  resolveNewIndex(name: string, request: CreateIndexBody): IndexSettings {
    return this.#registry.resolveNewIndex(name, request).settings;
  }

  #checkCapacity(state: State, meta: IndexMetadata): void {
    let copies = copiesOf(meta);
    for (const other of state.indices.values()) copies += copiesOf(other);
    if (copies > this.#maxShardCopies) {
      throw new InvalidArgumentError(
        'settings.index.number_of_shards',
        `must keep the shard copies at most ${this.#maxShardCopies} (this index would bring them to ${copies}; cluster.max_shards_per_node)`,
        meta.settings.numberOfShards,
      );
    }
  }

  /**
   * Runs one change after the previous ones: compute, save, then swap the state in. With a shared
   * backend a save that lost to another writer loads the stored state and computes again.
   */
  #change<T>(compute: (state: State) => Promise<{ state: State; result: T }>): Promise<T> {
    return this.#enqueue(async () => {
      for (let attempt = 0; attempt < 100; attempt++) {
        const before = this.#state;
        const { state, result } = await compute(before);
        if (state === before) return result;
        if (await this.#persistence.save(formatFile(state))) {
          this.#swap(state);
          return result;
        }
        const text = await this.#persistence.load();
        this.#swap(
          text === undefined
            ? { indices: new Map(), templates: new Map() }
            : parseFile(text, this.#persistence.location),
        );
      }
      throw new Error(
        `index metadata in ${this.#persistence.location} kept changing; gave up after 100 tries`,
      );
    });
  }

  #enqueue<T>(run: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(run);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  static #registryOf(templates: ReadonlyMap<string, StoredTemplate>): IndexTemplateRegistry {
    const registry = new IndexTemplateRegistry();
    for (const { template } of templates.values()) registry.put(template);
    return registry;
  }
}

function formatFile(state: State): string {
  return `${JSON.stringify(
    {
      format: FORMAT,
      indices: [...state.indices.values()].map(formatIndexMetadata),
      templates: [...state.templates.values()].map((t) => ({ name: t.template.name, body: t.body })),
    },
    null,
    2,
  )}\n`;
}

/** Reads a metadata entry as another node sent it or the file holds it. @throws InvalidArgumentError. */
export function parseIndexMetadata(raw: unknown, where: string): IndexMetadata {
  if (!isPlainObject(raw)) throw new InvalidArgumentError(where, 'must be an object', raw);
  const name = assertIndexName(raw['name'], `${where}.name`);
  const uuid = raw['uuid'];
  if (typeof uuid !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(uuid)) {
    throw new InvalidArgumentError(`${where}.uuid`, 'must be 1..64 URL-safe base64 characters', uuid);
  }
  const created = raw['creation_date_ms'];
  if (typeof created !== 'number' || !Number.isSafeInteger(created) || created < 0) {
    throw new InvalidArgumentError(`${where}.creation_date_ms`, 'must be epoch ms', created);
  }
  const settings = resolveIndexSettings(parseSettingValues(raw['settings'] ?? {}, `${where}.settings`), {
    path: `${where}.settings`,
  });
  const mappings = raw['mappings'];
  if (mappings !== undefined && !isPlainObject(mappings)) {
    throw new InvalidArgumentError(`${where}.mappings`, 'must be an object', mappings);
  }
  const layout = raw['layout'];
  if (!Array.isArray(layout) || layout.length !== settings.numberOfShards) {
    throw new InvalidArgumentError(
      `${where}.layout`,
      `must list ${settings.numberOfShards} shard placements`,
      layout,
    );
  }
  const nodeId = /^[A-Za-z0-9_.-]{1,64}$/;
  const placements = layout.map((p, i): ShardPlacement => {
    const path = `${where}.layout[${i}]`;
    if (!isPlainObject(p) || typeof p['primary'] !== 'string' || !nodeId.test(p['primary'])) {
      throw new InvalidArgumentError(path, 'must be {"primary": "<node id>", "replicas": [...]}', p);
    }
    const replicas = p['replicas'];
    if (!Array.isArray(replicas) || !replicas.every((r) => typeof r === 'string' && nodeId.test(r))) {
      throw new InvalidArgumentError(`${path}.replicas`, 'must be a list of node ids', replicas);
    }
    const inSync = p['in_sync'];
    if (
      inSync !== undefined &&
      (!Array.isArray(inSync) || !inSync.every((r) => typeof r === 'string' && nodeId.test(r)))
    ) {
      throw new InvalidArgumentError(`${path}.in_sync`, 'must be a list of node ids', inSync);
    }
    const term = p['primary_term'];
    if (term !== undefined && (!Number.isSafeInteger(term) || (term as number) < 1)) {
      throw new InvalidArgumentError(`${path}.primary_term`, 'must be an integer >= 1', term);
    }
    return freezePlacement({
      primary: p['primary'],
      replicas: replicas as string[],
      inSync: inSync as string[] | undefined,
      primaryTerm: term as number | undefined,
    });
  });
  const nodes = raw['nodes'] ?? {};
  if (!isPlainObject(nodes) || !Object.values(nodes).every((u) => typeof u === 'string')) {
    throw new InvalidArgumentError(`${where}.nodes`, 'must be an object of node id to URL', nodes);
  }
  return Object.freeze({
    name,
    uuid,
    creationDateMs: created,
    settings,
    mappings,
    layout: Object.freeze(placements),
    nodes: Object.freeze({ ...(nodes as Record<string, string>) }),
  });
}

/** The wire and file form of one index's metadata (what `parseIndexMetadata` reads). */
export function formatIndexMetadata(meta: IndexMetadata): Record<string, unknown> {
  return {
    name: meta.name,
    uuid: meta.uuid,
    creation_date_ms: meta.creationDateMs,
    settings: explicitSettingsToFlat(meta.settings.explicit),
    ...(meta.mappings !== undefined ? { mappings: meta.mappings } : {}),
    layout: meta.layout.map((p) => ({
      primary: p.primary,
      replicas: p.replicas,
      ...(p.inSync !== undefined ? { in_sync: p.inSync } : {}),
      ...(p.primaryTerm !== undefined ? { primary_term: p.primaryTerm } : {}),
    })),
    nodes: meta.nodes,
  };
}

/** A frozen placement without undefined fields. */
export function freezePlacement(p: ShardPlacement): ShardPlacement {
  return Object.freeze({
    primary: p.primary,
    replicas: Object.freeze([...p.replicas]),
    ...(p.inSync !== undefined ? { inSync: Object.freeze([...p.inSync]) } : {}),
    ...(p.primaryTerm !== undefined ? { primaryTerm: p.primaryTerm } : {}),
  });
}

/** The copies of a shard that hold every acknowledged write (all of them when not tracked). */
export function inSyncCopies(p: ShardPlacement): readonly string[] {
  return p.inSync ?? [p.primary, ...p.replicas];
}

function parseFile(text: string, path: string): State {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new InvalidArgumentError(
      path,
      `is not valid JSON (${(error as Error).message})`,
      text.slice(0, 80),
    );
  }
  if (!isPlainObject(raw) || raw['format'] !== FORMAT) {
    throw new InvalidArgumentError(
      `${path}: format`,
      `must be ${FORMAT}`,
      isPlainObject(raw) ? raw['format'] : raw,
    );
  }
  const indices = new Map<string, IndexMetadata>();
  const list = raw['indices'];
  if (!Array.isArray(list)) throw new InvalidArgumentError(`${path}: indices`, 'must be an array', list);
  list.forEach((entry, i) => {
    const meta = parseIndexMetadata(entry, `${path}: indices[${i}]`);
    indices.set(meta.name, meta);
  });
  const templates = new Map<string, StoredTemplate>();
  const rawTemplates = raw['templates'] ?? [];
  if (!Array.isArray(rawTemplates)) {
    throw new InvalidArgumentError(`${path}: templates`, 'must be an array', rawTemplates);
  }
  const registry = new IndexTemplateRegistry();
  rawTemplates.forEach((entry, i) => {
    if (!isPlainObject(entry) || typeof entry['name'] !== 'string') {
      throw new InvalidArgumentError(`${path}: templates[${i}]`, 'must be {"name", "body"}', entry);
    }
    const template = parseIndexTemplate(entry['name'], entry['body']);
    registry.put(template);
    templates.set(template.name, { template, body: entry['body'] });
  });
  return { indices, templates };
}
