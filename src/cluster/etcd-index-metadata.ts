/**
 * The index metadata and shard table of a cluster in etcd (`MetadataPersistence` of
 * `indices/index-metadata-store.ts`): the whole document (indices with their settings and shard table:
 * primary, replicas, in-sync copies and primary term per shard, and the templates) under one key,
 * `<prefix>/metadata`, in the metadata file's format.
 *
 * Every change is one transaction comparing the key's mod revision with the one this backend last
 * read or wrote: the coordinator (index APIs, promotions) and the data nodes (their primaries taking a
 * failed replica out of the in-sync set, or putting a caught-up one back) change it concurrently, and
 * a change computed on an older state never overwrites a newer one. A key watch hands every newer
 * text to the store; while etcd is unreachable, saves throw `ClusterStateUnavailableError` (503).
 */
import type { Watcher } from 'etcd3';
import type { MetadataPersistence } from '../indices/index-metadata-store.js';
import type { EtcdConnection } from '../etcd/etcd-connection.js';

/** The etcd backend (see module doc). */
export class EtcdMetadataPersistence implements MetadataPersistence {
  readonly location: string;
  readonly #connection: EtcdConnection;
  readonly #key: string;
  #revision = '0';
  #newest = 0n;
  #watcher: Watcher | undefined;
  #unsubscribe: (() => void) | undefined;

  constructor(connection: EtcdConnection) {
    this.#connection = connection;
    this.#key = connection.key('metadata');
    this.location = `etcd ${connection.endpoints.join(',')} ${this.#key}`;
  }

  async load(): Promise<string | undefined> {
    const response = await this.#connection.call('read the index metadata', () =>
      this.#connection.client.get(this.#key).exec(),
    );
    const kv = response.kvs[0];
    this.#revision = kv === undefined ? '0' : String(kv.mod_revision);
    if (kv !== undefined && BigInt(kv.mod_revision) > this.#newest) this.#newest = BigInt(kv.mod_revision);
    return kv?.value.toString('utf8');
  }

  async save(text: string): Promise<boolean> {
    const client = this.#connection.client;
    const seen = this.#revision;
    const result = await this.#connection.call('change the index metadata', () =>
      (seen === '0' ? client.if(this.#key, 'Create', '==', 0) : client.if(this.#key, 'Mod', '==', seen))
        .then(client.put(this.#key).value(text))
        .commit(),
    );
    if (!result.succeeded) return false;
    this.#revision = String(result.header.revision);
    if (BigInt(result.header.revision) > this.#newest) this.#newest = BigInt(result.header.revision);
    return true;
  }

  watch(listener: (text: string) => void): () => void {
    let active = true;
    const deliver = (revision: bigint, text: string) => {
      if (!active || revision <= this.#newest) return;
      this.#newest = revision;
      this.#revision = String(revision);
      listener(text);
    };
    const catchUp = () => {
      void this.#connection.client
        .get(this.#key)
        .exec()
        .then(
          (response) => {
            const kv = response.kvs[0];
            if (kv !== undefined) deliver(BigInt(kv.mod_revision), kv.value.toString('utf8'));
          },
          () => undefined,
        );
    };
    this.#unsubscribe = this.#connection.onAvailable(catchUp);
    void this.#connection.client
      .watch()
      .key(this.#key)
      .create()
      .then((watcher) => {
        this.#watcher = watcher;
        watcher.on('put', (kv) => deliver(BigInt(kv.mod_revision), kv.value.toString('utf8')));
        watcher.on('connected', () => {
          this.#connection.markAvailable();
          catchUp();
        });
        watcher.on('disconnected', (error: unknown) => this.#connection.markUnavailable(error));
        watcher.on('error', (error: unknown) => this.#connection.markUnavailable(error));
        catchUp();
      });
    return () => {
      active = false;
      this.#unsubscribe?.();
      void this.#watcher?.cancel().catch(() => undefined);
    };
  }
}
