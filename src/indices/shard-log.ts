/**
 * A durable per-shard operation log (the analogue of Elasticsearch's translog): every acknowledged
 * batch of writes is on disk before the bulk is answered, and is replayed after a crash.
 *
 * File format (little-endian):
 * - an 8-byte header, `QSSLOG01`;
 * - then one record per appended batch: the 4 bytes `QSRC`, `u32 payloadBytes`, `u32 crc32(payload)`
 *   (CRC-32/ISO-HDLC, as zlib's), `payload` = UTF-8 JSON `{"afterSync": boolean, "ops": [...]}`: the
 *   batch's operations, each with its `seqNo`; `afterSync` is true when every byte before the record
 *   had been fsynced when the record was written.
 *
 * A batch is one record, so a batch is recovered whole or not at all. Sequence numbers start at 0 and
 * increase by one per operation, without gaps, across batches (Elasticsearch: per-shard `_seq_no`).
 *
 * Durability (Elasticsearch `index.translog.durability`): `request` (default) writes and fsyncs before
 * `append` resolves; concurrent appends share one write and one fsync (group commit). `async` resolves
 * after the write and fsyncs every `syncIntervalMs` (a crash loses at most that window), or on `sync()`.
 *
 * Recovery (`ShardLog.open`): records are read in order; the first record that is incomplete (the file
 * ends inside it), has a zero or oversized length, or fails its checksum ends the log, and everything
 * from it on is a torn tail: it is truncated (and the truncation fsynced). A torn tail can only hold
 * bytes that were never fsynced, so every acknowledged (`request` mode) batch is recovered. After a
 * power loss the disk may hold a later unsynced record but not an earlier one of the same unsynced
 * stretch; such a later record is dropped with the tail (it was never acknowledged as durable). But a
 * good record with `afterSync: true` after the damage proves the damaged bytes had been fsynced: that is
 * corruption inside the log, and `open` refuses with `ShardLogCorruptedError` rather than drop
 * acknowledged batches. A good record whose sequence numbers do not continue the log is corruption too.
 */
import { type FileHandle, mkdir, open, readFile, truncate } from 'node:fs/promises';
import { dirname } from 'node:path';
import * as zlib from 'node:zlib';
import { syncDirectory } from '../common/durable-file.js';
import { EngineFailureError, InvalidArgumentError } from '../errors.js';

/** The operation kinds the log holds. */
export type ShardOperationType = 'index' | 'create' | 'update' | 'delete';

/** One write to a shard, as appended. */
export interface ShardOperation {
  readonly op: ShardOperationType;
  readonly id: string;
  /** The stored `_routing`, if any. */
  readonly routing?: string | undefined;
  /** The document (index, create), the partial or resulting document (update); none for delete. */
  readonly source?: Readonly<Record<string, unknown>> | undefined;
}

/** An operation with its sequence number, as recovered. */
export interface LoggedOperation extends ShardOperation {
  readonly seqNo: number;
}

/** When an append is durable. */
export type ShardLogDurability = 'request' | 'async';

/** Options of `ShardLog.open`; checked once. */
export interface ShardLogOptions {
  /** The log file; created (with its directory) when missing. */
  readonly path: string;
  /** @default 'request' */
  readonly durability?: ShardLogDurability | undefined;
  /** fsync period in `async` mode, in ms (Elasticsearch `index.translog.sync_interval`). @default 5000 */
  readonly syncIntervalMs?: number | undefined;
  /** Largest record payload in bytes; a larger batch is refused, a larger length on disk is damage. @default 268435456 (256 MiB) */
  readonly maxRecordBytes?: number | undefined;
}

/** Sequence numbers given to one appended batch. */
export interface AppendResult {
  readonly firstSeqNo: number;
  readonly lastSeqNo: number;
}

/** What `ShardLog.open` found. */
export interface OpenedShardLog {
  readonly log: ShardLog;
  /** Every operation in the log, in sequence-number order. */
  readonly operations: readonly LoggedOperation[];
  /** Bytes cut off as a torn tail (0 when the log ended cleanly). */
  readonly truncatedBytes: number;
}

/** The log file is damaged in a way recovery must not paper over. */
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

const HEADER = Buffer.from('QSSLOG01', 'latin1');
/** Bytes of the file header (`QSSLOG01`): the offset of the first record. */
export const SHARD_LOG_HEADER_BYTES = 8;
const RECORD_MAGIC = Buffer.from('QSRC', 'latin1');
const RECORD_HEADER_BYTES = 12;
const OP_TYPES = new Set<string>(['index', 'create', 'update', 'delete']);

/** CRC-32 (zlib's): `zlib.crc32` where Node has it (>= 20.15), else a table-driven fallback. */
const crc32: (data: Uint8Array) => number =
  typeof (zlib as { crc32?: unknown }).crc32 === 'function'
    ? (data) => zlib.crc32(data)
    : (() => {
        const table = new Int32Array(256);
        for (let n = 0; n < 256; n++) {
          let c = n;
          for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
          table[n] = c;
        }
        return (data: Uint8Array) => {
          let c = -1;
          for (let i = 0; i < data.length; i++) c = table[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
          return (c ^ -1) >>> 0;
        };
      })();

/** A record at `offset` that checks out: its operations and its end. */
interface GoodRecord {
  readonly end: number;
  readonly afterSync: boolean;
  readonly operations: LoggedOperation[];
}

/**
 * Reads the record at `offset`, or undefined when it lacks the magic, is incomplete, has a zero or
 * oversized length, or fails its checksum or shape.
 */
function readRecord(data: Buffer, offset: number, maxRecordBytes: number): GoodRecord | undefined {
  if (offset + RECORD_HEADER_BYTES > data.length) return undefined;
  if (data.compare(RECORD_MAGIC, 0, 4, offset, offset + 4) !== 0) return undefined;
  const length = data.readUInt32LE(offset + 4);
  if (length === 0 || length > maxRecordBytes || offset + RECORD_HEADER_BYTES + length > data.length)
    return undefined;
  const payload = data.subarray(offset + RECORD_HEADER_BYTES, offset + RECORD_HEADER_BYTES + length);
  if (crc32(payload) !== data.readUInt32LE(offset + 8)) return undefined;
  let parsed: { afterSync?: unknown; ops?: unknown };
  try {
    parsed = JSON.parse(payload.toString('utf8'));
  } catch {
    return undefined;
  }
  const operations = parsed?.ops;
  if (typeof parsed?.afterSync !== 'boolean' || !Array.isArray(operations) || operations.length === 0) {
    return undefined;
  }
  for (const op of operations) {
    if (
      typeof op !== 'object' ||
      op === null ||
      !OP_TYPES.has(op.op) ||
      typeof op.id !== 'string' ||
      !Number.isSafeInteger(op.seqNo)
    ) {
      return undefined;
    }
  }
  return {
    end: offset + RECORD_HEADER_BYTES + length,
    afterSync: parsed.afterSync,
    operations: operations as LoggedOperation[],
  };
}

/** What `decodeShardLogRecords` read. */
export interface DecodedShardLogRecords {
  /** The operations of every whole, good record from `offset` on, in order. */
  readonly operations: LoggedOperation[];
  /** The offset just after the last good record (= `offset` when none was read). */
  readonly endOffset: number;
}

/**
 * Reads the records of a shard-log byte range, as a reader that follows the log does (a worker that
 * applies the operations published by a refresh). Stops at the end of `data` or at the first record
 * that is incomplete or fails its checks; never throws for bad bytes.
 *
 * @param data bytes of the log file starting at file offset `baseOffset` (`data[0]` is that byte).
 * @param baseOffset the file offset of `data[0]`; a record boundary (the header's end, or the end of
 *   an earlier record).
 * @param maxRecordBytes largest payload accepted. @default 268435456
 * @returns the operations and the file offset after the last good record.
 */
export function decodeShardLogRecords(
  data: Buffer,
  baseOffset: number,
  maxRecordBytes = 256 * 1024 * 1024,
): DecodedShardLogRecords {
  const operations: LoggedOperation[] = [];
  let offset = 0;
  while (offset < data.length) {
    const record = readRecord(data, offset, maxRecordBytes);
    if (record === undefined) break;
    for (const op of record.operations) operations.push(op);
    offset = record.end;
  }
  return { operations, endOffset: baseOffset + offset };
}

function checkOperations(operations: readonly ShardOperation[]): void {
  if (!Array.isArray(operations) || operations.length === 0) {
    throw new InvalidArgumentError('operations', 'must be a non-empty array', operations);
  }
  operations.forEach((op, i) => {
    if (typeof op !== 'object' || op === null || !OP_TYPES.has(op.op)) {
      throw new InvalidArgumentError(
        `operations[${i}].op`,
        'must be index, create, update or delete',
        op?.op,
      );
    }
    if (typeof op.id !== 'string' || op.id === '') {
      throw new InvalidArgumentError(`operations[${i}].id`, 'must be a non-empty string', op.id);
    }
    if (op.routing !== undefined && typeof op.routing !== 'string') {
      throw new InvalidArgumentError(`operations[${i}].routing`, 'must be a string', op.routing);
    }
    if (
      op.op !== 'delete' &&
      (typeof op.source !== 'object' || op.source === null || Array.isArray(op.source))
    ) {
      throw new InvalidArgumentError(`operations[${i}].source`, `must be an object for ${op.op}`, op.source);
    }
  });
}

interface PendingAppend {
  /** The batch's operations as a JSON array. */
  readonly opsJson: string;
  readonly result: AppendResult;
  readonly resolve: (result: AppendResult) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * An open shard log. Append with `append`; one process at a time may hold a file (nothing here locks
 * it). After any write or fsync error the log is failed: every later call rejects with that error, as
 * the file's tail is then unknown until the next `open` recovers it.
 */
export class ShardLog {
  readonly path: string;
  readonly durability: ShardLogDurability;
  readonly #handle: FileHandle;
  readonly #maxRecordBytes: number;
  #nextSeqNo: number;
  #syncedSeqNo: number;
  #writtenSeqNo: number;
  #sizeBytes: number;
  #pending: PendingAppend[] = [];
  /** The running flush loop (valid while `#flushActive`). */
  #flushing: Promise<void> = Promise.resolve();
  #flushActive = false;
  #failure: unknown;
  #closed = false;
  #timer: NodeJS.Timeout | undefined;

  private constructor(
    path: string,
    handle: FileHandle,
    durability: ShardLogDurability,
    maxRecordBytes: number,
    nextSeqNo: number,
    sizeBytes: number,
  ) {
    this.path = path;
    this.#handle = handle;
    this.durability = durability;
    this.#maxRecordBytes = maxRecordBytes;
    this.#nextSeqNo = nextSeqNo;
    this.#syncedSeqNo = nextSeqNo - 1;
    this.#writtenSeqNo = nextSeqNo - 1;
    this.#sizeBytes = sizeBytes;
  }

  /**
   * Opens (or creates) a log, recovers its operations and cuts a torn tail.
   *
   * @throws InvalidArgumentError for bad options; ShardLogCorruptedError for a file that is not a shard
   *   log, damage before the tail, or sequence numbers that do not continue; file-system errors.
   */
  static async open(options: ShardLogOptions): Promise<OpenedShardLog> {
    const { path } = options;
    if (typeof path !== 'string' || path === '')
      throw new InvalidArgumentError('path', 'must be a non-empty string', path);
    const durability = options.durability ?? 'request';
    if (durability !== 'request' && durability !== 'async') {
      throw new InvalidArgumentError('durability', 'must be "request" or "async"', durability);
    }
    const syncIntervalMs = options.syncIntervalMs ?? 5000;
    if (!Number.isFinite(syncIntervalMs) || syncIntervalMs <= 0) {
      throw new InvalidArgumentError('syncIntervalMs', 'must be a positive number of ms', syncIntervalMs);
    }
    const maxRecordBytes = options.maxRecordBytes ?? 256 * 1024 * 1024;
    if (!Number.isSafeInteger(maxRecordBytes) || maxRecordBytes < 1 || maxRecordBytes > 0xffffffff) {
      throw new InvalidArgumentError('maxRecordBytes', 'must be an integer in 1..4294967295', maxRecordBytes);
    }

    let data: Buffer | undefined;
    try {
      data = await readFile(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const operations: LoggedOperation[] = [];
    let truncatedBytes = 0;
    let validEnd: number;
    if (data === undefined || (data.length < HEADER.length && HEADER.subarray(0, data.length).equals(data))) {
      // New, or torn while its header was written: start afresh.
      await createLogFile(path);
      truncatedBytes = data?.length ?? 0;
      validEnd = HEADER.length;
    } else {
      if (!data.subarray(0, HEADER.length).equals(HEADER)) {
        throw new ShardLogCorruptedError(
          path,
          0,
          'the file does not start with the shard-log header QSSLOG01',
        );
      }
      let offset = HEADER.length;
      while (offset < data.length) {
        const record = readRecord(data, offset, maxRecordBytes);
        if (record === undefined) break;
        for (const op of record.operations) {
          const expected = operations.length;
          if (op.seqNo !== expected) {
            throw new ShardLogCorruptedError(
              path,
              offset,
              `sequence number ${op.seqNo} where ${expected} was expected`,
            );
          }
          operations.push(op);
        }
        offset = record.end;
      }
      validEnd = offset;
      if (offset < data.length) {
        for (
          let probe = data.indexOf(RECORD_MAGIC, offset + 1);
          probe !== -1;
          probe = data.indexOf(RECORD_MAGIC, probe + 1)
        ) {
          const later = readRecord(data, probe, maxRecordBytes);
          if (later?.afterSync === true && later.operations[0]!.seqNo >= operations.length) {
            throw new ShardLogCorruptedError(
              path,
              offset,
              `a damaged record is followed at byte ${probe} by a record written after an fsync of everything before it; not a torn tail, refusing to drop acknowledged batches`,
            );
          }
        }
        truncatedBytes = data.length - offset;
        await truncate(path, offset); // made durable by the fsync below
      }
    }
    const handle = await open(path, 'a');
    try {
      // What was read may sit only in the page cache (a killed process), and a truncation is not yet
      // durable: fsync both before new records claim `afterSync`.
      await handle.sync();
    } catch (error) {
      await handle.close();
      throw error;
    }
    const log = new ShardLog(path, handle, durability, maxRecordBytes, operations.length, validEnd);
    if (durability === 'async') {
      log.#timer = setInterval(() => {
        log.sync().catch(() => undefined); // the failure is kept and reported by the next call
      }, syncIntervalMs);
      log.#timer.unref();
    }
    return { log, operations, truncatedBytes };
  }

  /** The sequence number the next operation gets (= the number of operations in the log). */
  get nextSeqNo(): number {
    return this.#nextSeqNo;
  }

  /** The highest sequence number written to the file (fsynced or not); -1 when none. */
  get writtenSeqNo(): number {
    return this.#writtenSeqNo;
  }

  /** The highest sequence number known to be fsynced; -1 when none. */
  get syncedSeqNo(): number {
    return this.#syncedSeqNo;
  }

  /**
   * Bytes written to the file so far (header included). Changes only when a whole write round has
   * been written, together with `writtenSeqNo`, so it always ends on a record boundary.
   */
  get sizeBytes(): number {
    return this.#sizeBytes;
  }

  /**
   * Appends one batch as one record. Sequence numbers are given now, in call order.
   *
   * @returns the batch's first and last sequence numbers, once it is durable (`request`) or written
   *   (`async`).
   * @throws InvalidArgumentError for an empty batch, a malformed operation, or a batch whose JSON is
   *   over `maxRecordBytes`; the log's failure, if it failed; an error if it is closed.
   */
  append(operations: readonly ShardOperation[]): Promise<AppendResult> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    if (this.#closed) return Promise.reject(new InvalidArgumentError('log', 'must be open', this.path));
    try {
      checkOperations(operations);
    } catch (error) {
      return Promise.reject(error);
    }
    const firstSeqNo = this.#nextSeqNo;
    const logged = operations.map((op, i) => {
      const entry: Record<string, unknown> = { op: op.op, id: op.id, seqNo: firstSeqNo + i };
      if (op.routing !== undefined) entry['routing'] = op.routing;
      if (op.source !== undefined && op.op !== 'delete') entry['source'] = op.source;
      return entry;
    });
    const opsJson = JSON.stringify(logged);
    const payloadBytes = Buffer.byteLength(opsJson, 'utf8') + RECORD_ENVELOPE_BYTES;
    if (payloadBytes > this.#maxRecordBytes) {
      return Promise.reject(
        new InvalidArgumentError(
          'operations',
          `must encode to at most ${this.#maxRecordBytes} bytes (maxRecordBytes)`,
          `${payloadBytes} bytes`,
        ),
      );
    }
    this.#nextSeqNo = firstSeqNo + operations.length;
    const result: AppendResult = { firstSeqNo, lastSeqNo: this.#nextSeqNo - 1 };
    return new Promise<AppendResult>((resolve, reject) => {
      this.#pending.push({ opsJson, result, resolve, reject });
      this.#kick();
    });
  }

  /** fsyncs what is written. Resolves when every append that resolved before the call is durable. */
  async sync(): Promise<void> {
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#syncedSeqNo === this.#writtenSeqNo) return;
    const target = this.#writtenSeqNo;
    try {
      await this.#handle.sync();
    } catch (error) {
      this.#fail(error);
      throw error;
    }
    this.#syncedSeqNo = Math.max(this.#syncedSeqNo, target);
  }

  /** Waits for pending appends, fsyncs, and closes the file. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    try {
      while (this.#flushActive) await this.#flushing;
      if (this.#failure === undefined && this.#syncedSeqNo !== this.#writtenSeqNo) await this.#handle.sync();
    } finally {
      await this.#handle.close();
    }
  }

  #kick(): void {
    if (this.#flushActive) return;
    this.#flushActive = true;
    this.#flushing = this.#flushLoop();
  }

  /**
   * Writes pending records in rounds: one write (and, in `request` mode, one fsync) per round.
   * `#flushActive` is cleared here, synchronously after the last round's appends are resolved and
   * before their continuations run, so an append made by such a continuation starts a new loop
   * instead of being left in `#pending` by a loop about to end.
   */
  async #flushLoop(): Promise<void> {
    try {
      while (this.#pending.length > 0) {
        const round = this.#pending;
        this.#pending = [];
        if (this.#failure !== undefined) {
          for (const p of round) p.reject(this.#failure);
          continue;
        }
        try {
          await this.#writeRound(round);
        } catch (error) {
          this.#fail(error);
          for (const p of round) p.reject(error);
          continue;
        }
        for (const p of round) p.resolve(p.result);
      }
    } finally {
      this.#flushActive = false;
    }
  }

  async #writeRound(round: readonly PendingAppend[]): Promise<void> {
    // Only the round's first record follows fsynced bytes, and only if everything written is synced.
    let afterSync = this.#syncedSeqNo === this.#writtenSeqNo;
    const records = round.map((p) => {
      const record = encodeRecord(p.opsJson, afterSync);
      afterSync = false;
      return record;
    });
    const buffer = records.length === 1 ? records[0]! : Buffer.concat(records);
    let written = 0;
    while (written < buffer.length) {
      const { bytesWritten } = await this.#handle.write(buffer, written, buffer.length - written);
      written += bytesWritten;
    }
    this.#sizeBytes += buffer.length;
    const last = round[round.length - 1]!.result.lastSeqNo;
    this.#writtenSeqNo = last;
    if (this.durability === 'request') {
      await this.#handle.sync();
      this.#syncedSeqNo = last;
    }
  }

  #fail(error: unknown): void {
    if (this.#failure === undefined) this.#failure = error;
  }
}

/** `{"afterSync":false,"ops":` and `}`: the bytes around the operations' JSON (the longer flag). */
const RECORD_ENVELOPE_BYTES = '{"afterSync":false,"ops":}'.length;

/** One record: magic, length, checksum, payload. */
function encodeRecord(opsJson: string, afterSync: boolean): Buffer {
  const payload = Buffer.from(`{"afterSync":${afterSync},"ops":${opsJson}}`, 'utf8');
  const record = Buffer.allocUnsafe(RECORD_HEADER_BYTES + payload.length);
  RECORD_MAGIC.copy(record, 0);
  record.writeUInt32LE(payload.length, 4);
  record.writeUInt32LE(crc32(payload), 8);
  payload.copy(record, RECORD_HEADER_BYTES);
  return record;
}

/** Creates the file with its header, durably (file and directory fsynced). */
async function createLogFile(path: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const handle = await open(path, 'w');
  try {
    await handle.writeFile(HEADER);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await syncDirectory(dirname(path));
}
