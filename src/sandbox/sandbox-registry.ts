/**
 * The live set of sandboxes: versioned create, update and delete over a `SandboxStore`, with every
 * change checked against the whole set (the same checks as a sandbox file: names, priorities among
 * siblings, parents and depth, limits within the parent's, distinct selection attributes, count).
 *
 * Concurrency: a change reads the current set (version v), checks the new set, and stores it with
 * `compareAndSet(v, ...)`. When another change got there first the store says no, the registry re-reads
 * and checks again, so a bound such as `maxSandboxes` holds exactly under concurrent creates (no
 * check-then-write race). Nothing is half-applied: the set changes whole or not at all.
 *
 * Listeners registered with `onChange` run synchronously after each accepted change, with the new
 * list; the runtime uses them to swap its classifier, so the change applies to the next request.
 *
 * A store shared by several nodes (`SandboxStore.watch`, etcd) also hands the registry the sets other
 * nodes committed: a newer version replaces the registry's set and runs the listeners, as a change made
 * here does. A set that does not pass the checks (written to the store by hand) is skipped and counted
 * in `skippedSets`.
 */
import { randomBytes } from 'node:crypto';
import {
  InvalidSandboxError,
  SandboxConflictError,
  SandboxLimitError,
  SandboxNotFoundError,
} from '../errors.js';
import { isPlainObject } from '../common/is-plain-object.js';
import { ROOT_SANDBOX_ID, type Sandbox } from './sandbox.js';
import type { SandboxInput, SandboxPatch } from './sandbox-input.js';
import { toSandboxDocument } from './sandbox-document.js';
import { MAX_SANDBOXES, parseSandboxDefinitions } from './sandbox-file.js';
import type { SandboxStore, StoredSandboxes } from './sandbox-store.js';
import { parseSelectionAttributes, selectionAttributesKey } from './selection-attributes.js';

export interface SandboxRegistryOptions {
  readonly store: SandboxStore;
  /**
   * The sandboxes that seed an empty store (first start), or a function that loads them; it is called
   * only when the store is empty, so a seed file that is no longer used cannot stop a start.
   * Default: the root alone.
   */
  readonly seed?: readonly Sandbox[] | (() => Promise<readonly Sandbox[]>);
  /** Most sandboxes besides the root, 0..10000. Default 100. */
  readonly maxSandboxes?: number;
  /** Clock for `updated_at`, ms since the epoch. Default `Date.now`. */
  readonly nowMs?: () => number;
  /** Maker of `_id`s for new sandboxes. Default: 20 URL-safe base64 characters (15 random bytes). */
  readonly newId?: () => string;
}

interface RegistryState {
  readonly version: number;
  readonly documents: readonly Record<string, unknown>[];
  readonly sandboxes: readonly Sandbox[];
  readonly byId: ReadonlyMap<string, Sandbox>;
}

/** Keys the server manages; a request body may not set them. */
const SERVER_KEYS = ['_id', 'version', 'updated_at'] as const;

/** Keys a request body may set. */
const BODY_KEYS: readonly string[] = [
  'name',
  'parent_id',
  'priority',
  'mode',
  'resourceConsumptionLimits',
  'selectionAttributes',
  'tags',
  'max_queue_wait',
  'cancellationGraceMs',
  'search_settings',
  'max_concurrent_tasks',
  'max_concurrent_tasks_per_user',
];

/** How often a change is re-checked after losing a compare-and-swap before giving up. */
const MAX_ATTEMPTS = 1000;

const defaultNewId = (): string => randomBytes(15).toString('base64url');

export class SandboxRegistry {
  readonly #store: SandboxStore;
  readonly #maxSandboxes: number;
  readonly #nowMs: () => number;
  readonly #newId: () => string;
  readonly #listeners = new Set<(sandboxes: readonly Sandbox[]) => void>();
  #state: RegistryState;

  private constructor(options: SandboxRegistryOptions, maxSandboxes: number, state: RegistryState) {
    this.#store = options.store;
    this.#maxSandboxes = maxSandboxes;
    this.#nowMs = options.nowMs ?? Date.now;
    this.#newId = options.newId ?? defaultNewId;
    this.#state = state;
  }

  /**
   * Loads the stored set, or seeds an empty store with `options.seed` (version 1, `updated_at` now).
   * `seeded` on the result says which happened.
   * @throws InvalidSandboxError when what is stored (or the seed) does not pass the checks, or holds
   *   more than `maxSandboxes`; the message names the field and, for the store, where it is.
   */
  static async open(options: SandboxRegistryOptions): Promise<SandboxRegistry> {
    const maxSandboxes = options.maxSandboxes ?? MAX_SANDBOXES;
    if (!Number.isInteger(maxSandboxes) || maxSandboxes < 0 || maxSandboxes > 10_000) {
      throw new InvalidSandboxError('maxSandboxes', 'must be an integer in 0..10000', maxSandboxes);
    }
    const where = options.store.location ?? 'the sandbox store';
    let stored: StoredSandboxes | undefined;
    try {
      stored = await options.store.load();
    } catch (error) {
      throw new InvalidSandboxError(where, `could not be loaded (${(error as Error).message})`, where);
    }
    let seeded = false;
    if (stored === undefined) {
      const seed = typeof options.seed === 'function' ? await options.seed() : (options.seed ?? []);
      const now = (options.nowMs ?? Date.now)();
      const documents = seed.map((s) => ({ ...toSandboxDocument(s), updated_at: s.updatedAt || now }));
      const initial: StoredSandboxes = { version: 1, sandboxes: documents };
      parseSandboxDefinitions(initial, { maxSandboxes });
      if (!(await options.store.compareAndSet(0, initial))) stored = await options.store.load();
      seeded = stored === undefined;
      stored ??= initial;
    }
    let state: RegistryState;
    try {
      state = stateOf(stored, maxSandboxes);
    } catch (error) {
      if (error instanceof InvalidSandboxError && !seeded) {
        throw error.withPath(`${where}: ${error.path}`);
      }
      throw error;
    }
    const registry = new SandboxRegistry(options, maxSandboxes, state);
    registry.seeded = seeded;
    registry.#unwatch = options.store.watch?.((next) => registry.#takeStored(next));
    return registry;
  }

  /** Sets from a shared store that did not pass the checks (and were not taken). */
  skippedSets = 0;
  #unwatch: (() => void) | undefined;

  /** Stops taking sets from a shared store. Idempotent. */
  close(): void {
    this.#unwatch?.();
    this.#unwatch = undefined;
  }

  /** A set another node committed: taken when newer than ours. */
  #takeStored(stored: StoredSandboxes): void {
    if (stored.version <= this.#state.version) return;
    let state: RegistryState;
    try {
      state = stateOf(stored, Number.MAX_SAFE_INTEGER);
    } catch {
      this.skippedSets++;
      return;
    }
    this.#publish(state);
  }

  /** True when `open` found the store empty and wrote the seed into it. */
  seeded = false;

  /** Version of the whole set: >= 1, +1 per accepted change. */
  get version(): number {
    return this.#state.version;
  }

  /** Every sandbox, root first, parents before children. */
  list(): readonly Sandbox[] {
    return this.#state.sandboxes;
  }

  get(id: string): Sandbox | undefined {
    return this.#state.byId.get(id);
  }

  /** Calls `listener` after every accepted change; returns a function that unsubscribes. */
  onChange(listener: (sandboxes: readonly Sandbox[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Creates a sandbox from a request body in the seed's shape (`name`, `priority`, `parent_id`,
   * `mode`, `resourceConsumptionLimits`, `selectionAttributes`, `tags`, `max_queue_wait`, `cancellationGraceMs`). `_id`
   * is made by the server. The body is checked at run time whatever its static type (HTTP bodies are
   * `unknown`: pass them as `SandboxInput` and let this refuse what does not fit).
   * @returns the new sandbox (version 1).
   * @throws InvalidSandboxError (400) naming the field; SandboxConflictError (409) for a taken name or
   *   identical selection attributes; SandboxLimitError (429) when `maxSandboxes` are active.
   */
  async create(body: SandboxInput): Promise<Sandbox> {
    const payload = checkBody(body);
    const id = this.#newId();
    return this.#change((state) => {
      if (state.sandboxes.length - 1 >= this.#maxSandboxes) throw new SandboxLimitError(this.#maxSandboxes);
      const document = { ...payload, _id: id, updated_at: this.#nowMs(), version: 1 };
      checkNoConflict(state, document, undefined);
      return { documents: [...state.documents, document], targetId: id };
    });
  }

  /**
   * Changes the fields a body names (partial update). `resourceConsumptionLimits` is merged per
   * resource (`null` removes one); `parent_id: null` moves the sandbox under the root;
   * `max_queue_wait: null` and `cancellationGraceMs: null` make it inherit its parent's again. The root
   * takes `priority`, `max_queue_wait` and `cancellationGraceMs` only.
   * @param expectedVersion the sandbox version the caller read (`If-Match`); omit to skip the check.
   * @throws SandboxNotFoundError (404); SandboxConflictError (409) for a stale version, a taken name or
   *   identical attributes; InvalidSandboxError (400) naming the field.
   */
  async update(id: string, body: SandboxPatch, expectedVersion?: number): Promise<Sandbox> {
    const patch = checkBody(body);
    return this.#change((state) => {
      const index = state.documents.findIndex((d) => d['_id'] === id);
      const current = state.documents[index];
      if (current === undefined) throw new SandboxNotFoundError(id);
      const version = current['version'] as number;
      if (expectedVersion !== undefined && expectedVersion !== version) {
        throw new SandboxConflictError(
          'version',
          `sandbox [${id}] is at version ${version}, not ${expectedVersion} (If-Match): read it again and retry`,
        );
      }
      const document = merge(current, patch);
      // A change that changes nothing keeps the version (and is not written).
      if (JSON.stringify(document) === JSON.stringify(current))
        return { documents: state.documents, targetId: id, unchanged: true };
      document['updated_at'] = this.#nowMs();
      document['version'] = version + 1;
      checkNoConflict(state, document, id);
      const documents = [...state.documents];
      documents[index] = document;
      return { documents, targetId: id };
    });
  }

  /**
   * Deletes a sandbox. Its running tasks finish under the root's rules (see docs/sandboxes.md).
   * @throws SandboxNotFoundError (404); InvalidSandboxError (400) for the root; SandboxConflictError
   *   (409) while it has children.
   */
  async delete(id: string, expectedVersion?: number): Promise<Sandbox> {
    let deleted: Sandbox | undefined;
    await this.#change((state) => {
      if (id === ROOT_SANDBOX_ID) {
        throw new InvalidSandboxError('_id', 'must not be the root sandbox (it cannot be deleted)', id);
      }
      deleted = state.byId.get(id);
      if (deleted === undefined) throw new SandboxNotFoundError(id);
      if (expectedVersion !== undefined && expectedVersion !== deleted.version) {
        throw new SandboxConflictError(
          'version',
          `sandbox [${id}] is at version ${deleted.version}, not ${expectedVersion} (If-Match): read it again and retry`,
        );
      }
      const children = state.sandboxes.filter((s) => s.parentId === id).map((s) => s.id);
      if (children.length > 0) {
        throw new SandboxConflictError(
          'children',
          `sandbox [${id}] has children [${children.join(', ')}]: delete or move them first`,
        );
      }
      return { documents: state.documents.filter((d) => d['_id'] !== id), targetId: ROOT_SANDBOX_ID };
    });
    return deleted!;
  }

  /** Checks and stores one change, re-reading and re-checking after a lost compare-and-swap. */
  async #change(
    apply: (state: RegistryState) => {
      documents: readonly Record<string, unknown>[];
      targetId: string;
      unchanged?: boolean;
    },
  ): Promise<Sandbox> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const state = this.#state;
      const { documents, targetId, unchanged } = apply(state);
      if (unchanged === true) return state.byId.get(targetId)!;
      const next: StoredSandboxes = { version: state.version + 1, sandboxes: documents };
      const index = documents.findIndex((d) => d['_id'] === targetId);
      let nextState: RegistryState;
      try {
        nextState = stateOf(next, this.#maxSandboxes);
      } catch (error) {
        // Report a problem of the changed entry against the request body, and other entries by _id.
        if (error instanceof InvalidSandboxError) throw inTermsOfRequest(error, documents, index);
        throw error;
      }
      if (await this.#store.compareAndSet(state.version, next)) {
        if (nextState.version > this.#state.version) this.#publish(nextState);
        return nextState.byId.get(targetId)!;
      }
      const stored = await this.#store.load();
      if (stored !== undefined && stored.version > this.#state.version) {
        this.#publish(stateOf(stored, Number.MAX_SAFE_INTEGER));
      }
    }
    throw new SandboxConflictError(
      'version',
      `the sandbox set kept changing; gave up after ${MAX_ATTEMPTS} tries`,
    );
  }

  #publish(state: RegistryState): void {
    this.#state = state;
    for (const listener of this.#listeners) listener(state.sandboxes);
  }
}

/**
 * The set-level error rewritten for an API caller: the changed entry's `sandboxes[i].` prefix goes,
 * and any other `sandboxes[j]` becomes `sandbox [<_id>]`.
 */
function inTermsOfRequest(
  error: InvalidSandboxError,
  documents: readonly Record<string, unknown>[],
  targetIndex: number,
): InvalidSandboxError {
  const rebased = error.rebase(`sandboxes[${targetIndex}]`, '');
  const name = (text: string) =>
    text.replace(/sandboxes\[(\d+)\]/g, (whole, i: string) => {
      const id = documents[Number(i)]?.['_id'];
      return typeof id === 'string' ? `sandbox [${id}]` : whole;
    });
  return rebased.withPath(name(rebased.path), name(rebased.expectation));
}

function stateOf(stored: StoredSandboxes, maxSandboxes: number): RegistryState {
  const sandboxes = parseSandboxDefinitions(
    { version: stored.version, sandboxes: stored.sandboxes },
    { maxSandboxes: Math.min(maxSandboxes, 10_000) },
  );
  return {
    version: stored.version,
    // Keep documents in the registry's own normalised form, root included.
    documents: sandboxes.map(toSandboxDocument),
    sandboxes,
    byId: new Map(sandboxes.map((s) => [s.id, s])),
  };
}

function checkBody(body: unknown): Record<string, unknown> {
  if (!isPlainObject(body)) throw new InvalidSandboxError('body', 'must be a JSON object', body);
  for (const key of Object.keys(body)) {
    if ((SERVER_KEYS as readonly string[]).includes(key)) {
      throw new InvalidSandboxError(key, 'is set by the server and may not be given', body[key]);
    }
    if (!BODY_KEYS.includes(key)) {
      throw new InvalidSandboxError(
        key,
        `is not allowed (expected one of ${BODY_KEYS.join(', ')})`,
        body[key],
      );
    }
  }
  return body;
}

/**
 * `patch` over `current`; limits merge per resource, `null` removes a limit, the parent or a cap.
 * `search_settings` merge per key as OpenSearch's workload-group settings do: a key set to `null` is
 * removed, `{}` or `null` removes them all.
 */
function merge(current: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const document: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (key === 'resourceConsumptionLimits' && isPlainObject(value)) {
      const limits: Record<string, unknown> = { ...(current[key] as Record<string, unknown>) };
      for (const [resource, limit] of Object.entries(value)) {
        // A limit written in the seed's percent form replaces the ratio form of the same resource.
        if (resource === 'cpuUsageLimit') delete limits['cpu'];
        if (resource === 'jvmUsageLimit') delete limits['memory'];
        if (resource === 'cpu') delete limits['cpuUsageLimit'];
        if (resource === 'memory') delete limits['jvmUsageLimit'];
        if (limit === null) delete limits[resource];
        else limits[resource] = limit;
      }
      document[key] = limits;
    } else if (key === 'search_settings' && isPlainObject(value) && Object.keys(value).length > 0) {
      const settings: Record<string, unknown> = { ...((current[key] as Record<string, unknown>) ?? {}) };
      for (const [name, setting] of Object.entries(value)) {
        if (setting === null) delete settings[name];
        else settings[name] = setting;
      }
      if (Object.keys(settings).length === 0) delete document[key];
      else document[key] = settings;
    } else if (
      (key === 'search_settings' && (value === null || isPlainObject(value))) ||
      ((key === 'parent_id' ||
        key === 'max_queue_wait' ||
        key === 'cancellationGraceMs' ||
        key === 'max_concurrent_tasks' ||
        key === 'max_concurrent_tasks_per_user') &&
        value === null)
    ) {
      delete document[key];
    } else {
      document[key] = value;
    }
  }
  return document;
}

/** 409 for a name or a set of selection attributes another sandbox already has. */
function checkNoConflict(
  state: RegistryState,
  document: Record<string, unknown>,
  ownId: string | undefined,
): void {
  const name = document['name'];
  const holder = state.sandboxes.find((s) => s.name === name && s.id !== ownId);
  if (holder !== undefined) {
    throw new SandboxConflictError('name', `name [${String(name)}] is taken by sandbox [${holder.id}]`);
  }
  let key: string;
  try {
    key = selectionAttributesKey(
      parseSelectionAttributes(document['selectionAttributes'], 'selectionAttributes'),
    );
  } catch {
    return; // malformed attributes: the full check reports them with their field
  }
  if (key === '') return;
  const same = state.sandboxes.find(
    (s) => s.id !== ownId && selectionAttributesKey(s.selectionAttributes) === key,
  );
  if (same !== undefined) {
    throw new SandboxConflictError(
      'attributes',
      `selectionAttributes are identical to those of sandbox [${same.id}]; two sandboxes may not select the same requests`,
    );
  }
}
