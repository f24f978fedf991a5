/**
 * Indexing pressure: a bound on the bulk bytes a node holds in flight, after Elasticsearch's
 * `IndexingPressure` (`indexing_pressure.memory.limit`, default 10 % of the heap): a bulk that would
 * take the bytes in flight over the limit is refused with 429 `es_rejected_execution_exception` before
 * it runs, so a slow shard backs up into refusals instead of into memory. A node counts each request
 * once, as `coordinating` (a coordinator, or a single node taking a bulk) or `primary` (a data node
 * taking shard bulks from a coordinator).
 */
import v8 from 'node:v8';
import { InvalidArgumentError, WriteRejectedError } from '../errors.js';

/** 10 % of this process's heap limit, bytes: Elasticsearch's default `indexing_pressure.memory.limit`. */
export function defaultIndexingPressureBytes(): number {
  return Math.floor(v8.getHeapStatistics().heap_size_limit * 0.1);
}

/** The bytes in flight of one node, and its counters (see module doc). */
export class IndexingPressure {
  readonly limitBytes: number;
  #inFlightBytes = 0;
  #rejections = 0;
  #accepted = 0;

  /** @throws InvalidArgumentError (path `limitBytes`) for a limit that is not a positive integer. */
  constructor(limitBytes: number = defaultIndexingPressureBytes()) {
    if (!Number.isSafeInteger(limitBytes) || limitBytes < 1) {
      throw new InvalidArgumentError('limitBytes', 'must be a positive integer (bytes)', limitBytes);
    }
    this.limitBytes = limitBytes;
  }

  /**
   * Takes `bytes` for one operation. A request larger than the limit on its own is let through when
   * nothing else is in flight (it could never run otherwise), as Elasticsearch does for a single
   * oversized request only through `http.max_content_length`.
   * @returns the release function (idempotent); call it when the operation has answered.
   * @throws WriteRejectedError when the bytes in flight would go over the limit.
   */
  acquire(bytes: number, where: 'coordinating' | 'primary'): () => void {
    if (this.#inFlightBytes > 0 && this.#inFlightBytes + bytes > this.limitBytes) {
      this.#rejections++;
      throw new WriteRejectedError(this.#inFlightBytes, bytes, this.limitBytes, where);
    }
    this.#inFlightBytes += bytes;
    this.#accepted++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inFlightBytes -= bytes;
    };
  }

  /** A plain snapshot: bytes in flight, operations accepted and refused. */
  stats(): { inFlightBytes: number; limitBytes: number; accepted: number; rejections: number } {
    return {
      inFlightBytes: this.#inFlightBytes,
      limitBytes: this.limitBytes,
      accepted: this.#accepted,
      rejections: this.#rejections,
    };
  }
}
