import { describe, expect, it } from 'vitest';
import { FifoQueue } from '../../src/scheduler/fifo-queue.js';

describe('FifoQueue', () => {
  it('returns items in arrival order and undefined when empty', () => {
    const q = new FifoQueue<number>();
    expect(q.shift()).toBeUndefined();
    q.push(1);
    q.push(2);
    expect(q.length).toBe(2);
    expect(q.shift()).toBe(1);
    q.push(3);
    expect([...q]).toEqual([2, 3]);
    expect(q.shift()).toBe(2);
    expect(q.shift()).toBe(3);
    expect(q.length).toBe(0);
  });

  it('keeps order across its internal compaction', () => {
    const q = new FifoQueue<number>();
    const out: number[] = [];
    for (let i = 0; i < 5000; i++) {
      q.push(i);
      if (i % 3 !== 0) out.push(q.shift()!);
    }
    for (let v = q.shift(); v !== undefined; v = q.shift()) out.push(v);
    expect(out).toEqual(Array.from({ length: 5000 }, (_, i) => i));
  });
});
