/**
 * Every encode and decode of the node-to-node protocol (paths and message shapes in
 * `internal-protocol.ts`), for both directions: the caller (a coordinator, or a primary calling its
 * replicas) encodes its request and decodes the answer with these; the data node's routes
 * (`server/data-node-routes.ts`, `server/data-node-write-routes.ts`) decode the request and encode the
 * answer with the same functions, so the two sides cannot drift apart.
 *
 * - `decode*Request` (the receiving node) are strict: they return the typed message or throw
 *   `InvalidArgumentError` naming the field and the value received (the route's 400). Four bodies
 *   (`replicate`, `recover`, `get`, `refresh`) are checked by a JSON schema that the route also
 *   declares to fastify (`*_REQUEST_SCHEMA`): the same words at the edge and here.
 * - `decode*Answer` (the caller) read what a node answered. They throw `InvalidArgumentError` naming
 *   the answer's field and value when the answer is not that message; the caller turns that into a
 *   failed call (the node's failure, never the end client's 400). Optional figures a node may lack
 *   (`service_time_ns`, `queue_size`) read as 0 when absent or not a number >= 0, as before.
 * - `encode*` build the JSON the other side decodes (plain objects; the shard-search request is a
 *   string because its search body is serialised once per search by the coordinator).
 */
import { optionChecks } from '../common/option-checks.js';
import { type RefreshPolicy, type ShardBulkOutcome, parseRefreshPolicy } from '../bulk/bulk-response.js';
import type { ShardWriteItem } from '../bulk/shard-write-item.js';
import { isPlainObject } from '../common/is-plain-object.js';
import { schemaCheck } from '../common/schema-error.js';
import { InvalidArgumentError } from '../errors.js';
import {
  formatIndexMetadata,
  type IndexMetadata,
  parseIndexMetadata,
} from '../indices/index-metadata-store.js';
import {
  explicitSettingsToFlat,
  type IndexSettings,
  type IndexSettingValues,
  parseSettingValues,
  resolveIndexSettings,
} from '../indices/index-settings.js';
import type { LoggedOperation } from '../indices/shard-log.js';
import type { CatShardRow, GetResponse } from '../indices/index-api.js';
import type { CpuHogRequest } from './cpu-hog.js';
import type { LatencyRequest } from './latency-injector.js';
import {
  INDICES_PATH,
  NODE_INFO_PATH,
  type NodeInfo,
  type NodeInfoCopy,
  type ShardSearchRequest,
  type ShardSearchResponse,
} from './internal-protocol.js';

// ---- shared field checks ------------------------------------------------------------------------

function objectBody(raw: unknown, path = 'body'): Record<string, unknown> {
  if (!isPlainObject(raw)) throw new InvalidArgumentError(path, 'must be a JSON object', raw);
  return raw;
}

function stringField(body: Record<string, unknown>, key: string, path = key): string {
  const value = body[key];
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidArgumentError(path, 'must be a non-empty string', value);
  }
  return value;
}

function shardField(body: Record<string, unknown>, path = 'shard'): number {
  const value = body['shard'];
  if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 1023) {
    throw new InvalidArgumentError(path, 'must be an integer in 0..1023', value);
  }
  return value as number;
}

/** A figure a node reports about itself (ns, a queue length): a number >= 0, else 0. */
function figure(value: unknown): number {
  const n = Number(value ?? 0);
  return Number.isFinite(n) && n >= 0 ? n : 0;
}

const OPERATION_TYPES: readonly unknown[] = ['index', 'create', 'update', 'delete'];

/** A list of logged operations (replication, recovery). @throws InvalidArgumentError naming `path[i]`. */
function operationsOf(value: unknown, path: string): LoggedOperation[] {
  if (!Array.isArray(value)) throw new InvalidArgumentError(path, 'must be an array', value);
  value.forEach((op, i) => {
    if (
      !isPlainObject(op) ||
      !OPERATION_TYPES.includes(op['op']) ||
      typeof op['id'] !== 'string' ||
      !Number.isSafeInteger(op['seqNo'])
    ) {
      throw new InvalidArgumentError(
        `${path}[${i}]`,
        'must be a logged operation {op, id, seqNo, routing?, source?}',
        op,
      );
    }
  });
  return value as LoggedOperation[];
}

function writeItemsOf(value: unknown, path: string): ShardWriteItem[] {
  if (!Array.isArray(value))
    throw new InvalidArgumentError(path, 'must be an array of shard write items', value);
  value.forEach((item, i) => {
    if (
      !isPlainObject(item) ||
      !OPERATION_TYPES.includes(item['action']) ||
      typeof item['id'] !== 'string' ||
      !Number.isInteger(item['position'])
    ) {
      throw new InvalidArgumentError(
        `${path}[${i}]`,
        'must be {position, action, id, routing?, source?, doc?, ...}',
        item,
      );
    }
  });
  return value as ShardWriteItem[];
}

// ---- errors (every route) ------------------------------------------------------------------------

/**
 * The `{type, reason}` of a node's error answer (`{"error": {"type", "reason"}, "status"}`, as
 * `server/error-body.ts` writes it); what it lacks reads as `exception` and the HTTP status line.
 */
export function decodeErrorAnswer(
  raw: unknown,
  status: number,
  statusText: string,
): { type: string; reason: string } {
  const error = isPlainObject(raw) && isPlainObject(raw['error']) ? raw['error'] : {};
  return {
    type: typeof error['type'] === 'string' ? error['type'] : 'exception',
    reason: typeof error['reason'] === 'string' ? error['reason'] : `HTTP ${status} ${statusText}`.trim(),
  };
}

// ---- node info (GET /_internal/node_info) ---------------------------------------------------------

/** The node-info answer of a data node (frozen). */
export function encodeNodeInfo(info: {
  readonly nodeId: string;
  readonly indices: readonly string[];
  readonly shardsPerIndex: number;
  readonly copies: readonly NodeInfoCopy[];
  readonly docsPerIndex?: Readonly<Record<string, number>> | undefined;
  readonly mappings?: Readonly<Record<string, unknown>> | undefined;
}): NodeInfo {
  return Object.freeze({
    node_id: info.nodeId,
    roles: ['data'] as const,
    indices: info.indices,
    shards_per_index: info.shardsPerIndex,
    copies: info.copies,
    ...(info.docsPerIndex === undefined ? {} : { docs_per_index: info.docsPerIndex }),
    ...(info.mappings === undefined ? {} : { mappings: info.mappings }),
  });
}

/**
 * Checks a node-info answer as received by a coordinator (over HTTP, or from the node's etcd
 * registration): `node_id` a non-empty string, `indices` names, `shards_per_index` an integer >= 1,
 * every copy `{index (one of indices), shard (0..shards_per_index-1), primary (boolean)}`.
 * @throws Error naming the node URL, the bad field and the value received.
 */
export function decodeNodeInfo(raw: unknown, url: string): NodeInfo {
  const fail = (what: string, value: unknown): never => {
    throw new Error(
      `data node ${url} answered ${NODE_INFO_PATH} with ${what}; received ${JSON.stringify(value)}`,
    );
  };
  if (!isPlainObject(raw)) return fail('a body that is not an object', raw);
  const { node_id, indices, shards_per_index, copies } = raw;
  if (typeof node_id !== 'string' || node_id.length === 0) return fail('no node_id', node_id);
  if (!Array.isArray(indices) || !indices.every((i) => typeof i === 'string')) {
    return fail('indices that are not a list of names', indices);
  }
  if (typeof shards_per_index !== 'number' || !Number.isInteger(shards_per_index) || shards_per_index < 1) {
    return fail('a bad shards_per_index', shards_per_index);
  }
  if (!Array.isArray(copies)) return fail('copies that are not a list', copies);
  for (const c of copies) {
    if (
      !isPlainObject(c) ||
      typeof c['index'] !== 'string' ||
      !indices.includes(c['index']) ||
      !Number.isInteger(c['shard']) ||
      (c['shard'] as number) < 0 ||
      (c['shard'] as number) >= shards_per_index ||
      typeof c['primary'] !== 'boolean'
    ) {
      return fail('a bad copy', c);
    }
  }
  return raw as unknown as NodeInfo;
}

// ---- shard search (POST /_internal/shard_search) -------------------------------------------------

/**
 * A shard search to send: `ShardSearchRequest` with its body already serialised (once per search, by
 * the caller, which also refuses a body that cannot be: that is never a node's failure).
 */
export interface ShardSearchCall {
  readonly index: string;
  readonly shards: ShardSearchRequest['shards'];
  /** `ShardSearchRequest.body` as JSON. */
  readonly bodyJson: string;
  /** The request's own `cancel_after_time_interval`, passed on. */
  readonly cancelAfterTimeInterval?: string | undefined;
}

/** The `ShardSearchRequest` JSON of `call` (its body spliced in as serialised). Never throws. */
export function encodeShardSearchRequest(call: ShardSearchCall): string {
  // Names and shard numbers: flat, so this cannot throw.
  const cancelAfter =
    call.cancelAfterTimeInterval === undefined
      ? ''
      : `,"cancel_after_time_interval":${JSON.stringify(call.cancelAfterTimeInterval)}`;
  return `{"index":${JSON.stringify(call.index)},"shards":${JSON.stringify(call.shards)},"body":${call.bodyJson}${cancelAfter}}`;
}

/**
 * Checks a shard-search body as received by a data node: `index` a comma list of concrete names (no
 * wildcards, `_all`, exclusions or repeats), `shards` an entry for each of them and no other (the
 * shard numbers themselves are checked by the runtime), `body` an object (absent: `{}`),
 * `cancel_after_time_interval` a string; no other field.
 * @throws InvalidArgumentError naming `index`, `shards`, `shards.<index>`, `body`,
 *   `cancel_after_time_interval` or the unknown field, and the value.
 */
export function decodeShardSearchRequest(raw: unknown): ShardSearchRequest {
  const request = objectBody(raw);
  for (const key of Object.keys(request)) {
    if (key !== 'index' && key !== 'shards' && key !== 'body' && key !== 'cancel_after_time_interval') {
      throw new InvalidArgumentError(
        key,
        'is not a field of a shard search (index, shards, body, cancel_after_time_interval)',
        request[key],
      );
    }
  }
  const { index, shards, body } = request;
  const cancelAfter = request['cancel_after_time_interval'];
  if (cancelAfter !== undefined && typeof cancelAfter !== 'string') {
    throw new InvalidArgumentError('cancel_after_time_interval', 'must be a time value string', cancelAfter);
  }
  if (typeof index !== 'string' || index.length === 0) {
    throw new InvalidArgumentError('index', 'must be a non-empty comma list of index names', index);
  }
  const names = index.split(',');
  for (const name of names) {
    if (name.length === 0 || name === '_all' || name.startsWith('-') || /[*?,\s]/.test(name)) {
      throw new InvalidArgumentError(
        'index',
        `must be a comma list of concrete index names (no wildcards, _all, exclusions or empty names; [${name}] is not one)`,
        index,
      );
    }
    if (names.indexOf(name) !== names.lastIndexOf(name)) {
      throw new InvalidArgumentError('index', `must not repeat an index name ([${name}])`, index);
    }
  }
  if (!isPlainObject(shards)) {
    throw new InvalidArgumentError('shards', 'must be an object of index name to shard numbers', shards);
  }
  // Every index searched names its shards, and only those: each request says exactly what it asks.
  for (const key of Object.keys(shards)) {
    if (!names.includes(key)) {
      throw new InvalidArgumentError(
        `shards.${key}`,
        'must name an index the request resolves to',
        shards[key],
      );
    }
  }
  for (const name of names) {
    if (!Object.hasOwn(shards, name)) {
      throw new InvalidArgumentError(
        'shards',
        `must list the shards of every index in index (none for [${name}])`,
        shards,
      );
    }
  }
  if (body !== undefined && !isPlainObject(body)) {
    throw new InvalidArgumentError('body', 'must be a JSON object', body);
  }
  return {
    index,
    shards: shards as Record<string, number[]>,
    body: body ?? {},
    ...(cancelAfter !== undefined ? { cancel_after_time_interval: cancelAfter } : {}),
  };
}

/** A data node's answer to a shard search. */
export function encodeShardSearchAnswer(
  nodeId: string,
  serviceTimeNs: number,
  queueSize: number,
  response: unknown,
): ShardSearchResponse {
  return { node_id: nodeId, service_time_ns: serviceTimeNs, queue_size: queueSize, response };
}

/**
 * Reads a shard-search answer (status 200): an object with a `response`; `node_id` as a string,
 * `service_time_ns` and `queue_size` as figures (0 when absent or not a number >= 0).
 * @throws InvalidArgumentError naming `shard_search answer` or `response` and the value.
 */
export function decodeShardSearchAnswer(raw: unknown): ShardSearchResponse {
  const answer = objectBody(raw, 'shard_search answer');
  if (!('response' in answer)) {
    throw new InvalidArgumentError('response', 'must be in a shard search answer', raw);
  }
  return {
    node_id: String(answer['node_id']),
    service_time_ns: figure(answer['service_time_ns']),
    queue_size: figure(answer['queue_size']),
    response: answer['response'],
  };
}

// ---- index metadata (PUT|DELETE /_internal/indices/{index}, PUT .../_settings) -------------------

/** `PUT /_internal/indices/{index}`, or with `uuid` the `DELETE` of that index's copies. */
export function indexPath(name: string, uuid?: string): string {
  return `${INDICES_PATH}/${encodeURIComponent(name)}${uuid === undefined ? '' : `?uuid=${encodeURIComponent(uuid)}`}`;
}

/** `PUT /_internal/indices/{index}/_settings`. */
export function indexSettingsPath(name: string): string {
  return `${INDICES_PATH}/${encodeURIComponent(name)}/_settings`;
}

/** The metadata a coordinator decided, as `PUT /_internal/indices/{index}` carries it. */
export function encodeIndexMetadataRequest(meta: IndexMetadata): Record<string, unknown> {
  return formatIndexMetadata(meta);
}

/**
 * Reads `PUT /_internal/indices/{index}`: the index metadata (`parseIndexMetadata`, fields under
 * `body.`) of the index the URL names.
 * @throws InvalidArgumentError naming the field (`body.name` when it is another index) and the value.
 */
export function decodeIndexMetadataRequest(raw: unknown, urlIndex: string): IndexMetadata {
  const meta = parseIndexMetadata(raw, 'body');
  if (meta.name !== urlIndex) {
    throw new InvalidArgumentError('body.name', `must be the index of the URL [${urlIndex}]`, meta.name);
  }
  return meta;
}

/** Reads the `?uuid=` of `DELETE /_internal/indices/{index}`. @throws InvalidArgumentError naming `uuid`. */
export function decodeDropIndexQuery(query: unknown): string {
  const uuid = isPlainObject(query) ? query['uuid'] : undefined;
  if (typeof uuid !== 'string') throw new InvalidArgumentError('uuid', 'must be the index uuid', uuid);
  return uuid;
}

/** `PUT /_internal/indices/{index}/_settings` of an index's explicit settings. */
export function encodeSettingsRequest(uuid: string, explicit: IndexSettingValues): Record<string, unknown> {
  return { uuid, settings: explicitSettingsToFlat(explicit) };
}

/**
 * Reads `PUT /_internal/indices/{index}/_settings` `{"uuid", "settings": {flat}}` (settings absent: `{}`).
 * @throws InvalidArgumentError naming `body`, `settings.<key>` or `uuid` and the value.
 */
export function decodeSettingsRequest(raw: unknown): {
  readonly uuid: string;
  readonly settings: IndexSettings;
} {
  const body = objectBody(raw);
  const settings = resolveIndexSettings(parseSettingValues(body['settings'] ?? {}, 'settings'));
  return { uuid: stringField(body, 'uuid'), settings };
}

/** `{"acknowledged": true, "node_id"}`: a data node took an index change. */
export function encodeAcknowledged(nodeId: string): {
  readonly acknowledged: true;
  readonly node_id: string;
} {
  return { acknowledged: true, node_id: nodeId };
}

// ---- shard bulks (POST /_internal/bulk) -----------------------------------------------------------

/** One shard's writes in a shard bulk. */
export interface ShardBulkRequestShard {
  readonly index: string;
  readonly shard: number;
  readonly items: readonly ShardWriteItem[];
}

/** `POST /_internal/bulk`. */
export interface ShardBulkRequest {
  readonly refresh: RefreshPolicy;
  readonly shards: readonly ShardBulkRequestShard[];
}

export function encodeShardBulkRequest(request: ShardBulkRequest): Record<string, unknown> {
  return {
    refresh: request.refresh,
    shards: request.shards.map((s) => ({ index: s.index, shard: s.shard, items: s.items })),
  };
}

/**
 * Reads `POST /_internal/bulk` `{"refresh"?, "shards": [{"index", "shard", "items"}]}` (refresh
 * absent: `false`).
 * @throws InvalidArgumentError naming `body`, `refresh`, `shards`, `index`, `shard` or
 *   `shards[i].items[j]` and the value.
 */
export function decodeShardBulkRequest(raw: unknown): ShardBulkRequest {
  const body = objectBody(raw);
  const refresh = parseRefreshPolicy(body['refresh'] ?? 'false');
  const shards = body['shards'];
  if (!Array.isArray(shards)) throw new InvalidArgumentError('shards', 'must be an array', shards);
  return {
    refresh,
    shards: shards.map((entry, i) => {
      const s = objectBody(entry);
      return {
        index: stringField(s, 'index'),
        shard: shardField(s),
        items: writeItemsOf(s['items'], `shards[${i}].items`),
      };
    }),
  };
}

/** What one shard bulk came to on the primary. */
export type ShardBulkResult =
  | { readonly index: string; readonly shard: number; readonly ok: true; readonly outcome: ShardBulkOutcome }
  | {
      readonly index: string;
      readonly shard: number;
      readonly ok: false;
      readonly status: number;
      readonly error: { readonly type: string; readonly reason: string };
    };

/** The primary's answer to a shard bulk. */
export interface ShardBulkAnswer {
  /** From the request's arrival to the answer, ns (0 when the node sent none). */
  readonly serviceTimeNs: number;
  readonly shards: readonly ShardBulkResult[];
}

export function encodeShardBulkAnswer(
  nodeId: string,
  serviceTimeNs: number,
  shards: readonly ShardBulkResult[],
): Record<string, unknown> {
  return { node_id: nodeId, service_time_ns: serviceTimeNs, shards };
}

/**
 * Reads a primary's answer to a shard bulk: `shards` (absent or not a list: none); entries that are
 * not objects are left out (their shards then have no result); a failed entry's `status` defaults
 * to 500 and its error to `{"type": "exception", "reason": "shard bulk failed"}`.
 * @throws InvalidArgumentError naming `shard_bulk answer` when the answer is not an object.
 */
export function decodeShardBulkAnswer(raw: unknown): ShardBulkAnswer {
  const answer = objectBody(raw, 'shard_bulk answer');
  const list = Array.isArray(answer['shards']) ? (answer['shards'] as unknown[]) : [];
  const shards: ShardBulkResult[] = [];
  for (const r of list) {
    if (!isPlainObject(r)) continue;
    const index = r['index'] as string;
    const shard = r['shard'] as number;
    if (r['ok'] === true) {
      shards.push({
        index,
        shard,
        ok: true,
        outcome: (isPlainObject(r['outcome']) ? r['outcome'] : {}) as unknown as ShardBulkOutcome,
      });
      continue;
    }
    const error = (isPlainObject(r['error']) ? r['error'] : {}) as { type?: unknown; reason?: unknown };
    shards.push({
      index,
      shard,
      ok: false,
      status: Number(r['status'] ?? 500),
      error: {
        type: typeof error.type === 'string' ? error.type : 'exception',
        reason: typeof error.reason === 'string' ? error.reason : 'shard bulk failed',
      },
    });
  }
  return { serviceTimeNs: figure(answer['service_time_ns']), shards };
}

// ---- replication (POST /_internal/replicate) and recovery (POST /_internal/recover) ---------------

const NON_EMPTY_STRING = { type: 'string', minLength: 1, 'x-must': 'must be a non-empty string' };
const SHARD = { type: 'integer', minimum: 0, maximum: 1023, 'x-must': 'must be an integer in 0..1023' };
const SEQ_NO = {
  type: 'integer',
  minimum: 0,
  maximum: Number.MAX_SAFE_INTEGER,
  'x-must': 'must be an integer >= 0',
};

function bodySchema(properties: Record<string, Record<string, unknown>>, required: readonly string[]) {
  return { type: 'object', 'x-must': 'must be a JSON object', properties, required: [...required] } as const;
}

/** `replicate` body schema: the copy's index, uuid and shard, and the primary's position (operations are checked by hand). */
export const REPLICATE_REQUEST_SCHEMA = bodySchema(
  {
    index: NON_EMPTY_STRING,
    uuid: NON_EMPTY_STRING,
    shard: SHARD,
    primary_next_seq_no: SEQ_NO,
    primary_term: {
      type: 'integer',
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      'x-must': 'must be an integer >= 1',
    },
  },
  ['index', 'uuid', 'shard'],
);
/** `recover` body schema. */
export const RECOVER_REQUEST_SCHEMA = bodySchema(
  { index: NON_EMPTY_STRING, uuid: NON_EMPTY_STRING, shard: SHARD, from_seq_no: SEQ_NO },
  ['index', 'uuid', 'shard', 'from_seq_no'],
);
/** `get` body schema. */
export const GET_REQUEST_SCHEMA = bodySchema(
  { index: NON_EMPTY_STRING, shard: SHARD, id: NON_EMPTY_STRING },
  ['index', 'shard', 'id'],
);
/** `refresh` body schema. */
export const REFRESH_REQUEST_SCHEMA = bodySchema(
  { indices: { type: 'array', items: { type: 'string' }, 'x-must': 'must be an array of index names' } },
  ['indices'],
);

const checkReplicate = schemaCheck(REPLICATE_REQUEST_SCHEMA, 'body');
const checkRecover = schemaCheck(RECOVER_REQUEST_SCHEMA, 'body');
const checkGet = schemaCheck(GET_REQUEST_SCHEMA, 'body');
const checkRefresh = schemaCheck(REFRESH_REQUEST_SCHEMA, 'body');

/** `POST /_internal/replicate`: a primary's operations for one replica copy. */
export interface ReplicateRequest {
  readonly index: string;
  readonly uuid: string;
  readonly shard: number;
  readonly refresh: RefreshPolicy;
  readonly operations: readonly LoggedOperation[];
  /** The primary's next sequence number (a replica behind it answers 409). */
  readonly primaryNextSeqNo?: number | undefined;
  /** The primary's term (cluster state in etcd): a deposed primary's older term is refused. */
  readonly primaryTerm?: number | undefined;
}

export function encodeReplicateRequest(request: ReplicateRequest): Record<string, unknown> {
  return {
    index: request.index,
    uuid: request.uuid,
    shard: request.shard,
    refresh: request.refresh,
    operations: request.operations,
    ...(request.primaryNextSeqNo !== undefined ? { primary_next_seq_no: request.primaryNextSeqNo } : {}),
    ...(request.primaryTerm !== undefined ? { primary_term: request.primaryTerm } : {}),
  };
}

/**
 * Reads `POST /_internal/replicate` (`REPLICATE_REQUEST_SCHEMA`, then `operations`, then `refresh`).
 * @throws InvalidArgumentError naming the field (`operations[i]`...) and the value.
 */
export function decodeReplicateRequest(raw: unknown): ReplicateRequest {
  checkReplicate(raw);
  const body = raw as Record<string, unknown>;
  const operations = operationsOf(body['operations'], 'operations');
  return {
    index: body['index'] as string,
    uuid: body['uuid'] as string,
    shard: body['shard'] as number,
    operations,
    refresh: parseRefreshPolicy(body['refresh'] ?? 'false'),
    primaryNextSeqNo: body['primary_next_seq_no'] as number | undefined,
    primaryTerm: body['primary_term'] as number | undefined,
  };
}

/** A replica's answer: applied (200, with its service time), or behind (409, from its next sequence number). */
export type ReplicateAnswer =
  | { readonly applied: true; readonly serviceTimeNs: number }
  | { readonly applied: false; readonly nextSeqNo: number };

/** The status and body a replica answers with. */
export function encodeReplicateAnswer(
  nodeId: string,
  answer: ReplicateAnswer,
): { readonly status: 200 | 409; readonly body: Record<string, unknown> } {
  return answer.applied
    ? { status: 200, body: { node_id: nodeId, service_time_ns: answer.serviceTimeNs } }
    : { status: 409, body: { node_id: nodeId, next_seq_no: answer.nextSeqNo } };
}

/**
 * Reads a replica's answer of `status` 200 or 409.
 * @throws InvalidArgumentError naming `next_seq_no` (a 409 without an integer >= 0) and the value.
 */
export function decodeReplicateAnswer(
  status: number,
  raw: Readonly<Record<string, unknown>>,
): ReplicateAnswer {
  if (status === 200) return { applied: true, serviceTimeNs: figure(raw['service_time_ns']) };
  const next = Number(raw['next_seq_no']);
  if (!Number.isSafeInteger(next) || next < 0) {
    throw new InvalidArgumentError(
      'next_seq_no',
      'must be an integer >= 0 in a replica answer of 409',
      raw['next_seq_no'],
    );
  }
  return { applied: false, nextSeqNo: next };
}

/** `POST /_internal/recover`: a replica asks its primary for the operations from `fromSeqNo` on. */
export interface RecoverRequest {
  readonly index: string;
  readonly uuid: string;
  readonly shard: number;
  readonly fromSeqNo: number;
}

export function encodeRecoverRequest(request: RecoverRequest): Record<string, unknown> {
  return { index: request.index, uuid: request.uuid, shard: request.shard, from_seq_no: request.fromSeqNo };
}

/** Reads `POST /_internal/recover` (`RECOVER_REQUEST_SCHEMA`). @throws InvalidArgumentError naming the field. */
export function decodeRecoverRequest(raw: unknown): RecoverRequest {
  checkRecover(raw);
  const body = raw as Record<string, unknown>;
  return {
    index: body['index'] as string,
    uuid: body['uuid'] as string,
    shard: body['shard'] as number,
    fromSeqNo: body['from_seq_no'] as number,
  };
}

export function encodeRecoverAnswer(
  nodeId: string,
  operations: readonly LoggedOperation[],
): Record<string, unknown> {
  return { node_id: nodeId, operations };
}

/** Reads a primary's recovery answer. @throws InvalidArgumentError naming `operations` or `operations[i]`. */
export function decodeRecoverAnswer(raw: Readonly<Record<string, unknown>>): LoggedOperation[] {
  return operationsOf(raw['operations'], 'operations');
}

// ---- real-time GET, _cat/shards, refresh -----------------------------------------------------------

/** `POST /_internal/get`: one document of one shard copy. */
export interface GetRequest {
  readonly index: string;
  readonly shard: number;
  readonly id: string;
}

export function encodeGetRequest(request: GetRequest): Record<string, unknown> {
  return { index: request.index, shard: request.shard, id: request.id };
}

/** Reads `POST /_internal/get` (`GET_REQUEST_SCHEMA`). @throws InvalidArgumentError naming the field. */
export function decodeGetRequest(raw: unknown): GetRequest {
  checkGet(raw);
  const body = raw as Record<string, unknown>;
  return { index: body['index'] as string, shard: body['shard'] as number, id: body['id'] as string };
}

/**
 * Reads a copy's GET answer: `_index` and `_id` strings, `found` a boolean (the rest as the copy sent it).
 * @throws InvalidArgumentError naming `_index`, `_id` or `found` and the value.
 */
export function decodeGetAnswer(raw: Readonly<Record<string, unknown>>): GetResponse {
  for (const key of ['_index', '_id'] as const) {
    if (typeof raw[key] !== 'string')
      throw new InvalidArgumentError(key, 'must be a string in a GET answer', raw[key]);
  }
  if (typeof raw['found'] !== 'boolean')
    throw new InvalidArgumentError('found', 'must be a boolean in a GET answer', raw['found']);
  return raw as unknown as GetResponse;
}

export function encodeCatShardsAnswer(nodeId: string, rows: readonly CatShardRow[]): Record<string, unknown> {
  return { node_id: nodeId, rows };
}

/** Reads a node's `_cat/shards` rows. @throws InvalidArgumentError naming `rows` or `rows[i]` and the value. */
export function decodeCatShardsAnswer(raw: Readonly<Record<string, unknown>>): CatShardRow[] {
  const rows = raw['rows'];
  if (!Array.isArray(rows))
    throw new InvalidArgumentError('rows', 'must be an array of _cat/shards rows', rows);
  rows.forEach((row, i) => {
    if (
      !isPlainObject(row) ||
      typeof row['index'] !== 'string' ||
      typeof row['shard'] !== 'string' ||
      typeof row['node'] !== 'string'
    ) {
      throw new InvalidArgumentError(
        `rows[${i}]`,
        'must be a _cat/shards row {index, shard, prirep, state, docs, node}',
        row,
      );
    }
  });
  return rows as CatShardRow[];
}

/** `POST /_internal/refresh`: refresh this node's copies of `indices`. */
export function encodeRefreshRequest(indices: readonly string[]): Record<string, unknown> {
  return { indices };
}

/** Reads `POST /_internal/refresh` (`REFRESH_REQUEST_SCHEMA`). @throws InvalidArgumentError naming `indices`. */
export function decodeRefreshRequest(raw: unknown): readonly string[] {
  checkRefresh(raw);
  return (raw as { indices: string[] }).indices;
}

export function encodeRefreshAnswer(nodeId: string, refreshed: unknown): Record<string, unknown> {
  return { node_id: nodeId, refreshed };
}

// ---- debug routes (with --debug-routes: POST|DELETE /_internal/debug/cpu_hog, .../latency) ---------

/** `POST /_internal/debug/cpu_hog`. */
export function encodeCpuHogRequest(request: CpuHogRequest): Record<string, unknown> {
  return { threads: request.threads, duration_ms: request.durationMs };
}

/**
 * Checks a hog request body (`{"threads": n, "duration_ms": ms}`).
 * @throws InvalidArgumentError naming `threads` or `duration_ms` and the value.
 */
export function decodeCpuHogRequest(raw: unknown): CpuHogRequest {
  if (!isPlainObject(raw)) throw new InvalidArgumentError('body', 'must be a JSON object', raw);
  const threads = optionChecks.integerIn('threads', raw['threads'] ?? 1, 1, 64);
  const durationMs = optionChecks.integerIn('duration_ms', raw['duration_ms'], 1, 600_000);
  return { threads, durationMs };
}

/** `POST /_internal/debug/latency`. */
export function encodeLatencyRequest(request: LatencyRequest): Record<string, unknown> {
  return { delay_ms: request.delayMs, ratio: request.ratio, duration_ms: request.durationMs };
}

/**
 * Checks a latency request body.
 * @throws InvalidArgumentError naming `delay_ms`, `ratio` or `duration_ms` and the value.
 */
export function decodeLatencyRequest(raw: unknown): LatencyRequest {
  if (!isPlainObject(raw)) throw new InvalidArgumentError('body', 'must be a JSON object', raw);
  for (const key of Object.keys(raw)) {
    if (!['delay_ms', 'ratio', 'duration_ms'].includes(key)) {
      throw new InvalidArgumentError(
        key,
        'is not a field of a latency request (delay_ms, ratio, duration_ms)',
        raw[key],
      );
    }
  }
  const delayMs = optionChecks.integerIn('delay_ms', raw['delay_ms'], 1, 60_000);
  const ratio = optionChecks.ratio('ratio', raw['ratio'] ?? 1);
  const durationMs = optionChecks.integerIn('duration_ms', raw['duration_ms'] ?? 600_000, 1, 3_600_000);
  return { delayMs, ratio, durationMs };
}
