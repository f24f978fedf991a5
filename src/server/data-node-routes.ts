/**
 * The internal routes of a data node (`serve --role data`), added to the app `buildHttpServer` made:
 * the node-to-node protocol of `cluster/internal-protocol.ts`, its bodies read and written by
 * `cluster/internal-codecs.ts`.
 *
 * - `GET /_internal/node_info`: the node's id, indices, shards per index and the copies it holds.
 * - `POST /_internal/shard_search` `{index, shards, body}`: one search over the given shards, run
 *   through this node's runtime like any search (classification by the forwarded `x-user` and
 *   `x-sandbox-id`, the governor's verdicts, the queue), answered as
 *   `{node_id, service_time_ns, queue_size, response}`; errors in the usual shape and status. A
 *   coordinator that closes the connection before the answer (its client went away, its shard
 *   time-out passed) gives up the search: the task is removed from the queue or cancelled.
 * - With `debugRoutes`: `POST /_internal/debug/cpu_hog {"threads", "duration_ms"}` and `DELETE` (see
 *   `cluster/cpu-hog.ts`).
 *
 * Every `/_internal/` route needs the cluster secret (`Authorization: Bearer <secret>`, checked before
 * the body is read by `route-auth.ts`; 401 without it, 403 with anything else). Every answer to an
 * authenticated internal call carries this node's own `Resource_Usage_Stats` entry (from
 * `runtime.resourceUsage()`, re-encoded only when the tracker published a new sample); no other answer
 * does (a refused call, a direct client, a public route), and a stats header in a request is removed
 * unread.
 */
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import {
  encodeStatsHeader,
  STATS_HEADER_NAME,
  statsEntryOf,
  stripStatsHeader,
} from '../admission/stats-header.js';
import type { NodeUsageSnapshot } from '../admission/node-usage-averages.js';
import { CpuHog } from '../cluster/cpu-hog.js';
import { HttpReplicator, recoverReplicas } from '../cluster/http-replicator.js';
import {
  CPU_HOG_PATH,
  INTERNAL_PATH_PREFIX,
  LATENCY_PATH,
  NODE_INFO_PATH,
  type NodeInfoCopy,
  SHARD_SEARCH_PATH,
} from '../cluster/internal-protocol.js';
import {
  decodeCpuHogRequest,
  decodeLatencyRequest,
  decodeShardSearchRequest,
  encodeNodeInfo,
  encodeShardSearchAnswer,
} from '../cluster/internal-codecs.js';
import { LatencyInjector } from '../cluster/latency-injector.js';
import { EngineRequestError } from '../errors.js';
import type { Runtime } from '../runtime.js';
import { clientGoneSignal } from './client-gone.js';
import { sendError } from './error-body.js';
import { headerValue, singleHeaderValue } from './header-value.js';
import { registerWriteRoutes } from './data-node-write-routes.js';
import { isInternalCaller } from './route-auth.js';

export interface DataNodeRoutesOptions {
  /** Shards per index of this node's engine (1 for an engine without shards). */
  readonly shardsPerIndex: number;
  /** The shard copies this node holds. */
  readonly copies: readonly NodeInfoCopy[];
  /** Serve the CPU hog route. @default false */
  readonly debugRoutes?: boolean;
  /** Header carrying the end user. @default 'x-user' */
  readonly userHeader?: string;
  /** Header carrying an explicit sandbox choice. @default 'x-sandbox-id' */
  readonly sandboxHeader?: string;
  /** Logger of the write side (replication, recovery). @default silent */
  readonly logger?: pino.Logger;
  /** Time a replica has to answer a replication request, ms. @default 30000 */
  readonly replicationTimeoutMs?: number;
  /** Keep the in-sync sets of shared metadata (see `HttpReplicator`'s `trackInSync`). @default false */
  readonly trackInSync?: boolean;
  /**
   * The cluster secret this node sends on its own calls to other data nodes (replication, recovery).
   * The server must accept the same one (`buildHttpServer`'s `clusterSecret`). @default none
   */
  readonly clusterSecret?: string | undefined;
}

/** What a data node does once it listens. */
export interface DataNodeRecovery {
  /**
   * After a restart: replicas catch up from their primaries (peer recovery; `INITIALIZING` until then)
   * and primaries send their replicas what they logged but had not replicated (resync). Runs until done
   * or `timeoutMs` (default 300000); never rejects.
   */
  recover(options?: { readonly timeoutMs?: number }): Promise<void>;
}

/** Adds the data node's internal routes and stats-header hooks to `app` (before it listens). */
export function registerDataNodeRoutes(
  app: FastifyInstance,
  runtime: Runtime,
  options: DataNodeRoutesOptions,
): DataNodeRecovery {
  const nodeId = runtime.options.nodeId;
  const userHeader = (options.userHeader ?? 'x-user').toLowerCase();
  const sandboxHeader = (options.sandboxHeader ?? 'x-sandbox-id').toLowerCase();
  let encodedFor: NodeUsageSnapshot | undefined;
  let encoded: string | undefined;
  const statsHeaderValue = (): string | undefined => {
    const snapshot = runtime.resourceUsage();
    if (snapshot !== encodedFor) {
      encodedFor = snapshot;
      // No figure before the tracker's first sample (its timestamp is 0 until then).
      encoded =
        snapshot.timestampMs > 0 ? encodeStatsHeader([statsEntryOf(nodeId, snapshot)]).value : undefined;
    }
    return encoded;
  };

  const latency = options.debugRoutes === true ? new LatencyInjector() : undefined;
  app.addHook('onRequest', async (request) => {
    stripStatsHeader(request.headers);
    if (
      latency !== undefined &&
      request.url.startsWith(INTERNAL_PATH_PREFIX) &&
      !request.url.startsWith('/_internal/debug/') &&
      !request.url.startsWith(NODE_INFO_PATH)
    ) {
      const delayMs = latency.nextDelayMs();
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  });
  app.addHook('onSend', async (request, reply, payload) => {
    // Only to a caller that presented the cluster secret: a direct client never sees node stats.
    const value = isInternalCaller(request) ? statsHeaderValue() : undefined;
    if (value === undefined) stripStatsHeader(reply);
    else reply.header(STATS_HEADER_NAME, value);
    return payload;
  });

  const info = encodeNodeInfo({
    nodeId,
    indices: runtime.nodeStats().engineIndices ?? [],
    shardsPerIndex: options.shardsPerIndex,
    copies: options.copies,
    docsPerIndex: runtime.engineDescription.docsPerIndex,
    mappings: runtime.engineDescription.mappings,
  });
  const internal = { config: { auth: 'internal' as const } };
  app.get(NODE_INFO_PATH, internal, async () => info);

  app.post(SHARD_SEARCH_PATH, internal, async (request, reply) => {
    const arrived = performance.now();
    // The coordinator gave up (its client went away, its shard time-out, its close): so does the task.
    const gone = clientGoneSignal(request);
    try {
      const { index, shards, body, cancel_after_time_interval } = decodeShardSearchRequest(request.body);
      // A replica still recovering after a restart may lack acknowledged writes: let the coordinator
      // take the shard's other copy.
      for (const [name, list] of Object.entries(shards)) {
        for (const shard of Array.isArray(list) ? list : []) {
          if (runtime.indices?.shards.copy(name, shard)?.state === 'INITIALIZING') {
            throw new EngineRequestError(
              'no_shard_available_action_exception',
              `[${name}][${shard}] on [${nodeId}] is recovering from its primary`,
              503,
            );
          }
        }
      }
      const response = await runtime.search(
        {
          index,
          body,
          shards,
          user: headerValue(request, userHeader),
          sandboxId: singleHeaderValue(request, sandboxHeader),
          cancelAfterTimeInterval: cancel_after_time_interval,
        },
        { signal: gone.signal },
      );
      return reply.send(
        encodeShardSearchAnswer(
          nodeId,
          Math.round((performance.now() - arrived) * 1e6),
          runtime.nodeStats().queued,
          response,
        ),
      );
    } catch (error) {
      return sendError(reply, error);
    } finally {
      gone.dispose();
    }
  });

  if (options.debugRoutes === true) {
    const hog = new CpuHog();
    app.addHook('onClose', async () => hog.stop());
    app.post(CPU_HOG_PATH, internal, async (request, reply) => {
      try {
        const wanted = decodeCpuHogRequest(request.body);
        const untilMs = await hog.start(wanted);
        return reply.send({ node_id: nodeId, threads: wanted.threads, until_ms: untilMs });
      } catch (error) {
        return sendError(reply, error);
      }
    });
    app.delete(CPU_HOG_PATH, internal, async () => {
      await hog.stop();
      return { node_id: nodeId, threads: 0 };
    });
    app.post(LATENCY_PATH, internal, async (request, reply) => {
      try {
        const wanted = decodeLatencyRequest(request.body);
        const untilMs = latency!.start(wanted);
        return reply.send({
          node_id: nodeId,
          delay_ms: wanted.delayMs,
          ratio: wanted.ratio,
          until_ms: untilMs,
        });
      } catch (error) {
        return sendError(reply, error);
      }
    });
    app.delete(LATENCY_PATH, internal, async () => {
      latency!.stop();
      return { node_id: nodeId, delay_ms: 0, delayed: latency!.delayed };
    });
  }

  const indices = runtime.indices?.placement;
  if (indices === undefined) return { recover: async () => undefined };
  const log = options.logger ?? pino({ level: 'silent' });
  const replicator = new HttpReplicator({
    indices,
    log,
    ...(options.replicationTimeoutMs !== undefined ? { timeoutMs: options.replicationTimeoutMs } : {}),
    trackInSync: options.trackInSync === true,
    clusterSecret: options.clusterSecret,
  });
  indices.setReplicator(replicator);
  const closing = new AbortController();
  app.addHook('onClose', async () => {
    closing.abort();
    replicator.close();
  });
  registerWriteRoutes(app, indices, nodeId);
  return {
    recover: async (recoverOptions = {}) => {
      await Promise.all([
        recoverReplicas(indices, log, {
          ...recoverOptions,
          signal: closing.signal,
          clusterSecret: options.clusterSecret,
        }),
        replicator.resync(),
      ]);
    },
  };
}
