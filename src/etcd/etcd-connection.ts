/**
 * One node's connection to etcd, the cluster-state store (sandboxes, query-priority rules, membership
 * leases, index metadata and the shard table): an `etcd3` client with this project's fault handling,
 * the key prefix of the cluster, and an honest report of whether etcd is reachable.
 *
 * Fault handling: no retries and no circuit breaker in the client (a change is either committed now or
 * refused now with `ClusterStateUnavailableError`, 503); every unary call has a deadline
 * (`callTimeoutMs`); watch streams reconnect with a short exponential back-off (100 ms to 1 s) and
 * resume from the last revision they saw, so nothing committed meanwhile is missed.
 *
 * Availability: a failed call or a broken watch stream marks etcd unavailable (logged once, at warn,
 * with the error); while unavailable a probe (`GET` of one key) runs every `probeIntervalMs` (1 s) and
 * the first call that succeeds marks it available again (logged at info, with the outage's length).
 * Users read `available` and `stats()` (`GET /_nodes/stats` → `cluster_state`) and register
 * `onAvailable` to catch up (reload what they keep) after an outage.
 */
import { ExponentialBackoff, type IBackoff, noop } from 'cockatiel';
import { Etcd3, type IOptions } from 'etcd3';
import pino from 'pino';
import { ClusterStateUnavailableError, InvalidArgumentError } from '../errors.js';
import { optionChecks } from '../common/option-checks.js';

export interface EtcdConnectionOptions {
  /** `http://host:port` of one or more etcd members. */
  readonly endpoints: readonly string[];
  /**
   * Key prefix of this cluster's state, e.g. `/query-sandbox`; every key the project writes starts
   * with it and a `/`. @default '/query-sandbox'
   */
  readonly prefix?: string;
  /** Deadline of one unary call, ms, 100..60000. @default 2000 */
  readonly callTimeoutMs?: number;
  /** Probe period while etcd is unavailable, ms, 50..60000. @default 1000 */
  readonly probeIntervalMs?: number;
  readonly logger?: pino.Logger;
}

/** `cluster_state` in node stats (a plain snapshot). */
export interface EtcdConnectionStats {
  readonly store: 'etcd';
  readonly endpoints: readonly string[];
  readonly prefix: string;
  readonly available: boolean;
  /** Since when etcd is unreachable, ms since the epoch; null while available. */
  readonly unavailable_since_ms: number | null;
  /** The last failure, while unavailable. */
  readonly last_error: string | null;
  /** Outages seen since start, and failed calls. */
  readonly outages: number;
  readonly failed_calls: number;
}

export { parseEtcdEndpoints } from './etcd-endpoints.js';

/** A node's etcd connection (see module doc). */
export class EtcdConnection {
  readonly client: Etcd3;
  readonly endpoints: readonly string[];
  readonly prefix: string;
  readonly callTimeoutMs: number;
  readonly #log: pino.Logger;
  readonly #probeIntervalMs: number;
  readonly #onAvailable = new Set<() => void>();
  #available = true;
  #unavailableSinceMs: number | undefined;
  #lastError: string | undefined;
  #outages = 0;
  #failedCalls = 0;
  #probe: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: EtcdConnectionOptions) {
    if (!Array.isArray(options.endpoints) || options.endpoints.length === 0) {
      throw new InvalidArgumentError(
        'options.endpoints',
        'must list at least one etcd endpoint',
        options.endpoints,
      );
    }
    const prefix = options.prefix ?? '/query-sandbox';
    if (typeof prefix !== 'string' || !/^\/[A-Za-z0-9_.\-/]{1,200}$/.test(prefix) || prefix.endsWith('/')) {
      throw new InvalidArgumentError(
        'options.prefix',
        'must be /name (1..200 characters of [A-Za-z0-9_.-/], no trailing /)',
        prefix,
      );
    }
    const callTimeoutMs = optionChecks.integerIn(
      'options.callTimeoutMs',
      options.callTimeoutMs ?? 2000,
      100,
      60_000,
    );
    const probeIntervalMs = optionChecks.integerIn(
      'options.probeIntervalMs',
      options.probeIntervalMs ?? 1000,
      50,
      60_000,
    );
    this.endpoints = Object.freeze([...options.endpoints]);
    this.prefix = prefix;
    this.callTimeoutMs = callTimeoutMs;
    this.#probeIntervalMs = probeIntervalMs;
    this.#log = options.logger ?? pino({ level: 'silent' });
    const clientOptions: IOptions = {
      hosts: [...options.endpoints],
      dialTimeout: callTimeoutMs,
      faultHandling: {
        host: () => noop,
        global: noop,
        // etcd3 types this as a backoff but calls `next()` on it first, as on cockatiel's factories.
        watchBackoff: new ExponentialBackoff({
          initialDelay: 100,
          maxDelay: 1000,
        }) as unknown as IBackoff<unknown>,
      },
      defaultCallOptions: (context) =>
        context.isStream ? {} : { deadline: Date.now() + this.callTimeoutMs },
    };
    this.client = new Etcd3(clientOptions);
  }

  /** A key under this cluster's prefix: `key('sandboxes/x')` → `/query-sandbox/sandboxes/x`. */
  key(suffix: string): string {
    return `${this.prefix}/${suffix}`;
  }

  /** Whether the last call (or probe) reached etcd. */
  get available(): boolean {
    return this.#available;
  }

  /**
   * Runs one call to etcd; records success or failure (see module doc).
   * @throws ClusterStateUnavailableError (503) naming `what` when etcd does not answer or fails.
   */
  async call<T>(what: string, run: (client: Etcd3) => Promise<T>): Promise<T> {
    try {
      const result = await run(this.client);
      this.markAvailable();
      return result;
    } catch (error) {
      this.#failedCalls++;
      this.markUnavailable(error);
      throw new ClusterStateUnavailableError(what, this.endpoints, error);
    }
  }

  /** Records that etcd answered (a call or a watch stream connected). */
  markAvailable(): void {
    if (this.#available || this.#closed) return;
    const outageMs = Date.now() - (this.#unavailableSinceMs ?? Date.now());
    this.#available = true;
    this.#unavailableSinceMs = undefined;
    this.#lastError = undefined;
    if (this.#probe !== undefined) clearInterval(this.#probe);
    this.#probe = undefined;
    this.#log.info(
      { endpoints: this.endpoints, outageMs },
      'etcd is reachable again: catching up with the cluster state',
    );
    for (const listener of this.#onAvailable) listener();
  }

  /** Records that etcd did not answer; starts the probe. */
  markUnavailable(error: unknown): void {
    if (this.#closed) return;
    const message = error instanceof Error ? error.message : String(error);
    this.#lastError = message;
    if (!this.#available) return;
    this.#available = false;
    this.#unavailableSinceMs = Date.now();
    this.#outages++;
    this.#log.warn(
      { endpoints: this.endpoints, error: message },
      'etcd is unreachable: serving with the last cluster state seen; changes are refused until it is back',
    );
    this.#probe = setInterval(() => {
      void this.client
        .get(this.key('probe'))
        .string()
        .then(
          () => this.markAvailable(),
          (e: unknown) => {
            this.#lastError = e instanceof Error ? e.message : String(e);
          },
        );
    }, this.#probeIntervalMs);
    this.#probe.unref();
  }

  /** Calls `listener` each time etcd becomes reachable after an outage; returns an unsubscribe. */
  onAvailable(listener: () => void): () => void {
    this.#onAvailable.add(listener);
    return () => this.#onAvailable.delete(listener);
  }

  stats(): EtcdConnectionStats {
    return {
      store: 'etcd',
      endpoints: this.endpoints,
      prefix: this.prefix,
      available: this.#available,
      unavailable_since_ms: this.#unavailableSinceMs ?? null,
      last_error: this.#available ? null : (this.#lastError ?? null),
      outages: this.#outages,
      failed_calls: this.#failedCalls,
    };
  }

  /** Stops the probe and closes the client (watchers must be cancelled first). Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#probe !== undefined) clearInterval(this.#probe);
    this.client.close();
  }
}
