/**
 * Coordinator-side store of the data nodes' resource usage, fed from the `Resource_Usage_Stats`
 * header of responses to requests this coordinator sent (seed 001; OpenSearch's
 * `ResourceUsageCollectorService` keeps the same newest-per-node map for its local node).
 *
 * Rules, checked in this order for each entry of a header from node `called`:
 * 1. Foreign: an entry for any node other than `called` is skipped (`foreign`). A node speaks only for
 *    itself, so a node cannot plant figures for another one, and a header forwarded from an end
 *    client through some node cannot poison the map. Headers of end clients' requests are never
 *    passed to `ingest` at all: the server strips them (`stripStatsHeader`).
 * 2. Throttled: if the node's stored entry was accepted less than `minRefreshMs` ago (coordinator
 *    clock), the entry is skipped without parsing its figures (`throttled`; the seed's "update only
 *    if the stored data is more than 1 second old").
 * 3. Malformed entries are skipped (`malformed`), as are entries past the header bounds (`dropped`)
 *    and values of an unknown version (`unknownVersion`).
 * 4. Stale: an entry whose timestamp is more than `ttlMs` behind, or more than `ttlMs` ahead of, the
 *    coordinator's clock is skipped (`stale`).
 * 5. Delayed: an entry older (smaller timestamp) than the stored one is skipped (`delayed`): a slow
 *    response must not overwrite newer figures. An equal timestamp replaces (same figures).
 *
 * Reading: `get(nodeId)` returns the entry only while it is fresh: at most `ttlMs` past its data-node
 * timestamp and at most `ttlMs` since it was accepted. Otherwise the node is unknown (`undefined`),
 * never idle: callers must not read "no stats" as "no load". The timestamp rule assumes the nodes'
 * clocks agree to well within the TTL (NTP); a node whose clock lags by more stays unknown, which is
 * the safe side.
 */
import {
  type NodeResourceStats,
  parseStatsHeader,
  STATS_HEADER_KEY,
  type StatsHeaderLimits,
} from './stats-header.js';
import { optionChecks } from '../common/option-checks.js';

/** Read side shared by admission and ranking: a node's fresh stats, or `undefined` when unknown. */
export interface ResourceStatsSource {
  get(nodeId: string): NodeResourceStats | undefined;
}

export interface StatsCollectorOptions extends StatsHeaderLimits {
  /** Age beyond which stats are not used, ms, integer 1..600000. @default 5000 (seed 001's example TTL) */
  readonly ttlMs?: number;
  /** Least time between two accepted entries of one node, ms, integer 0..600000. @default 1000 (seed 001) */
  readonly minRefreshMs?: number;
  /** Coordinator wall clock, epoch ms (compared with the data nodes' timestamps). @default Date.now() */
  readonly nowMs?: () => number;
}

/**
 * Counts since construction. Every entry seen lands in exactly one of the first seven;
 * `unknownVersion` counts whole header values.
 */
export interface StatsCollectorCounters {
  readonly accepted: number;
  readonly foreign: number;
  readonly throttled: number;
  readonly malformed: number;
  readonly stale: number;
  readonly delayed: number;
  /** Entries past the header bounds. */
  readonly dropped: number;
  /** Header values of a version this coordinator cannot read. */
  readonly unknownVersion: number;
}

interface Stored {
  stats: NodeResourceStats;
  acceptedAtMs: number;
}

const integerOption = (name: string, value: unknown, min: number, max: number, fallback: number): number =>
  optionChecks.integerIn(`options.${name}`, value, min, max, fallback);

/** Newest fresh resource stats per data node (see module doc for the rules). */
export class StatsCollector implements ResourceStatsSource {
  readonly #ttlMs: number;
  readonly #minRefreshMs: number;
  readonly #nowMs: () => number;
  readonly #nodes = new Map<string, Stored>();
  #accepted = 0;
  #foreign = 0;
  #throttled = 0;
  #malformed = 0;
  #stale = 0;
  #delayed = 0;
  #dropped = 0;
  #unknownVersion = 0;
  // State of the `ingest` call in progress, read by `#accept` (bound once, no closure per response).
  #calledNodeId = '';
  #ingestNowMs = 0;
  readonly #accept = (nodeId: string): boolean => {
    if (nodeId !== this.#calledNodeId) {
      this.#foreign++;
      return false;
    }
    const stored = this.#nodes.get(nodeId);
    if (stored !== undefined && this.#ingestNowMs - stored.acceptedAtMs < this.#minRefreshMs) {
      this.#throttled++;
      return false;
    }
    return true;
  };
  readonly #parseOptions: { maxEntries?: number; maxBytes?: number; accept: (nodeId: string) => boolean };

  /** @throws InvalidArgumentError for an option out of range. */
  constructor(options: StatsCollectorOptions = {}) {
    this.#ttlMs = integerOption('ttlMs', options.ttlMs, 1, 600_000, 5_000);
    this.#minRefreshMs = integerOption('minRefreshMs', options.minRefreshMs, 0, 600_000, 1_000);
    this.#nowMs = options.nowMs ?? Date.now;
    const limits: { maxEntries?: number; maxBytes?: number } = {};
    if (options.maxEntries !== undefined) {
      limits.maxEntries = integerOption('maxEntries', options.maxEntries, 0, 100_000, 64);
    }
    if (options.maxBytes !== undefined) {
      limits.maxBytes = integerOption('maxBytes', options.maxBytes, 0, 1_048_576, 8192);
    }
    this.#parseOptions = Object.freeze({ ...limits, accept: this.#accept });
  }

  /**
   * Takes the stats header value of a response from `calledNodeId`, a node this coordinator sent the
   * request to. Only that node's own entry can be accepted. Never throws; `headerValue` may be
   * anything (`undefined` when the response had no header). Returns the number of entries accepted
   * (0 or 1).
   */
  ingest(calledNodeId: string, headerValue: unknown): number {
    if (headerValue === undefined) return 0;
    const now = this.#nowMs();
    this.#calledNodeId = calledNodeId;
    this.#ingestNowMs = now;
    const parsed = parseStatsHeader(headerValue, this.#parseOptions);
    this.#malformed += parsed.malformed;
    this.#dropped += parsed.dropped;
    if (parsed.unknownVersion) this.#unknownVersion++;
    let accepted = 0;
    for (const stats of parsed.entries) {
      if (Math.abs(now - stats.timestampMs) > this.#ttlMs) {
        this.#stale++;
        continue;
      }
      const stored = this.#nodes.get(stats.nodeId);
      if (stored !== undefined && stats.timestampMs < stored.stats.timestampMs) {
        this.#delayed++;
        continue;
      }
      if (stored === undefined) this.#nodes.set(stats.nodeId, { stats, acceptedAtMs: now });
      else {
        stored.stats = stats;
        stored.acceptedAtMs = now;
      }
      this.#accepted++;
      accepted++;
    }
    return accepted;
  }

  /**
   * `ingest` for a response's header record as Node's `http` gives it (lower-case keys; a repeated
   * header arrives joined with ", ", which parses as malformed). Never throws.
   */
  ingestResponseHeaders(calledNodeId: string, headers: Readonly<Record<string, unknown>>): number {
    return this.ingest(calledNodeId, headers[STATS_HEADER_KEY]);
  }

  /** The node's stats while fresh (see module doc); `undefined` means unknown, not idle. */
  get(nodeId: string): NodeResourceStats | undefined {
    const stored = this.#nodes.get(nodeId);
    if (stored === undefined) return undefined;
    const now = this.#nowMs();
    if (now - stored.stats.timestampMs > this.#ttlMs || now - stored.acceptedAtMs > this.#ttlMs)
      return undefined;
    return stored.stats;
  }

  /**
   * The node's last accepted entry whether fresh or not, with when it was accepted (coordinator clock,
   * epoch ms) and whether `get` would return it; `undefined` when none was ever accepted. For stats
   * APIs: the request path uses `get`, which never returns stale figures.
   */
  latest(
    nodeId: string,
  ):
    | { readonly stats: NodeResourceStats; readonly acceptedAtMs: number; readonly fresh: boolean }
    | undefined {
    const stored = this.#nodes.get(nodeId);
    if (stored === undefined) return undefined;
    return { stats: stored.stats, acceptedAtMs: stored.acceptedAtMs, fresh: this.get(nodeId) !== undefined };
  }

  /** The TTL, ms. */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /** The least time between two accepted entries of one node, ms. */
  get minRefreshMs(): number {
    return this.#minRefreshMs;
  }

  /** `'fresh'` when `get` would return stats, else `'unknown'`. */
  state(nodeId: string): 'fresh' | 'unknown' {
    return this.get(nodeId) === undefined ? 'unknown' : 'fresh';
  }

  /** Forgets a node (it left the cluster, as `ResourceUsageCollectorService.removeNodeResourceUsageStats`). */
  remove(nodeId: string): boolean {
    return this.#nodes.delete(nodeId);
  }

  /** Fresh stats of every node, for a stats API (a new array each call). */
  fresh(): NodeResourceStats[] {
    const out: NodeResourceStats[] = [];
    for (const nodeId of this.#nodes.keys()) {
      const stats = this.get(nodeId);
      if (stats !== undefined) out.push(stats);
    }
    return out;
  }

  /** The counters (a plain snapshot). */
  counters(): StatsCollectorCounters {
    return {
      accepted: this.#accepted,
      foreign: this.#foreign,
      throttled: this.#throttled,
      malformed: this.#malformed,
      stale: this.#stale,
      delayed: this.#delayed,
      dropped: this.#dropped,
      unknownVersion: this.#unknownVersion,
    };
  }
}
