/**
 * The single-document write APIs, as Elasticsearch runs them (`TransportSingleItemBulkWriteAction`):
 * each one is a bulk of one item, so it goes through the same parsing, index auto-creation, shard
 * routing, shard log, replication and `?refresh` as `_bulk` (`IndexApi.bulk`), on a single node and
 * through a cluster coordinator alike, and its answer is that item's:
 *
 * - `PUT|POST /{index}/_doc/{id}` (`op_type=index|create`), `POST /{index}/_doc` (an id is made;
 *   `op_type` is then `create`): `index`;
 * - `PUT|POST /{index}/_create/{id}`: `create` (409 when the id exists);
 * - `POST /{index}/_update/{id}` `{"doc", "upsert"?, "doc_as_upsert"?, "detect_noop"?}`: `update`;
 * - `DELETE /{index}/_doc/{id}`: `delete` (a missing document answers 404 with `result: not_found`).
 *
 * Parameters: `routing`, `refresh` (`true`, `false`, `wait_for`), `if_seq_no` with `if_primary_term`
 * (409 when the stored document has others), `retry_on_conflict` (update), `timeout` (checked; writes
 * here never wait for shard copies, so it bounds nothing).
 *
 * Answer: the item's entry without its `status` (`_index`, `_id`, `_version`, `result`, `_shards`,
 * `_seq_no`, `_primary_term`, `forced_refresh`) with the item's status as the HTTP status (201
 * created, 200 otherwise); a failed item throws `DocumentWriteError` with the item's type, reason and
 * status.
 */
import { DocumentWriteError, InvalidArgumentError, InvalidBulkError } from '../errors.js';
import type { BulkResponse, RefreshPolicy } from './bulk-response.js';
import { parseTimeValueMs } from '../common/time-value.js';

/** One single-document write as the routes read it. */
export interface DocumentWrite {
  readonly action: 'index' | 'create' | 'update' | 'delete';
  readonly index: string;
  /** Absent for `POST /{index}/_doc` (the id is made). */
  readonly id?: string | undefined;
  /** The document (`index`, `create`) or the update body (`update`); none for `delete`. */
  readonly body?: unknown;
  readonly routing?: string | undefined;
  readonly refresh?: RefreshPolicy | undefined;
  readonly ifSeqNo?: number | undefined;
  readonly ifPrimaryTerm?: number | undefined;
  readonly retryOnConflict?: number | undefined;
}

/** What a write goes through: the node's or the coordinator's bulk. */
export interface DocumentBulk {
  bulk(
    body: string,
    parameters: { index?: string; routing?: string | undefined; refresh?: RefreshPolicy },
  ): Promise<BulkResponse>;
}

/** The HTTP answer of a single-document write. */
export interface DocumentWriteResult {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** The URL parameters each single-document write takes (besides `pretty`). */
export const DOCUMENT_WRITE_PARAMETERS = {
  index: ['routing', 'refresh', 'op_type', 'if_seq_no', 'if_primary_term', 'timeout'],
  create: ['routing', 'refresh', 'timeout'],
  update: ['routing', 'refresh', 'if_seq_no', 'if_primary_term', 'retry_on_conflict', 'timeout'],
  delete: ['routing', 'refresh', 'if_seq_no', 'if_primary_term', 'timeout'],
} as const;

function integerParameter(query: Readonly<Record<string, unknown>>, name: string): number | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d{1,15}$/.test(value)) {
    throw new InvalidArgumentError(`url parameter [${name}]`, 'must be an integer >= 0', value);
  }
  return Number(value);
}

/**
 * The write's compare-and-set, retry and timeout parameters, checked.
 * @throws InvalidArgumentError naming the parameter and the value.
 */
export function documentWriteOptions(
  query: Readonly<Record<string, unknown>>,
): Pick<DocumentWrite, 'ifSeqNo' | 'ifPrimaryTerm' | 'retryOnConflict'> {
  if (query['timeout'] !== undefined) parseTimeValueMs(query['timeout'], 'url parameter [timeout]');
  return {
    ifSeqNo: integerParameter(query, 'if_seq_no'),
    ifPrimaryTerm: integerParameter(query, 'if_primary_term'),
    retryOnConflict: integerParameter(query, 'retry_on_conflict'),
  };
}

/**
 * `op_type` of `PUT /{index}/_doc/{id}`: `index` (default) or `create`.
 * @throws InvalidArgumentError (path `url parameter [op_type]`) for anything else.
 */
export function opTypeAction(value: unknown): 'index' | 'create' {
  if (value === undefined || value === 'index') return 'index';
  if (value === 'create') return 'create';
  throw new InvalidArgumentError('url parameter [op_type]', 'must be index or create', value);
}

/** The NDJSON of the write's one bulk item. */
function bulkBody(write: DocumentWrite): string {
  const meta: Record<string, unknown> = {};
  if (write.id !== undefined) meta['_id'] = write.id;
  if (write.ifSeqNo !== undefined) meta['if_seq_no'] = write.ifSeqNo;
  if (write.ifPrimaryTerm !== undefined) meta['if_primary_term'] = write.ifPrimaryTerm;
  if (write.retryOnConflict !== undefined) meta['retry_on_conflict'] = write.retryOnConflict;
  const action = JSON.stringify({ [write.action]: meta });
  if (write.action === 'delete') return `${action}\n`;
  if (write.body === undefined) {
    throw new InvalidBulkError(
      'action_request_validation_exception',
      write.action === 'update'
        ? 'Validation Failed: 1: script or doc is missing;'
        : 'Validation Failed: 1: source is missing;',
      400,
      undefined,
    );
  }
  // Compact JSON holds no newline, so the document is one bulk line whatever its layout was.
  return `${action}\n${JSON.stringify(write.body)}\n`;
}

/**
 * A bulk reason told about the write's document instead of its one-item bulk: the bulk parser and
 * planner name the line at fault (`bulk line 2`), which means nothing to a caller who sent no bulk, so
 * the line becomes the document, as `[index]/[id]` (`_auto_` for an id yet to be made).
 */
function documentReason(reason: string, write: DocumentWrite): string {
  const doc = `document [${write.index}]/[${write.id ?? '_auto_'}]`;
  // `bulk line 2`, `(line 1)`, `line [2]`, `action/metadata line [1]`: every way the parser names a line.
  return reason.replace(/\b(?:bulk |action\/metadata )?line \[?\d+\]?/gi, doc);
}

/**
 * Runs one single-document write (see module doc). Reasons name the document (`document
 * [index]/[id]`), never a bulk line.
 * @throws DocumentWriteError for a failed item; InvalidBulkError for a write refused as a whole
 *   (no document; `if_seq_no` without `if_primary_term`); WriteRejectedError for indexing pressure.
 */
export async function writeDocument(api: DocumentBulk, write: DocumentWrite): Promise<DocumentWriteResult> {
  let response: BulkResponse;
  try {
    response = await api.bulk(bulkBody(write), {
      index: write.index,
      routing: write.routing,
      refresh: write.refresh ?? 'false',
    });
  } catch (error) {
    if (!(error instanceof InvalidBulkError)) throw error;
    throw new InvalidBulkError(error.type, documentReason(error.message, write), error.status, undefined);
  }
  const item = response.items[0];
  const entry = (item === undefined ? undefined : Object.values(item)[0]) as
    | Record<string, unknown>
    | undefined;
  if (entry === undefined) {
    throw new DocumentWriteError(
      'exception',
      'the bulk gave no result for the write',
      500,
      write.index,
      undefined,
    );
  }
  const { status, error, ...rest } = entry as { status: number; error?: Record<string, unknown> };
  if (error !== undefined) {
    throw new DocumentWriteError(
      String(error['type'] ?? 'exception'),
      documentReason(String(error['reason'] ?? 'the write failed'), write),
      Number(status) || 500,
      String(entry['_index'] ?? write.index),
      error['shard'] === undefined ? undefined : String(error['shard']),
    );
  }
  return { status: Number(status) || 200, body: rest };
}
