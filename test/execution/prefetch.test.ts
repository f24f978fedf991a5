import { describe, expect, it } from 'vitest';
import { PrefetchPolicy } from '../../src/execution/prefetch.js';

describe('PrefetchPolicy', () => {
  it('prefetches nothing before two task ends have given an interval', () => {
    const p = new PrefetchPolicy(2, 1, 5);
    expect(p.tasksFor(0, true)).toBe(0);
    p.ended(0, 100);
    expect(p.tasksFor(0, true)).toBe(0);
    expect(p.intervalMs(0)).toBe(Number.POSITIVE_INFINITY);
  });

  it("prefetches while a lane's tasks end closer together than the bound, lane by lane", () => {
    const p = new PrefetchPolicy(2, 1, 5);
    for (let t = 0; t < 20; t++) p.ended(0, t * 0.5);
    expect(p.intervalMs(0)).toBeCloseTo(0.5, 5);
    expect(p.tasksFor(0, true)).toBe(1);
    expect(p.tasksFor(1, true)).toBe(0);
  });

  it('stops after a long gap, and again once tasks end close together', () => {
    const p = new PrefetchPolicy(1, 2, 5);
    for (let t = 0; t < 10; t++) p.ended(0, t);
    expect(p.tasksFor(0, true)).toBe(2);
    p.ended(0, 10_000);
    expect(p.tasksFor(0, true)).toBe(0);
    for (let i = 1; i <= 60 && p.tasksFor(0, true) === 0; i++) p.ended(0, 10_000 + i);
    expect(p.tasksFor(0, true)).toBe(2);
  });

  it('prefetches nothing in a lane short of workers, or with prefetchTasks 0', () => {
    const p = new PrefetchPolicy(1, 1, 5);
    const off = new PrefetchPolicy(1, 0, 5);
    for (let t = 0; t < 10; t++) {
      p.ended(0, t);
      off.ended(0, t);
    }
    expect(p.tasksFor(0, false)).toBe(0);
    expect(off.tasksFor(0, true)).toBe(0);
  });
});
