/**
 * Parser for the Elasticsearch bulk body (`POST /_bulk`, `POST /{index}/_bulk`): NDJSON, an action line
 * (`index`, `create`, `update`, `delete`) followed, except for `delete`, by a document line.
 *
 * Source: Elasticsearch `org.elasticsearch.action.bulk.BulkRequestParser` (9.x, the strict parser)
 * and `BulkRequest.validate`, with the item checks of `IndexRequest`/`DeleteRequest`/`UpdateRequest`
 * `.validate` and of `IndexRouting` and `DocumentParser`. What fails what:
 *
 * **The whole request** (HTTP 400, nothing runs):
 * - any byte after the last `\n` (the last line must end with a newline): "The bulk request must be
 *   terminated by a newline [\n]";
 * - an action line that is not JSON (`x_content_parse_exception`), not an object ("Malformed
 *   action/metadata line [N], expected START_OBJECT but found [VALUE_STRING]"), an empty object
 *   ("expected FIELD_NAME but found [END_OBJECT]"), an unknown action ("expected field [create],
 *   [delete], [index] or [update] but found [x]"), an action whose value is not an object ("expected
 *   START_OBJECT or END_OBJECT but found [VALUE_NUMBER]"), more than one key ("expected END_OBJECT but
 *   found [FIELD_NAME]");
 * - an unknown metadata key, `_type` included ("Action/metadata line [N] contains an unknown parameter
 *   [x]"); an array or object value ("expected a simple value for field [x] but found [START_ARRAY]");
 *   a `null` value is ignored, as Elasticsearch ignores it;
 * - metadata Elasticsearch knows but this project does not implement (`version`, `version_type`,
 *   `pipeline`, `_source`, `dynamic_templates`, `require_data_stream`,
 *   `list_executed_pipelines`, `require_alias: true`): refused rather than silently ignored, since each
 *   changes what the write means (this is stricter than Elasticsearch, which would honour them);
 * - an `update` document line that is not JSON, not an object, has an unknown field ("[UpdateRequest]
 *   unknown field [x]") or a `doc`/`upsert` that is not an object (`x_content_parse_exception`):
 *   Elasticsearch parses update bodies while reading the request;
 * - `BulkRequest.validate` failures, all collected into one `action_request_validation_exception`
 *   ("Validation Failed: 1: id is missing;2: ..."): no index (neither `_index` nor a URL index: "index
 *   is missing"), a `delete`/`update` without `_id` or with `""` ("id is missing"), an update without
 *   `doc` ("script or doc is missing"), `doc_as_upsert` without `doc`, an `_id` over 512 UTF-8 bytes
 *   ("id [..] is too long, must be no longer than 512 bytes but was: N"), no action at all ("no
 *   requests added");
 * - an action line whose document line is missing at the end of the body. Elasticsearch silently drops
 *   such an action; this parser refuses the request instead, so nothing is lost without a word;
 * - the body over `maxBytes` or more than `maxItems` actions (HTTP 413; limits of this project).
 *
 * **Only the item** (the others run; the item's result carries `status` and `error`):
 * - an invalid index name (`invalid_index_name_exception`, "Invalid index name [Foo], must be
 *   lowercase");
 * - an `index`/`create` with `_id: ""` (`illegal_argument_exception`, "if _id is specified it must not
 *   be empty", from `IndexRouting`);
 * - an `index`/`create` document that is not JSON, not an object, or empty
 *   (`document_parsing_exception`, "failed to parse: ...": Elasticsearch parses documents on the shard).
 *
 * Every reason names the bulk line (1-based, counting every line, blank ones included) and, where the
 * value is not already in Elasticsearch's text, the received value. Metadata values that are numbers or
 * booleans become their text (`"_id": 1` is id `"1"`), as Jackson's `text()` gives them; a JSON number's
 * original spelling (`1.0`) is not kept. A `routing` of `""` means no routing (Elasticsearch
 * `IndexRequest.routing("")`). `op_type` must be `index` or `create` (any case), else the request is
 * refused (`[op_type] must be 'create' or 'index', found: [upsert]`, the words of Elasticsearch's
 * `IndexRequest.opType(String)`, which its single-document API applies; its bulk parser itself only
 * asks `"create".equals(opType)` and takes any other value as `index`, which would silently turn a
 * mistyped `upsert` into an overwrite). `op_type: "create"` on `index` makes it a `create`; on the other
 * actions it is checked and ignored. Duplicate keys in one JSON object keep the last value
 * (Elasticsearch refuses them): a known difference.
 *
 * Ids of documents without `_id` are not made here: the planner (`bulk-planner.ts`) makes them, because
 * in bulk-routing `id` mode the id itself chooses the shard.
 */
import { isPlainObject } from '../common/is-plain-object.js';
import { jsonDepth } from '../common/json-depth.js';
import { formatReceived, InvalidArgumentError } from '../errors.js';
import { indexNameProblem, invalidIndexNameReason } from '../common/index-name.js';

/** The four bulk actions. */
export type BulkAction = 'index' | 'create' | 'update' | 'delete';

/** An Elasticsearch-shaped error: `type` and `reason` as in a response body, and the HTTP status. */
export interface BulkError {
  readonly type: string;
  readonly reason: string;
  readonly status: number;
}

/** A failure of the whole request; `line` is the bulk line at fault, when there is one. */
export interface BulkRequestError extends BulkError {
  readonly line: number | undefined;
}

interface BulkItemBase {
  /** 0-based place in the request: the place of this item's result in the response's `items`. */
  readonly position: number;
  /** 1-based line of the action line. */
  readonly line: number;
  /** `_index`, else the URL's index. */
  readonly index: string;
  /** The user's `_id`; undefined when the request gave none (the planner makes one). */
  readonly id: string | undefined;
  /** The user's `routing` (or the URL's `?routing=`); undefined for none or `""`. */
  readonly routing: string | undefined;
  /** Set when this item fails on its own; the item then must not be executed. */
  readonly error: BulkError | undefined;
  /**
   * `if_seq_no` / `if_primary_term`: write only when the stored document has this sequence number
   * and primary term (optimistic concurrency control), else 409 `version_conflict_engine_exception`.
   */
  readonly ifSeqNo?: number | undefined;
  readonly ifPrimaryTerm?: number | undefined;
}

/** `index` or `create`. */
export interface BulkIndexItem extends BulkItemBase {
  readonly action: 'index' | 'create';
  /** 1-based line of the document. */
  readonly sourceLine: number;
  /** The document; undefined when `error` is set. */
  readonly source: Readonly<Record<string, unknown>> | undefined;
}

/** `update` with a partial document (`{"doc": {...}}`). */
export interface BulkUpdateItem extends BulkItemBase {
  readonly action: 'update';
  readonly sourceLine: number;
  /** The partial document merged into the stored one. */
  readonly doc: Readonly<Record<string, unknown>> | undefined;
  /** The document to index when none exists (`upsert`). */
  readonly upsert: Readonly<Record<string, unknown>> | undefined;
  /** Index `doc` itself when no document exists. @default false */
  readonly docAsUpsert: boolean;
  /** Skip the write when `doc` changes nothing. @default true (Elasticsearch's default) */
  readonly detectNoop: boolean;
  /** `retry_on_conflict`. @default 0 */
  readonly retryOnConflict: number;
}

export interface BulkDeleteItem extends BulkItemBase {
  readonly action: 'delete';
}

export type BulkItem = BulkIndexItem | BulkUpdateItem | BulkDeleteItem;

/** The outcome of parsing: items to run (some failed on their own), or a failure of the whole request. */
export type BulkParseResult =
  | { readonly ok: true; readonly items: readonly BulkItem[]; readonly failedItems: number }
  | { readonly ok: false; readonly error: BulkRequestError };

/** Limits and switches of a parser; checked once, in the constructor. */
export interface BulkRequestParserOptions {
  /**
   * Largest body in bytes (UTF-8). Elasticsearch's `http.max_content_length` is 100 MiB.
   * @default 104857600
   */
  readonly maxBytes?: number | undefined;
  /** Most actions in one request. @default 100000 */
  readonly maxItems?: number | undefined;
  /**
   * Accept `_index` in action lines (`rest.action.multi.allow_explicit_index`). When false, an `_index`
   * fails the request: "explicit index in bulk is not allowed".
   * @default true
   */
  readonly allowExplicitIndex?: boolean | undefined;
}

/** Per-request defaults, from the URL. */
export interface BulkRequestDefaults {
  /** The `{index}` of `POST /{index}/_bulk`. */
  readonly index?: string | undefined;
  /** `?routing=`. */
  readonly routing?: string | undefined;
}

/** Longest `_id` in UTF-8 bytes (Elasticsearch `IndexRequest.MAX_DOCUMENT_ID_LENGTH_IN_BYTES`). */
export const MAX_DOCUMENT_ID_BYTES = 512;

const ACTIONS = new Set<string>(['create', 'delete', 'index', 'update']);
/** Metadata keys Elasticsearch accepts that this project does not implement. */
const UNSUPPORTED_METADATA = new Set([
  'version',
  'version_type',
  'pipeline',
  '_source',
  'dynamic_templates',
  'require_data_stream',
  'list_executed_pipelines',
]);
const UPDATE_UNSUPPORTED = new Set([
  'script',
  'scripted_upsert',
  '_source',
  'if_seq_no',
  'if_primary_term',
  'fields',
]);

/** Jackson's token name for a parsed JSON value, as Elasticsearch prints it. */
function tokenOf(value: unknown): string {
  if (value === null) return 'VALUE_NULL';
  if (Array.isArray(value)) return 'START_ARRAY';
  switch (typeof value) {
    case 'string':
      return 'VALUE_STRING';
    case 'number':
      return 'VALUE_NUMBER';
    case 'boolean':
      return 'VALUE_BOOLEAN';
    default:
      return 'START_OBJECT';
  }
}

/** A bounded excerpt of a line for messages. */
function excerpt(text: string): string {
  return formatReceived(text.length > 200 ? `${text.slice(0, 197)}...` : text);
}

/** Thrown inside the parser for a request-level failure; turned into `{ok: false}` by `parse`. */
class RequestFailure extends Error {
  constructor(
    readonly type: string,
    readonly reason: string,
    readonly line: number | undefined,
    readonly status = 400,
  ) {
    super(reason);
  }
}

function malformed(line: number, what: string): RequestFailure {
  return new RequestFailure(
    'illegal_argument_exception',
    `Malformed action/metadata line [${line}], ${what}`,
    line,
  );
}

/** The text of a simple metadata value (Jackson `text()`). */
function textOf(value: string | number | boolean): string {
  return typeof value === 'string' ? value : String(value);
}

/**
 * A bulk-body parser with fixed limits. One instance serves many requests; `parse` keeps no state
 * between calls.
 */
export class BulkRequestParser {
  readonly maxBytes: number;
  readonly maxItems: number;
  readonly allowExplicitIndex: boolean;

  /** @throws InvalidArgumentError for a limit that is not a positive integer. */
  constructor(options: BulkRequestParserOptions = {}) {
    const maxBytes = options.maxBytes ?? 100 * 1024 * 1024;
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) {
      throw new InvalidArgumentError('maxBytes', 'must be a positive integer (bytes)', maxBytes);
    }
    const maxItems = options.maxItems ?? 100_000;
    if (!Number.isSafeInteger(maxItems) || maxItems < 1) {
      throw new InvalidArgumentError('maxItems', 'must be a positive integer', maxItems);
    }
    this.maxBytes = maxBytes;
    this.maxItems = maxItems;
    this.allowExplicitIndex = options.allowExplicitIndex ?? true;
    Object.freeze(this);
  }

  /**
   * Parses one bulk body.
   *
   * @param body the raw body: a string, or UTF-8 bytes (invalid UTF-8 fails the request).
   * @param defaults the URL's index and routing.
   * @returns `{ok: true, items, failedItems}` (items in request order, each with its lines and, when it
   *   failed alone, `error`), or `{ok: false, error}` for a failure of the whole request (see the module
   *   doc). Never throws for a bad body.
   */
  parse(body: string | Uint8Array, defaults: BulkRequestDefaults = {}): BulkParseResult {
    try {
      return this.#parse(body, defaults);
    } catch (error) {
      if (error instanceof RequestFailure) {
        return {
          ok: false,
          error: { type: error.type, reason: error.reason, status: error.status, line: error.line },
        };
      }
      throw error;
    }
  }

  #parse(body: string | Uint8Array, defaults: BulkRequestDefaults): BulkParseResult {
    const bytes = typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.byteLength;
    if (bytes > this.maxBytes) {
      throw new RequestFailure(
        'illegal_argument_exception',
        `the bulk request is ${bytes} bytes, above the limit of ${this.maxBytes} bytes (maxBytes)`,
        undefined,
        413,
      );
    }
    let text: string;
    if (typeof body === 'string') {
      text = body;
    } else {
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(body);
      } catch {
        throw new RequestFailure(
          'x_content_parse_exception',
          'the bulk request is not valid UTF-8',
          undefined,
        );
      }
    }
    const defaultRouting = defaults.routing === '' ? undefined : defaults.routing;
    const items: BulkItem[] = [];
    const validation: string[] = [];
    let failedItems = 0;
    let line = 0;
    let from = 0;
    const nextLine = (): string | undefined => {
      const end = text.indexOf('\n', from);
      if (end === -1) {
        if (from !== text.length) {
          throw new RequestFailure(
            'illegal_argument_exception',
            `The bulk request must be terminated by a newline [\\n]; received ${excerpt(text.slice(from))} after the last newline`,
            line + 1,
          );
        }
        return undefined;
      }
      const raw = text.slice(from, end > from && text.charCodeAt(end - 1) === 13 ? end - 1 : end);
      from = end + 1;
      line++;
      return raw;
    };

    for (;;) {
      const actionText = nextLine();
      if (actionText === undefined) break;
      if (actionText.trim() === '') continue; // Elasticsearch skips a line without tokens
      const actionLine = line;
      const meta = this.#parseActionLine(actionText, actionLine);
      if (items.length >= this.maxItems) {
        throw new RequestFailure(
          'illegal_argument_exception',
          `the bulk request holds more than ${this.maxItems} actions (maxItems)`,
          actionLine,
          413,
        );
      }
      const index = meta.index ?? defaults.index;
      const routing = meta.routing ?? defaultRouting;
      const position = items.length;
      const where = `line ${actionLine}`;
      if (index === undefined) validation.push(`index is missing (${where})`);
      checkCompareAndSet(meta, where, validation);
      const indexError = index === undefined ? undefined : indexNameError(index, actionLine);

      if (meta.action === 'delete') {
        if (meta.id === undefined || meta.id === '')
          validation.push(`id is missing (${where}, action [delete])`);
        checkIdLength(meta.id, where, validation);
        const error = indexError;
        if (error !== undefined) failedItems++;
        items.push({
          action: 'delete',
          position,
          line: actionLine,
          index: index ?? '',
          id: meta.id,
          routing,
          error,
          ...compareAndSet(meta),
        });
        continue;
      }

      const sourceText = nextLine();
      if (sourceText === undefined) {
        throw new RequestFailure(
          'illegal_argument_exception',
          `Malformed action/metadata line [${actionLine}], the [${meta.action}] action has no document line after it`,
          actionLine,
        );
      }
      const sourceLine = line;

      if (meta.action === 'update') {
        if (meta.id === undefined || meta.id === '')
          validation.push(`id is missing (${where}, action [update])`);
        checkIdLength(meta.id, where, validation);
        const update = parseUpdateBody(sourceText, sourceLine);
        if (update.doc === undefined) {
          validation.push(
            update.docAsUpsert
              ? `doc must be specified if doc_as_upsert is enabled (line ${sourceLine})`
              : `script or doc is missing (line ${sourceLine})`,
          );
        }
        // The shard indexes the merged document: a metadata field in `doc` or `upsert` fails the item.
        const error =
          indexError ??
          (update.doc !== undefined ? metadataFieldError(update.doc, sourceLine) : undefined) ??
          (update.upsert !== undefined ? metadataFieldError(update.upsert, sourceLine) : undefined);
        if (error !== undefined) failedItems++;
        items.push({
          action: 'update',
          position,
          line: actionLine,
          sourceLine,
          index: index ?? '',
          id: meta.id,
          routing,
          error,
          doc: update.doc,
          upsert: update.upsert,
          docAsUpsert: update.docAsUpsert,
          detectNoop: update.detectNoop,
          retryOnConflict: meta.retryOnConflict,
          ...compareAndSet(meta),
        });
        continue;
      }

      // index / create
      checkIdLength(meta.id, where, validation);
      let error = indexError;
      if (error === undefined && meta.id === '') {
        error = {
          type: 'illegal_argument_exception',
          reason: `if _id is specified it must not be empty (bulk line ${actionLine}; received "")`,
          status: 400,
        };
      }
      let source: Record<string, unknown> | undefined;
      if (error === undefined) {
        const parsed = parseDocument(sourceText, sourceLine);
        if ('error' in parsed) error = parsed.error;
        else source = parsed.source;
      }
      if (error !== undefined) failedItems++;
      items.push({
        action: meta.action,
        position,
        line: actionLine,
        sourceLine,
        index: index ?? '',
        id: meta.id,
        routing,
        error,
        source,
        ...compareAndSet(meta),
      });
    }

    if (items.length === 0) validation.push('no requests added');
    if (validation.length > 0) {
      throw new RequestFailure(
        'action_request_validation_exception',
        `Validation Failed: ${validation.map((v, i) => `${i + 1}: ${v};`).join('')}`,
        undefined,
      );
    }
    return { ok: true, items, failedItems };
  }

  /** Reads one action line: the action and its metadata. */
  #parseActionLine(text: string, line: number): ActionMetadata {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new RequestFailure(
        'x_content_parse_exception',
        `Malformed action/metadata line [${line}], not valid JSON (${(error as Error).message}); received ${excerpt(text)}`,
        line,
      );
    }
    if (!isPlainObject(parsed)) {
      throw malformed(
        line,
        `expected START_OBJECT but found [${tokenOf(parsed)}]; received ${excerpt(text)}`,
      );
    }
    const keys = Object.keys(parsed);
    const action = keys[0];
    if (action === undefined) throw malformed(line, 'expected FIELD_NAME but found [END_OBJECT]');
    if (!ACTIONS.has(action)) {
      throw malformed(line, `expected field [create], [delete], [index] or [update] but found [${action}]`);
    }
    const body = parsed[action];
    if (!isPlainObject(body)) {
      throw malformed(
        line,
        `expected START_OBJECT or END_OBJECT but found [${tokenOf(body)}]; received ${formatReceived(body)}`,
      );
    }
    const meta: {
      action: BulkAction;
      index: string | undefined;
      id: string | undefined;
      routing: string | undefined;
      opType: string | undefined;
      retryOnConflict: number;
      ifSeqNo: number | undefined;
      ifPrimaryTerm: number | undefined;
    } = {
      action: action as BulkAction,
      index: undefined,
      id: undefined,
      routing: undefined,
      opType: undefined,
      retryOnConflict: 0,
      ifSeqNo: undefined,
      ifPrimaryTerm: undefined,
    };
    for (const [key, value] of Object.entries(body)) {
      if (value === null) continue; // Elasticsearch skips VALUE_NULL whatever the key
      if (typeof value === 'object') {
        throw malformed(
          line,
          `expected a simple value for field [${key}] but found [${tokenOf(value)}]; received ${formatReceived(value)}`,
        );
      }
      const valueText = textOf(value as string | number | boolean);
      switch (key) {
        case '_index':
          if (!this.allowExplicitIndex) {
            throw new RequestFailure(
              'illegal_argument_exception',
              `explicit index in bulk is not allowed (line ${line})`,
              line,
            );
          }
          meta.index = valueText;
          break;
        case '_id':
          meta.id = valueText;
          break;
        case 'routing':
          meta.routing = valueText === '' ? undefined : valueText;
          break;
        case 'op_type': {
          const opType = valueText.toLowerCase();
          if (opType !== 'index' && opType !== 'create') {
            throw new RequestFailure(
              'illegal_argument_exception',
              `Action/metadata line [${line}]: [op_type] must be 'create' or 'index', found: [${valueText}]; received ${formatReceived(value)}`,
              line,
            );
          }
          meta.opType = opType;
          break;
        }
        case 'retry_on_conflict': {
          const n = /^[+-]?\d+$/.test(valueText) ? Number(valueText) : Number.NaN;
          if (!Number.isSafeInteger(n) || n < 0) {
            throw new RequestFailure(
              'illegal_argument_exception',
              `Action/metadata line [${line}]: [retry_on_conflict] must be an integer >= 0; received ${formatReceived(value)}`,
              line,
            );
          }
          meta.retryOnConflict = n;
          break;
        }
        case 'if_seq_no':
        case 'if_primary_term': {
          const n = /^\d{1,15}$/.test(valueText) ? Number(valueText) : Number.NaN;
          if (!Number.isSafeInteger(n)) {
            throw new RequestFailure(
              'illegal_argument_exception',
              `Action/metadata line [${line}]: [${key}] must be an integer >= 0; received ${formatReceived(value)}`,
              line,
            );
          }
          if (key === 'if_seq_no') meta.ifSeqNo = n;
          else meta.ifPrimaryTerm = n;
          break;
        }
        case 'require_alias':
          if (value === false || valueText === 'false') break;
          throw unsupported(line, key, value);
        default:
          if (UNSUPPORTED_METADATA.has(key)) throw unsupported(line, key, value);
          throw new RequestFailure(
            'illegal_argument_exception',
            `Action/metadata line [${line}] contains an unknown parameter [${key}]`,
            line,
          );
      }
    }
    if (keys.length > 1) throw malformed(line, 'expected END_OBJECT but found [FIELD_NAME]');
    if (meta.action === 'index' && meta.opType === 'create') meta.action = 'create';
    return meta;
  }
}

interface ActionMetadata {
  readonly action: BulkAction;
  readonly index: string | undefined;
  readonly id: string | undefined;
  readonly routing: string | undefined;
  readonly retryOnConflict: number;
  readonly ifSeqNo: number | undefined;
  readonly ifPrimaryTerm: number | undefined;
}

/**
 * `if_seq_no` and `if_primary_term` go together (Elasticsearch `IndexRequest.validate`), and a
 * `create` cannot compare and set.
 */
function checkCompareAndSet(meta: ActionMetadata, where: string, validation: string[]): void {
  const { ifSeqNo, ifPrimaryTerm } = meta;
  if (ifSeqNo !== undefined && (ifPrimaryTerm === undefined || ifPrimaryTerm === 0)) {
    validation.push(`ifSeqNo is set, but primary term is [${ifPrimaryTerm ?? 0}] (${where})`);
  } else if (ifSeqNo === undefined && ifPrimaryTerm !== undefined && ifPrimaryTerm !== 0) {
    validation.push(`ifSeqNo is unassigned, but primary term is [${ifPrimaryTerm}] (${where})`);
  } else if (ifSeqNo !== undefined && meta.action === 'create') {
    validation.push(`create operations do not support compare and set. use index instead (${where})`);
  }
}

/** The compare-and-set fields an item carries (none when the request gave none). */
function compareAndSet(meta: ActionMetadata): { ifSeqNo?: number; ifPrimaryTerm?: number } {
  return meta.ifSeqNo === undefined ? {} : { ifSeqNo: meta.ifSeqNo, ifPrimaryTerm: meta.ifPrimaryTerm ?? 0 };
}

function unsupported(line: number, key: string, value: unknown): RequestFailure {
  return new RequestFailure(
    'illegal_argument_exception',
    `Action/metadata line [${line}] contains a parameter [${key}] that this server does not support; received ${formatReceived(value)}`,
    line,
  );
}

function checkIdLength(id: string | undefined, where: string, validation: string[]): void {
  if (id === undefined) return;
  const bytes = Buffer.byteLength(id, 'utf8');
  if (bytes > MAX_DOCUMENT_ID_BYTES) {
    validation.push(
      `id [${id.length > 64 ? `${id.slice(0, 61)}...` : id}] is too long, must be no longer than ${MAX_DOCUMENT_ID_BYTES} bytes but was: ${bytes} (${where})`,
    );
  }
}

function indexNameError(index: string, line: number): BulkError | undefined {
  const problem = indexNameProblem(index);
  if (problem === undefined) return undefined;
  return {
    type: 'invalid_index_name_exception',
    reason: `${invalidIndexNameReason(index, problem)} (bulk line ${line})`,
    status: 400,
  };
}

/**
 * Deepest object nesting a document may have: Elasticsearch's `index.mapping.depth.limit` default.
 * Deeper documents are refused at the bulk: code that walks a document (indexing, merging an update)
 * must not meet one nested thousands deep.
 */
export const MAX_DOCUMENT_DEPTH = 20;

/**
 * Elasticsearch's metadata fields (its `MetadataFieldMapper`s, 8.x) that a document's source may not
 * hold at its top level: the shard refuses such a document (`document_parsing_exception`, 400) and
 * the caller gives `_id`, `_routing` and the like as request parameters. `_doc_count` is left out: a
 * document may set it (pre-aggregated data).
 */
const METADATA_FIELDS: ReadonlySet<string> = new Set([
  '_id',
  '_index',
  '_routing',
  '_source',
  '_seq_no',
  '_primary_term',
  '_version',
  '_ignored',
  '_ignored_source',
  '_field_names',
  '_nested_path',
  '_tier',
  '_data_stream_timestamp',
  '_tsid',
  '_routing_hash',
  '_feature',
]);

/** The item error for a document whose top level holds a metadata field, or undefined. */
function metadataFieldError(source: Record<string, unknown>, line: number): BulkError | undefined {
  for (const key of Object.keys(source)) {
    if (METADATA_FIELDS.has(key)) {
      return {
        type: 'document_parsing_exception',
        reason:
          `failed to parse: field [${key}] is a metadata field and cannot be added inside a document; ` +
          `give it as a request parameter (bulk line ${line}; received ${formatReceived(source[key])})`,
        status: 400,
      };
    }
  }
  return undefined;
}

/** Elasticsearch's message for a document over the depth limit. */
function depthReason(line: number): string {
  return `failed to parse: Limit of mapping depth [${MAX_DOCUMENT_DEPTH}] has been exceeded (bulk line ${line})`;
}

/** An `index`/`create` document: an object, or an item error as the shard would report it. */
function parseDocument(
  text: string,
  line: number,
): { readonly source: Record<string, unknown> } | { readonly error: BulkError } {
  if (text.trim() === '') {
    return {
      error: {
        type: 'document_parsing_exception',
        reason: `failed to parse, document is empty (bulk line ${line})`,
        status: 400,
      },
    };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return {
      error: {
        type: 'document_parsing_exception',
        reason: `failed to parse: ${(error as Error).message} (bulk line ${line}; received ${excerpt(text)})`,
        status: 400,
      },
    };
  }
  if (!isPlainObject(parsed)) {
    return {
      error: {
        type: 'document_parsing_exception',
        reason: `failed to parse: Malformed content, must start with an object (bulk line ${line}; received ${excerpt(text)})`,
        status: 400,
      },
    };
  }
  if (jsonDepth(parsed, MAX_DOCUMENT_DEPTH) > MAX_DOCUMENT_DEPTH) {
    return { error: { type: 'document_parsing_exception', reason: depthReason(line), status: 400 } };
  }
  const metadata = metadataFieldError(parsed, line);
  if (metadata !== undefined) return { error: metadata };
  return { source: parsed };
}

interface UpdateBody {
  readonly doc: Record<string, unknown> | undefined;
  readonly upsert: Record<string, unknown> | undefined;
  readonly docAsUpsert: boolean;
  readonly detectNoop: boolean;
}

/** An `update` document line (`UpdateRequest.fromXContent`): errors fail the whole request. */
function parseUpdateBody(text: string, line: number): UpdateBody {
  if (text.trim() === '') return { doc: undefined, upsert: undefined, docAsUpsert: false, detectNoop: true };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new RequestFailure(
      'x_content_parse_exception',
      `[UpdateRequest] failed to parse line [${line}]: not valid JSON (${(error as Error).message}); received ${excerpt(text)}`,
      line,
    );
  }
  const fail = (what: string, value: unknown): RequestFailure =>
    new RequestFailure(
      'x_content_parse_exception',
      `[UpdateRequest] ${what} (line ${line}); received ${formatReceived(value)}`,
      line,
    );
  if (!isPlainObject(parsed)) throw fail(`Expected START_OBJECT but was: ${tokenOf(parsed)}`, parsed);
  let doc: Record<string, unknown> | undefined;
  let upsert: Record<string, unknown> | undefined;
  let docAsUpsert = false;
  let detectNoop = true;
  for (const [key, value] of Object.entries(parsed)) {
    switch (key) {
      case 'doc':
        if (!isPlainObject(value)) throw fail(`doc doesn't support values of type: ${tokenOf(value)}`, value);
        doc = value;
        break;
      case 'upsert':
        if (!isPlainObject(value))
          throw fail(`upsert doesn't support values of type: ${tokenOf(value)}`, value);
        upsert = value;
        break;
      case 'doc_as_upsert':
      case 'detect_noop': {
        const flag =
          value === true || value === 'true'
            ? true
            : value === false || value === 'false'
              ? false
              : undefined;
        if (flag === undefined)
          throw fail(`failed to parse field [${key}]: only [true] or [false] are allowed`, value);
        if (key === 'doc_as_upsert') docAsUpsert = flag;
        else detectNoop = flag;
        break;
      }
      default:
        if (UPDATE_UNSUPPORTED.has(key)) {
          throw new RequestFailure(
            'illegal_argument_exception',
            `[UpdateRequest] field [${key}] is not supported by this server (line ${line}); received ${formatReceived(value)}`,
            line,
          );
        }
        throw fail(`unknown field [${key}]`, value);
    }
  }
  for (const part of [doc, upsert]) {
    if (part !== undefined && jsonDepth(part, MAX_DOCUMENT_DEPTH) > MAX_DOCUMENT_DEPTH)
      throw new RequestFailure('document_parsing_exception', depthReason(line), line);
  }
  return { doc, upsert, docAsUpsert, detectNoop };
}

/**
 * The response entry of a failed item, as Elasticsearch's `BulkItemResponse` prints it:
 * `{"<action>": {"_index": ..., "_id": ... | null, "status": N, "error": {"type": ..., "reason": ...}}}`.
 *
 * @throws InvalidArgumentError (path `item.error`) for an item without an error.
 */
export function failedItemResponse(item: BulkItem): Record<string, unknown> {
  if (item.error === undefined) throw new InvalidArgumentError('item.error', 'must be set', item.error);
  return {
    [item.action]: {
      _index: item.index,
      _id: item.id ?? null,
      status: item.error.status,
      error: { type: item.error.type, reason: item.error.reason },
    },
  };
}
