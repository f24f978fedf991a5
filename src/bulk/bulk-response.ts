/**
 * The pieces of a bulk response shared by a single node and a cluster coordinator: the `?refresh`
 * policy, the shard-level write items made from the planner's items, and the per-item entries in
 * Elasticsearch's shape (`BulkItemResponse.toXContent`):
 *
 * ```json
 * {"took": 12, "errors": false, "items": [
 *   {"index": {"_index": "logs", "_id": "AbC...", "_version": 1, "result": "created",
 *              "_shards": {"total": 2, "successful": 2, "failed": 0}, "_seq_no": 0, "_primary_term": 1,
 *              "status": 201}},
 *   {"create": {"_index": "logs", "_id": "x", "status": 409,
 *               "error": {"type": "version_conflict_engine_exception", "reason": "...", "index": "logs", "shard": "0"}}}]}
 * ```
 * `_routing` is printed when the document has one; `forced_refresh: true` with `?refresh=true`.
 */
import {
  httpStatusOf,
  IndexReadOnlyError,
  InvalidArgumentError,
  InvalidBulkError,
  isQuerySandboxError,
} from '../errors.js';
import { type BulkItem, type BulkRequestParser, failedItemResponse } from './bulk-request.js';
import type { BulkPlanner, FailedItem, PlannedItem, ShardBatch } from './bulk-planner.js';
import type { ShardItemResult, ShardWriteItem } from './shard-write-item.js';

/** `?refresh`: `false` (default), `true` (refresh the written shards before answering), `wait_for`. */
export type RefreshPolicy = 'false' | 'true' | 'wait_for';

/**
 * Reads `?refresh=` as Elasticsearch's `WriteRequest.RefreshPolicy.parse`: `true` or the empty value
 * (a bare `?refresh`) is `true`, `false`, `wait_for`.
 * @throws InvalidArgumentError (path `refresh`) for anything else.
 */
export function parseRefreshPolicy(value: unknown): RefreshPolicy {
  if (value === undefined || value === 'false') return 'false';
  if (value === '' || value === 'true') return 'true';
  if (value === 'wait_for') return 'wait_for';
  throw new InvalidArgumentError('refresh', 'must be true, false or wait_for', value);
}

/** The outcome of one shard-level bulk on its primary. */
export interface ShardBulkOutcome {
  readonly results: readonly ShardItemResult[];
  /** `_shards` of every successful item. */
  readonly shards: {
    readonly total: number;
    readonly successful: number;
    readonly failed: number;
    readonly failures?: readonly Record<string, unknown>[];
  };
  readonly forcedRefresh: boolean;
  /** How long the primary waited for its replicas, ns (cluster only). */
  readonly replicationNs?: number;
  /** How long each replica took, measured by the primary (cluster only). */
  readonly replicaTimings?: readonly {
    readonly node: string;
    readonly responseTimeNs: number;
    readonly serviceTimeNs: number;
  }[];
}

/** The shard-level write of a planned item (what travels to the primary). */
export function toShardWriteItem(planned: PlannedItem): ShardWriteItem {
  const item = planned.item;
  const base = {
    position: planned.position,
    id: planned.id,
    routing: planned.routing,
    ...(item.ifSeqNo === undefined ? {} : { ifSeqNo: item.ifSeqNo, ifPrimaryTerm: item.ifPrimaryTerm }),
  };
  switch (item.action) {
    case 'index':
    case 'create':
      return { ...base, action: item.action, source: item.source };
    case 'delete':
      return { ...base, action: 'delete' };
    case 'update':
      return {
        ...base,
        action: 'update',
        doc: item.doc,
        upsert: item.upsert,
        docAsUpsert: item.docAsUpsert,
        detectNoop: item.detectNoop,
      };
  }
}

/** A successful or failed item entry from its shard result. */
export function shardItemResponse(
  planned: PlannedItem,
  shard: number,
  result: ShardItemResult,
  outcome: Pick<ShardBulkOutcome, 'shards' | 'forcedRefresh'>,
): Record<string, unknown> {
  const action = planned.item.action;
  if (result.error !== undefined) {
    return {
      [action]: {
        _index: planned.index,
        _id: planned.id,
        status: result.status,
        error: { ...result.error, index: planned.index, shard: String(shard) },
      },
    };
  }
  const entry: Record<string, unknown> = {
    _index: planned.index,
    _id: planned.id,
    _version: result.version,
    result: result.result,
  };
  if (planned.routing !== undefined) entry['_routing'] = planned.routing;
  if (outcome.forcedRefresh) entry['forced_refresh'] = true;
  entry['_shards'] = outcome.shards;
  entry['_seq_no'] = result.seqNo;
  entry['_primary_term'] = 1;
  entry['status'] = result.status;
  return { [action]: entry };
}

/** The entry of an item that failed as a whole on its shard (the shard was unreachable, its log failed). */
export function shardFailureResponse(
  planned: PlannedItem,
  status: number,
  error: { readonly type: string; readonly reason: string },
): Record<string, unknown> {
  return {
    [planned.item.action]: {
      _index: planned.index,
      _id: planned.id,
      status,
      error: { ...error, index: planned.index, shard: String(planned.shard) },
    },
  };
}

/** The entry of an item the parser or the planner failed. */
export function failedPlanResponse(failed: FailedItem): Record<string, unknown> {
  const item: BulkItem = { ...failed.item, error: failed.error, id: failed.id } as BulkItem;
  return failedItemResponse(item);
}

/** What `prepareBulkIndices` needs from a node's (or the coordinator's) index metadata. */
export interface BulkIndexCatalog {
  /** True for the read-only corpus indices. */
  isReserved(index: string): boolean;
  /** True when the index exists. */
  has(index: string): boolean;
  /** A creation of `index` under way, if any (awaited, its failure ignored). */
  creating(index: string): Promise<unknown> | undefined;
  /** Creates `index` with its matching template's settings. */
  create(index: string): Promise<unknown>;
}

/**
 * Auto-creates the missing indices a bulk's items name (Elasticsearch's `action.auto_create_index`)
 * and splits off the items that write to a read-only corpus index (403 items). An index whose
 * creation fails fails each of its items with that error; one created meanwhile by a concurrent
 * request is used.
 */
export async function prepareBulkIndices(
  items: readonly BulkItem[],
  catalog: BulkIndexCatalog,
): Promise<{ items: BulkItem[]; blocked: { position: number; response: Record<string, unknown> }[] }> {
  const kept: BulkItem[] = [];
  const blocked: { position: number; response: Record<string, unknown> }[] = [];
  const creationErrors = new Map<string, { type: string; reason: string; status: number }>();
  for (const item of items) {
    if (item.error !== undefined) {
      kept.push(item);
      continue;
    }
    if (catalog.isReserved(item.index)) {
      const error = new IndexReadOnlyError(item.index, 'bulk writes are refused');
      blocked.push({
        position: item.position,
        response: {
          [item.action]: {
            _index: item.index,
            _id: item.id ?? null,
            status: 403,
            error: { type: error.type, reason: error.message },
          },
        },
      });
      continue;
    }
    const pending = catalog.creating(item.index);
    if (pending !== undefined) await pending.catch(() => undefined);
    if (!catalog.has(item.index) && !creationErrors.has(item.index)) {
      try {
        await catalog.create(item.index);
      } catch (error) {
        if (!catalog.has(item.index)) {
          creationErrors.set(item.index, {
            type: isQuerySandboxError(error) ? error.type : 'exception',
            reason: error instanceof Error ? error.message : String(error),
            status: isQuerySandboxError(error) ? httpStatusOf(error) : 500,
          });
        }
      }
    }
    const failure = creationErrors.get(item.index);
    kept.push(failure === undefined ? item : ({ ...item, error: failure } as BulkItem));
  }
  return { items: kept, blocked };
}

/** A bulk response (see `bulk-response.ts`). */
export interface BulkResponse {
  readonly took: number;
  readonly errors: boolean;
  readonly items: readonly Record<string, unknown>[];
}

/** Parameters of a bulk request from its URL. */
export interface BulkParameters {
  /** `{index}` of `POST /{index}/_bulk`. */
  readonly index?: string | undefined;
  /** `?routing=`. */
  readonly routing?: string | undefined;
  /** `?refresh=`, already parsed. @default 'false' */
  readonly refresh?: RefreshPolicy | undefined;
}

/** What `runBulk` needs from a single node or a coordinator. */
export interface BulkRunner {
  readonly parser: BulkRequestParser;
  readonly planner: BulkPlanner;
  /** Auto-creates indices and splits off read-only items (`prepareBulkIndices`). */
  prepare(items: readonly BulkItem[]): ReturnType<typeof prepareBulkIndices>;
  /** The index's routing settings, for the planner. */
  routingOf: Parameters<BulkPlanner['plan']>[1];
  /** Runs the shard batches, writing each item's response at its position. */
  execute(
    batches: readonly ShardBatch[],
    refresh: RefreshPolicy,
    responses: (Record<string, unknown> | undefined)[],
  ): Promise<unknown>;
}

/**
 * A bulk from its body to its Elasticsearch response: parse, prepare the indices, plan the shard
 * batches, run them (`runner.execute`), and answer the items in request order (`errors` when any failed).
 * @param startedMs `performance.now()` when the request arrived, for `took`.
 * @throws InvalidBulkError for a body refused as a whole.
 */
export async function runBulk(
  body: string | Uint8Array,
  parameters: BulkParameters,
  startedMs: number,
  runner: BulkRunner,
): Promise<BulkResponse> {
  const parsed = runner.parser.parse(body, { index: parameters.index, routing: parameters.routing });
  if (!parsed.ok) {
    const e = parsed.error;
    throw new InvalidBulkError(e.type, e.reason, e.status, e.line);
  }
  const { items, blocked } = await runner.prepare(parsed.items);
  const plan = runner.planner.plan(items, runner.routingOf);
  const responses: (Record<string, unknown> | undefined)[] = new Array(parsed.items.length);
  for (const entry of blocked) responses[entry.position] = entry.response;
  for (const failed of plan.failed) responses[failed.position] = failedPlanResponse(failed);
  await runner.execute(plan.batches, parameters.refresh ?? 'false', responses);
  let errors = false;
  const out = responses.map((r) => {
    const entry = r ?? { index: { status: 500, error: { type: 'exception', reason: 'item lost' } } };
    if ((Object.values(entry)[0] as { error?: unknown }).error !== undefined) errors = true;
    return entry;
  });
  return { took: Math.round(performance.now() - startedMs), errors, items: out };
}
