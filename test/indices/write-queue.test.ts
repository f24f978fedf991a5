import { describe, expect, it } from 'vitest';
import { ShardWriteRejectedError } from '../../src/errors.js';
import { WriteQueue } from '../../src/indices/write-queue.js';

describe('WriteQueue', () => {
  it('holds at most its capacity of shard bulks and refuses the next with 429 es_rejected_execution_exception', () => {
    const queue = new WriteQueue('n1', 2);
    const a = queue.acquire('i', 0);
    queue.acquire('i', 1);
    let refused: unknown;
    try {
      queue.acquire('i', 2);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(ShardWriteRejectedError);
    expect((refused as ShardWriteRejectedError).type).toBe('es_rejected_execution_exception');
    expect((refused as Error).message).toBe(
      'rejected execution of shard bulk [i][2] on [n1/write]: queue capacity = 2, shard bulks in flight = 2',
    );
    a();
    a(); // releasing twice frees one place only
    queue.acquire('i', 2);
    expect(() => queue.acquire('i', 3)).toThrow(ShardWriteRejectedError);
    expect(queue.stats()).toEqual({ inFlight: 2, capacity: 2, accepted: 3, rejected: 2 });
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new WriteQueue('n', 0)).toThrow('writeQueueSize must be an integer >= 1; received 0');
    expect(() => new WriteQueue('n', 1.5)).toThrow(/received 1.5/);
  });
});
