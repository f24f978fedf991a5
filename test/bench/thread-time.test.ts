/**
 * The isolation benchmark's per-thread figures: schedstat lines parsed, the busiest threads of an
 * interval found and summed, the main thread left out.
 */
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import {
  busiestThreads,
  parseSchedstat,
  type ThreadTimeSnapshot,
  threadTimes,
} from '../../bench/thread-time.js';

const snap = (at: number, entries: Array<[number, number, number]>): ThreadTimeSnapshot => ({
  at,
  threads: new Map(entries.map(([tid, runNs, waitNs]) => [tid, { runNs, waitNs }])),
});

describe('parseSchedstat', () => {
  it('reads run and wait ns from a schedstat line', () => {
    expect(parseSchedstat('123456789 2000 17\n')).toEqual({ runNs: 123456789, waitNs: 2000 });
  });

  it('refuses a line that is not three non-negative integers', () => {
    for (const line of ['', '1 2', '1 2 x', '-1 2 3', '1.5 2 3'])
      expect(parseSchedstat(line)).toBeUndefined();
  });
});

describe('busiestThreads', () => {
  it('sums the n threads that ran most in the interval, not the most in total', () => {
    const before = snap(0, [
      [1, 0, 0],
      [10, 9e9, 0], // ran a lot before, little in the interval
      [11, 0, 0],
      [12, 0, 0],
    ]);
    const after = snap(1000, [
      [1, 5e8, 0],
      [10, 9e9 + 1e6, 0],
      [11, 9e8, 1e8],
      [12, 8e8, 2e8],
    ]);
    const top = busiestThreads(before, after, 2, 1);
    expect(top).toEqual({ count: 2, runMs: 1700, waitMs: 300, wallMs: 1000 });
  });

  it('leaves out the excluded thread and threads missing from either snapshot', () => {
    const before = snap(0, [
      [1, 0, 0],
      [20, 0, 0],
    ]);
    const after = snap(500, [
      [1, 9e8, 0],
      [20, 1e8, 0],
      [21, 4e8, 0], // started during the interval
    ]);
    expect(busiestThreads(before, after, 3, 1)).toEqual({ count: 1, runMs: 100, waitMs: 0, wallMs: 500 });
  });
});

describe('threadTimes', () => {
  it.runIf(process.platform === 'linux')('charges a spinning worker thread its run time', async () => {
    const spin = `const end = Date.now() + 300; while (Date.now() < end) {} require('node:worker_threads').parentPort.postMessage('done');`;
    const before = threadTimes();
    const worker = new Worker(spin, { eval: true });
    // The worker's thread exists only after it starts: read it while it spins.
    await new Promise((r) => setTimeout(r, 50));
    const during = threadTimes();
    await new Promise((r) => worker.once('message', r));
    const after = threadTimes();
    await worker.terminate();
    expect(before.threads.size).toBeGreaterThan(0);
    // Between the two later snapshots the worker spun for most of 250 ms.
    const top = busiestThreads(during, after, 1, -1);
    expect(top.count).toBe(1);
    expect(top.runMs).toBeGreaterThan(100);
    expect(top.runMs).toBeLessThanOrEqual(top.wallMs + 10);
  });
});
