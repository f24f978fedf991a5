import { describe, expect, it } from 'vitest';
import { AgingPriorityQueue } from '../../src/scheduler/aging-priority-queue.js';

function drain<T>(q: AgingPriorityQueue<T>): T[] {
  const out: T[] = [];
  for (let v = q.shift(); v !== undefined; v = q.shift()) out.push(v);
  return out;
}

describe('AgingPriorityQueue', () => {
  it('serves higher priority first and arrival order within a priority, also within one millisecond', () => {
    const q = new AgingPriorityQueue<string>(100);
    q.push('low-1', 1, 0);
    q.push('high-1', 5, 0);
    q.push('low-2', 1, 0);
    q.push('high-2', 5, 0);
    q.push('mid', 3, 0);
    expect(drain(q)).toEqual(['high-1', 'high-2', 'mid', 'low-1', 'low-2']);
  });

  it('keeps FIFO order within a priority for many items (stable)', () => {
    const q = new AgingPriorityQueue<number>(100);
    for (let i = 0; i < 1000; i++) q.push(i, i % 3, Math.floor(i / 10));
    const out = drain(q);
    for (const p of [0, 1, 2]) {
      const mine = out.filter((v) => v % 3 === p);
      expect(mine).toEqual([...mine].sort((a, b) => a - b));
    }
  });

  it('bounds the wait of a low-priority task under high-priority load alone (aging)', () => {
    // 100 ms of waiting is worth one priority point: a priority-0 task that arrived at t=0 goes
    // before priority-10 tasks that arrive at or after t = 10 * 100 = 1000 ms (a tie goes to the earlier).
    const q = new AgingPriorityQueue<string>(100);
    q.push('low', 0, 0);
    for (let t = 1; t <= 1500; t += 1) q.push(`high@${t}`, 10, t);
    const out = drain(q);
    const at = out.indexOf('low');
    expect(out[at - 1]).toBe('high@999');
    expect(out[at + 1]).toBe('high@1000');
  });

  it('is strict priority with Infinity', () => {
    const q = new AgingPriorityQueue<string>(Number.POSITIVE_INFINITY);
    q.push('low', 0, 0);
    q.push('high', 10, 1_000_000);
    expect(drain(q)).toEqual(['high', 'low']);
  });

  it('evicts the newest of the lowest-priority items for a more important one, and keeps the order', () => {
    const q = new AgingPriorityQueue<string>(100);
    q.push('low-old', 1, 0);
    q.push('mid', 3, 1);
    q.push('low-new', 1, 2);
    q.push('high', 9, 3);
    expect(q.evictBelow(1)).toBeUndefined(); // the incoming one is not more important: refuse it
    expect(q.evictBelow(2)).toBe('low-new');
    expect(q.length).toBe(3);
    expect(drain(q)).toEqual(['high', 'mid', 'low-old']);
  });

  it('keeps a valid heap after evictions from the middle', () => {
    const q = new AgingPriorityQueue<number>(Number.POSITIVE_INFINITY);
    const priorities = [5, 1, 8, 1, 3, 9, 2, 1, 7, 4, 6, 1];
    for (const [i, p] of priorities.entries()) q.push(i, p, i);
    q.evictBelow(100);
    q.evictBelow(100);
    const out = drain(q).map((i) => priorities[i]!);
    expect(out).toEqual([...out].sort((a, b) => b - a));
    expect(out).toHaveLength(priorities.length - 2);
  });

  it('is FIFO across priorities with 0, and refuses a negative aging rate', () => {
    const q = new AgingPriorityQueue<string>(0);
    q.push('low', 0, 0);
    q.push('high', 10, 1);
    q.push('low-2', 0, 2);
    expect(drain(q)).toEqual(['low', 'high', 'low-2']);
    expect(() => new AgingPriorityQueue(-1)).toThrow('agingMsPerPriority must be >= 0');
    expect(() => new AgingPriorityQueue(Number.NaN)).toThrow('agingMsPerPriority must be >= 0');
  });

  it('serves only levels at or above minPriority, in aging order among them', () => {
    const q = new AgingPriorityQueue<string>(100);
    q.push('low', 0, 0);
    q.push('mid', 5, 0);
    q.push('high', 9, 1000);
    // 'mid' arrived 1000 ms earlier: worth 10 points, more than the 4 between them.
    expect(q.shift(5)).toBe('mid');
    expect(q.shift(10)).toBeUndefined();
    expect(q.shift(5)).toBe('high');
    expect(q.length).toBe(1);
    expect(q.shift()).toBe('low');
  });

  it('removes entries by handle and changes aging for queued items', () => {
    const q = new AgingPriorityQueue<string>(Number.POSITIVE_INFINITY);
    const a = q.push('a', 1, 0);
    q.push('b', 5, 100);
    expect(q.remove(a)).toBe(true);
    expect(q.remove(a)).toBe(false);
    q.push('c', 1, 0);
    q.agingMsPerPriority = 0;
    expect(drain(q)).toEqual(['c', 'b']);
    expect(q.levelLengths()).toEqual([]);
  });

  it('keeps FIFO order within a level across many pushes, removals and compactions', () => {
    const q = new AgingPriorityQueue<number>(Number.POSITIVE_INFINITY);
    const handles = [];
    for (let i = 0; i < 5000; i++) handles.push(q.push(i, 0, i));
    for (let i = 0; i < 5000; i += 3) q.remove(handles[i]!);
    const out: number[] = [];
    for (let i = 0; i < 2000; i++) out.push(q.shift()!);
    for (let i = 5000; i < 6000; i++) q.push(i, 0, i);
    for (let v = q.shift(); v !== undefined; v = q.shift()) out.push(v);
    const expected = [...Array(6000).keys()].filter((i) => i >= 5000 || i % 3 !== 0);
    expect(out).toEqual(expected);
  });

  it('does not keep every entry it ever held while it never empties, with or without a filter', () => {
    // A standing queue (a worker free now and then, the queue never drained): each take leaves an
    // entry behind at the head. Reads from the head must skip and drop them, or every dispatch
    // rescans every task since the level last emptied (seen: a third of the main thread's time).
    for (const filter of [undefined, (n: number) => n > -2]) {
      const q = new AgingPriorityQueue<number>(100);
      q.push(-1, 0, 0);
      for (let i = 0; i < 10_000; i++) {
        q.push(i, 0, i);
        const head = q.peek(Number.NEGATIVE_INFINITY, filter)!;
        expect(head.item).toBe(i === 0 ? -1 : i - 1);
        q.take(head);
      }
      expect(q.length).toBe(1);
      expect(q.heldEntries).toBeLessThanOrEqual(1100);
    }
  });
});
