/**
 * Replication from a data node's primaries to the replicas on other data nodes, over
 * `POST /_internal/replicate`, and peer recovery of this node's replicas after a restart, over
 * `POST /_internal/recover` (Elasticsearch `ReplicationOperation` and `PeerRecoveryTargetService`, much
 * simplified: one primary term, no in-sync set, recovery from the primary's log).
 *
 * Ordering: per (shard copy, replica node) one request is in flight at a time; operations of later
 * bulks wait and go together in the next request (group replication), in sequence-number order, so a
 * replica appends the primary's operations in the primary's order. A replica that is missing earlier
 * operations (it was down, or a request failed) answers 409 with its next sequence number; the primary
 * then sends everything from there, read from its own log, once.
 *
 * Failure: a replica that does not answer, or fails, is reported in the item's `_shards.failures`
 * (`_shards.failed` 1) and the write is still acknowledged, as Elasticsearch acknowledges a write its
 * primary made durable after failing the replica; the replica catches up on its next write (409, resend)
 * or by recovery when it restarts.
 */
import type pino from 'pino';
import type { RefreshPolicy } from '../bulk/bulk-response.js';
import type { LocalCopy } from '../indices/local-shards.js';
import type { LoggedOperation } from '../indices/shard-log.js';
import type { LocalPlacement, Replicator, ReplicaTiming } from '../indices/local-placement.js';
import { callInternal } from './internal-call.js';
import {
  decodeRecoverAnswer,
  decodeReplicateAnswer,
  encodeRecoverRequest,
  encodeReplicateRequest,
  type ReplicateAnswer,
} from './internal-codecs.js';
import { RECOVER_PATH, REPLICATE_PATH } from './internal-protocol.js';

/** What one replica made of a batch. */
type ReplicaResult =
  | { readonly ok: true; readonly timing: ReplicaTiming }
  | {
      readonly ok: false;
      readonly failure: Record<string, unknown>;
      /** The write must not be acknowledged (the failed in-sync replica could not be taken out). */
      readonly unacknowledged?: { readonly type: string; readonly reason: string };
    };

interface Waiter {
  readonly operations: readonly LoggedOperation[];
  readonly refresh: RefreshPolicy;
  readonly resolve: (result: ReplicaResult) => void;
}

/** The operations waiting for one (copy, replica node), and the request in flight. */
class ReplicaQueue {
  #pending: Waiter[] = [];
  #running = false;

  constructor(
    private readonly send: (
      operations: readonly LoggedOperation[],
      refresh: RefreshPolicy,
      probe: boolean,
    ) => Promise<ReplicaResult>,
  ) {}

  /** Whether nothing waits or runs (a probe is only queued on an idle queue). */
  get idle(): boolean {
    return !this.#running && this.#pending.length === 0;
  }

  enqueue(operations: readonly LoggedOperation[], refresh: RefreshPolicy): Promise<ReplicaResult> {
    return new Promise((resolve) => {
      this.#pending.push({ operations, refresh, resolve });
      if (!this.#running) void this.#run();
    });
  }

  async #run(): Promise<void> {
    this.#running = true;
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending;
        this.#pending = [];
        const operations = batch.flatMap((w) => w.operations).sort((a, b) => a.seqNo - b.seqNo);
        const refresh: RefreshPolicy = batch.some((w) => w.refresh === 'true')
          ? 'true'
          : batch.some((w) => w.refresh === 'wait_for')
            ? 'wait_for'
            : 'false';
        const result = await this.send(operations, refresh, operations.length === 0);
        for (const w of batch) w.resolve(result);
      }
    } finally {
      this.#running = false;
    }
  }
}

/** Options of `HttpReplicator`. */
export interface HttpReplicatorOptions {
  /** This node's writable indices (for its log when a replica needs a resend). */
  readonly indices: LocalPlacement;
  /** Time a replica has to answer, ms. @default 30000 */
  readonly timeoutMs?: number;
  /**
   * Keep the in-sync sets of the shared metadata (cluster state in etcd): a failed in-sync replica is
   * taken out before the write is acknowledged (the write fails when that cannot be done), a replica
   * that answered every operation is put back, and idle out-of-sync replicas are probed every
   * `inSyncProbeMs` so that they catch up without waiting for a write. @default false
   */
  readonly trackInSync?: boolean;
  /** @default 1000 */
  readonly inSyncProbeMs?: number;
  readonly log: pino.Logger;
  /** The cluster secret the replicas' internal routes need. @default none (they refuse: 401) */
  readonly clusterSecret?: string | undefined;
}

/** The data node's `Replicator` (see module doc). */
export class HttpReplicator implements Replicator {
  readonly #indices: LocalPlacement;
  readonly #timeoutMs: number;
  readonly #secret: string | undefined;
  readonly #log: pino.Logger;
  readonly #queues = new Map<string, ReplicaQueue>();
  readonly #closing = new AbortController();
  readonly #trackInSync: boolean;
  #probe: NodeJS.Timeout | undefined;

  constructor(options: HttpReplicatorOptions) {
    this.#indices = options.indices;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#secret = options.clusterSecret;
    this.#log = options.log;
    this.#trackInSync = options.trackInSync === true;
    if (this.#trackInSync) {
      this.#probe = setInterval(() => this.#probeOutOfSync(), options.inSyncProbeMs ?? 1000);
      this.#probe.unref();
    }
  }

  /** Probes the idle out-of-sync replicas of this node's primaries (see `trackInSync`). */
  #probeOutOfSync(): void {
    const me = this.#indices.nodeId;
    for (const copy of this.#indices.shards.all()) {
      if (!copy.primary) continue;
      const p = this.#indices.metadata.get(copy.meta.name)?.layout[copy.shard];
      if (p === undefined || p.primary !== me) continue;
      for (const node of p.replicas) {
        if (p.inSync === undefined || p.inSync.includes(node)) continue;
        const queue = this.#queue(copy, node);
        if (queue.idle) void queue.enqueue([], 'false');
      }
    }
  }

  /**
   * Takes `node` out of (or puts it back in) the in-sync set of `copy`'s shard, if this node is still
   * the shard's primary at this copy's term. @throws ClusterStateUnavailableError; Error when this
   * copy is no longer the primary.
   */
  async #setInSync(copy: LocalCopy, node: string, inSync: boolean): Promise<void> {
    const me = this.#indices.nodeId;
    await this.#indices.metadata.updateShardTable(copy.meta.name, copy.meta.uuid, (p, shard) => {
      if (shard !== copy.shard) return p;
      if (p.primary !== me || (p.primaryTerm ?? 1) !== copy.term) {
        throw new Error(
          `[${copy.meta.name}][${shard}] is no longer primary here (term ${copy.term}; the table says [${p.primary}] at term ${p.primaryTerm ?? 1})`,
        );
      }
      const current = p.inSync ?? [p.primary, ...p.replicas];
      if (current.includes(node) === inSync) return p;
      return { ...p, inSync: inSync ? [...current, node] : current.filter((n) => n !== node) };
    });
    this.#log.info(
      { index: copy.meta.name, shard: copy.shard, replica: node, inSync },
      inSync ? 'replica back in sync' : 'replica taken out of the in-sync set',
    );
  }

  /** With `trackInSync`: the in-sync bookkeeping after one replication request (see the option). */
  async #afterSend(copy: LocalCopy, node: string, result: ReplicaResult): Promise<ReplicaResult> {
    if (!this.#trackInSync) return result;
    const p = this.#indices.metadata.get(copy.meta.name)?.layout[copy.shard];
    const listed = p === undefined || p.inSync === undefined || p.inSync.includes(node);
    if (result.ok) {
      if (!listed) await this.#setInSync(copy, node, true).catch(() => undefined);
      return result;
    }
    if (!listed) return result;
    try {
      await this.#setInSync(copy, node, false);
      return result;
    } catch (error) {
      return {
        ...result,
        unacknowledged: {
          type: 'unavailable_shards_exception',
          reason: `replica [${node}] of [${copy.meta.name}][${copy.shard}] failed and could not be taken out of the in-sync copies (${error instanceof Error ? error.message : String(error)}): the write is not acknowledged`,
        },
      };
    }
  }

  async replicate(
    copy: LocalCopy,
    operations: readonly LoggedOperation[],
    refresh: RefreshPolicy,
  ): Promise<{
    successful: number;
    failures: Record<string, unknown>[];
    timings: ReplicaTiming[];
    unacknowledged?: { type: string; reason: string };
  }> {
    const replicas = copy.meta.layout[copy.shard]?.replicas ?? [];
    const results = await Promise.all(
      replicas.map((node) => this.#queue(copy, node).enqueue(operations, refresh)),
    );
    const failures: Record<string, unknown>[] = [];
    const timings: ReplicaTiming[] = [];
    let unacknowledged: { type: string; reason: string } | undefined;
    for (const r of results) {
      if (r.ok) timings.push(r.timing);
      else {
        failures.push(r.failure);
        unacknowledged ??= r.unacknowledged;
      }
    }
    return {
      successful: timings.length,
      failures,
      timings,
      ...(unacknowledged !== undefined ? { unacknowledged } : {}),
    };
  }

  /**
   * Primary-replica resync after this node restarted: every replica of every local primary is asked
   * whether it is behind the primary's log (operations the primary logged but had not replicated when
   * it went down), and is sent what it lacks. Resolves when every replica answered or failed.
   */
  async resync(): Promise<void> {
    const primaries = this.#indices.shards.all().filter((c) => c.primary);
    await Promise.all(
      primaries.flatMap((copy) =>
        (copy.meta.layout[copy.shard]?.replicas ?? []).map((node) =>
          this.#send(copy, node, [], 'false', copy.copy.log.nextSeqNo),
        ),
      ),
    );
  }

  /** Aborts replication calls in flight (the node is stopping). */
  close(): void {
    this.#closing.abort();
    if (this.#probe !== undefined) clearInterval(this.#probe);
  }

  #queue(copy: LocalCopy, node: string): ReplicaQueue {
    const key = `${copy.meta.uuid}/${copy.shard}/${node}`;
    let queue = this.#queues.get(key);
    if (queue === undefined) {
      queue = new ReplicaQueue(async (operations, refresh, probe) =>
        this.#afterSend(
          copy,
          node,
          await this.#send(copy, node, operations, refresh, probe ? copy.copy.log.nextSeqNo : undefined),
        ),
      );
      this.#queues.set(key, queue);
    }
    return queue;
  }

  async #send(
    copy: LocalCopy,
    node: string,
    operations: readonly LoggedOperation[],
    refresh: RefreshPolicy,
    primaryNextSeqNo?: number,
  ): Promise<ReplicaResult> {
    const { meta, shard } = copy;
    const url = meta.nodes[node];
    const fail = (status: number, reason: { type: string; reason: string }): ReplicaResult => {
      this.#log.warn(
        { index: meta.name, shard, replica: node, status, reason: reason.reason },
        'replica write failed',
      );
      return {
        ok: false,
        failure: { _index: meta.name, _shard: shard, _node: node, reason, status, primary: false },
      };
    };
    if (url === undefined) {
      return fail(500, { type: 'exception', reason: `no address for replica node [${node}]` });
    }
    let batch = operations;
    for (let attempt = 0; attempt < 2; attempt++) {
      const outcome = await callInternal(
        url,
        REPLICATE_PATH,
        'POST',
        encodeReplicateRequest({
          index: meta.name,
          uuid: meta.uuid,
          shard,
          refresh,
          operations: batch,
          primaryNextSeqNo: attempt === 0 ? primaryNextSeqNo : undefined,
          primaryTerm: this.#trackInSync ? copy.term : undefined,
        }),
        {
          timeoutMs: this.#timeoutMs,
          secret: this.#secret,
          signal: this.#closing.signal,
          okStatuses: [200, 409],
        },
      );
      if (!outcome.ok) return fail(outcome.status, outcome.reason);
      let answer: ReplicateAnswer;
      try {
        answer = decodeReplicateAnswer(outcome.status, outcome.body);
      } catch (error) {
        return fail(502, {
          type: 'exception',
          reason: `the replica answered 409 without next_seq_no (${(error as Error).message})`,
        });
      }
      if (answer.applied) {
        return {
          ok: true,
          timing: { node, responseTimeNs: outcome.responseTimeNs, serviceTimeNs: answer.serviceTimeNs },
        };
      }
      // 409: the replica lacks earlier operations; send everything from its next sequence number.
      const next = answer.nextSeqNo;
      const last = operations[operations.length - 1]?.seqNo ?? (primaryNextSeqNo ?? 0) - 1;
      batch = (await this.#indices.operationsSince(meta.name, shard, next)).filter((op) => op.seqNo <= last);
      this.#log.info(
        { index: meta.name, shard, replica: node, from: next, operations: batch.length },
        'resending to a replica that is behind',
      );
    }
    return fail(500, { type: 'exception', reason: 'the replica stayed behind after a resend' });
  }
}

/**
 * Peer recovery at a data node's start: every replica reopened from its log (`INITIALIZING`) asks its
 * primary for the operations from its next sequence number on, applies them and becomes `STARTED`.
 * Retries every `retryMs` while the primary does not answer (it may be starting too), up to
 * `timeoutMs`; then the replica stays `INITIALIZING` (it refuses searches) until a write catches it up.
 * Runs in the background; resolves when every replica has recovered or given up.
 */
export async function recoverReplicas(
  indices: LocalPlacement,
  log: pino.Logger,
  options: {
    readonly retryMs?: number;
    readonly timeoutMs?: number;
    readonly signal?: AbortSignal;
    /** The cluster secret the primary's internal routes need. */
    readonly clusterSecret?: string | undefined;
  } = {},
): Promise<void> {
  const retryMs = options.retryMs ?? 500;
  const deadline = performance.now() + (options.timeoutMs ?? 300_000);
  const replicas = indices.shards.all().filter((c) => !c.primary && c.state === 'INITIALIZING');
  await Promise.all(
    replicas.map(async (copy) => {
      const { meta, shard } = copy;
      const primary = meta.layout[shard]!.primary;
      const url = meta.nodes[primary];
      while (url !== undefined && performance.now() < deadline && options.signal?.aborted !== true) {
        const from = copy.copy.log.nextSeqNo;
        const outcome = await callInternal(
          url,
          RECOVER_PATH,
          'POST',
          encodeRecoverRequest({ index: meta.name, uuid: meta.uuid, shard, fromSeqNo: from }),
          { timeoutMs: 30_000, secret: options.clusterSecret, signal: options.signal },
        );
        let operations: LoggedOperation[] | undefined;
        try {
          operations = outcome.ok ? decodeRecoverAnswer(outcome.body) : undefined;
        } catch (error) {
          log.warn(
            { index: meta.name, shard, primary, error: String(error) },
            'primary answered recovery with a malformed body; retrying',
          );
        }
        if (operations !== undefined) {
          try {
            const applied = await indices.applyReplica(meta.name, meta.uuid, shard, operations, 'true');
            if (applied.ok) {
              copy.state = 'STARTED';
              log.info(
                { index: meta.name, shard, from, operations: operations.length },
                'replica recovered from its primary',
              );
              return;
            }
          } catch (error) {
            log.warn({ index: meta.name, shard, error: String(error) }, 'replica recovery failed');
            return;
          }
        }
        await new Promise((resolve) => setTimeout(resolve, retryMs));
      }
      log.warn({ index: meta.name, shard, primary }, 'replica did not recover from its primary in time');
    }),
  );
}
