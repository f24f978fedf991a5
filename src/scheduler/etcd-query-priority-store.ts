/**
 * A {@link QueryPriorityStore} in etcd, shared by the nodes of a cluster: the rules document at
 * `<prefix>/query_priority` (JSON).
 *
 * `save` is one transaction comparing the key's mod revision with the one this store last saw (its
 * create revision with 0 when none): a document saved by another node meanwhile is read again first,
 * then the save is retried on it, so saves are ordered by etcd's revisions and every node ends with
 * the last one committed (a `PUT /_query_priority` replaces the whole document: the newest wins).
 * A key watch hands every document committed by another node to `watch` listeners, in revision order,
 * skipping any older than what this node saved or took (so a node never goes back to an older document
 * because an event arrived late). While etcd is unreachable, `save` throws
 * `ClusterStateUnavailableError` (503) and the rules in force stay; when it is back the store re-reads.
 */
import type { Watcher } from 'etcd3';
import type { EtcdConnection } from '../etcd/etcd-connection.js';
import type { QueryPriorityStore } from './query-priority-store.js';

/** Most retries of a save that keeps losing to saves of other nodes. */
const MAX_ATTEMPTS = 100;

/** The etcd store (see module doc). */
export class EtcdQueryPriorityStore implements QueryPriorityStore {
  readonly location: string;
  readonly #connection: EtcdConnection;
  readonly #key: string;
  readonly #listeners = new Set<(document: unknown) => void>();
  /** Mod revision of the key as last read or written; '0' when absent. */
  #seenRevision = '0';
  /** The newest revision saved or handed on: older events are skipped. */
  #appliedRevision = 0n;
  #watcher: Watcher | undefined;
  #unsubscribe: (() => void) | undefined;

  constructor(connection: EtcdConnection) {
    this.#connection = connection;
    this.#key = connection.key('query_priority');
    this.location = `etcd ${connection.endpoints.join(',')} ${this.#key}`;
  }

  /**
   * The stored document, or undefined when none was saved.
   * @throws ClusterStateUnavailableError when etcd does not answer; Error when it is not JSON.
   */
  async load(): Promise<unknown> {
    const read = await this.#read();
    if (read === undefined) return undefined;
    this.#appliedRevision = BigInt(read.revision);
    return read.document;
  }

  /** Saves the (validated) document; see module doc. @throws ClusterStateUnavailableError. */
  async save(document: unknown): Promise<void> {
    const text = JSON.stringify(document);
    const client = this.#connection.client;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const seen = this.#seenRevision;
      const result = await this.#connection.call('save the query-priority rules', () =>
        (seen === '0' ? client.if(this.#key, 'Create', '==', 0) : client.if(this.#key, 'Mod', '==', seen))
          .then(client.put(this.#key).value(text))
          .commit(),
      );
      if (result.succeeded) {
        this.#seenRevision = String(result.header.revision);
        const revision = BigInt(result.header.revision);
        if (revision > this.#appliedRevision) this.#appliedRevision = revision;
        return;
      }
      await this.#read();
    }
    throw new Error(
      `the query-priority rules kept changing on other nodes; gave up after ${MAX_ATTEMPTS} tries`,
    );
  }

  /**
   * Calls `listener` with each document another node committed (see module doc); starts the watch on
   * first use. @returns a function that unsubscribes.
   */
  watch(listener: (document: unknown) => void): () => void {
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
    this.#unsubscribe = this.#connection.onAvailable(() => void this.#catchUp());
    const watcher = await this.#connection.client.watch().key(this.#key).create();
    this.#watcher = watcher;
    watcher.on('put', (kv) => {
      this.#seenRevision = String(kv.mod_revision);
      this.#deliver(BigInt(kv.mod_revision), kv.value.toString('utf8'));
    });
    watcher.on('connected', () => {
      this.#connection.markAvailable();
      void this.#catchUp();
    });
    watcher.on('disconnected', (error: unknown) => this.#connection.markUnavailable(error));
    watcher.on('error', (error: unknown) => this.#connection.markUnavailable(error));
    await this.#catchUp();
  }

  async #catchUp(): Promise<void> {
    try {
      const read = await this.#read();
      if (read !== undefined) this.#deliver(BigInt(read.revision), read.text);
    } catch {
      // unavailable (recorded) or unreadable: the next event or the return of etcd reloads
    }
  }

  #deliver(revision: bigint, text: string): void {
    if (revision <= this.#appliedRevision) return;
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      return;
    }
    this.#appliedRevision = revision;
    for (const listener of this.#listeners) listener(document);
  }

  async #read(): Promise<{ document: unknown; text: string; revision: string } | undefined> {
    const response = await this.#connection.call('read the query-priority rules', () =>
      this.#connection.client.get(this.#key).exec(),
    );
    const kv = response.kvs[0];
    if (kv === undefined) {
      this.#seenRevision = '0';
      return undefined;
    }
    this.#seenRevision = String(kv.mod_revision);
    const text = kv.value.toString('utf8');
    try {
      return { document: JSON.parse(text), text, revision: String(kv.mod_revision) };
    } catch (error) {
      throw new Error(`query-priority store ${this.#key} is not valid JSON: ${(error as Error).message}`);
    }
  }
}
