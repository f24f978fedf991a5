/**
 * Cluster membership in etcd: every data node registers under a lease, and the coordinator (and the
 * data nodes' primaries) learn who is alive by watching the registrations.
 *
 * Key `<prefix>/nodes/<node id>`, value `{"node_id", "url", "info": NodeInfo, "registered_at_ms"}`,
 * attached to a lease of `ttlSeconds` (default 3) that the etcd3 client keeps alive (a keep-alive every
 * third of the TTL). A node that dies stops renewing; etcd deletes the key when the lease expires
 * (at most `ttlSeconds` later) and every watcher sees it go: that is how the coordinator notices a dead
 * data node and fails over its primaries. A node whose lease was lost while it lives (etcd was
 * unreachable longer than the TTL) registers again under a new lease as soon as etcd answers.
 */
import type { Lease, Watcher } from 'etcd3';
import pino from 'pino';
import type { EtcdConnection } from '../etcd/etcd-connection.js';
import { decodeNodeInfo } from './internal-codecs.js';
import type { NodeInfo } from './internal-protocol.js';

/** One registered data node. */
export interface Member {
  readonly nodeId: string;
  readonly url: string;
  readonly info: NodeInfo;
  readonly registeredAtMs: number;
}

/** A data node's registration (see module doc). */
export class MemberRegistration {
  readonly #connection: EtcdConnection;
  readonly #key: string;
  readonly #value: string;
  readonly #ttlSeconds: number;
  readonly #log: pino.Logger;
  #lease: Lease | undefined;
  #closed = false;
  #retry: NodeJS.Timeout | undefined;
  /** Registrations made (1 at start, +1 after each lost lease). */
  registrations = 0;

  private constructor(
    connection: EtcdConnection,
    member: Omit<Member, 'registeredAtMs'>,
    ttlSeconds: number,
    log: pino.Logger,
  ) {
    this.#connection = connection;
    this.#key = connection.key(`nodes/${member.nodeId}`);
    this.#value = JSON.stringify({
      node_id: member.nodeId,
      url: member.url,
      info: member.info,
      registered_at_ms: Date.now(),
    });
    this.#ttlSeconds = ttlSeconds;
    this.#log = log;
  }

  /**
   * Registers the node and keeps the registration alive until `close`.
   * @throws ClusterStateUnavailableError when etcd does not answer the first registration.
   */
  static async register(
    connection: EtcdConnection,
    member: Omit<Member, 'registeredAtMs'>,
    options: { readonly ttlSeconds?: number; readonly logger?: pino.Logger } = {},
  ): Promise<MemberRegistration> {
    const registration = new MemberRegistration(
      connection,
      member,
      options.ttlSeconds ?? 3,
      options.logger ?? pino({ level: 'silent' }),
    );
    await registration.#register();
    return registration;
  }

  async #register(): Promise<void> {
    const lease = this.#connection.client.lease(this.#ttlSeconds, { autoKeepAlive: true });
    this.#lease = lease;
    lease.on('lost', (error: unknown) => {
      if (this.#closed || this.#lease !== lease) return;
      this.#log.warn({ error: String(error) }, 'membership lease lost; registering again once etcd answers');
      this.#again();
    });
    try {
      await this.#connection.call('register this node', () => lease.put(this.#key).value(this.#value).exec());
      this.registrations++;
    } catch (error) {
      void lease.revoke().catch(() => undefined);
      throw error;
    }
  }

  #again(): void {
    if (this.#closed || this.#retry !== undefined) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      if (this.#closed) return;
      this.#register().then(
        () => this.#log.info({ registrations: this.registrations }, 'registered again in etcd'),
        () => this.#again(),
      );
    }, 250);
    this.#retry.unref();
  }

  /** Revokes the lease (the node leaves at once). Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    await this.#lease?.revoke().catch(() => undefined);
  }
}

function parseMember(text: string): Member | undefined {
  try {
    const raw = JSON.parse(text) as Record<string, unknown>;
    const info = decodeNodeInfo(raw['info'], String(raw['url']));
    if (typeof raw['url'] !== 'string' || raw['node_id'] !== info.node_id) return undefined;
    return {
      nodeId: info.node_id,
      url: raw['url'],
      info,
      registeredAtMs: Number(raw['registered_at_ms'] ?? 0),
    };
  } catch {
    return undefined;
  }
}

/** The registered data nodes, kept up to date by a prefix watch (see module doc). */
export class MembershipWatcher {
  readonly #connection: EtcdConnection;
  readonly #prefix: string;
  readonly #members = new Map<string, Member>();
  readonly #listeners = new Set<(joined: readonly string[], left: readonly string[]) => void>();
  #watcher: Watcher | undefined;
  #unsubscribe: (() => void) | undefined;

  private constructor(connection: EtcdConnection) {
    this.#connection = connection;
    this.#prefix = connection.key('nodes/');
  }

  /** Reads the registrations and starts watching. @throws ClusterStateUnavailableError. */
  static async open(connection: EtcdConnection): Promise<MembershipWatcher> {
    const watcher = new MembershipWatcher(connection);
    await watcher.#reload();
    const w = await connection.client.watch().prefix(watcher.#prefix).create();
    watcher.#watcher = w;
    w.on('put', (kv) => {
      const member = parseMember(kv.value.toString('utf8'));
      if (member !== undefined) watcher.#set(new Map([...watcher.#members, [member.nodeId, member]]));
    });
    w.on('delete', (kv) => {
      const id = kv.key.toString('utf8').slice(watcher.#prefix.length);
      const next = new Map(watcher.#members);
      next.delete(id);
      watcher.#set(next);
    });
    w.on('connected', () => {
      connection.markAvailable();
      void watcher.#reload().catch(() => undefined);
    });
    w.on('disconnected', (error: unknown) => connection.markUnavailable(error));
    watcher.#unsubscribe = connection.onAvailable(() => void watcher.#reload().catch(() => undefined));
    await watcher.#reload();
    return watcher;
  }

  /** The registered nodes by id (a snapshot). */
  members(): ReadonlyMap<string, Member> {
    return new Map(this.#members);
  }

  isLive(nodeId: string): boolean {
    return this.#members.has(nodeId);
  }

  /** Calls `listener(joined, left)` after every change. @returns an unsubscribe. */
  onChange(listener: (joined: readonly string[], left: readonly string[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Resolves with the members once every id of `nodeIds` is registered.
   * @param onWait called every `warnEveryMs` with the ids still missing.
   * @throws Error naming the missing nodes after `timeoutMs`.
   */
  async waitFor(
    nodeIds: readonly string[],
    timeoutMs: number,
    onWait: (missing: readonly string[], waitedMs: number) => void = () => {},
  ): Promise<Member[]> {
    const started = performance.now();
    let nextWarning = Math.min(3000, timeoutMs / 2);
    for (;;) {
      const missing = nodeIds.filter((id) => !this.#members.has(id));
      if (missing.length === 0) return nodeIds.map((id) => this.#members.get(id)!);
      const waited = performance.now() - started;
      if (waited >= timeoutMs) {
        throw new Error(`data nodes [${missing.join(', ')}] did not register in etcd within ${timeoutMs} ms`);
      }
      if (waited >= nextWarning) {
        nextWarning += 10_000;
        onWait(missing, Math.round(waited));
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Stops watching. */
  async close(): Promise<void> {
    this.#unsubscribe?.();
    this.#listeners.clear();
    await this.#watcher?.cancel().catch(() => undefined);
  }

  async #reload(): Promise<void> {
    const response = await this.#connection.call('read the registered data nodes', () =>
      this.#connection.client.getAll().prefix(this.#prefix).exec(),
    );
    const next = new Map<string, Member>();
    for (const kv of response.kvs) {
      const member = parseMember(kv.value.toString('utf8'));
      if (member !== undefined) next.set(member.nodeId, member);
    }
    this.#set(next);
  }

  #set(next: Map<string, Member>): void {
    const joined = [...next.keys()].filter(
      (id) => !this.#members.has(id) || this.#members.get(id)!.url !== next.get(id)!.url,
    );
    const left = [...this.#members.keys()].filter((id) => !next.has(id));
    this.#members.clear();
    for (const [id, m] of next) this.#members.set(id, m);
    if (joined.length === 0 && left.length === 0) return;
    for (const listener of this.#listeners) listener(joined, left);
  }
}
