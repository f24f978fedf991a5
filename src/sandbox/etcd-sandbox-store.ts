/**
 * A {@link SandboxStore} in etcd, shared by every node of a cluster (seed 000 keeps sandboxes in
 * cluster state). Keys, under the connection's prefix:
 *
 * - `<prefix>/sandboxes/set`: `{"version": n, "order": ["_root", "<id>", ...]}` — the set's version
 *   and the order of its entries (the sandbox-file order, which the registry keeps);
 * - `<prefix>/sandboxes/defs/<_id>`: one sandbox document (the sandbox-file entry shape).
 *
 * Every change is one etcd transaction that compares the `set` key's mod revision with the one this
 * store read (its create revision with 0 for the first set), then puts the new `set`, puts the entries
 * that changed and deletes the ones that went: either everything is committed or nothing, and of two
 * changes made from the same version on two nodes exactly one commits. The registry then re-reads and
 * re-checks, so `maxSandboxes` holds exactly under concurrent creates from several nodes.
 *
 * A prefix watch delivers every committed set to `watch` listeners: an event makes the store re-read
 * the whole prefix at one revision (one range request) and hand the set on when its version is newer
 * than the last one handed on. While etcd is unreachable, `load` and `compareAndSet` throw
 * `ClusterStateUnavailableError` (503) and the registry keeps the set it has; when etcd is back the
 * store re-reads (the watch also resumes from the revision it had), so every node converges.
 */
import type { Watcher } from 'etcd3';
import type { EtcdConnection } from '../etcd/etcd-connection.js';
import { isPlainObject } from '../common/is-plain-object.js';
import type { SandboxStore, StoredSandboxes } from './sandbox-store.js';

interface Seen {
  readonly version: number;
  /** Mod revision of the `set` key; 0 when nothing is stored. */
  readonly modRevision: string;
  /** `_id` -> the stored JSON text. */
  readonly texts: ReadonlyMap<string, string>;
}

/** The etcd store (see module doc). Build with `EtcdSandboxStore.open`. */
export class EtcdSandboxStore implements SandboxStore {
  readonly location: string;
  readonly #connection: EtcdConnection;
  readonly #setKey: string;
  readonly #defsPrefix: string;
  readonly #listeners = new Set<(stored: StoredSandboxes) => void>();
  #seen: Seen | undefined;
  #delivered = 0;
  #watcher: Watcher | undefined;
  #reloading: Promise<void> | undefined;
  #reloadAgain = false;
  #unsubscribe: (() => void) | undefined;

  constructor(connection: EtcdConnection) {
    this.#connection = connection;
    this.#setKey = connection.key('sandboxes/set');
    this.#defsPrefix = connection.key('sandboxes/defs/');
    this.location = `etcd ${connection.endpoints.join(',')} ${connection.key('sandboxes/')}`;
  }

  /**
   * The stored set, or undefined when none was stored yet.
   * @throws ClusterStateUnavailableError when etcd does not answer; Error when what is stored is not a
   *   sandbox set (named by key).
   */
  async load(): Promise<StoredSandboxes | undefined> {
    const seen = await this.#read();
    return seen === undefined ? undefined : this.#storedOf(seen);
  }

  /**
   * Commits `next` if the stored set is still at `expectedVersion` (see module doc).
   * @returns false when another change was committed first.
   * @throws RangeError when `next.version` is not `expectedVersion + 1`; ClusterStateUnavailableError
   *   when etcd does not answer (nothing is committed).
   */
  async compareAndSet(expectedVersion: number, next: StoredSandboxes): Promise<boolean> {
    if (next.version !== expectedVersion + 1) {
      throw new RangeError(
        `next.version must be expectedVersion + 1 = ${expectedVersion + 1}; received ${next.version}`,
      );
    }
    let seen = this.#seen;
    if ((seen?.version ?? 0) !== expectedVersion) {
      seen = await this.#read();
      if ((seen?.version ?? 0) !== expectedVersion) return false;
    }
    const texts = new Map<string, string>();
    const order: string[] = [];
    for (const document of next.sandboxes) {
      if (!isPlainObject(document) || typeof document['_id'] !== 'string') {
        throw new TypeError('next.sandboxes must be sandbox documents with an _id');
      }
      order.push(document['_id']);
      texts.set(document['_id'], JSON.stringify(document));
    }
    const client = this.#connection.client;
    const result = await this.#connection.call('change the sandboxes', () => {
      const txn =
        seen === undefined
          ? client.if(this.#setKey, 'Create', '==', 0)
          : client.if(this.#setKey, 'Mod', '==', seen.modRevision);
      const ops = [client.put(this.#setKey).value(JSON.stringify({ version: next.version, order }))];
      for (const [id, text] of texts) {
        if (seen?.texts.get(id) !== text) ops.push(client.put(this.#defsPrefix + id).value(text));
      }
      const deletes = [...(seen?.texts.keys() ?? [])]
        .filter((id) => !texts.has(id))
        .map((id) => client.delete().key(this.#defsPrefix + id));
      return txn.then(...ops, ...deletes).commit();
    });
    if (!result.succeeded) return false;
    this.#seen = { version: next.version, modRevision: String(result.header.revision), texts };
    return true;
  }

  /**
   * Calls `listener` with every set committed by any node whose version is newer than the last one
   * handed on (also after an outage, once etcd is back). Starts the prefix watch on first use.
   * @returns a function that unsubscribes.
   */
  watch(listener: (stored: StoredSandboxes) => void): () => void {
    this.#listeners.add(listener);
    if (this.#watcher === undefined) void this.#startWatch();
    return () => this.#listeners.delete(listener);
  }

  /** Cancels the watch. */
  async close(): Promise<void> {
    this.#unsubscribe?.();
    this.#listeners.clear();
    await this.#watcher?.cancel().catch(() => undefined);
  }

  async #startWatch(): Promise<void> {
    const client = this.#connection.client;
    this.#unsubscribe = this.#connection.onAvailable(() => this.#reload());
    const watcher = await client.watch().prefix(this.#connection.key('sandboxes/')).create();
    this.#watcher = watcher;
    watcher.on('data', () => this.#reload());
    watcher.on('connected', () => {
      this.#connection.markAvailable();
      this.#reload();
    });
    watcher.on('disconnected', (error: unknown) => this.#connection.markUnavailable(error));
    watcher.on('error', (error: unknown) => this.#connection.markUnavailable(error));
    // A change committed between the caller's load and the watch's start.
    this.#reload();
  }

  /** Re-reads the set and hands it on if newer; coalesces bursts of events into one read at a time. */
  #reload(): void {
    if (this.#reloading !== undefined) {
      this.#reloadAgain = true;
      return;
    }
    this.#reloading = (async () => {
      do {
        this.#reloadAgain = false;
        let seen: Seen | undefined;
        try {
          seen = await this.#read();
        } catch {
          return; // unavailable (recorded): the next event or the return of etcd reloads
        }
        if (seen !== undefined && seen.version > this.#delivered) {
          this.#delivered = seen.version;
          const stored = this.#storedOf(seen);
          for (const listener of this.#listeners) listener(stored);
        }
      } while (this.#reloadAgain);
    })().finally(() => {
      this.#reloading = undefined;
    });
  }

  async #read(): Promise<Seen | undefined> {
    const client = this.#connection.client;
    const response = await this.#connection.call('read the sandboxes', () =>
      client.getAll().prefix(this.#connection.key('sandboxes/')).exec(),
    );
    let setText: string | undefined;
    let modRevision = '0';
    const texts = new Map<string, string>();
    for (const kv of response.kvs) {
      const key = kv.key.toString('utf8');
      if (key === this.#setKey) {
        setText = kv.value.toString('utf8');
        modRevision = String(kv.mod_revision);
      } else if (key.startsWith(this.#defsPrefix)) {
        texts.set(key.slice(this.#defsPrefix.length), kv.value.toString('utf8'));
      }
    }
    if (setText === undefined) {
      this.#seen = undefined;
      return undefined;
    }
    let set: unknown;
    try {
      set = JSON.parse(setText);
    } catch (error) {
      throw new Error(`${this.#setKey} is not valid JSON: ${(error as Error).message}`);
    }
    if (
      !isPlainObject(set) ||
      !Number.isSafeInteger(set['version']) ||
      (set['version'] as number) < 1 ||
      !Array.isArray(set['order']) ||
      !set['order'].every((id) => typeof id === 'string' && texts.has(id))
    ) {
      throw new Error(
        `${this.#setKey} must hold {"version": n >= 1, "order": [ids of ${this.#defsPrefix}*]}`,
      );
    }
    const ordered = new Map<string, string>();
    for (const id of set['order'] as string[]) ordered.set(id, texts.get(id)!);
    const seen: Seen = { version: set['version'] as number, modRevision, texts: ordered };
    this.#seen = seen;
    return seen;
  }

  #storedOf(seen: Seen): StoredSandboxes {
    const sandboxes: unknown[] = [];
    for (const [id, text] of seen.texts) {
      try {
        sandboxes.push(JSON.parse(text));
      } catch (error) {
        throw new Error(`${this.#defsPrefix}${id} is not valid JSON: ${(error as Error).message}`);
      }
    }
    return { version: seen.version, sandboxes };
  }
}
