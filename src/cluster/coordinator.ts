/**
 * The coordinator of a loopback cluster: takes a search, asks admission control first, picks one copy
 * of every shard with adaptive replica selection, fans the search out to the chosen data nodes over
 * HTTP, and merges their hits. It holds no data and runs no engine. Its parts (routing table, data
 * nodes' state, admission, stats collector, rankings, the index service over the data nodes, the
 * failover loop) are built once by its composition root, `coordinator-root.ts`.
 *
 * One search:
 * 1. Resolve the index expression against the indices the data nodes serve (404 for an unknown
 *    name); check `from` and `size` (400, as the engine would) and that the body nests at most
 *    `MAX_BODY_DEPTH` levels (400), then serialise it once for every node (a body that cannot be is
 *    the client's error, never a node's failure).
 * 2. Every shard of every index is a target; its copies come from the routing table (primary first).
 * 3. Admission (`AdmissionController.decide('search', ...)`) over the copies' fresh piggy-backed stats:
 *    when every copy of some shard is on a node over its limits, the search is refused with 429
 *    `rejected_execution_exception` (`AdmissionRejectedError`, naming node, resource, index, shard)
 *    before anything is sent. Nodes without fresh stats are unknown and never refused.
 * 4. Per shard, the best copy by `ReplicaRanking.select` (Elasticsearch's C3 rank from this
 *    coordinator's response and service times and the nodes' queue sizes, nodes in duress last,
 *    stat-less nodes probed). Every shard sent counts as one request in flight to its node until its
 *    node answers (`onSend`/`onDone`, as Elasticsearch counts pending shard requests); as in
 *    Elasticsearch (`TransportSearchAction` reads the pending counts once per search), the shards of
 *    one search are all ranked on the counts of the searches already in flight. Copies are rotated per
 *    pick so that ties do not always go to the same node.
 * 5. One HTTP request per chosen node (`POST /_internal/shard_search`) with all of that node's shards,
 *    asking each for its best `from + size` hits from 0. A node that fails (no answer, 5xx, 429 from its
 *    own governor, a shard it does not hold) has each of its shards retried once on another copy,
 *    picked by the ranking among the copies not tried yet. A node that did not answer at all is ranked
 *    after the others for `failedNodeBackoffMs`.
 * 6. A 4xx other than those (a bad query, a forbidden sandbox) is the client's: the first such answer
 *    is passed on as is (`RemoteClientError`); it counts as no failure of the node and logs no warning.
 *    Then Elasticsearch's rules for shard failures: every shard failed: `ShardsFailedError` (`all
 *    shards failed`, its status from the failures: 429 when they were refusals, see
 *    `shardFailuresStatus`); some failed: the merged hits (`search-merge.ts`) with 200 and the failed
 *    shards in `_shards.failures`, or, with `allow_partial_search_results=false`, `ShardsFailedError`
 *    (`Partial shards failure`).
 *
 * Search settings (`sandbox/search-settings.ts`): the request's `timeout` and
 * `cancel_after_time_interval` are passed on to the data nodes, which apply them with their sandbox's
 * settings. `max_concurrent_shard_requests` (the request's, or, given `options.sandboxes`, that of the
 * sandbox the request belongs to, with OpenSearch's precedence) bounds the fan-out: the shards sent to
 * one data node at once; beyond it a node's shards go in several calls, one after the other (without
 * it, one call per node carries all of that node's shards). `timed_out` is true when a node's answer
 * says so.
 *
 * Every answer from a data node feeds the stats collector with its `Resource_Usage_Stats` header
 * (only the called node's own entry counts) and the ranking with its response time, service time and
 * queue size. Headers from end clients are never read for stats.
 */
import type pino from 'pino';
import type { AdmissionController } from '../admission/admission-controller.js';
import type { ReplicaRanking } from '../admission/replica-ranking.js';
import type { StatsCollector } from '../admission/stats-collector.js';
import { resolveIndexExpression } from '../classify/index-expression.js';
import {
  AbortedError,
  AdmissionRejectedError,
  InvalidArgumentError,
  NotRunningError,
  RemoteClientError,
  type ShardFailure,
  ShardsFailedError,
  TimedOutError,
} from '../errors.js';
import { SandboxClassifier } from '../classify/sandbox-classifier.js';
import { checkSearchCallOptions, type SearchCallOptions } from '../execution/search-call.js';
import { requestedParameters } from '../execution/search-parameters.js';
import type { SearchRequest, SearchResponse, SearchService } from '../execution/search-service.js';
import { DecisionLog } from '../observability/decision-log.js';
import { isPlainObject } from '../common/is-plain-object.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import {
  type EffectiveSearchSettings,
  effectiveSearchSettings,
  resolveSetting,
} from '../sandbox/search-settings.js';
import {
  type CoordinatorOptions,
  type CoordinatorParts,
  type FailoverLoop,
  startCoordinatorParts,
} from './coordinator-root.js';
import type { CoordinatorStats, DataNodeStats } from './coordinator-stats.js';
import { callShardSearch, type NodeCallOutcome } from './data-node-client.js';
import type { DataNodeState } from './data-node-state.js';
import type { MembershipWatcher } from './membership.js';
import type { RoutingTable } from './routing-table.js';
import { mergeHits, mergeOrderOf, type NodeHits, readNodeHits } from './search-merge.js';
import { pageOf } from './search-page.js';
import { type ClusterIndices, clusterWriteStats } from './remote-placement.js';

export type { CoordinatorOptions } from './coordinator-root.js';
export type { CoordinatorStats, DataNodeStats } from './coordinator-stats.js';
export { RemoteClientError } from '../errors.js';

/**
 * `allow_partial_search_results` of a body (the HTTP edge copies the URL parameter there): `false` or
 * `"false"` refuses partial results; anything else, or none, allows them (Elasticsearch's default,
 * `search.default_allow_partial_results: true`). The data nodes check the value itself.
 */
function allowsPartialResults(body: Readonly<Record<string, unknown>>): boolean {
  const value = body['allow_partial_search_results'];
  return value !== false && value !== 'false';
}

interface Target {
  readonly index: string;
  readonly shard: number;
  readonly copies: readonly string[];
  readonly tried: string[];
  failure: ShardFailure | undefined;
  hitsFrom: number; // -1 until a node answered for it
}

/**
 * Deepest nesting of objects and arrays in a search body the coordinator passes on (Elasticsearch's
 * JSON parser limit, Jackson's `StreamReadConstraints` default). Deeper bodies are refused with 400
 * before anything is serialised (serialising them would overflow the stack).
 */
export const MAX_BODY_DEPTH = 1000;

/** Nesting depth of a parsed JSON value (a scalar is 0, `{}` 1), counted without recursion. */
function jsonDepth(value: unknown): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    const here = depth + 1;
    if (here > deepest) deepest = here;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, here]);
    }
  }
  return deepest;
}

/**
 * The shard body as JSON, serialised once for every node.
 * @throws InvalidArgumentError (400) naming `body` when it nests deeper than `MAX_BODY_DEPTH` or
 *   cannot be serialised.
 */
function serializeShardBody(body: Readonly<Record<string, unknown>>): string {
  const depth = jsonDepth(body);
  if (depth > MAX_BODY_DEPTH) {
    throw new InvalidArgumentError(
      'body nesting depth',
      `must be at most ${MAX_BODY_DEPTH} (objects and arrays within one another)`,
      depth,
    );
  }
  try {
    return JSON.stringify(body);
  } catch (error) {
    throw new InvalidArgumentError(
      'body',
      `cannot be serialised as JSON (${(error as Error).message})`,
      body,
    );
  }
}

/** A data node's 4xx that the client caused (not a refusal, not a routing mismatch). */
function isClientError(outcome: NodeCallOutcome & { ok: false }): boolean {
  return (
    outcome.status >= 400 &&
    outcome.status < 500 &&
    outcome.status !== 429 &&
    outcome.status !== 408 &&
    outcome.reason.type !== 'shard_not_found_exception'
  );
}

/** Discovers the data nodes, then routes searches over them (see module doc). */
export class Coordinator implements SearchService {
  readonly nodeId: string;
  readonly #table: RoutingTable;
  readonly #nodes: ReadonlyMap<string, DataNodeState>;
  readonly #admission: AdmissionController;
  readonly #ranking: ReplicaRanking;
  readonly #collector: StatsCollector;
  readonly #shardTimeoutMs: number;
  readonly #backoffMs: number;
  readonly #clusterSecret: string | undefined;
  readonly #log: pino.Logger;
  /** Admission rejections at info, rate-limited. */
  readonly #decisions: DecisionLog;
  readonly #closing: AbortController;
  readonly #writes: ClusterIndices;
  readonly #membership: MembershipWatcher | undefined;
  readonly #failover: FailoverLoop | undefined;
  readonly #sandboxes: (() => readonly Sandbox[]) | undefined;
  /** The classifier and settings of the last sandbox list seen (rebuilt when the list changes). */
  #classified:
    | {
        list: readonly Sandbox[];
        classifier: SandboxClassifier;
        settings: ReadonlyMap<string, EffectiveSearchSettings>;
      }
    | undefined;
  #rotation = 0;
  #searches = 0;
  #rejected = 0;
  #failed = 0;
  #partial = 0;

  /** Takes the parts its composition root built (coordinator-root.ts). */
  private constructor(parts: CoordinatorParts) {
    this.nodeId = parts.nodeId;
    this.#table = parts.table;
    this.#nodes = parts.nodes;
    this.#admission = parts.admission;
    this.#ranking = parts.ranking;
    this.#collector = parts.collector;
    this.#writes = parts.indices;
    this.#membership = parts.membership;
    this.#failover = parts.failover;
    this.#sandboxes = parts.sandboxes;
    this.#shardTimeoutMs = parts.shardTimeoutMs;
    this.#backoffMs = parts.backoffMs;
    this.#clusterSecret = parts.clusterSecret;
    this.#log = parts.log;
    this.#closing = parts.closing;
    this.#decisions = new DecisionLog(parts.log);
  }

  /**
   * Checks the options, discovers the data nodes and builds the coordinator's parts
   * (`startCoordinatorParts`, coordinator-root.ts).
   * @throws InvalidArgumentError for a bad option; Error when a node does not answer in time, answers
   *   with another id than the one listed, or nodes disagree on an index's shard count.
   */
  static async start(options: CoordinatorOptions): Promise<Coordinator> {
    return new Coordinator(await startCoordinatorParts(options));
  }

  /** Whether a data node counts as up for routing: registered, when membership comes from etcd. */
  #live(nodeId: string): boolean {
    return this.#membership === undefined || this.#membership.isLive(nodeId);
  }

  /** The write side: the index service over the data nodes (see `remote-placement.ts`). */
  get writes(): ClusterIndices {
    return this.#writes;
  }

  /** The data nodes' indices followed by the writable ones. */
  #searchableIndices(): readonly string[] {
    // Read on every search: the service rebuilds the list only when the writable indices change.
    return this.#writes.searchableIndices(this.#table.indices);
  }

  /** The routing table learnt at start. */
  get routingTable(): RoutingTable {
    return this.#table;
  }

  /** The stats collector (read side for tests and stats). */
  get statsCollector(): StatsCollector {
    return this.#collector;
  }

  /**
   * Runs one search over the cluster (see module doc), as `SearchService.search`. With
   * `options.signal` aborted or past `options.timeoutMs`, the calls to the data nodes are aborted
   * (each data node then gives up its task, as for any client that went away), no shard is retried,
   * and the search rejects with `AbortedError` / `TimedOutError`; the nodes are not counted as failed.
   * @throws InvalidArgumentError / IndexNotFoundError / EngineRequestError (400/404) for a bad request
   *   (`shards` set included: the coordinator picks the copies) or bad `options`;
   *   AdmissionRejectedError (429) before fan-out; RemoteClientError for a data node's 4xx;
   *   ShardsFailedError when every shard failed, or some did with allow_partial_search_results=false;
   *   AbortedError / TimedOutError (above); NotRunningError once closed.
   */
  async search(request: SearchRequest, options?: SearchCallOptions): Promise<SearchResponse> {
    const control = checkSearchCallOptions(options);
    if (this.#closing.signal.aborted) throw new NotRunningError('the coordinator is closed');
    const started = performance.now();
    const caller = control?.signal;
    const timeoutMs = control?.timeoutMs;
    const deadline = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
    /** Why the caller gave up, once it did: what the search rejects with. */
    const gaveUp = (): AbortedError | TimedOutError | undefined =>
      caller?.aborted === true
        ? new AbortedError(
            undefined,
            false,
            'search aborted by its caller: its calls to the data nodes were aborted',
            {
              cause: caller.reason,
            },
          )
        : deadline?.aborted === true
          ? new TimedOutError(
              undefined,
              timeoutMs!,
              false,
              `search timed out after ${timeoutMs} ms (timeoutMs): its calls to the data nodes were aborted`,
            )
          : undefined;
    const before = gaveUp();
    if (before !== undefined) throw before;
    const signals = [this.#closing.signal, caller, deadline].filter((x): x is AbortSignal => x !== undefined);
    const signal = signals.length === 1 ? signals[0]! : AbortSignal.any(signals);
    if (typeof request.index !== 'string')
      throw new InvalidArgumentError('index', 'must be a string', request.index);
    if (request.shards !== undefined) {
      throw new InvalidArgumentError(
        'shards',
        'must not be set on a search sent to a coordinator (it picks a copy of every shard itself)',
        request.shards,
      );
    }
    const indices = resolveIndexExpression(request.index, this.#searchableIndices());
    const raw = request.body ?? {};
    if (!isPlainObject(raw)) throw new InvalidArgumentError('body', 'must be a JSON object', raw);
    // Checked here (400 before fan-out); passed on as given, for the data nodes to resolve with their sandbox.
    const requested = requestedParameters({
      body: raw,
      timeout: request.timeout,
      cancelAfterTimeInterval: request.cancelAfterTimeInterval,
    });
    const body = requested.body as Record<string, unknown>;
    const timeoutText = request.timeout ?? (raw['timeout'] as string | number | undefined);
    const shardLimit = this.#shardRequestLimit(request, indices);
    const { from, size } = pageOf(body);
    this.#searches++;
    const targets: Target[] = [];
    for (const index of indices) {
      const writable = this.#writes.placement.shardsOf(index);
      const shards = writable ?? this.#table.shardsOf(index);
      for (let shard = 0; shard < shards; shard++) {
        targets.push({
          index,
          shard,
          copies:
            writable === undefined
              ? this.#table.copiesOf(index, shard)
              : this.#writes.placement.copiesOf(index, shard),
          tried: [],
          failure: undefined,
          hitsFrom: -1,
        });
      }
    }
    const decision = this.#admission.decide(
      'search',
      targets.map((t) => t.copies),
      this.#collector,
    );
    if (!decision.admitted) {
      this.#rejected++;
      const { rejection } = decision;
      const target = targets[rejection.shardIndex]!;
      const rejecting = this.#nodes.get(rejection.nodeId);
      if (rejecting !== undefined) rejecting.admissionRejections[rejection.resource]++;
      this.#decisions.admissionRejected({
        nodeId: rejection.nodeId,
        resource: rejection.resource,
        usage: rejection.usage,
        limit: rejection.limit,
        index: target.index,
        shard: target.shard,
      });
      throw new AdmissionRejectedError(
        rejection.nodeId,
        rejection.resource,
        target.index,
        target.shard,
        `rejected search before fan-out: every copy of shard [${target.index}][${target.shard}] is on a node ` +
          `over its admission limit (${rejection.nodeIds.join(', ')}); node [${rejection.nodeId}] ${rejection.resource} ` +
          `usage ${rejection.usage.toFixed(3)} >= limit ${rejection.limit}`,
      );
    }
    if (decision.wouldReject !== undefined) {
      this.#log.debug({ reason: decision.wouldReject.reason }, 'admission monitor_only: would reject');
    }
    // Checked and serialised before anything is sent: a body that cannot be is the client's (400),
    // never a node's failure.
    const shardBody = serializeShardBody({
      ...body,
      from: 0,
      size: from + size,
      ...(timeoutText !== undefined ? { timeout: timeoutText } : {}),
    });
    const forwarded = { user: request.user, sandboxId: request.sandboxId };
    // Checked above: a number can only be -1 (a JSON number has no unit).
    const cancelAfter =
      request.cancelAfterTimeInterval === undefined ? undefined : String(request.cancelAfterTimeInterval);
    const parts: NodeHits[] = [];
    let clientError: RemoteClientError | undefined;

    let pending = targets.filter((t) => {
      if (t.copies.length > 0) return true;
      t.failure = {
        index: t.index,
        shard: t.shard,
        node: null,
        status: 503,
        reason: {
          type: 'no_shard_available_action_exception',
          reason: `no copy of [${t.index}][${t.shard}] is on a known data node`,
        },
      };
      return false;
    });
    for (
      let round = 0;
      round < 2 && pending.length > 0 && clientError === undefined && !signal.aborted;
      round++
    ) {
      const byNode = this.#assign(pending);
      const retry: Target[] = [];
      const callNode = async (nodeId: string, shards: Target[]) => {
        const outcome = await this.#call(nodeId, shards, shardBody, forwarded, cancelAfter, signal, gaveUp);
        if (gaveUp() !== undefined) return;
        if (outcome.ok) {
          const hits = readNodeHits(outcome.body.response);
          if (hits !== undefined) {
            parts.push(hits);
            for (const t of shards) {
              t.failure = undefined;
              t.hitsFrom = parts.length - 1;
            }
            return;
          }
          this.#failShards(
            nodeId,
            shards,
            502,
            {
              type: 'exception',
              reason: 'the data node answered with a response that is not a search result',
            },
            retry,
          );
          return;
        }
        if (isClientError(outcome)) {
          clientError ??= new RemoteClientError(
            nodeId,
            outcome.status,
            outcome.errorBody,
            outcome.reason.reason,
          );
          return;
        }
        this.#failShards(nodeId, shards, outcome.status, outcome.reason, retry);
      };
      await Promise.all(
        [...byNode].map(async ([nodeId, shards]) => {
          // At most `shardLimit` shards to a node at once: its shards go in turns.
          for (
            let i = 0;
            i < shards.length && clientError === undefined && !signal.aborted;
            i += shardLimit
          ) {
            await callNode(nodeId, shards.slice(i, i + shardLimit));
          }
        }),
      );
      pending = retry;
    }
    const abandoned = gaveUp();
    if (abandoned !== undefined) throw abandoned;
    if (clientError !== undefined) throw clientError;
    const failures = targets.flatMap((t) => (t.failure === undefined ? [] : [t.failure]));
    if (failures.length === targets.length && targets.length > 0) {
      this.#failed++;
      throw new ShardsFailedError(failures);
    }
    if (failures.length > 0 && !allowsPartialResults(body)) {
      this.#failed++;
      throw new ShardsFailedError(failures, { partial: true });
    }
    if (failures.length > 0) this.#partial++;
    const merged = mergeHits(parts, from, size, mergeOrderOf(body));
    return {
      took: Math.round(performance.now() - started),
      timed_out: merged.timedOut,
      _shards: {
        total: targets.length,
        successful: targets.length - failures.length,
        skipped: 0,
        failed: failures.length,
        ...(failures.length > 0 ? { failures } : {}),
      },
      hits: {
        ...(merged.total === undefined ? {} : { total: merged.total }),
        max_score: merged.maxScore,
        hits: merged.hits,
      },
    };
  }

  /**
   * Shards one call may carry: the request's `max_concurrent_shard_requests`, or its sandbox's with
   * OpenSearch's precedence; unbounded without either.
   * @throws SandboxForbiddenError for an explicit sandbox the request may not use (as a data node would).
   */
  #shardRequestLimit(request: SearchRequest, indices: readonly string[]): number {
    const requested = request.maxConcurrentShardRequests;
    if (requested !== undefined && (!Number.isInteger(requested) || requested < 1)) {
      throw new InvalidArgumentError('max_concurrent_shard_requests', 'must be an integer >= 1', requested);
    }
    const list = this.#sandboxes?.();
    if (list === undefined) return requested ?? Number.POSITIVE_INFINITY;
    if (this.#classified?.list !== list) {
      this.#classified = {
        list,
        classifier: new SandboxClassifier(list),
        settings: effectiveSearchSettings(list),
      };
    }
    const { classifier, settings } = this.#classified;
    const attributes = { user: request.user, indices };
    const sandbox =
      request.sandboxId !== undefined
        ? classifier.resolveExplicit(request.sandboxId, attributes)
        : classifier.classify(attributes);
    const effective = settings.get(sandbox.id);
    const r = resolveSetting(
      requested,
      effective?.maxConcurrentShardRequests,
      effective?.overrideRequestValues ?? false,
    );
    return r?.value ?? Number.POSITIVE_INFINITY;
  }

  /** Picks a copy for every target among those not tried yet; groups them by node. */
  #assign(targets: readonly Target[]): Map<string, Target[]> {
    const byNode = new Map<string, Target[]>();
    const nowMs = Date.now();
    for (const t of targets) {
      const untried = t.copies.filter((id) => !t.tried.includes(id));
      const r = this.#rotation++ % untried.length;
      const rotated = r === 0 ? untried : [...untried.slice(r), ...untried.slice(0, r)];
      let order = this.#ranking.select(rotated, this.#collector);
      if (order.length > 1) {
        const up = order.filter((id) => this.#nodes.get(id)!.downUntilMs <= nowMs && this.#live(id));
        if (up.length > 0 && up.length < order.length) {
          order = [...up, ...order.filter((id) => !up.includes(id))];
        }
      }
      const nodeId = order[0]!;
      t.tried.push(nodeId);
      const list = byNode.get(nodeId);
      if (list === undefined) byNode.set(nodeId, [t]);
      else list.push(t);
    }
    return byNode;
  }

  /**
   * One request to one node for its shards; feeds stats and ranking; never throws. `signal` aborts it
   * (the coordinator closing, or the search's caller giving up: `gaveUp`, which is then no failure of
   * the node).
   */
  async #call(
    nodeId: string,
    shards: readonly Target[],
    bodyJson: string,
    forwarded: { user: string | undefined; sandboxId: string | undefined },
    cancelAfterTimeInterval: string | undefined,
    signal: AbortSignal,
    gaveUp: () => Error | undefined,
  ): Promise<NodeCallOutcome> {
    const node = this.#nodes.get(nodeId)!;
    const wanted: Record<string, number[]> = {};
    for (const t of shards) {
      const list = wanted[t.index];
      if (list === undefined) wanted[t.index] = [t.shard];
      else list.push(t.shard);
    }
    node.requests++;
    node.shardRequests += shards.length;
    for (let i = 0; i < shards.length; i++) this.#ranking.onSend(nodeId);
    let outcome: NodeCallOutcome;
    try {
      outcome = await callShardSearch(
        node.url,
        { index: Object.keys(wanted).join(','), shards: wanted, bodyJson, cancelAfterTimeInterval },
        forwarded,
        this.#shardTimeoutMs,
        this.#clusterSecret,
        signal,
      );
    } finally {
      for (let i = 0; i < shards.length; i++) this.#ranking.onDone(nodeId);
    }
    this.#collector.ingest(nodeId, outcome.statsHeader);
    if (outcome.ok) {
      this.#ranking.recordResponse(nodeId, {
        responseTimeNs: outcome.responseTimeNs,
        serviceTimeNs: Math.min(outcome.body.service_time_ns, outcome.responseTimeNs),
        queueSize: outcome.body.queue_size,
      });
      node.downUntilMs = 0;
      node.lastCallFailed = false;
    } else if (outcome.status === 0 && gaveUp() !== undefined) {
      // The search's caller went away or timed out: the call was aborted here, the node is fine.
      this.#log.debug({ node: nodeId }, 'shard search aborted: its caller gave up');
    } else if (isClientError(outcome)) {
      // The client's to fix (a bad query, a forbidden sandbox): passed on, the node is fine.
      node.lastCallFailed = false;
      this.#log.debug(
        { node: nodeId, status: outcome.status, reason: outcome.reason.reason },
        'shard search refused by a data node as a client error',
      );
    } else {
      node.failures++;
      node.lastCallFailed = true;
      if (outcome.status === 0) node.downUntilMs = Date.now() + this.#backoffMs;
      this.#log.warn(
        { node: nodeId, status: outcome.status, reason: outcome.reason.reason },
        'shard search failed on a data node',
      );
    }
    return outcome;
  }

  #failShards(
    nodeId: string,
    shards: readonly Target[],
    status: number,
    reason: { type: string; reason: string },
    retry: Target[],
  ): void {
    const node = this.#nodes.get(nodeId)!;
    for (const t of shards) {
      t.failure = { index: t.index, shard: t.shard, node: nodeId, status, reason };
      if (t.copies.some((id) => !t.tried.includes(id))) {
        node.retriedAway++;
        retry.push(t);
      }
    }
  }

  /** The coordinator's counters and every data node's latest stats (a plain snapshot). */
  nodesStats(): CoordinatorStats {
    const nowMs = Date.now();
    const dataNodes: DataNodeStats[] = [];
    for (const node of this.#nodes.values()) {
      const latest = this.#collector.latest(node.nodeId);
      dataNodes.push({
        nodeId: node.nodeId,
        url: node.url,
        usage:
          latest === undefined
            ? { state: 'unknown' }
            : {
                state: latest.fresh ? 'fresh' : 'stale',
                stats: latest.stats,
                ageMs: nowMs - latest.stats.timestampMs,
                duress: latest.fresh && this.#ranking.isInDuress(latest.stats),
              },
        requests: node.requests,
        shardRequests: node.shardRequests,
        failures: node.failures,
        lastCallFailed: node.lastCallFailed,
        retriedAway: node.retriedAway,
        admissionRejections: { ...node.admissionRejections },
        outstandingShards: this.#ranking.outstanding(node.nodeId),
        ranking: this.#ranking.nodeStats(node.nodeId),
      });
    }
    return {
      nodeId: this.nodeId,
      ...(this.#membership !== undefined
        ? {
            membership: {
              live: [...this.#membership.members().keys()].sort(),
              promotions: this.#failover?.promotions ?? 0,
            },
          }
        : {}),
      indices: this.#table.indices,
      searches: {
        total: this.#searches,
        rejected: this.#rejected,
        failed: this.#failed,
        partial: this.#partial,
      },
      admission: {
        ...this.#admission.counters(),
        limits: { search: { ...this.#admission.limits('search') } },
      },
      statsCollector: {
        ...this.#collector.counters(),
        ttlMs: this.#collector.ttlMs,
        minRefreshMs: this.#collector.minRefreshMs,
      },
      duressThresholds: this.#ranking.duressThresholds,
      dataNodes,
      writes: clusterWriteStats(this.#writes),
    };
  }

  /** Stops taking searches and aborts the calls in flight. Idempotent. */
  close(): void {
    this.#closing.abort();
  }
}
