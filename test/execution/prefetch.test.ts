import { describe, expect, it } from 'vitest';
import { PrefetchPolicy } from '../../src/execution/prefetch.js';

describe('PrefetchPolicy', () => {
  it('prefetches nothing before two task ends have given an interval', () => {
    const p = new PrefetchPolicy(2, 1, 5);
    expect(p.tasksFor(0, true, 0)).toBe(0);
    p.ended(0, 100);
    expect(p.tasksFor(0, true, 100.1)).toBe(0);
    expect(p.intervalMs(0)).toBe(Number.POSITIVE_INFINITY);
  });

  it("prefetches while a lane's tasks end closer together than the bound, lane by lane", () => {
    const p = new PrefetchPolicy(2, 1, 5);
    for (let t = 0; t < 20; t++) p.ended(0, t * 0.5);
    expect(p.intervalMs(0)).toBeCloseTo(0.5, 5);
    expect(p.tasksFor(0, true, 9.6)).toBe(1);
    expect(p.tasksFor(1, true, 9.6)).toBe(0);
  });

  it('stops once the last end is older than the bound (every worker on a long task), whatever the average', () => {
    const p = new PrefetchPolicy(1, 1, 5);
    for (let t = 0; t < 20; t++) p.ended(0, t);
    expect(p.tasksFor(0, true, 19.5)).toBe(1);
    expect(p.tasksFor(0, true, 24)).toBe(0);
    expect(p.tasksFor(0, true, 10_000)).toBe(0);
  });

  it('stops after a long gap, and prefetches again once tasks end close together', () => {
    const p = new PrefetchPolicy(1, 2, 5);
    for (let t = 0; t < 10; t++) p.ended(0, t);
    expect(p.tasksFor(0, true, 9)).toBe(2);
    p.ended(0, 10_000);
    expect(p.tasksFor(0, true, 10_000)).toBe(0);
    let now = 10_000;
    for (let i = 0; i < 60 && p.tasksFor(0, true, now) === 0; i++) {
      now += 1;
      p.ended(0, now);
    }
    expect(p.tasksFor(0, true, now)).toBe(2);
  });

  it('prefetches nothing in a lane short of workers, or with prefetchTasks 0', () => {
    const p = new PrefetchPolicy(1, 1, 5);
    const off = new PrefetchPolicy(1, 0, 5);
    for (let t = 0; t < 10; t++) {
      p.ended(0, t);
      off.ended(0, t);
    }
    expect(p.tasksFor(0, false, 9)).toBe(0);
    expect(off.tasksFor(0, true, 9)).toBe(0);
  });
});
