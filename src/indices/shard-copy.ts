/**
 * One shard copy of a writable index, on the main thread of the node that holds it: its durable
 * operation log (`ShardLog`) and the live documents (id -> source, routing, version, seqNo) that
 * real-time GET, `create` conflicts, `update` merges and `_cat/shards` read. Searches do not read this
 * map: pool workers keep their own MiniSearch copy, built from the same log (`engine/writable-shards.ts`).
 *
 * The operation semantics follow Elasticsearch's `InternalEngine` and `TransportShardBulkAction`:
 * - `index`: creates (201, `created`, version 1) or replaces (200, `updated`, version + 1);
 * - `create`: 409 `version_conflict_engine_exception` when the id exists, else as `index`;
 * - `update`: deep-merges `doc` into the stored source (`XContentHelper.update`: objects merge key by
 *   key, anything else is replaced); `noop` (200, nothing logged) when nothing changes and `detect_noop`
 *   is on; a missing document is created from `upsert`, or from `doc` with `doc_as_upsert`, else 404
 *   `document_missing_exception`;
 * - `delete`: 200 `deleted` (version + 1), or 404 `not_found` for a missing id (still logged, as
 *   Elasticsearch gives it a sequence number).
 * - `if_seq_no` / `if_primary_term` on any of them: 409 `version_conflict_engine_exception` unless the
 *   stored document has that sequence number and primary term (Elasticsearch's messages).
 * An update is logged with its resulting document, so replay and replicas never merge again.
 * Differences: no delete tombstones (a document indexed again after a delete starts at version 1), and
 * `_primary_term` is always 1 (no primary failover).
 *
 * Writes are decided synchronously, in call order (the main thread is the single writer), and the
 * live map changes at once; the batch is then appended to the log as one record, and the caller
 * acknowledges only when that append resolves (durable in `request` mode). If the append fails, the
 * copy is failed: every later write is refused until the node restarts and recovers from the log.
 */
import { isPlainObject } from '../common/is-plain-object.js';
import type { ShardItemResult, ShardWriteItem } from '../bulk/shard-write-item.js';
import { EngineFailureError } from '../errors.js';
import {
  type AppendResult,
  type LoggedOperation,
  ShardLog,
  type ShardLogDurability,
  type ShardOperation,
} from './shard-log.js';

/** A live document. */
export interface StoredDocument {
  readonly source: Readonly<Record<string, unknown>>;
  readonly routing: string | undefined;
  readonly version: number;
  readonly seqNo: number;
}

/** Options of `ShardCopy.open`. */
export interface ShardCopyOptions {
  readonly index: string;
  readonly shard: number;
  /** The shard-log file. */
  readonly logPath: string;
  /** @default 'request' */
  readonly durability?: ShardLogDurability | undefined;
  /** fsync period in `async` mode, ms. @default 5000 */
  readonly syncIntervalMs?: number | undefined;
}

/**
 * `XContentHelper.update`: merges `changes` into a copy of `source`, objects key by key.
 * @returns the merged document and whether anything differs from `source`.
 */
export function mergeDocument(
  source: Readonly<Record<string, unknown>>,
  changes: Readonly<Record<string, unknown>>,
): { merged: Record<string, unknown>; changed: boolean } {
  const merged: Record<string, unknown> = { ...source };
  let changed = false;
  for (const [key, value] of Object.entries(changes)) {
    const old = merged[key];
    if (isPlainObject(old) && isPlainObject(value)) {
      const inner = mergeDocument(old, value);
      merged[key] = inner.merged;
      changed ||= inner.changed;
    } else {
      if (!(key in merged) || JSON.stringify(old) !== JSON.stringify(value)) changed = true;
      merged[key] = value;
    }
  }
  return { merged, changed };
}

/** A shard copy (see module doc). Build with `ShardCopy.open`. */
export class ShardCopy {
  readonly index: string;
  readonly shard: number;
  readonly log: ShardLog;
  readonly #docs = new Map<string, StoredDocument>();
  #failure: unknown;

  private constructor(index: string, shard: number, log: ShardLog) {
    this.index = index;
    this.shard = shard;
    this.log = log;
  }

  /**
   * Opens (or creates) the copy's log and replays it into the live documents.
   * @returns the copy and how many operations were replayed and torn-tail bytes cut.
   * @throws the errors of `ShardLog.open` (a corrupted log refuses to open).
   */
  static async open(
    options: ShardCopyOptions,
  ): Promise<{ copy: ShardCopy; replayed: number; truncatedBytes: number }> {
    const opened = await ShardLog.open({
      path: options.logPath,
      durability: options.durability,
      syncIntervalMs: options.syncIntervalMs,
    });
    const copy = new ShardCopy(options.index, options.shard, opened.log);
    for (const op of opened.operations) copy.#apply(op);
    return { copy, replayed: opened.operations.length, truncatedBytes: opened.truncatedBytes };
  }

  /** Live documents. */
  get docCount(): number {
    return this.#docs.size;
  }

  /** Whether a failed append has failed the copy. */
  get failed(): boolean {
    return this.#failure !== undefined;
  }

  /** The live document, or undefined. */
  get(id: string): StoredDocument | undefined {
    return this.#docs.get(id);
  }

  /** Every live document id (for tests and checks). */
  ids(): IterableIterator<string> {
    return this.#docs.keys();
  }

  /**
   * Primary write of a batch: decides every item now (in order), changes the live documents, and
   * appends the resulting operations as one log record.
   *
   * @returns per-item results (in `items` order), the logged operations with their sequence numbers,
   *   and `durable`, which resolves when the record is durable (or written, in `async` mode) and rejects
   *   when the log fails (the copy is then failed).
   * @throws EngineFailureError when the copy is already failed.
   */
  write(items: readonly ShardWriteItem[]): {
    results: ShardItemResult[];
    operations: LoggedOperation[];
    durable: Promise<AppendResult | undefined>;
  } {
    this.#checkUsable();
    const results: ShardItemResult[] = [];
    const operations: LoggedOperation[] = [];
    let seqNo = this.log.nextSeqNo;
    for (const item of items) {
      const outcome = this.#decide(item);
      if ('error' in outcome) {
        results.push({ position: item.position, status: outcome.status, error: outcome.error });
        continue;
      }
      if (outcome.op === undefined) {
        const current = this.#docs.get(item.id);
        results.push({
          position: item.position,
          status: 200,
          result: 'noop',
          version: current?.version ?? 1,
          seqNo: current?.seqNo ?? -1,
        });
        continue;
      }
      const logged: LoggedOperation = { ...outcome.op, seqNo: seqNo++ };
      const version = this.#apply(logged);
      operations.push(logged);
      results.push({
        position: item.position,
        status: outcome.status,
        result: outcome.result,
        version,
        seqNo: logged.seqNo,
      });
    }
    const durable =
      operations.length === 0
        ? Promise.resolve(undefined)
        : this.log.append(operations.map(({ seqNo: _seqNo, ...op }) => op)).catch((error: unknown) => {
            this.#failure ??= error;
            throw error;
          });
    return { results, operations, durable };
  }

  /**
   * Replica write: the primary's operations, with its sequence numbers, appended in order.
   * Operations this copy already has (a retried batch) are skipped. An empty batch with
   * `primaryNextSeqNo` asks whether this copy is behind the primary (a resync after the primary's
   * node restarted).
   *
   * @returns `{ok: true}` once durable; `{ok: false, localCheckpoint}` when `firstSeqNo` is beyond this
   *   copy's next sequence number (a gap: the primary must resend from `localCheckpoint + 1`).
   * @throws EngineFailureError when the copy is failed; the log's error when the append fails.
   */
  async applyReplica(
    operations: readonly LoggedOperation[],
    primaryNextSeqNo?: number,
  ): Promise<{ ok: true } | { ok: false; nextSeqNo: number }> {
    this.#checkUsable();
    const next = this.log.nextSeqNo;
    const first = operations[0]?.seqNo ?? next;
    if (first > next) return { ok: false, nextSeqNo: next };
    if (operations.length === 0 && primaryNextSeqNo !== undefined && primaryNextSeqNo > next) {
      return { ok: false, nextSeqNo: next };
    }
    const fresh = operations.filter((op) => op.seqNo >= next);
    if (fresh.length === 0) return { ok: true };
    for (let i = 0; i < fresh.length; i++) {
      if (fresh[i]!.seqNo !== next + i) {
        throw new EngineFailureError(
          `replica [${this.index}][${this.shard}] got sequence number ${fresh[i]!.seqNo} where ${next + i} was expected`,
        );
      }
    }
    for (const op of fresh) this.#apply(op);
    try {
      await this.log.append(fresh.map(({ seqNo: _seqNo, ...op }) => op));
    } catch (error) {
      this.#failure ??= error;
      throw error;
    }
    return { ok: true };
  }

  /** Waits for pending appends, fsyncs and closes the log. */
  close(): Promise<void> {
    return this.log.close();
  }

  #checkUsable(): void {
    if (this.#failure !== undefined) {
      throw new EngineFailureError(
        `shard [${this.index}][${this.shard}] is failed: its log could not be written (${String((this.#failure as Error)?.message ?? this.#failure)}); restart the node to recover it`,
      );
    }
  }

  /** Applies a logged operation to the live documents; returns the document's new version. */
  #apply(op: LoggedOperation): number {
    const current = this.#docs.get(op.id);
    if (op.op === 'delete') {
      this.#docs.delete(op.id);
      return (current?.version ?? 0) + 1;
    }
    const version = (current?.version ?? 0) + 1;
    this.#docs.set(op.id, { source: op.source ?? {}, routing: op.routing, version, seqNo: op.seqNo });
    return version;
  }

  #decide(
    item: ShardWriteItem,
  ):
    | { op: ShardOperation | undefined; status: number; result: NonNullable<ShardItemResult['result']> }
    | { status: number; error: { type: string; reason: string } } {
    const current = this.#docs.get(item.id);
    const routing = item.routing;
    if (item.ifSeqNo !== undefined) {
      const required = `required seqNo [${item.ifSeqNo}], primary term [${item.ifPrimaryTerm ?? 0}]`;
      if (current === undefined) {
        return {
          status: 409,
          error: {
            type: 'version_conflict_engine_exception',
            reason: `[${item.id}]: version conflict, ${required} but no document was found`,
          },
        };
      }
      if (current.seqNo !== item.ifSeqNo || item.ifPrimaryTerm !== 1) {
        return {
          status: 409,
          error: {
            type: 'version_conflict_engine_exception',
            reason: `[${item.id}]: version conflict, ${required}. current document has seqNo [${current.seqNo}] and primary term [1]`,
          },
        };
      }
    }
    switch (item.action) {
      case 'index':
        return {
          op: { op: 'index', id: item.id, routing, source: item.source ?? {} },
          status: current === undefined ? 201 : 200,
          result: current === undefined ? 'created' : 'updated',
        };
      case 'create':
        if (current !== undefined) {
          return {
            status: 409,
            error: {
              type: 'version_conflict_engine_exception',
              reason: `[${item.id}]: version conflict, document already exists (current version [${current.version}])`,
            },
          };
        }
        return {
          op: { op: 'create', id: item.id, routing, source: item.source ?? {} },
          status: 201,
          result: 'created',
        };
      case 'delete':
        return {
          op: { op: 'delete', id: item.id, routing },
          status: current === undefined ? 404 : 200,
          result: current === undefined ? 'not_found' : 'deleted',
        };
      case 'update': {
        if (current === undefined) {
          const created = item.upsert ?? (item.docAsUpsert === true ? item.doc : undefined);
          if (created === undefined) {
            return {
              status: 404,
              error: { type: 'document_missing_exception', reason: `[${item.id}]: document missing` },
            };
          }
          return {
            op: { op: 'update', id: item.id, routing, source: created },
            status: 201,
            result: 'created',
          };
        }
        const { merged, changed } = mergeDocument(current.source, item.doc ?? {});
        if (!changed && item.detectNoop !== false) return { op: undefined, status: 200, result: 'noop' };
        return {
          op: { op: 'update', id: item.id, routing: routing ?? current.routing, source: merged },
          status: 200,
          result: 'updated',
        };
      }
    }
  }
}
