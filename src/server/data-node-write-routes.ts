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
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
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
import { parseRefreshPolicy } from '../bulk/bulk-response.js';
import { parseIndexMetadata } from '../indices/index-metadata-store.js';
import { parseSettingValues, resolveIndexSettings } from '../indices/index-settings.js';
import type { ShardWriteItem } from '../bulk/shard-write-item.js';
import type { LoggedOperation } from '../indices/shard-log.js';
import type { LocalPlacement } from '../indices/local-placement.js';
import { isPlainObject } from '../common/is-plain-object.js';
import { sendError } from './error-body.js';

/** Field schemas of the internal write bodies, with the messages of the checks they replace. */
const NON_EMPTY_STRING = { type: 'string', minLength: 1, 'x-must': 'must be a non-empty string' };
const SHARD = { type: 'integer', minimum: 0, maximum: 1023, 'x-must': 'must be an integer in 0..1023' };
const SEQ_NO = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, 'x-must': 'must be an integer >= 0' };

/** A JSON-object body schema of the named fields (`required`: those that must be there). */
function bodySchema(properties: Record<string, Record<string, unknown>>, required: readonly string[]) {
  return {
    body: { type: 'object', 'x-must': 'must be a JSON object', properties, required: [...required] },
  };
}

/** `_internal/replicate`: the copy's index, uuid and shard, and the primary's position (operations are checked by hand). */
const REPLICATE_SCHEMA = bodySchema(
  {
    index: NON_EMPTY_STRING,
    uuid: NON_EMPTY_STRING,
    shard: SHARD,
    primary_next_seq_no: SEQ_NO,
    primary_term: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER, 'x-must': 'must be an integer >= 1' },
  },
  ['index', 'uuid', 'shard'],
);
const RECOVER_SCHEMA = bodySchema(
  { index: NON_EMPTY_STRING, uuid: NON_EMPTY_STRING, shard: SHARD, from_seq_no: SEQ_NO },
  ['index', 'uuid', 'shard', 'from_seq_no'],
);
const GET_SCHEMA = bodySchema({ index: NON_EMPTY_STRING, shard: SHARD, id: NON_EMPTY_STRING }, ['index', 'shard', 'id']);
const REFRESH_SCHEMA = bodySchema(
  { indices: { type: 'array', items: { type: 'string' }, 'x-must': 'must be an array of index names' } },
  ['indices'],
);

/** Largest internal write body, bytes (a coordinator's whole bulk may go to one primary). */
const INTERNAL_BODY_LIMIT = 200 * 1024 * 1024;

function objectBody(raw: unknown): Record<string, unknown> {
  if (!isPlainObject(raw)) throw new InvalidArgumentError('body', 'must be a JSON object', raw);
  return raw;
}

function stringField(body: Record<string, unknown>, key: string): string {
  const value = body[key];
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidArgumentError(key, 'must be a non-empty string', value);
  }
  return value;
}

function shardField(body: Record<string, unknown>, key = 'shard'): number {
  const value = body[key];
  if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 1023) {
    throw new InvalidArgumentError(key, 'must be an integer in 0..1023', value);
  }
  return value as number;
}

function operationsField(body: Record<string, unknown>): LoggedOperation[] {
  const operations = body['operations'];
  if (!Array.isArray(operations)) throw new InvalidArgumentError('operations', 'must be an array', operations);
  operations.forEach((op, i) => {
    if (
      !isPlainObject(op) ||
      !['index', 'create', 'update', 'delete'].includes(op['op'] as string) ||
      typeof op['id'] !== 'string' ||
      !Number.isSafeInteger(op['seqNo'])
    ) {
      throw new InvalidArgumentError(`operations[${i}]`, 'must be a logged operation {op, id, seqNo, routing?, source?}', op);
    }
  });
  return operations as LoggedOperation[];
}

function itemsField(raw: unknown, path: string): ShardWriteItem[] {
  if (!Array.isArray(raw)) throw new InvalidArgumentError(path, 'must be an array of shard write items', raw);
  raw.forEach((item, i) => {
    if (
      !isPlainObject(item) ||
      !['index', 'create', 'update', 'delete'].includes(item['action'] as string) ||
      typeof item['id'] !== 'string' ||
      !Number.isInteger(item['position'])
    ) {
      throw new InvalidArgumentError(`${path}[${i}]`, 'must be {position, action, id, routing?, source?, doc?, ...}', item);
    }
  });
  return raw as ShardWriteItem[];
}

async function answer(reply: FastifyReply, run: () => unknown): Promise<FastifyReply> {
  try {
    return reply.send(await run());
  } catch (error) {
    return sendError(reply, error);
  }
}

/** Adds the write routes (see module doc) to a data node's app. */
export function registerWriteRoutes(app: FastifyInstance, indices: LocalPlacement, nodeId: string): void {
  const plain = { config: { auth: 'internal' as const, urlParameters: { names: ['pretty'], hint: '(pretty)' } } };
  app.put<{ Params: { index: string } }>(`${INDICES_PATH}/:index`, plain, (request, reply) =>
    answer(reply, async () => {
      const meta = parseIndexMetadata(request.body, 'body');
      if (meta.name !== request.params.index) {
        throw new InvalidArgumentError('body.name', `must be the index of the URL [${request.params.index}]`, meta.name);
      }
      await indices.adoptIndex(meta);
      return { acknowledged: true, node_id: nodeId };
    }),
  );
  app.delete<{ Params: { index: string } }>(
    `${INDICES_PATH}/:index`,
    { config: { auth: 'internal' as const, urlParameters: { names: ['uuid', 'pretty'], hint: '(uuid, pretty)' } } },
    (request, reply) =>
      answer(reply, async () => {
        const uuid = (request.query as Record<string, unknown>)['uuid'];
        if (typeof uuid !== 'string') throw new InvalidArgumentError('uuid', 'must be the index uuid', uuid);
        await indices.dropIndex(request.params.index, uuid);
        return { acknowledged: true, node_id: nodeId };
      }),
  );
  app.put<{ Params: { index: string } }>(`${INDICES_PATH}/:index/_settings`, plain, (request, reply) =>
    answer(reply, async () => {
      const body = objectBody(request.body);
      const settings = resolveIndexSettings(parseSettingValues(body['settings'] ?? {}, 'settings'));
      await indices.takeSettings(request.params.index, stringField(body, 'uuid'), settings);
      return { acknowledged: true, node_id: nodeId };
    }),
  );
  app.post(SHARD_BULK_PATH, { ...plain, bodyLimit: INTERNAL_BODY_LIMIT }, (request, reply) =>
    answer(reply, async () => {
      const arrived = performance.now();
      const bytes = Number(request.headers['content-length'] ?? 0) || 1;
      const release = indices.pressure.acquire(bytes, 'primary');
      try {
        const body = objectBody(request.body);
        const refresh = parseRefreshPolicy(body['refresh'] ?? 'false');
        const shards = body['shards'];
        if (!Array.isArray(shards)) throw new InvalidArgumentError('shards', 'must be an array', shards);
        const requests = shards.map((raw, i) => {
          const s = objectBody(raw);
          return {
            index: stringField(s, 'index'),
            shard: shardField(s),
            items: itemsField(s['items'], `shards[${i}].items`),
          };
        });
        const results = await Promise.all(
          requests.map(async (r) => {
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
        return {
          node_id: nodeId,
          service_time_ns: Math.round((performance.now() - arrived) * 1e6),
          shards: results,
        };
      } finally {
        release();
      }
    }),
  );
  app.post(REPLICATE_PATH, { ...plain, bodyLimit: INTERNAL_BODY_LIMIT, schema: REPLICATE_SCHEMA }, async (request, reply) => {
    const arrived = performance.now();
    try {
      // Checked by REPLICATE_SCHEMA (but `operations`).
      const body = request.body as Record<string, unknown>;
      const primaryNext = body['primary_next_seq_no'];
      const primaryTerm = body['primary_term'];
      const outcome = await indices.applyReplica(
        body['index'] as string,
        body['uuid'] as string,
        body['shard'] as number,
        operationsField(body),
        parseRefreshPolicy(body['refresh'] ?? 'false'),
        primaryNext as number | undefined,
        primaryTerm as number | undefined,
      );
      if (!outcome.ok) return reply.code(409).send({ node_id: nodeId, next_seq_no: outcome.nextSeqNo });
      return reply.send({ node_id: nodeId, service_time_ns: Math.round((performance.now() - arrived) * 1e6) });
    } catch (error) {
      return sendError(reply, error);
    }
  });
  app.post(RECOVER_PATH, { ...plain, schema: RECOVER_SCHEMA }, (request, reply) =>
    answer(reply, async () => {
      // Checked by RECOVER_SCHEMA.
      const body = request.body as Record<string, unknown>;
      const index = body['index'] as string;
      const uuid = body['uuid'] as string;
      const shard = body['shard'] as number;
      const from = body['from_seq_no'];
      if (indices.metadata.get(index)?.uuid !== uuid) {
        throw new InvalidArgumentError('uuid', `must be the uuid of index [${index}] on this node`, uuid);
      }
      return { node_id: nodeId, operations: await indices.operationsSince(index, shard, from as number) };
    }),
  );
  app.post(GET_PATH, { ...plain, schema: GET_SCHEMA }, (request, reply) =>
    answer(reply, () => {
      // Checked by GET_SCHEMA.
      const body = request.body as Record<string, unknown>;
      return indices.getLocal(body['index'] as string, body['shard'] as number, body['id'] as string);
    }),
  );
  app.get(CAT_SHARDS_PATH, plain, async () => ({ node_id: nodeId, rows: indices.catLocal() }));
  app.post(REFRESH_PATH, { ...plain, schema: REFRESH_SCHEMA }, (request, reply) =>
    answer(reply, () => {
      // Checked by REFRESH_SCHEMA.
      const names = (request.body as Record<string, unknown>)['indices'];
      return { node_id: nodeId, refreshed: indices.shards.refresh(names as string[]) };
    }),
  );
}
