/**
 * The refresh board: one SharedArrayBuffer through which a node's main thread (the only writer) tells
 * its pool workers which writable shard copies exist and how far each has been refreshed, without a
 * message to any worker. A worker pulls: at the start of each task it compares two counters with what
 * it has seen (two `Atomics.load`s when nothing changed) and, when behind, reads the new operations from
 * the shard logs up to the published offsets (see `engine/writable-shards.ts`). An idle worker parked in
 * `Atomics.wait` needs no wake-up, a busy one is not interrupted, and a worker that starts later (a
 * replacement after a hard cancellation) reads the same board.
 *
 * Layout (all little-endian, one buffer):
 * - `Int32Array` control words: `[0]` catalog sequence (a seqlock: odd while the main thread rewrites
 *   the catalog), `[1]` catalog length in bytes, `[2]` refresh counter (incremented after every publish);
 * - the catalog: UTF-8 JSON of `BoardCatalogEntry[]`, at most `CATALOG_BYTES` bytes;
 * - `BigInt64Array` of `MAX_BOARD_SLOTS` published offsets: for each slot, the shard-log byte offset
 *   (a record boundary) up to which its operations are visible to searches.
 *
 * A slot is reused after its shard copy is removed; a reader detects that through the catalog sequence
 * (it re-reads the catalog whenever the sequence moved, and checks it again after reading offsets).
 */
import { InvalidArgumentError } from '../errors.js';

/** Most shard copies one node can hold (slots on the board). */
export const MAX_BOARD_SLOTS = 4096;
/** Largest catalog, bytes (about 150 bytes per shard copy). */
export const CATALOG_BYTES = 1024 * 1024;

const CONTROL_WORDS = 4;
const SEQ = 0;
const LENGTH = 1;
const REFRESHES = 2;
const CONTROL_BYTES = CONTROL_WORDS * 4;
const OFFSETS_AT = CONTROL_BYTES + CATALOG_BYTES; // a multiple of 8
const BOARD_BYTES = OFFSETS_AT + MAX_BOARD_SLOTS * 8;

/** One shard copy as workers need to know it. */
export interface BoardCatalogEntry {
  /** Board slot of the copy's published offset, 0..MAX_BOARD_SLOTS-1. */
  readonly slot: number;
  readonly index: string;
  /** The index's uuid: tells a re-created index from an earlier one of the same name. */
  readonly uuid: string;
  readonly shard: number;
  /** `index.number_of_shards` of the index. */
  readonly numberOfShards: number;
  /** Absolute path of the copy's shard log. */
  readonly logPath: string;
}

/** A catalog as read, with the sequence it was read at. */
export interface BoardCatalog {
  readonly sequence: number;
  readonly entries: readonly BoardCatalogEntry[];
}

/** The board over a shared buffer (see module doc). Writer methods are for the main thread only. */
export class IndexBoard {
  readonly buffer: SharedArrayBuffer;
  readonly #control: Int32Array;
  readonly #catalog: Uint8Array;
  readonly #offsets: BigInt64Array;

  /**
   * @param buffer a board made by another thread (a worker passes the buffer it received); a new,
   *   empty board when omitted.
   * @throws InvalidArgumentError (path `buffer`) for a buffer that is not a board's.
   */
  constructor(buffer?: SharedArrayBuffer) {
    const shared = buffer ?? new SharedArrayBuffer(BOARD_BYTES);
    if (!(shared instanceof SharedArrayBuffer) || shared.byteLength !== BOARD_BYTES) {
      throw new InvalidArgumentError(
        'buffer',
        `must be a SharedArrayBuffer of ${BOARD_BYTES} bytes (an IndexBoard's)`,
        buffer === undefined ? undefined : `${(buffer as { byteLength?: unknown }).byteLength} bytes`,
      );
    }
    this.buffer = shared;
    this.#control = new Int32Array(shared, 0, CONTROL_WORDS);
    this.#catalog = new Uint8Array(shared, CONTROL_BYTES, CATALOG_BYTES);
    this.#offsets = new BigInt64Array(shared, OFFSETS_AT, MAX_BOARD_SLOTS);
  }

  /**
   * Replaces the catalog (main thread). Readers that overlap the write retry.
   * @throws InvalidArgumentError (path `catalog`) when its JSON is over `CATALOG_BYTES`.
   */
  writeCatalog(entries: readonly BoardCatalogEntry[]): void {
    const bytes = Buffer.from(JSON.stringify(entries), 'utf8');
    if (bytes.length > CATALOG_BYTES) {
      throw new InvalidArgumentError(
        'catalog',
        `must encode to at most ${CATALOG_BYTES} bytes (too many shard copies on this node)`,
        `${bytes.length} bytes`,
      );
    }
    Atomics.add(this.#control, SEQ, 1); // odd: writing
    this.#catalog.set(bytes, 0);
    Atomics.store(this.#control, LENGTH, bytes.length);
    Atomics.add(this.#control, SEQ, 1); // even: done
  }

  /** Sets a slot's published offset (main thread). Call `bumpRefreshes` after a round of publishes. */
  publish(slot: number, offsetBytes: number): void {
    Atomics.store(this.#offsets, slot, BigInt(offsetBytes));
  }

  /** Tells readers that offsets moved (main thread). */
  bumpRefreshes(): void {
    Atomics.add(this.#control, REFRESHES, 1);
  }

  /** The catalog sequence (even when stable). */
  catalogSequence(): number {
    return Atomics.load(this.#control, SEQ);
  }

  /** The refresh counter. */
  refreshes(): number {
    return Atomics.load(this.#control, REFRESHES);
  }

  /** A slot's published offset, bytes. */
  published(slot: number): number {
    return Number(Atomics.load(this.#offsets, slot));
  }

  /** Reads the catalog consistently (retries while the writer is inside a rewrite). */
  readCatalog(): BoardCatalog {
    for (;;) {
      const before = Atomics.load(this.#control, SEQ);
      if (before % 2 === 1) continue;
      const length = Atomics.load(this.#control, LENGTH);
      const text = length === 0 ? '[]' : Buffer.from(this.#catalog.subarray(0, length)).toString('utf8');
      if (Atomics.load(this.#control, SEQ) !== before) continue;
      return { sequence: before, entries: JSON.parse(text) as BoardCatalogEntry[] };
    }
  }
}
