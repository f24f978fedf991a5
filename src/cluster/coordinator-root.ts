/**
 * The coordinator's composition root: `startCoordinatorParts(options)` checks the options, discovers
 * the data nodes (over HTTP, or from their etcd membership) and builds every part the coordinator
 * uses, once: the routing table, the data nodes' state, the admission controller, the stats
 * collector, the two replica rankings (one for searches, one for the write side: other requests,
 * other times), the index service over the remote placement, and, with cluster state, the failover
 * loop. `Coordinator.start` hands them to the coordinator (coordinator.ts), which routes searches.
 */
import { optionChecks } from '../common/option-checks.js';
import path from 'node:path';
import pino from 'pino';
import { AdmissionController, type AdmissionControllerOptions } from '../admission/admission-controller.js';
import { ReplicaRanking, type ReplicaRankingOptions } from '../admission/replica-ranking.js';
import { StatsCollector, type StatsCollectorOptions } from '../admission/stats-collector.js';
import { InvalidArgumentError } from '../errors.js';
import type { EtcdConnection } from '../etcd/etcd-connection.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import type { DataNodeAddress } from './cluster-spec.js';
import { type DataNodeState, dataNodeStates } from './data-node-state.js';
import { discoverDataNodes } from './discovery.js';
import { EtcdMetadataPersistence } from './etcd-index-metadata.js';
import type { NodeInfo } from './internal-protocol.js';
import type { MembershipWatcher } from './membership.js';
import { type ClusterIndices, openClusterIndices } from './remote-placement.js';
import { RoutingTable } from './routing-table.js';

export interface CoordinatorOptions {
  /** This node's id, 1..64 characters of `[A-Za-z0-9_.-]`. @default 'coordinator' */
  readonly nodeId?: string;
  /** The data nodes to discover (ids checked when given), 1..64. */
  readonly dataNodes: readonly DataNodeAddress[];
  /**
   * Admission control. @default `{ mode: 'enforced' }` with the controller's limits (search: CPU 0.95,
   * heap 0.9). Unlike OpenSearch's default (`disabled`): the coordinator exists to use these stats,
   * and the limits refuse only a node that is saturated.
   */
  readonly admission?: AdmissionControllerOptions;
  /** Replica ranking (EWMA α, duress thresholds, probing); see `admission/replica-ranking.ts`. */
  readonly ranking?: ReplicaRankingOptions;
  /** Stats collector (TTL 5 s, refresh at most once a second); see `admission/stats-collector.ts`. */
  readonly statsCollector?: StatsCollectorOptions;
  /** Time a data node has to answer one shard search, ms, integer 100..600000. @default 30000 */
  readonly shardTimeoutMs?: number;
  /**
   * How long `start` waits for every data node to answer discovery, ms, 100..3600000 (a warning
   * naming each node that does not answer yet is logged meanwhile). @default 60000
   */
  readonly discoveryTimeoutMs?: number;
  /** How long a node that did not answer is ranked after the others, ms, 0..600000. @default 1000 */
  readonly failedNodeBackoffMs?: number;
  /** A pino logger. @default silent */
  readonly logger?: pino.Logger;
  /**
   * Where the coordinator keeps the writable indices' metadata (`<dataDir>/indices/metadata.json`).
   * @default `./.query-sandbox/coordinator`
   */
  readonly dataDir?: string;
  /** Indexing pressure of bulks at the coordinator, bytes in flight. @default 10 % of the heap limit */
  readonly indexingPressureBytes?: number;
  /**
   * Cluster state in etcd: the data nodes are learnt from their membership registrations (instead of
   * polling `GET /_internal/node_info`), a node whose lease expired is down, the writable indices'
   * metadata and shard table live in etcd, and the primaries of a node that left fail over to in-sync
   * replicas. @default none (discovery over HTTP, metadata in `dataDir`)
   */
  readonly clusterState?:
    | { readonly connection: EtcdConnection; readonly membership: MembershipWatcher }
    | undefined;
  /** Single-shard bulks avoid a node whose write response time is above this × the median. @default 2 */
  readonly slowNodeFactor?: number;
  /** ...for this long after its last slow answer, ms. @default 5000 */
  readonly slowNodeRetryMs?: number;
  /**
   * The sandbox tree the data nodes classify with (the shared store, in etcd), read at every search:
   * the request's sandbox (classified the same way, by user and indices, or its explicit choice)
   * gives the `max_concurrent_shard_requests` of its search settings. @default none (only the
   * request's own value bounds the fan-out)
   */
  readonly sandboxes?: () => readonly Sandbox[];
  /**
   * The cluster secret, sent on every call to a data node (`Authorization: Bearer <secret>`); the data
   * nodes' internal routes refuse calls without it (401) or with another one (403). @default none
   */
  readonly clusterSecret?: string | undefined;
}

/** Everything the coordinator is built from (see module doc). */
export interface CoordinatorParts {
  readonly nodeId: string;
  /** The read-only indices' shard copies, learnt at start. */
  readonly table: RoutingTable;
  /** Every data node's state, shared with the write side's back-off. */
  readonly nodes: ReadonlyMap<string, DataNodeState>;
  readonly admission: AdmissionController;
  /** The search-side ranking. */
  readonly ranking: ReplicaRanking;
  readonly collector: StatsCollector;
  /** The writable indices: the index service over the data nodes. */
  readonly indices: ClusterIndices;
  readonly membership: MembershipWatcher | undefined;
  /** The failover loop (with cluster state). */
  readonly failover: FailoverLoop | undefined;
  readonly sandboxes: (() => readonly Sandbox[]) | undefined;
  readonly shardTimeoutMs: number;
  /** How long a node that did not answer is ranked after the others, ms. */
  readonly backoffMs: number;
  readonly clusterSecret: string | undefined;
  readonly log: pino.Logger;
  /** Aborted by `Coordinator.close`: the calls in flight and the failover loop stop. */
  readonly closing: AbortController;
}

const NODE_ID = /^[A-Za-z0-9_.-]{1,64}$/;

const integer = (name: string, value: unknown, min: number, max: number, fallback: number): number =>
  optionChecks.integerIn(`options.${name}`, value, min, max, fallback);

/**
 * Checks the options, then asks every data node for its shard copies (retrying every 250 ms until
 * `discoveryTimeoutMs`), builds the routing table and the parts (see module doc).
 * @throws InvalidArgumentError for a bad option; Error when a node does not answer in time, answers
 *   with another id than the one listed, or nodes disagree on an index's shard count; the errors of
 *   `IndexMetadataStore.open`.
 */
export async function startCoordinatorParts(options: CoordinatorOptions): Promise<CoordinatorParts> {
  const nodeId = options.nodeId ?? 'coordinator';
  if (typeof nodeId !== 'string' || !NODE_ID.test(nodeId)) {
    throw new InvalidArgumentError('options.nodeId', 'must be 1..64 characters of [A-Za-z0-9_.-]', nodeId);
  }
  if (!Array.isArray(options.dataNodes) || options.dataNodes.length === 0 || options.dataNodes.length > 64) {
    throw new InvalidArgumentError('options.dataNodes', 'must list 1..64 data nodes', options.dataNodes);
  }
  const shardTimeoutMs = integer('shardTimeoutMs', options.shardTimeoutMs, 100, 600_000, 30_000);
  const discoveryTimeoutMs = integer(
    'discoveryTimeoutMs',
    options.discoveryTimeoutMs,
    100,
    3_600_000,
    60_000,
  );
  const backoffMs = integer('failedNodeBackoffMs', options.failedNodeBackoffMs, 0, 600_000, 1000);
  const admission = new AdmissionController({ mode: 'enforced', ...options.admission });
  const ranking = new ReplicaRanking(options.ranking);
  const collector = new StatsCollector(options.statsCollector);
  const log = options.logger ?? pino({ level: 'silent' });
  const state = options.clusterState;
  let infos: NodeInfo[];
  let urls: Map<string, string>;
  if (state === undefined) {
    infos = await discoverDataNodes(
      options.dataNodes,
      discoveryTimeoutMs,
      (nodeId, header) => {
        collector.ingest(nodeId, header);
      },
      log,
      options.clusterSecret,
    );
    urls = new Map(infos.map((info, i) => [info.node_id, options.dataNodes[i]!.url]));
  } else {
    // Membership from etcd: every listed data node must have registered (under its lease).
    const ids = options.dataNodes.map((n) => n.id);
    const wanted = ids.every((id): id is string => id !== undefined)
      ? ids
      : await (async () => {
          for (;;) {
            const members = [...state.membership.members().keys()];
            if (members.length >= options.dataNodes.length) return members.sort();
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        })();
    const members = await state.membership.waitFor(wanted, discoveryTimeoutMs, (missing, waitedMs) =>
      log.warn({ missing, waitedMs }, 'data nodes not registered in etcd yet; waiting until the time-out'),
    );
    infos = members.map((m) => m.info);
    urls = new Map(members.map((m) => [m.nodeId, m.url]));
  }
  const table = RoutingTable.fromNodeInfos(infos);
  const nodes = dataNodeStates(table.nodeIds, urls);
  const closing = new AbortController();
  const isLive = state === undefined ? undefined : (id: string) => state.membership.isLive(id);
  const indices = await openClusterIndices({
    nodes: urls,
    readOnlyIndices: table.indices,
    metadataPersistence: state === undefined ? undefined : new EtcdMetadataPersistence(state.connection),
    isLive,
    metadataPath: path.join(
      path.resolve(options.dataDir ?? path.join('.query-sandbox', 'coordinator')),
      'indices',
      'metadata.json',
    ),
    collector,
    ranking: new ReplicaRanking(options.ranking),
    isDown: (id) => (nodes.get(id)?.downUntilMs ?? 0) > Date.now() || isLive?.(id) === false,
    markDown: (id) => {
      const node = nodes.get(id);
      if (node === undefined) return;
      node.downUntilMs = Date.now() + backoffMs;
      node.lastCallFailed = true;
    },
    timeoutMs: shardTimeoutMs,
    clusterSecret: options.clusterSecret,
    indexingPressureBytes: options.indexingPressureBytes,
    slowNodeFactor: options.slowNodeFactor,
    slowNodeRetryMs: options.slowNodeRetryMs,
    signal: closing.signal,
    log,
  });
  const failover =
    state === undefined ? undefined : new FailoverLoop(indices, state.membership, closing.signal, log);
  return {
    nodeId,
    table,
    nodes,
    admission,
    ranking,
    collector,
    indices,
    membership: state?.membership,
    failover,
    sandboxes: options.sandboxes,
    shardTimeoutMs,
    backoffMs,
    clusterSecret: options.clusterSecret,
    log,
    closing,
  };
}

/**
 * With cluster state: promotes in-sync replicas of the primaries of data nodes that left
 * (`RemotePlacement.failOver`) at every membership change, now (a node may have died before this
 * coordinator started) and every second, so that a promotion that failed (etcd unreachable at that
 * moment) is made once it answers. Stops when `signal` aborts.
 */
export class FailoverLoop {
  #promotions = 0;

  constructor(indices: ClusterIndices, membership: MembershipWatcher, signal: AbortSignal, log: pino.Logger) {
    const failOver = () => {
      void indices.placement.failOver().then(
        (promotions) => {
          this.#promotions += promotions.length;
        },
        (error: unknown) =>
          log.warn(
            { error: String(error) },
            'failover could not be committed; retried at the next membership change or in 1 s',
          ),
      );
    };
    membership.onChange((joined, left) => {
      if (left.length > 0) log.warn({ left }, 'data nodes left the cluster (lease expired)');
      if (joined.length > 0) log.info({ joined }, 'data nodes registered');
      failOver();
    });
    failOver();
    const retry = setInterval(failOver, 1000);
    retry.unref();
    signal.addEventListener('abort', () => clearInterval(retry), { once: true });
  }

  /** Promotions made since start. */
  get promotions(): number {
    return this.#promotions;
  }
}
