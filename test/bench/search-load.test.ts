/**
 * The isolation benchmark's interleaved capacity: every target gets its slices in every position, the
 * rates follow each target's own speed, bad arguments are refused.
 */
import { describe, expect, it } from 'vitest';
import { interleavedCapacity, sliceOrder, type Target } from '../../bench/search-load.js';

/** A target whose expensive query takes `ms` of wall time (no worker, no CPU). */
const sleeper = (name: string, ms: number, log: string[] = []): Target => ({
  name,
  cheap: async () => {},
  expensive: () => {
    log.push(name);
    return new Promise((r) => setTimeout(r, ms));
  },
});

describe('sliceOrder', () => {
  it('puts every target in every position equally often over 2n cycles', () => {
    for (const n of [1, 2, 3, 4]) {
      const counts = Array.from({ length: n }, () => new Array(n).fill(0) as number[]);
      for (let c = 0; c < 2 * n; c++) {
        const order = sliceOrder(n, c);
        expect([...order].sort()).toEqual(Array.from({ length: n }, (_, k) => k));
        for (const [position, target] of order.entries()) counts[target]![position]!++;
      }
      for (const row of counts) expect(row).toEqual(new Array(n).fill(2));
    }
  });

  it('gives the six orders of three targets', () => {
    const orders = new Set(Array.from({ length: 6 }, (_, c) => sliceOrder(3, c).join('')));
    expect(orders.size).toBe(6);
  });

  it('takes any cycle number, negative ones too', () => {
    expect(sliceOrder(2, -1)).toEqual(sliceOrder(2, 3));
  });
});

describe('interleavedCapacity', () => {
  it('gives each target the same number of slices and a rate that follows its speed', async () => {
    const log: string[] = [];
    const [fast, slow] = await interleavedCapacity(
      [sleeper('fast', 5, log), sleeper('slow', 20, log)],
      1,
      400,
      100,
    );
    // 4 slices each of about 100 ms, 2 queries in flight: about 400/s and 100/s.
    expect(fast!.ms).toBeGreaterThanOrEqual(400);
    expect(slow!.ms).toBeGreaterThanOrEqual(400);
    expect(fast!.done).toBe(log.filter((n) => n === 'fast').length);
    expect(fast!.perSecond).toBeCloseTo((fast!.done * 1000) / fast!.ms, 6);
    expect(fast!.perSecond).toBeGreaterThan(2 * slow!.perSecond);
    // 8 slices in the orders AB, BA, BA, AB: A BB A B AA B, 5 switches of target.
    const switches = log.filter((n, i) => i > 0 && n !== log[i - 1]).length;
    expect(switches).toBe(5);
  });

  it('refuses no targets or a time that is not positive', async () => {
    await expect(interleavedCapacity([], 1, 100)).rejects.toThrow(RangeError);
    await expect(interleavedCapacity([sleeper('a', 1)], 1, 0)).rejects.toThrow(/msEach 0/);
    await expect(interleavedCapacity([sleeper('a', 1)], 1, 100, Number.NaN)).rejects.toThrow(/sliceMs NaN/);
  });
});
