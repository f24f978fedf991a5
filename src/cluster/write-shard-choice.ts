/**
 * The shard of a single-shard bulk on a cluster (`index.bulk_routing.enabled`): the planner asks
 * `choose` for one shard per index and bulk, and the choice avoids sick nodes, as the seed's
 * long-tail shards:
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
import type { ReplicaRanking } from '../admission/replica-ranking.js';
import type { StatsCollector } from '../admission/stats-collector.js';
import { InvalidArgumentError } from '../errors.js';
import type { IndexMetadata } from '../indices/index-metadata-store.js';

/** What the choice reads (the remote placement's options). */
export interface WriteShardChoiceOptions {
  readonly collector: StatsCollector;
  /** The write-side ranking. */
  readonly ranking: ReplicaRanking;
  /** Whether a node failed to answer recently (the coordinator's back-off). */
  readonly isDown: (nodeId: string) => boolean;
  /** Unhealthy above this × the median response-time EWMA, > 1. @default 2 */
  readonly slowNodeFactor?: number | undefined;
  /** A slow node's figures older than this no longer exclude it, ms, >= 0. @default 5000 */
  readonly slowNodeRetryMs?: number | undefined;
  /** Random draws, in [0, 1). @default Math.random */
  readonly random?: (() => number) | undefined;
}

/** The single-shard choice (see module doc). */
export class WriteShardChoice {
  readonly #ranking: ReplicaRanking;
  readonly #collector: StatsCollector;
  readonly #isDown: (nodeId: string) => boolean;
  readonly #slowFactor: number;
  readonly #slowRetryMs: number;
  /** When each node's write figures last changed, ms (performance.now()). */
  readonly #lastSampleMs = new Map<string, number>();
  /** When a slow node last got a probe bulk, ms (performance.now()). */
  readonly #probeSentMs = new Map<string, number>();
  readonly #random: () => number;
  readonly #chosen = new Map<string, number>();

  /** @throws InvalidArgumentError for a bad `slowNodeFactor` or `slowNodeRetryMs`. */
  constructor(options: WriteShardChoiceOptions) {
    this.#ranking = options.ranking;
    this.#collector = options.collector;
    this.#isDown = options.isDown;
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

  /** Notes that `node`'s write figures in the ranking just changed (its slowness is news again). */
  sampled(node: string): void {
    this.#lastSampleMs.set(node, performance.now());
  }

  /** Shards chosen so far, per primary node. */
  chosen(): Record<string, number> {
    return Object.fromEntries(this.#chosen);
  }

  /** The shard among `candidates` of the index `meta` (see module doc). */
  choose(meta: IndexMetadata, candidates: readonly number[]): number {
    const nodes = [...new Set(meta.layout.flatMap((p) => [p.primary, ...p.replicas]))];
    const ranking = this.#ranking;
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
      let slow =
        median !== undefined && stats !== undefined && stats.responseTimeNs > this.#slowFactor * median;
      if (slow) {
        // Slow figures go stale after slowNodeRetryMs without news: the node may take one probe bulk.
        const since = Math.max(this.#lastSampleMs.get(n) ?? 0, this.#probeSentMs.get(n) ?? 0);
        if (nowMs - since >= this.#slowRetryMs) {
          slow = false;
          probes.add(n);
        }
      }
      healthy.set(n, !slow && !this.#isDown(n) && !ranking.isInDuress(this.#collector.get(n)));
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
    for (const n of [primary, ...meta.layout[shard]!.replicas])
      if (probes.has(n)) this.#probeSentMs.set(n, nowMs);
    this.#chosen.set(primary, (this.#chosen.get(primary) ?? 0) + 1);
    return shard;
  }
}
