/**
 * A pool worker's copies of the writable shards its node holds: one MiniSearch per shard copy, kept up
 * to date by pulling from the refresh board (`indices/index-board.ts`) and the shard logs.
 *
 * `sync()` runs at the start of every task: when neither the catalog sequence nor the refresh counter
 * moved since the last call it costs two `Atomics.load`s; otherwise it re-reads the catalog if needed
 * (new copies start empty at the log header, dropped ones are forgotten) and, for every copy whose
 * published offset is past what it applied, reads those log bytes (one `pread`), decodes the records
 * and applies their operations in sequence order. The task that triggers it pays for it (its sandbox is
 * charged the CPU), as a search on a freshly refreshed Elasticsearch shard pays for opening the new
 * segments; a new worker pays for the whole log at `init`.
 *
 * Documents are indexed on the engine's fields (`subject`, `from`, `body`: a string, a number or
 * boolean as text, or an array of those joined with spaces; anything else is not indexed) and `date`
 * (epoch ms, or a string `Date.parse` reads; else null) for range queries; the whole `_source` and
 * `_routing` are stored and returned with hits.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import MiniSearch, { type Options } from 'minisearch';
import { type BoardCatalogEntry, IndexBoard } from '../indices/index-board.js';
import { decodeShardLogRecords, type LoggedOperation, SHARD_LOG_HEADER_BYTES } from '../indices/shard-log.js';
import { MAIL_INDEX_OPTIONS, SEARCH_FIELDS } from './mail-index.js';

/** What a writable shard's MiniSearch holds per document. */
export interface IndexedDocument {
  readonly id: string;
  readonly subject: string;
  readonly from: string;
  readonly body: string;
  readonly date: number | null;
  readonly _source: Readonly<Record<string, unknown>>;
  readonly _routing: string | undefined;
}

/** MiniSearch options of a writable shard: the mail fields and term processing, whole `_source` stored. */
export const WRITABLE_INDEX_OPTIONS: Options<IndexedDocument> = {
  idField: 'id',
  fields: [...SEARCH_FIELDS],
  storeFields: ['date', '_source', '_routing'],
  tokenize: MAIL_INDEX_OPTIONS.tokenize!,
  processTerm: MAIL_INDEX_OPTIONS.processTerm!,
};

function fieldText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value))
    return value
      .map(fieldText)
      .filter((t) => t.length > 0)
      .join(' ');
  return '';
}

function dateOf(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string') {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? null : ms;
  }
  return null;
}

/** The indexed form of a logged `index`/`create`/`update` operation. */
export function toIndexedDocument(op: LoggedOperation): IndexedDocument {
  const source = op.source ?? {};
  return {
    id: op.id,
    subject: fieldText(source['subject']),
    from: fieldText(source['from']),
    body: fieldText(source['body']),
    date: dateOf(source['date']),
    _source: source,
    _routing: op.routing,
  };
}

/** Applies one logged operation to a shard's MiniSearch. */
export function applyOperation(search: MiniSearch<IndexedDocument>, op: LoggedOperation): void {
  if (search.has(op.id)) search.discard(op.id);
  if (op.op !== 'delete') search.add(toIndexedDocument(op));
}

interface WorkerCopy {
  readonly entry: BoardCatalogEntry;
  readonly search: MiniSearch<IndexedDocument>;
  /** Log offset applied up to. */
  applied: number;
}

/** What one `sync` did (for tests and stats). */
export interface SyncReport {
  readonly catalogReloaded: boolean;
  readonly operationsApplied: number;
}

/** The worker's writable copies (see module doc). */
export class WritableShards {
  readonly #board: IndexBoard;
  #sequence = -1;
  #refreshes = -1;
  readonly #copies = new Map<number, WorkerCopy>();
  #indices = new Map<string, (MiniSearch<IndexedDocument> | undefined)[]>();

  /** @param board the buffer of the node's board (from the engine's init context). */
  constructor(board: SharedArrayBuffer) {
    this.#board = new IndexBoard(board);
  }

  /** Index name to its shard copies held here (`undefined` for a shard this node does not hold). */
  get indices(): ReadonlyMap<string, readonly (MiniSearch<IndexedDocument> | undefined)[]> {
    return this.#indices;
  }

  /** Brings every copy up to its published offset (see module doc). Never throws for a missing log. */
  sync(): SyncReport {
    let reloaded = false;
    let applied = 0;
    for (;;) {
      const sequence = this.#board.catalogSequence();
      const refreshes = this.#board.refreshes();
      if (sequence === this.#sequence && refreshes === this.#refreshes) break;
      if (sequence !== this.#sequence) {
        const catalog = this.#board.readCatalog();
        this.#reload(catalog.entries);
        reloaded = true;
        this.#sequence = catalog.sequence;
      }
      for (const copy of this.#copies.values()) applied += this.#catchUp(copy);
      // A catalog change while offsets were read may have moved slots: read again.
      if (this.#board.catalogSequence() !== this.#sequence) continue;
      this.#refreshes = refreshes;
    }
    return { catalogReloaded: reloaded, operationsApplied: applied };
  }

  #reload(entries: readonly BoardCatalogEntry[]): void {
    const wanted = new Map(entries.map((e) => [e.slot, e]));
    for (const [slot, copy] of this.#copies) {
      const e = wanted.get(slot);
      if (e === undefined || e.uuid !== copy.entry.uuid || e.shard !== copy.entry.shard)
        this.#copies.delete(slot);
    }
    for (const e of entries) {
      if (this.#copies.has(e.slot)) continue;
      this.#copies.set(e.slot, {
        entry: e,
        search: new MiniSearch<IndexedDocument>(WRITABLE_INDEX_OPTIONS),
        applied: SHARD_LOG_HEADER_BYTES,
      });
    }
    const indices = new Map<string, (MiniSearch<IndexedDocument> | undefined)[]>();
    for (const copy of this.#copies.values()) {
      const { index, numberOfShards, shard } = copy.entry;
      let shards = indices.get(index);
      if (shards === undefined) {
        shards = new Array<MiniSearch<IndexedDocument> | undefined>(numberOfShards).fill(undefined);
        indices.set(index, shards);
      }
      shards[shard] = copy.search;
    }
    this.#indices = indices;
  }

  /** Applies a copy's newly published operations; returns how many. */
  #catchUp(copy: WorkerCopy): number {
    const published = this.#board.published(copy.entry.slot);
    if (published <= copy.applied) return 0;
    let data: Buffer;
    try {
      data = readRange(copy.entry.logPath, copy.applied, published - copy.applied);
    } catch {
      return 0; // deleted with its index: the next catalog drops the copy
    }
    const { operations, endOffset } = decodeShardLogRecords(data, copy.applied);
    for (const op of operations) applyOperation(copy.search, op);
    copy.applied = endOffset;
    return operations.length;
  }
}

/** Reads `length` bytes at `position` (fewer when the file is shorter). */
function readRange(path: string, position: number, length: number): Buffer {
  const fd = openSync(path, 'r');
  try {
    const data = Buffer.allocUnsafe(length);
    let read = 0;
    while (read < length) {
      const n = readSync(fd, data, read, length - read, position + read);
      if (n === 0) break;
      read += n;
    }
    return read === length ? data : data.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}
