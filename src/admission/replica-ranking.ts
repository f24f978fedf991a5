/**
 * Adaptive replica selection at the coordinator: orders the nodes holding copies of a shard, best
 * first, from what this coordinator observed of each node (the C3 formula as Elasticsearch ships it)
 * and from the resource stats the nodes piggy-back on their responses.
 *
 * Per node, from `recordResponse` (Elasticsearch `ResponseCollectorService`, `ALPHA = 0.3`):
 * - EWMA of queue size, of response time and of service time, α = 0.3, each started at its first
 *   sample (`ExponentiallyWeightedMovingAverage(ALPHA, first)`). Elasticsearch's data node sends an
 *   already smoothed service time (its search executor's EWMA of task time) and the collector stores
 *   it as is; here each response reports its own service time and the coordinator smooths it with
 *   the same α.
 *
 * Rank (`ResponseCollectorService.ComputedNodeStats.innerRank`), lower is better:
 * ```
 * qHat = 1 + outstanding × clientNum + q        q = trunc(queue-size EWMA)
 * rank = R − S + qHat³ × S                      R, S = response, service time EWMA in ms (ns / 1e6)
 * ```
 * where `outstanding` is the number of requests this coordinator has in flight to the node
 * (`onSend`/`onDone`; Elasticsearch's `searchCounts`, the pending search requests per node) and
 * `clientNum` is, as in Elasticsearch, the number of nodes this coordinator holds response stats
 * for (`nodeIdToStats.size()`, a stand-in for the number of clients).
 *
 * After a selection (`select`), every other candidate that has stats gets the winner's stats blended
 * in (Elasticsearch `IndexShardRoutingTable.adjustStats`): queue and response time EWMAs take the mean
 * of both, service time moves one α-step towards it. Without this a node that once looked slow would
 * never be tried again and its stats would never recover.
 *
 * Nodes without response stats (new, or forgotten) are probed, not flooded (Elasticsearch's ARS
 * probing, `IndexShardRoutingTable.rankNodes`, settings `cluster.routing.use_adaptive_replica_selection
 * .probe_inflight_cap` = 2 and `.warmup_samples` = 100): such a node sorts just ahead of the best
 * ranked node while this coordinator has fewer than `probeInflightCap` requests in flight to it, and
 * after every ranked node otherwise. A node with fewer than `warmupSamples` responses is "warming up":
 * the same in-flight cap applies, and its rank is raised to the best warm node's so one fast sample
 * cannot make it look best. The original behaviour (stat-less nodes first, always) sends a new node
 * every request until its first response returns; this caps it at `probeInflightCap` in flight.
 *
 * Extension: piggy-backed resource stats. A node whose fresh stats put CPU at or above
 * `cpuDuressThreshold` or heap at or above `heapDuressThreshold` is in duress and sorts after every
 * node that is not, whatever its rank (defaults 0.9 and 0.7: OpenSearch
 * `search_backpressure.node_duress.cpu_threshold` / `.heap_threshold`). A node without fresh stats is
 * unknown: not in duress, not preferred either; it is ordered by its response stats like any other.
 *
 * Ties (equal rank, or unranked) go to fewer requests in flight, then to the order given (shuffle the
 * copies beforehand, as Elasticsearch does, to spread ties).
 */
import { InvalidArgumentError } from '../errors.js';
import type { ResourceStatsSource } from './stats-collector.js';
import { optionChecks } from '../common/option-checks.js';

/** What one response from a node tells the coordinator. */
export interface ResponseSample {
  /** Time from sending the request to receiving the response, at the coordinator, ns >= 0. */
  readonly responseTimeNs: number;
  /** Time the node spent executing it, ns >= 0. */
  readonly serviceTimeNs: number;
  /** The node's search queue length when it answered, >= 0. */
  readonly queueSize: number;
}

export interface ReplicaRankingOptions {
  /** EWMA weight of a new sample, in (0, 1]. @default 0.3 (`ResponseCollectorService.ALPHA`) */
  readonly alpha?: number;
  /** CPU ratio at or above which a node is in duress, (0, 1]. @default 0.9 */
  readonly cpuDuressThreshold?: number;
  /** Heap ratio at or above which a node is in duress, (0, 1]. @default 0.7 */
  readonly heapDuressThreshold?: number;
  /** Requests in flight to a stat-less or warming-up node before probing it stops, integer 0..1000. @default 2 */
  readonly probeInflightCap?: number;
  /** Responses before a node is warm, integer 0..10000 (0: no warm-up rules). @default 100 */
  readonly warmupSamples?: number;
}

/** A node's smoothed response stats as the ranking sees them. */
export interface ComputedNodeStats {
  /** trunc(queue-size EWMA), as Elasticsearch's `ComputedNodeStats.queueSize` (an int). */
  readonly queueSize: number;
  readonly responseTimeNs: number;
  readonly serviceTimeNs: number;
  /** Responses recorded (blended-in adjustments do not count). */
  readonly observations: number;
}

interface NodeStats {
  queueEwma: number;
  responseEwma: number;
  serviceEwma: number;
  observations: number;
}

const FACTOR = 1_000_000; // ns -> ms, as ComputedNodeStats.FACTOR

/** The C3 rank of Elasticsearch's `ComputedNodeStats.innerRank`; lower is better. */
export function c3Rank(stats: ComputedNodeStats, outstanding: number, clientNum: number): number {
  const qHat = 1 + outstanding * clientNum + stats.queueSize;
  const r = stats.responseTimeNs / FACTOR;
  const s = stats.serviceTimeNs / FACTOR;
  return r - s + qHat ** 3 * s;
}

const { ratio, integerIn: integer } = optionChecks;

function computed(ns: NodeStats): ComputedNodeStats {
  return {
    queueSize: Math.trunc(ns.queueEwma),
    responseTimeNs: ns.responseEwma,
    serviceTimeNs: ns.serviceEwma,
    observations: ns.observations,
  };
}

/** Sort keys of one candidate in one `rank` call. */
interface Candidate {
  readonly nodeId: string;
  readonly index: number;
  readonly outstanding: number;
  readonly duress: boolean;
  stats: ComputedNodeStats | undefined;
  rank: number; // NaN: unranked (sorts after ranked nodes of its duress tier)
  probe: boolean;
}

/** Response stats, in-flight counts and the ranking over them (see module doc). */
export class ReplicaRanking {
  readonly #alpha: number;
  readonly #cpuDuress: number;
  readonly #heapDuress: number;
  readonly #probeCap: number;
  readonly #warmupSamples: number;
  readonly #nodes = new Map<string, NodeStats>();
  readonly #outstanding = new Map<string, number>();

  /** @throws InvalidArgumentError for an option out of range. */
  constructor(options: ReplicaRankingOptions = {}) {
    this.#alpha = ratio('options.alpha', options.alpha, 0.3);
    this.#cpuDuress = ratio('options.cpuDuressThreshold', options.cpuDuressThreshold, 0.9);
    this.#heapDuress = ratio('options.heapDuressThreshold', options.heapDuressThreshold, 0.7);
    this.#probeCap = integer('options.probeInflightCap', options.probeInflightCap, 0, 1000, 2);
    this.#warmupSamples = integer('options.warmupSamples', options.warmupSamples, 0, 10_000, 100);
  }

  /** Whether fresh resource stats put a node in duress (CPU or heap at or above its threshold); `undefined` stats (unknown) never do. */
  isInDuress(stats: { readonly cpu: number; readonly heap: number } | undefined): boolean {
    return stats !== undefined && (stats.cpu >= this.#cpuDuress || stats.heap >= this.#heapDuress);
  }

  /** The duress thresholds, ratios. */
  get duressThresholds(): { readonly cpu: number; readonly heap: number } {
    return { cpu: this.#cpuDuress, heap: this.#heapDuress };
  }

  /**
   * Folds one response into the node's EWMAs (the first response starts them).
   * @throws InvalidArgumentError when a figure is negative or not finite.
   */
  recordResponse(nodeId: string, sample: ResponseSample): void {
    for (const key of ['responseTimeNs', 'serviceTimeNs', 'queueSize'] as const) {
      const v = sample[key];
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
        throw new InvalidArgumentError(`sample.${key}`, 'must be a finite number >= 0', v);
      }
    }
    const ns = this.#nodes.get(nodeId);
    if (ns === undefined) {
      this.#nodes.set(nodeId, {
        queueEwma: sample.queueSize,
        responseEwma: sample.responseTimeNs,
        serviceEwma: sample.serviceTimeNs,
        observations: 1,
      });
      return;
    }
    const a = this.#alpha;
    ns.queueEwma = a * sample.queueSize + (1 - a) * ns.queueEwma;
    ns.responseEwma = a * sample.responseTimeNs + (1 - a) * ns.responseEwma;
    ns.serviceEwma = a * sample.serviceTimeNs + (1 - a) * ns.serviceEwma;
    ns.observations++;
  }

  /** A request to the node was sent: one more in flight. */
  onSend(nodeId: string): void {
    this.#outstanding.set(nodeId, (this.#outstanding.get(nodeId) ?? 0) + 1);
  }

  /** A request to the node finished (response, failure or timeout): one fewer in flight, never below 0. */
  onDone(nodeId: string): void {
    const n = this.#outstanding.get(nodeId) ?? 0;
    if (n <= 1) this.#outstanding.delete(nodeId);
    else this.#outstanding.set(nodeId, n - 1);
  }

  /** Requests in flight to the node. */
  outstanding(nodeId: string): number {
    return this.#outstanding.get(nodeId) ?? 0;
  }

  /** The node's smoothed response stats, or `undefined` when it has none. */
  nodeStats(nodeId: string): ComputedNodeStats | undefined {
    const ns = this.#nodes.get(nodeId);
    return ns === undefined ? undefined : computed(ns);
  }

  /** Elasticsearch's `clientNum`: the number of nodes with response stats. */
  get clientNum(): number {
    return this.#nodes.size;
  }

  /** Forgets a node's response stats (it left the cluster: `ResponseCollectorService.removeNode`). */
  removeNode(nodeId: string): void {
    this.#nodes.delete(nodeId);
  }

  /**
   * Orders the candidates best first (see module doc). Changes nothing. Duplicate ids are kept once,
   * at their first position.
   * @param nodeIds nodes holding eligible copies, ideally shuffled.
   * @param stats fresh resource stats (`StatsCollector` or a Map); `undefined` for a node = unknown.
   */
  rank(nodeIds: readonly string[], stats?: ResourceStatsSource): string[] {
    return this.#order(nodeIds, stats).map((c) => c.nodeId);
  }

  /**
   * `rank`, then the winner's stats are blended into every other candidate that has stats
   * (Elasticsearch `rankShardsAndUpdateStats` / `adjustStats`), when the winner has stats. Call
   * `onSend` for the node the request actually goes to.
   */
  select(nodeIds: readonly string[], stats?: ResourceStatsSource): string[] {
    const order = this.#order(nodeIds, stats);
    const winner = order[0];
    if (winner?.stats !== undefined) {
      const w = winner.stats;
      for (const c of order) {
        if (c === winner || c.stats === undefined) continue;
        const ns = this.#nodes.get(c.nodeId);
        if (ns === undefined) continue;
        const s = c.stats;
        const a = this.#alpha;
        const queue = Math.floor((w.queueSize + s.queueSize) / 2);
        const response = Math.floor(Math.trunc(w.responseTimeNs + s.responseTimeNs) / 2);
        ns.queueEwma = a * queue + (1 - a) * ns.queueEwma;
        ns.responseEwma = a * response + (1 - a) * ns.responseEwma;
        ns.serviceEwma = Math.trunc(
          a * ((w.serviceTimeNs + s.serviceTimeNs) / 2) + (1 - a) * s.serviceTimeNs,
        );
      }
    }
    return order.map((c) => c.nodeId);
  }

  #order(nodeIds: readonly string[], stats: ResourceStatsSource | undefined): Candidate[] {
    const clientNum = this.#nodes.size;
    const cap = this.#probeCap;
    const candidates: Candidate[] = [];
    const seen = new Set<string>();
    let bestPeerRank = Number.POSITIVE_INFINITY;
    let bestWarmRank = Number.POSITIVE_INFINITY;
    for (const nodeId of nodeIds) {
      if (seen.has(nodeId)) continue;
      seen.add(nodeId);
      const outstanding = this.#outstanding.get(nodeId) ?? 0;
      const duress = this.isInDuress(stats?.get(nodeId));
      const ns = this.#nodes.get(nodeId);
      const c: Candidate = {
        nodeId,
        index: candidates.length,
        outstanding,
        duress,
        stats: ns === undefined ? undefined : computed(ns),
        rank: Number.NaN,
        probe: false,
      };
      candidates.push(c);
      if (c.stats === undefined) {
        c.probe = outstanding < cap;
        continue;
      }
      const warmingUp = this.#warmupSamples > 0 && c.stats.observations < this.#warmupSamples;
      if (warmingUp && cap > 0 && outstanding >= cap) continue; // unranked until requests return
      c.rank = c3Rank(c.stats, outstanding, clientNum);
      if (c.rank < bestPeerRank) bestPeerRank = c.rank;
      if (!warmingUp && c.rank < bestWarmRank) bestWarmRank = c.rank;
    }
    for (const c of candidates) {
      if (c.stats === undefined) {
        // A probe sorts just ahead of the best ranked node (Math.nextDown(bestPeerRank) in Elasticsearch).
        if (c.probe && bestPeerRank !== Number.POSITIVE_INFINITY) c.rank = bestPeerRank;
        else c.probe = false;
      } else if (
        !Number.isNaN(c.rank) &&
        this.#warmupSamples > 0 &&
        c.stats.observations < this.#warmupSamples &&
        bestWarmRank !== Number.POSITIVE_INFINITY &&
        c.rank < bestWarmRank
      ) {
        c.rank = bestWarmRank;
      }
    }
    candidates.sort(compareCandidates);
    return candidates;
  }
}

function compareCandidates(a: Candidate, b: Candidate): number {
  if (a.duress !== b.duress) return a.duress ? 1 : -1;
  const aRanked = !Number.isNaN(a.rank);
  const bRanked = !Number.isNaN(b.rank);
  if (aRanked !== bRanked) return aRanked ? -1 : 1;
  if (aRanked && a.rank !== b.rank) return a.rank - b.rank;
  if (a.probe !== b.probe) return a.probe ? -1 : 1;
  if (a.outstanding !== b.outstanding) return a.outstanding - b.outstanding;
  return a.index - b.index;
}
