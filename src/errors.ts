/**
 * Every error the runtime throws or returns, with a stable `code`.
 *
 * Errors carry a brand under `Symbol.for('query-sandbox.error')` so that `isQuerySandboxError` works
 * across realms and worker threads (as undici does). HTTP status mapping lives in one place:
 * `httpStatusOf()` below, used by the server.
 */

const kBrand = Symbol.for('query-sandbox.error');

/** Codes a caller can act on. Each one appears in the error table of docs/errors.md (a test keeps them in step). */
export const ErrorCode = {
  /**
   * Refused before it ran (`RejectedError.reason` says why): the sandbox is above its low limit, the
   * node is in duress and sheds it, a queue is full, or the task waited past its queue-wait bound.
   * HTTP 429.
   */
  REJECTED: 'QS_REJECTED',
  /** Stopped while running: the sandbox went above its high limit, or the node shed it in duress. HTTP 429. */
  CANCELLED: 'QS_CANCELLED',
  /**
   * The caller gave up: its `signal` aborted the call, or its HTTP client disconnected. The call
   * settled at once; a queued task was removed without running, a running one is cancelled. HTTP 499
   * (nginx's "client closed request": nobody is left to read it).
   */
  ABORTED: 'QS_ABORTED',
  /**
   * The call's own `timeoutMs` passed before it settled; the task was removed from the queue or is
   * cancelled. HTTP 429, as Elasticsearch answers its own time-outs.
   */
  TIMED_OUT: 'QS_TIMED_OUT',
  /** A configuration or request field is invalid. HTTP 400. */
  INVALID_ARGUMENT: 'QS_INVALID_ARGUMENT',
  /** A sandbox definition (file or API) is invalid. HTTP 400, or a refusal at start. */
  INVALID_SANDBOX: 'QS_INVALID_SANDBOX',
  /** An explicit sandbox choice that the request's attributes do not allow. HTTP 403. */
  SANDBOX_FORBIDDEN: 'QS_SANDBOX_FORBIDDEN',
  /** A named index does not exist. HTTP 404. */
  INDEX_NOT_FOUND: 'QS_INDEX_NOT_FOUND',
  /** The engine refused the request (bad query). HTTP 400 unless the engine says otherwise. */
  ENGINE_REQUEST: 'QS_ENGINE_REQUEST',
  /** The engine failed on a valid request. HTTP 500. */
  ENGINE_FAILURE: 'QS_ENGINE_FAILURE',
  /** The runtime is closed or not started. HTTP 503. */
  NOT_RUNNING: 'QS_NOT_RUNNING',
  /** No sandbox has that id. HTTP 404. */
  SANDBOX_NOT_FOUND: 'QS_SANDBOX_NOT_FOUND',
  /** A sandbox change conflicts: a stale version (`If-Match`), a taken name, identical attributes, children. HTTP 409. */
  SANDBOX_CONFLICT: 'QS_SANDBOX_CONFLICT',
  /** Creating a sandbox would exceed the node's limit on active sandboxes. HTTP 429. */
  SANDBOX_LIMIT: 'QS_SANDBOX_LIMIT',
  /** A write, admin or internal route without a token (`Authorization: Bearer`). HTTP 401. */
  UNAUTHORIZED: 'QS_UNAUTHORIZED',
  /** A write, admin or internal route with a wrong token, or one whose role does not cover it. HTTP 403. */
  ADMIN_FORBIDDEN: 'QS_ADMIN_FORBIDDEN',
  /** The request's headers or body did not arrive within the server's time-out; the connection is closed. HTTP 408. */
  REQUEST_TIMEOUT: 'QS_REQUEST_TIMEOUT',
  /**
   * A cluster coordinator refused a search before fanning it out: every copy of one of its shards is on
   * a data node whose piggy-backed usage is at or above the admission limit. HTTP 429.
   */
  ADMISSION_REJECTED: 'QS_ADMISSION_REJECTED',
  /**
   * Every shard of a search failed on every copy a coordinator tried (data nodes down, refusing or
   * failing), or some did with `allow_partial_search_results=false`. HTTP status as Elasticsearch
   * derives it from the shard failures (`shardFailuresStatus`: 429 when they were refusals).
   */
  SHARDS_FAILED: 'QS_SHARDS_FAILED',
  /** `PUT /{index}` for a name that is taken (a writable index or a corpus index). HTTP 400. */
  INDEX_EXISTS: 'QS_INDEX_EXISTS',
  /** A change to a read-only index (the corpus indices): settings, delete. HTTP 403. */
  INDEX_READ_ONLY: 'QS_INDEX_READ_ONLY',
  /** No index template has that name. HTTP 404. */
  TEMPLATE_NOT_FOUND: 'QS_TEMPLATE_NOT_FOUND',
  /** A bulk body the format refuses as a whole (the parser's type and status: 400, or 413 when too large). */
  INVALID_BULK: 'QS_INVALID_BULK',
  /**
   * A write refused for back-pressure, HTTP 429: a bulk refused whole for indexing pressure (too many
   * bulk bytes in flight on the node), or a shard's items refused because the node's write queue is full.
   */
  WRITE_REJECTED: 'QS_WRITE_REJECTED',
  /** A single-document write whose `if_seq_no`/`if_primary_term` or `create` met another document. HTTP 409. */
  VERSION_CONFLICT: 'QS_VERSION_CONFLICT',
  /** A document that does not exist: an update without upsert, `GET /{index}/_source/{id}`. HTTP 404. */
  DOCUMENT_MISSING: 'QS_DOCUMENT_MISSING',
  /** A single-document write whose shard could not take it (unreachable, failed log). HTTP 5xx. */
  SHARD_WRITE_FAILED: 'QS_SHARD_WRITE_FAILED',
  /**
   * A change to cluster state (sandboxes, query-priority rules, index metadata, the shard table) while
   * the node cannot reach etcd: refused, nothing changed; the node keeps serving with the last state
   * it saw. HTTP 503.
   */
  CLUSTER_STATE_UNAVAILABLE: 'QS_CLUSTER_STATE_UNAVAILABLE',
  /**
   * A coordinator passes on a data node's 4xx, the client's to fix (`RemoteClientError`): the status
   * and the body are the data node's.
   */
  REMOTE_CLIENT_ERROR: 'QS_REMOTE_CLIENT_ERROR',
  /**
   * `query-sandbox cluster` could not start (`ClusterStartError`): a node exited during start-up, did
   * not listen in time, another launcher holds the data directory, or start-up was stopped. A CLI
   * failure, printed as one line; never an HTTP answer (500 if one ever carried it).
   */
  CLUSTER_START: 'QS_CLUSTER_START',
  /**
   * A coordinator cannot learn its data nodes (`ClusterDiscoveryError`): one did not answer in time,
   * answers with another id, or two addresses are one node. A start-up failure, printed as one line;
   * never an HTTP answer (500 if one ever carried it).
   */
  CLUSTER_DISCOVERY: 'QS_CLUSTER_DISCOVERY',
  /**
   * A request body whose `Content-Type` the server does not read (`text/plain`, `application/cbor`...).
   * HTTP 406 with Elasticsearch's plain body `{"error": "Content-Type header [X] is not supported",
   * "status": 406}` (`RestController.sendContentTypeErrorMessage`).
   */
  UNSUPPORTED_CONTENT_TYPE: 'QS_UNSUPPORTED_CONTENT_TYPE',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const classBrands = new Map<string, symbol>();

/** The brand of one class (and, through the constructor, of every class above it). */
function classBrand(name: string): symbol {
  let brand = classBrands.get(name);
  if (brand === undefined) {
    brand = Symbol.for(`query-sandbox.error.${name}`);
    classBrands.set(name, brand);
  }
  return brand;
}

/**
 * Base class: `code` is one of `ErrorCode`; `type` is the OpenSearch-style error type for HTTP bodies.
 *
 * Every instance carries `Symbol.for('query-sandbox.error')` and one `Symbol.for('query-sandbox.error.<Class>')`
 * per class of its chain (as undici brands its errors), and `instanceof` checks those brands
 * (`Symbol.hasInstance`), not the prototype: an error made by another copy of this module (a `vm`
 * context, a second bundle, another package version) is still `instanceof RejectedError` here.
 */
export class QuerySandboxError extends Error {
  readonly code: ErrorCode;
  readonly type: string;
  constructor(code: ErrorCode, type: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.type = type;
    this.name = new.target.name;
    Object.defineProperty(this, kBrand, { value: true });
    for (let c: unknown = new.target; typeof c === 'function' && c !== Error; c = Object.getPrototypeOf(c)) {
      Object.defineProperty(this, classBrand((c as { name: string }).name), { value: true });
    }
  }

  /** `value instanceof X` for this class or a subclass: true when `value` carries X's brand (any realm). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class `instanceof` asks about, a subclass included
    const brand = classBrand(this.name);
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true;
  }
}

/** True for any error made by this package, also one from another realm. */
export function isQuerySandboxError(value: unknown): value is QuerySandboxError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[kBrand] === true;
}

/**
 * Why a task was refused before it ran:
 * - `limit`: its sandbox (or an ancestor) is above its low limit of `resource`;
 * - `duress`: the node is in duress and its sandbox is the lowest-priority one using `resource`;
 * - `queue_full`, `sandbox_queue_full`: the global or the sandbox's queue bound is reached (or a more
 *   important task evicted it); `limit_lowered`: the sandbox's queue bound was lowered below its queue;
 * - `queue_wait`: it waited past its bound (its sandbox's `max_queue_wait`, or the request's `timeout`
 *   when smaller);
 * - `controlled_delay`: its lane has had a standing queue for a whole interval, and it waited past the
 *   controlled-delay target.
 */
export type RejectionReason =
  | 'limit'
  | 'duress'
  | 'queue_full'
  | 'sandbox_queue_full'
  | 'limit_lowered'
  | 'queue_wait'
  | 'controlled_delay';

/**
 * The task was refused before it ran. `sandboxId` and `resource` say where ('queue' for the queue's
 * reasons), `reason` says why (default: `limit` for a resource, `queue_full` for the queue).
 */
export class RejectedError extends QuerySandboxError {
  readonly sandboxId: string;
  readonly resource: 'cpu' | 'memory' | 'queue';
  readonly reason: RejectionReason;
  constructor(
    sandboxId: string,
    resource: 'cpu' | 'memory' | 'queue',
    message: string,
    reason?: RejectionReason,
  ) {
    super(ErrorCode.REJECTED, 'rejected_execution_exception', message);
    this.sandboxId = sandboxId;
    this.resource = resource;
    this.reason = reason ?? (resource === 'queue' ? 'queue_full' : 'limit');
  }
}

/** Why a running task was stopped: its sandbox's high limit, node duress, or shutdown. */
export type CancellationReason = 'limit' | 'duress' | 'shutdown';

/**
 * The task was stopped while running. `hard` is true when its worker was terminated. `resource`:
 * `cpu` / `memory` (a high limit), `time` (it ran past its `cancel_after_time_interval`), `shutdown`.
 */
export class CancelledError extends QuerySandboxError {
  readonly sandboxId: string;
  readonly resource: 'cpu' | 'memory' | 'time' | 'shutdown';
  readonly hard: boolean;
  /** Default: `shutdown` for that resource, else `limit`. */
  readonly reason: CancellationReason;
  constructor(
    sandboxId: string,
    resource: 'cpu' | 'memory' | 'time' | 'shutdown',
    hard: boolean,
    message: string,
    reason?: CancellationReason,
  ) {
    super(ErrorCode.CANCELLED, 'task_cancelled_exception', message);
    this.sandboxId = sandboxId;
    this.resource = resource;
    this.hard = hard;
    this.reason = reason ?? (resource === 'shutdown' ? 'shutdown' : 'limit');
  }
}

/**
 * The caller aborted the call (`SearchCallOptions.signal`), or its HTTP client went away. `queued`
 * says where the task was: removed from the queue without running (true), or cancelled while running.
 */
export class AbortedError extends QuerySandboxError {
  readonly sandboxId: string | undefined;
  readonly queued: boolean;
  constructor(
    sandboxId: string | undefined,
    queued: boolean,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(ErrorCode.ABORTED, 'task_cancelled_exception', message, options);
    this.sandboxId = sandboxId;
    this.queued = queued;
  }
}

/**
 * The call's `timeoutMs` passed before it settled (`timeoutMs` is echoed; `queued` as in AbortedError;
 * `sandboxId` undefined on a coordinator, which runs no task of its own).
 */
export class TimedOutError extends QuerySandboxError {
  readonly sandboxId: string | undefined;
  readonly timeoutMs: number;
  readonly queued: boolean;
  constructor(sandboxId: string | undefined, timeoutMs: number, queued: boolean, message: string) {
    super(ErrorCode.TIMED_OUT, 'timeout_exception', message);
    this.sandboxId = sandboxId;
    this.timeoutMs = timeoutMs;
    this.queued = queued;
  }
}

/**
 * An option or request field is invalid; `path` names it (`limits.cpu.high`), `expectation` says what
 * it must be, `received` is the value. The message is `<path> <expectation>; received <value>`.
 */
export class InvalidArgumentError extends QuerySandboxError {
  readonly path: string;
  readonly expectation: string;
  readonly received: unknown;
  constructor(
    path: string,
    expectation: string,
    received: unknown,
    code: ErrorCode = ErrorCode.INVALID_ARGUMENT,
  ) {
    super(code, 'illegal_argument_exception', `${path} ${expectation}; received ${formatReceived(received)}`);
    this.path = path;
    this.expectation = expectation;
    this.received = received;
  }
}

/** A sandbox definition is invalid (same message shape as InvalidArgumentError). */
export class InvalidSandboxError extends InvalidArgumentError {
  constructor(path: string, expectation: string, received: unknown) {
    super(path, expectation, received, ErrorCode.INVALID_SANDBOX);
  }

  /**
   * The same error with the leading `from` of its path (and message) replaced by `to`: a definition
   * checked as `sandboxes[3]` of the whole set is reported against the request body as `` (or `body`).
   */
  rebase(from: string, to: string): InvalidSandboxError {
    if (!this.path.startsWith(from)) return this;
    let path = to + this.path.slice(from.length);
    if (path.startsWith('.')) path = path.slice(1);
    return this.withPath(path === '' ? 'body' : path);
  }

  /** The same error reported at another `path` (and, optionally, with a reworded expectation). */
  withPath(path: string, expectation = this.expectation): InvalidSandboxError {
    return new InvalidSandboxError(path, expectation, this.received);
  }
}

/** An explicit sandbox choice (`x-sandbox-id`) that the request may not use. */
export class SandboxForbiddenError extends QuerySandboxError {
  readonly sandboxId: string;
  constructor(sandboxId: string, message: string) {
    super(ErrorCode.SANDBOX_FORBIDDEN, 'security_exception', message);
    this.sandboxId = sandboxId;
  }
}

/** The request names an index that does not exist. */
export class IndexNotFoundError extends QuerySandboxError {
  readonly index: string;
  constructor(index: string) {
    super(ErrorCode.INDEX_NOT_FOUND, 'index_not_found_exception', `no such index [${index}]`);
    this.index = index;
  }
}

/**
 * Thrown by an engine for a request it refuses (unknown query type, bad field). `type` follows
 * OpenSearch (`parsing_exception`, `illegal_argument_exception`); `statusCode` is a 4xx (default 400).
 * Any error with a numeric `statusCode` in 400..499 thrown by an engine is treated the same way.
 */
export class EngineRequestError extends QuerySandboxError {
  readonly statusCode: number;
  constructor(type: string, message: string, statusCode = 400) {
    super(ErrorCode.ENGINE_REQUEST, type, message);
    this.statusCode = statusCode;
  }
}

/** The engine failed on a request it accepted. */
export class EngineFailureError extends QuerySandboxError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.ENGINE_FAILURE, 'exception', message, options);
  }
}

/** No sandbox has the id (or, through `_wlm`, the name: `message` says so). */
export class SandboxNotFoundError extends QuerySandboxError {
  readonly sandboxId: string;
  constructor(sandboxId: string, message = `no sandbox with _id [${sandboxId}]`) {
    super(ErrorCode.SANDBOX_NOT_FOUND, 'resource_not_found_exception', message);
    this.sandboxId = sandboxId;
  }
}

/** A sandbox change conflicts with the current state; `reason` says which way. */
export class SandboxConflictError extends QuerySandboxError {
  readonly reason: 'version' | 'name' | 'attributes' | 'children';
  constructor(reason: 'version' | 'name' | 'attributes' | 'children', message: string) {
    super(
      ErrorCode.SANDBOX_CONFLICT,
      reason === 'version'
        ? 'version_conflict_engine_exception'
        : reason === 'children'
          ? 'illegal_state_exception'
          : 'resource_already_exists_exception',
      message,
    );
    this.reason = reason;
  }
}

/** Creating a sandbox would exceed the limit on active sandboxes. */
export class SandboxLimitError extends QuerySandboxError {
  readonly limit: number;
  constructor(limit: number) {
    super(
      ErrorCode.SANDBOX_LIMIT,
      'rejected_execution_exception',
      `rejected: the node already holds its limit of ${limit} sandboxes (maxSandboxes); delete one first`,
    );
    this.limit = limit;
  }
}

/** A write, admin or internal route without a token (`Authorization: Bearer <token>`). */
export class UnauthorizedError extends QuerySandboxError {
  constructor(message: string) {
    super(ErrorCode.UNAUTHORIZED, 'security_exception', message);
  }
}

/** A write, admin or internal route with a wrong token, or with one whose role does not cover the route. */
export class AdminForbiddenError extends QuerySandboxError {
  constructor(message: string) {
    super(ErrorCode.ADMIN_FORBIDDEN, 'security_exception', message);
  }
}

/** The request's headers or body did not arrive in time (`what`: `headers` or `request`); answered 408, then closed. */
export class RequestTimeoutError extends QuerySandboxError {
  readonly timeoutMs: number;
  constructor(timeoutMs: number, message: string) {
    super(ErrorCode.REQUEST_TIMEOUT, 'request_timeout_exception', message);
    this.timeoutMs = timeoutMs;
  }
}

/**
 * A coordinator's admission control refused a search before fan-out (see
 * `admission/admission-controller.ts`): `index` and `shard` name the shard whose copies are all on
 * nodes over their limits, `nodeId` the first of those nodes and `resource` what it is over.
 */
export class AdmissionRejectedError extends QuerySandboxError {
  readonly nodeId: string;
  readonly resource: 'cpu' | 'heap';
  readonly index: string;
  readonly shard: number;
  constructor(nodeId: string, resource: 'cpu' | 'heap', index: string, shard: number, message: string) {
    super(ErrorCode.ADMISSION_REJECTED, 'rejected_execution_exception', message);
    this.nodeId = nodeId;
    this.resource = resource;
    this.index = index;
    this.shard = shard;
  }
}

/** Why one shard of a search failed at a coordinator (the shape of Elasticsearch's `failed_shards`). */
export interface ShardFailure {
  readonly index: string;
  readonly shard: number;
  /** The node of the last copy tried; `null` when the shard has no copy on a known node. */
  readonly node: string | null;
  /** The HTTP status of the failure (429 for a refusal, 5xx or 0 for a node that did not answer). */
  readonly status: number;
  readonly reason: { readonly type: string; readonly reason: string };
}

/**
 * The whole-request status of a search whose shards failed, as Elasticsearch's
 * `SearchPhaseExecutionException.status()`: the first failure with 502..504 (retryable), else the last
 * 5xx, else the first failure's status (a 429 refusal, a 4xx). A failure without an answer (status 0)
 * counts as 503. 503 when there is no failure.
 */
export function shardFailuresStatus(failures: readonly { readonly status: number }[]): number {
  let server: number | undefined;
  for (const f of failures) {
    const status = f.status === 0 ? 503 : f.status;
    if (status >= 502 && status <= 504) return status;
    if (status >= 500) server = status;
  }
  const first = failures[0]?.status;
  return server ?? (first === undefined || first === 0 ? 503 : first);
}

/**
 * Shards of a search failed and the search cannot answer (Elasticsearch's
 * `search_phase_execution_exception`): every shard failed (`all shards failed`), or some did and the
 * request has `allow_partial_search_results=false` (`Partial shards failure`). `failures` says how,
 * per shard; `status` follows `shardFailuresStatus`.
 */
export class ShardsFailedError extends QuerySandboxError {
  readonly status: number;
  readonly failures: readonly ShardFailure[];
  readonly partial: boolean;
  constructor(failures: readonly ShardFailure[], options: { readonly partial?: boolean } = {}) {
    const first = failures[0];
    const partial = options.partial === true;
    super(
      ErrorCode.SHARDS_FAILED,
      'search_phase_execution_exception',
      `${partial ? 'Partial shards failure' : 'all shards failed'}${first === undefined ? '' : `; first: [${first.index}][${first.shard}] on [${first.node ?? 'no node'}]: ${first.reason.reason}`}`,
    );
    this.status = shardFailuresStatus(failures);
    this.failures = failures;
    this.partial = partial;
  }
}

/** `PUT /{index}` for a name that is taken (Elasticsearch `ResourceAlreadyExistsException`). */
export class IndexExistsError extends QuerySandboxError {
  readonly index: string;
  constructor(index: string, uuid?: string) {
    super(
      ErrorCode.INDEX_EXISTS,
      'resource_already_exists_exception',
      `index [${uuid === undefined ? index : `${index}/${uuid}`}] already exists`,
    );
    this.index = index;
  }
}

/**
 * A change to an index that only serves reads (the corpus indices): Elasticsearch answers writes to a
 * write-blocked index with `cluster_block_exception` (403).
 */
export class IndexReadOnlyError extends QuerySandboxError {
  readonly index: string;
  constructor(index: string, what: string) {
    super(
      ErrorCode.INDEX_READ_ONLY,
      'cluster_block_exception',
      `index [${index}] blocked by: [FORBIDDEN/8/index write (api)]; it is a read-only corpus index: ${what}`,
    );
    this.index = index;
  }
}

/** No index template has the name (Elasticsearch: `index_template_missing_exception`). */
export class TemplateNotFoundError extends QuerySandboxError {
  readonly template: string;
  constructor(template: string) {
    super(
      ErrorCode.TEMPLATE_NOT_FOUND,
      'resource_not_found_exception',
      `index template matching [${template}] not found`,
    );
    this.template = template;
  }
}

/**
 * A request body sent with a `Content-Type` the server does not read; `contentType` is the header as
 * sent. The message is Elasticsearch's: `Content-Type header [text/plain] is not supported`.
 */
export class UnsupportedContentTypeError extends QuerySandboxError {
  readonly contentType: string;
  constructor(contentType: string) {
    super(
      ErrorCode.UNSUPPORTED_CONTENT_TYPE,
      'media_type_header_exception',
      `Content-Type header [${contentType}] is not supported`,
    );
    this.contentType = contentType;
  }
}

/**
 * A bulk body refused as a whole (see `bulk/bulk-request.ts`): `type` and `status` are the
 * parser's (400, or 413 over the size limits); `line` is the bulk line at fault, when there is one.
 */
export class InvalidBulkError extends QuerySandboxError {
  readonly status: number;
  readonly line: number | undefined;
  constructor(type: string, reason: string, status: number, line: number | undefined) {
    super(ErrorCode.INVALID_BULK, type, reason);
    this.status = status;
    this.line = line;
  }
}

/**
 * A write refused before it ran because too many bulk bytes are in flight on the node (Elasticsearch
 * `IndexingPressure`: `es_rejected_execution_exception`, 429).
 */
export class WriteRejectedError extends QuerySandboxError {
  readonly inFlightBytes: number;
  readonly limitBytes: number;
  constructor(inFlightBytes: number, requestBytes: number, limitBytes: number, where: string) {
    super(
      ErrorCode.WRITE_REJECTED,
      'es_rejected_execution_exception',
      `rejected execution of ${where} operation [in_flight_bytes=${inFlightBytes}, operation_bytes=${requestBytes}, max_bytes=${limitBytes}]`,
    );
    this.inFlightBytes = inFlightBytes;
    this.limitBytes = limitBytes;
  }
}

/**
 * A single-document write (`PUT /{index}/_doc/{id}`, `_create`, `_update`, `DELETE`) whose one bulk
 * item failed on its shard: `type`, `status` and the message are the item's (Elasticsearch's
 * `TransportSingleItemBulkWriteAction` throws the item's failure the same way); `code` follows the
 * status: 409 `QS_VERSION_CONFLICT`, 404 `QS_DOCUMENT_MISSING`, 429 `QS_WRITE_REJECTED`, 403
 * `QS_INDEX_READ_ONLY`, another 4xx `QS_INVALID_ARGUMENT`, 5xx `QS_SHARD_WRITE_FAILED`.
 */
export class DocumentWriteError extends QuerySandboxError {
  readonly status: number;
  readonly index: string;
  readonly shard: string | undefined;
  constructor(type: string, reason: string, status: number, index: string, shard: string | undefined) {
    const code =
      status === 409
        ? ErrorCode.VERSION_CONFLICT
        : status === 404
          ? ErrorCode.DOCUMENT_MISSING
          : status === 429
            ? ErrorCode.WRITE_REJECTED
            : status === 403
              ? ErrorCode.INDEX_READ_ONLY
              : status >= 400 && status < 500
                ? ErrorCode.INVALID_ARGUMENT
                : ErrorCode.SHARD_WRITE_FAILED;
    super(code, type, reason);
    this.status = status;
    this.index = index;
    this.shard = shard;
  }
}

/** `GET /{index}/_source/{id}` of a document that does not exist (Elasticsearch: `resource_not_found_exception`). */
export class DocumentMissingError extends QuerySandboxError {
  readonly index: string;
  constructor(index: string, id: string) {
    super(
      ErrorCode.DOCUMENT_MISSING,
      'resource_not_found_exception',
      `Document not found [${index}]/[${id}]`,
    );
    this.index = index;
  }
}

/**
 * A shard bulk refused because its node holds its limit of shard writes (the write queue,
 * `indices/write-queue.ts`; Elasticsearch's full `write` thread pool): 429 `es_rejected_execution_exception`
 * for that shard's items only.
 */
export class ShardWriteRejectedError extends QuerySandboxError {
  constructor(message: string) {
    super(ErrorCode.WRITE_REJECTED, 'es_rejected_execution_exception', message);
  }
}

/**
 * etcd, the cluster-state store, did not answer a change (or failed it): nothing was changed. The type
 * is Elasticsearch's for a cluster without a reachable master (503 `master_not_discovered_exception`).
 */
export class ClusterStateUnavailableError extends QuerySandboxError {
  /** What was being done (`create a sandbox`, `save the query-priority rules`). */
  readonly operation: string;
  constructor(operation: string, endpoints: readonly string[], cause?: unknown) {
    const why = cause instanceof Error ? cause.message : cause === undefined ? 'unreachable' : String(cause);
    super(
      ErrorCode.CLUSTER_STATE_UNAVAILABLE,
      'master_not_discovered_exception',
      `cannot ${operation}: the cluster state store (etcd at ${endpoints.join(', ')}) is unavailable (${why}); nothing was changed, retry once it is back`,
      { cause },
    );
    this.operation = operation;
  }
}

/**
 * A data node's 4xx answer that is the client's to fix; the coordinator passes status and body on
 * (`httpStatusOf` gives `status`, `toErrorResponse` the data node's `body`).
 */
export class RemoteClientError extends QuerySandboxError {
  /** The data node's status, 400..499. */
  readonly status: number;
  /** The data node's error body, as it answered (or a minimal Elasticsearch-shaped one). */
  readonly body: Readonly<Record<string, unknown>>;
  readonly nodeId: string;
  constructor(
    nodeId: string,
    status: number,
    body: Readonly<Record<string, unknown>> | undefined,
    reason: string,
  ) {
    const error = (body as { error?: { type?: unknown } } | undefined)?.error;
    super(
      ErrorCode.REMOTE_CLIENT_ERROR,
      typeof error?.type === 'string' ? error.type : 'exception',
      `data node [${nodeId}] answered ${status}: ${reason}`,
    );
    this.nodeId = nodeId;
    this.status = status;
    this.body = body ?? { error: { type: 'exception', reason }, status };
  }
}

/**
 * The cluster could not start: a node exited during start-up (with its reason), did not listen in
 * time, another launcher holds the data directory, or start-up was stopped. Its message is one line
 * for the user (`query-sandbox` prints it without a stack).
 */
export class ClusterStartError extends QuerySandboxError {
  /** The node at fault, when there is one. */
  readonly nodeId: string | undefined;
  constructor(message: string, nodeId?: string) {
    super(ErrorCode.CLUSTER_START, 'cluster_start_exception', message);
    this.nodeId = nodeId;
  }
}

/**
 * The coordinator cannot learn its data nodes: one did not answer in time, answers with an id other
 * than the one listed, or two addresses are one node. A configuration the user fixes; its message is
 * one line (`query-sandbox` prints it without a stack).
 */
export class ClusterDiscoveryError extends QuerySandboxError {
  /** The address at fault. */
  readonly url: string;
  constructor(url: string, message: string) {
    super(ErrorCode.CLUSTER_DISCOVERY, 'cluster_discovery_exception', message);
    this.url = url;
  }
}

/**
 * A shard log file (`indices/shard-log.ts`) is damaged in a way recovery must not paper over: an
 * engine failure (500) with the file and the byte offset where the damage starts.
 */
export class ShardLogCorruptedError extends EngineFailureError {
  readonly path: string;
  /** Where the damage starts, in bytes from the start of the file. */
  readonly offsetBytes: number;
  constructor(path: string, offsetBytes: number, what: string) {
    super(`shard log ${path} is corrupted at byte ${offsetBytes}: ${what}`);
    this.path = path;
    this.offsetBytes = offsetBytes;
  }
}

/** The runtime is not accepting work. */
export class NotRunningError extends QuerySandboxError {
  constructor(message = 'the runtime is closed') {
    super(ErrorCode.NOT_RUNNING, 'node_closed_exception', message);
  }
}

/**
 * The 4xx an error from an engine (or any code outside this package) asks for with a numeric
 * `statusCode` in 400..499; undefined for anything else, which is a failure (5xx).
 */
export function clientErrorStatusOf(error: unknown): number | undefined {
  const status = (error as { statusCode?: unknown } | null | undefined)?.statusCode;
  return typeof status === 'number' && status >= 400 && status < 500 ? status : undefined;
}

/** HTTP status for an error: the one place where codes map to statuses. */
export function httpStatusOf(error: unknown): number {
  if (!isQuerySandboxError(error)) return 500;
  if (error instanceof DocumentWriteError) return error.status;
  switch (error.code) {
    case ErrorCode.REJECTED:
    case ErrorCode.CANCELLED:
    case ErrorCode.TIMED_OUT:
      return 429;
    case ErrorCode.ABORTED:
      return 499;
    case ErrorCode.INVALID_ARGUMENT:
    case ErrorCode.INVALID_SANDBOX:
      return 400;
    case ErrorCode.SANDBOX_FORBIDDEN:
      return 403;
    case ErrorCode.INDEX_NOT_FOUND:
      return 404;
    case ErrorCode.ENGINE_REQUEST:
      return (error as EngineRequestError).statusCode ?? 400;
    case ErrorCode.NOT_RUNNING:
      return 503;
    case ErrorCode.SANDBOX_NOT_FOUND:
      return 404;
    case ErrorCode.SANDBOX_CONFLICT:
      return 409;
    case ErrorCode.SANDBOX_LIMIT:
      return 429;
    case ErrorCode.UNAUTHORIZED:
      return 401;
    case ErrorCode.ADMIN_FORBIDDEN:
      return 403;
    case ErrorCode.REQUEST_TIMEOUT:
      return 408;
    case ErrorCode.ADMISSION_REJECTED:
      return 429;
    case ErrorCode.SHARDS_FAILED:
      return (error as ShardsFailedError).status;
    case ErrorCode.INDEX_EXISTS:
      return 400;
    case ErrorCode.INDEX_READ_ONLY:
      return 403;
    case ErrorCode.TEMPLATE_NOT_FOUND:
      return 404;
    case ErrorCode.INVALID_BULK:
      return (error as InvalidBulkError).status;
    case ErrorCode.WRITE_REJECTED:
      return 429;
    case ErrorCode.VERSION_CONFLICT:
      return 409;
    case ErrorCode.DOCUMENT_MISSING:
      return 404;
    case ErrorCode.SHARD_WRITE_FAILED:
    case ErrorCode.CLUSTER_STATE_UNAVAILABLE:
      return 503;
    case ErrorCode.REMOTE_CLIENT_ERROR:
      return (error as RemoteClientError).status;
    case ErrorCode.CLUSTER_START:
    case ErrorCode.CLUSTER_DISCOVERY:
      return 500;
    case ErrorCode.UNSUPPORTED_CONTENT_TYPE:
      return 406;
    default:
      return 500;
  }
}

/**
 * A received value to print as the client wrote it, not as JSON: a number literal that JavaScript
 * cannot hold (`1e309` parses to Infinity).
 */
export class VerbatimText {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** Short, bounded rendering of a received value for messages. */
export function formatReceived(value: unknown): string {
  let text: string;
  try {
    if (value instanceof VerbatimText)
      return value.text.length > 120 ? `${value.text.slice(0, 117)}...` : value.text;
    // JSON.stringify writes NaN and ±Infinity as null, which would name the wrong value.
    text =
      typeof value === 'string'
        ? JSON.stringify(value)
        : typeof value === 'number' && !Number.isFinite(value)
          ? String(value)
          : (JSON.stringify(value) ?? String(value));
  } catch {
    // Cyclic or too deeply nested for JSON.stringify (and for String(), which recurses too).
    text = Array.isArray(value) ? `[array of ${value.length}]` : `[${typeof value}]`;
  }
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
