/**
 * The bound on shard-level writes a node holds at once: the counterpart of Elasticsearch's `write`
 * thread pool, whose capacity (threads plus `thread_pool.write.queue_size`, default 10000) bounds the
 * shard bulks (`TransportShardBulkAction`) waiting on a node. When it is full a shard bulk is refused
 * with `EsRejectedExecutionException`, and Elasticsearch fails **that shard's items** with 429
 * `es_rejected_execution_exception`, the other items of the bulk standing (`BulkOperation` turns a
 * failed shard request into one failure per item): a client retries those items (`helpers.bulk` does,
 * with `retries`), not the whole request. The whole-request 429 belongs to the coordinating step
 * (`indexing-pressure.ts`).
 *
 * A node of this project applies a shard bulk on its main thread at once and then waits for the log's
 * fsync and the replicas, so nothing waits for a thread: the bound here counts the shard bulks between
 * arrival and acknowledgement, on a single node and on a cluster's data nodes (for their primaries).
 */
import { InvalidArgumentError, ShardWriteRejectedError } from '../errors.js';

/** Elasticsearch's default `thread_pool.write.queue_size`. */
export const DEFAULT_WRITE_QUEUE_SIZE = 10_000;

/** What a refusal says, and its counters. */
export interface WriteQueueStats {
  readonly inFlight: number;
  readonly capacity: number;
  readonly accepted: number;
  readonly rejected: number;
}

/** The node's bound on shard bulks in flight (see module doc). */
export class WriteQueue {
  readonly capacity: number;
  readonly #nodeId: string;
  #inFlight = 0;
  #accepted = 0;
  #rejected = 0;

  /**
   * @param capacity shard bulks a node holds at once, integer >= 1. @default 10000
   * @throws InvalidArgumentError (path `writeQueueSize`) otherwise.
   */
  constructor(nodeId: string, capacity: number = DEFAULT_WRITE_QUEUE_SIZE) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) {
      throw new InvalidArgumentError('writeQueueSize', 'must be an integer >= 1', capacity);
    }
    this.capacity = capacity;
    this.#nodeId = nodeId;
  }

  /**
   * Takes a place for one shard bulk.
   * @returns the release function (idempotent); call it once the shard bulk has answered.
   * @throws ShardWriteRejectedError (429 `es_rejected_execution_exception`) when the queue is full:
   *   the shard's items fail with it.
   */
  acquire(index: string, shard: number): () => void {
    if (this.#inFlight >= this.capacity) {
      this.#rejected++;
      throw new ShardWriteRejectedError(
        `rejected execution of shard bulk [${index}][${shard}] on [${this.#nodeId}/write]: queue capacity = ${this.capacity}, shard bulks in flight = ${this.#inFlight}`,
      );
    }
    this.#inFlight++;
    this.#accepted++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inFlight--;
    };
  }

  /** A plain snapshot of the counters. */
  stats(): WriteQueueStats {
    return {
      inFlight: this.#inFlight,
      capacity: this.capacity,
      accepted: this.#accepted,
      rejected: this.#rejected,
    };
  }
}
