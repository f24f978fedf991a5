/**
 * The write side of a data node's internal routes (see `cluster/internal-protocol.ts`), over its
 * runtime's writable indices (`nodeRole: 'data'`):
 *
 * - `PUT /_internal/indices/{index}` with the index metadata the coordinator decided
 *   (`formatIndexMetadata`): stored, and this node's copies opened; `DELETE /_internal/indices/{index}?uuid=`;
 *   `PUT /_internal/indices/{index}/_settings` `{"uuid", "settings": {flat}}`;
 * - `POST /_internal/bulk` `{"refresh", "shards": [{"index", "shard", "items": [ShardWriteItem]}]}`: each
 *   shard bulk on its primary here (log, fsync, replicas), answered as `{"node_id", "service_time_ns",
 *   "shards": [{"index", "shard", "ok": true, "outcome"} | {"index", "shard", "ok": false, "status",
 *   "error"}]}`. Counted against the node's indexing pressure (`primary`): 429 for the whole request when over
 *   (the coordinator fails those items alone); a shard its write queue cannot take answers
 *   `{"ok": false, "status": 429}` for that shard only;
 * - `POST /_internal/replicate` `{"index", "uuid", "shard", "refresh", "operations",
 *   "primary_next_seq_no"?, "primary_term"?}` (the term with cluster state in etcd: a deposed primary's
 *   older term is refused with 400): 200 `{"service_time_ns"}`, or 409 `{"next_seq_no"}` when earlier operations
 *   are missing (or, for an empty batch, when the copy is behind `primary_next_seq_no`);
 * - `POST /_internal/recover` `{"index", "uuid", "shard", "from_seq_no"}`: `{"operations"}` from the
 *   primary's log;
 * - `POST /_internal/get` `{"index", "shard", "id"}`: the real-time GET answer of this node's copy;
 * - `GET /_internal/cat_shards`: `{"rows"}`; `POST /_internal/refresh` `{"indices"}`: `{"refreshed"}`.
 *
 * Every body is read and every answer written by `cluster/internal-codecs.ts` (the callers use the
 * same module); the four bodies with a JSON schema declare it to fastify too (checked at the edge).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import {
  decodeDropIndexQuery,
  decodeGetRequest,
  decodeIndexMetadataRequest,
  decodeRecoverRequest,
  decodeRefreshRequest,
  decodeReplicateRequest,
  decodeSettingsRequest,
  decodeShardBulkRequest,
  encodeAcknowledged,
  encodeCatShardsAnswer,
  encodeRecoverAnswer,
  encodeRefreshAnswer,
  encodeReplicateAnswer,
  encodeShardBulkAnswer,
  GET_REQUEST_SCHEMA,
  RECOVER_REQUEST_SCHEMA,
  REFRESH_REQUEST_SCHEMA,
  REPLICATE_REQUEST_SCHEMA,
  type ShardBulkResult,
} from '../cluster/internal-codecs.js';
import {
  CAT_SHARDS_PATH,
  GET_PATH,
  INDICES_PATH,
  RECOVER_PATH,
  REFRESH_PATH,
  REPLICATE_PATH,
  SHARD_BULK_PATH,
} from '../cluster/internal-protocol.js';
import { InvalidArgumentError, isQuerySandboxError, httpStatusOf } from '../errors.js';
import type { LocalPlacement } from '../indices/local-placement.js';
import { sendError } from './error-body.js';

/** Largest internal write body, bytes (a coordinator's whole bulk may go to one primary). */
const INTERNAL_BODY_LIMIT = 200 * 1024 * 1024;

async function answer(reply: FastifyReply, run: () => unknown): Promise<FastifyReply> {
  try {
    return reply.send(await run());
  } catch (error) {
    return sendError(reply, error);
  }
}

/** Adds the write routes (see module doc) to a data node's app. */
export function registerWriteRoutes(app: FastifyInstance, indices: LocalPlacement, nodeId: string): void {
  const plain = {
    config: { auth: 'internal' as const, urlParameters: { names: ['pretty'], hint: '(pretty)' } },
  };
  app.put<{ Params: { index: string } }>(`${INDICES_PATH}/:index`, plain, (request, reply) =>
    answer(reply, async () => {
      await indices.adoptIndex(decodeIndexMetadataRequest(request.body, request.params.index));
      return encodeAcknowledged(nodeId);
    }),
  );
  app.delete<{ Params: { index: string } }>(
    `${INDICES_PATH}/:index`,
    {
      config: {
        auth: 'internal' as const,
        urlParameters: { names: ['uuid', 'pretty'], hint: '(uuid, pretty)' },
      },
    },
    (request, reply) =>
      answer(reply, async () => {
        await indices.dropIndex(request.params.index, decodeDropIndexQuery(request.query));
        return encodeAcknowledged(nodeId);
      }),
  );
  app.put<{ Params: { index: string } }>(`${INDICES_PATH}/:index/_settings`, plain, (request, reply) =>
    answer(reply, async () => {
      const { uuid, settings } = decodeSettingsRequest(request.body);
      await indices.takeSettings(request.params.index, uuid, settings);
      return encodeAcknowledged(nodeId);
    }),
  );
  app.post(SHARD_BULK_PATH, { ...plain, bodyLimit: INTERNAL_BODY_LIMIT }, (request, reply) =>
    answer(reply, async () => {
      const arrived = performance.now();
      const bytes = Number(request.headers['content-length'] ?? 0) || 1;
      const release = indices.pressure.acquire(bytes, 'primary');
      try {
        const { refresh, shards } = decodeShardBulkRequest(request.body);
        const results = await Promise.all(
          shards.map(async (r): Promise<ShardBulkResult> => {
            try {
              const outcome = await indices.executePrimary(r.index, r.shard, r.items, refresh);
              return { index: r.index, shard: r.shard, ok: true, outcome };
            } catch (error) {
              return {
                index: r.index,
                shard: r.shard,
                ok: false,
                status: isQuerySandboxError(error) ? httpStatusOf(error) : 500,
                error: {
                  type: isQuerySandboxError(error) ? error.type : 'exception',
                  reason: error instanceof Error ? error.message : String(error),
                },
              };
            }
          }),
        );
        return encodeShardBulkAnswer(nodeId, Math.round((performance.now() - arrived) * 1e6), results);
      } finally {
        release();
      }
    }),
  );
  app.post(
    REPLICATE_PATH,
    { ...plain, bodyLimit: INTERNAL_BODY_LIMIT, schema: { body: REPLICATE_REQUEST_SCHEMA } },
    async (request, reply) => {
      const arrived = performance.now();
      try {
        const r = decodeReplicateRequest(request.body);
        const outcome = await indices.applyReplica(
          r.index,
          r.uuid,
          r.shard,
          r.operations,
          r.refresh,
          r.primaryNextSeqNo,
          r.primaryTerm,
        );
        const { status, body } = encodeReplicateAnswer(
          nodeId,
          outcome.ok
            ? { applied: true, serviceTimeNs: Math.round((performance.now() - arrived) * 1e6) }
            : { applied: false, nextSeqNo: outcome.nextSeqNo },
        );
        return reply.code(status).send(body);
      } catch (error) {
        return sendError(reply, error);
      }
    },
  );
  app.post(RECOVER_PATH, { ...plain, schema: { body: RECOVER_REQUEST_SCHEMA } }, (request, reply) =>
    answer(reply, async () => {
      const { index, uuid, shard, fromSeqNo } = decodeRecoverRequest(request.body);
      if (indices.metadata.get(index)?.uuid !== uuid) {
        throw new InvalidArgumentError('uuid', `must be the uuid of index [${index}] on this node`, uuid);
      }
      return encodeRecoverAnswer(nodeId, await indices.operationsSince(index, shard, fromSeqNo));
    }),
  );
  app.post(GET_PATH, { ...plain, schema: { body: GET_REQUEST_SCHEMA } }, (request, reply) =>
    answer(reply, () => {
      const { index, shard, id } = decodeGetRequest(request.body);
      return indices.getLocal(index, shard, id);
    }),
  );
  app.get(CAT_SHARDS_PATH, plain, async () => encodeCatShardsAnswer(nodeId, indices.catLocal()));
  app.post(REFRESH_PATH, { ...plain, schema: { body: REFRESH_REQUEST_SCHEMA } }, (request, reply) =>
    answer(reply, () => {
      return encodeRefreshAnswer(nodeId, indices.shards.refresh([...decodeRefreshRequest(request.body)]));
    }),
  );
}
