/**
 * The isolation benchmark's interleaved capacity: every target gets its slices in every position, the
 * rates follow each target's own speed, bad arguments are refused.
 */
import { describe, expect, it } from 'vitest';
import { interleavedCapacity, sliceOrder, type Target } from '../../bench/search-load.js';
import type { ThreadTimeSnapshot } from '../../bench/thread-time.js';

/**
 * A schedstat reader whose every call is 50 ms after the last, in which the main thread ran 50 ms,
 * worker 100 ran 40 ms and waited 2 ms, worker 101 ran 30 ms and waited 4 ms, and thread 102 ran 1 ms:
 * each slice (one call before it, one after) spans one such step.
 */
function steppingThreads(): () => ThreadTimeSnapshot {
  let k = 0;
  return () => {
    k++;
    const ms = 1e6;
    return {
      at: k * 50,
      threads: new Map([
        [process.pid, { runNs: k * 50 * ms, waitNs: 0 }],
        [100, { runNs: k * 40 * ms, waitNs: k * 2 * ms }],
        [101, { runNs: k * 30 * ms, waitNs: k * 4 * ms }],
        [102, { runNs: k * ms, waitNs: 0 }],
      ]),
    };
  };
}

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

  it('puts every target after every other within a cycle equally often, for two and three targets', () => {
    for (const n of [2, 3]) {
      const follows = new Map<string, number>();
      for (let c = 0; c < 2 * n; c++) {
        const order = sliceOrder(n, c);
        for (let k = 1; k < n; k++) {
          const pair = `${order[k - 1]}>${order[k]}`;
          follows.set(pair, (follows.get(pair) ?? 0) + 1);
        }
      }
      expect(follows.size).toBe(n * (n - 1));
      expect(new Set(follows.values()).size).toBe(1);
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
    // About 4x; a loaded machine's late timers pull it towards 1.
    expect(fast!.perSecond).toBeGreaterThan(1.5 * slow!.perSecond);
    // 8 slices in the orders AB, BA, BA, AB: A BB A B AA B, 5 switches of target.
    const switches = log.filter((n, i) => i > 0 && n !== log[i - 1]).length;
    expect(switches).toBe(5);
  });

  it("charges each slice's busiest threads, not the main one, to its target", async () => {
    const [a] = await interleavedCapacity([sleeper('a', 5)], 2, 200, 100, 0, steppingThreads());
    // Two slices of one 50 ms step each: workers 100 and 101 ran 70 ms and waited 6 ms per step.
    expect(a!.workerRunShare).toBeCloseTo(70 / 100, 9);
    expect(a!.workerWaitShare).toBeCloseTo(6 / 100, 9);
    expect(a!.cpuPerQueryMs).toBeCloseTo((2 * 70) / a!.done, 9);
  });

  it('gives NaN worker figures when fewer threads ran than the target has workers', async () => {
    const [a] = await interleavedCapacity([sleeper('a', 5)], 4, 100, 100, 0, steppingThreads());
    expect(a!.done).toBeGreaterThan(0);
    expect(a!.workerRunShare).toBeNaN();
    expect(a!.workerWaitShare).toBeNaN();
    expect(a!.cpuPerQueryMs).toBeNaN();
  });

  it('starts from the order that the offset names', async () => {
    const log: string[] = [];
    await interleavedCapacity([sleeper('a', 5, log), sleeper('b', 5, log)], 1, 50, 50, 1);
    expect(log[0]).toBe('b');
  });

  it('refuses no targets or a time that is not positive', async () => {
    await expect(interleavedCapacity([], 1, 100)).rejects.toThrow(RangeError);
    await expect(interleavedCapacity([sleeper('a', 1)], 1, 0)).rejects.toThrow(/msEach 0/);
    await expect(interleavedCapacity([sleeper('a', 1)], 1, 100, Number.NaN)).rejects.toThrow(/sliceMs NaN/);
  });
});
