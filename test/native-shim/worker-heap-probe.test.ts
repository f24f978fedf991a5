import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { WorkerHeapProbe } from '../../native-shim/index.js';

describe('WorkerHeapProbe', () => {
  it("reads each busy worker's own heap by threadId, whatever order the inspector attached them in", async () => {
    const probe = new WorkerHeapProbe();
    const spin = (mb: number) =>
      new Worker(
        `const keep = []; for (let i = 0; i < ${mb}; i++) keep.push(new Array(128 * 1024).fill(i));
         require('worker_threads').parentPort.postMessage('ready');
         const end = Date.now() + 3000; while (Date.now() < end) {}`,
        { eval: true },
      );
    const workers = [spin(1), spin(96), spin(1)];
    try {
      await Promise.all(workers.map((w) => new Promise((r) => w.once('message', r))));
      const heaps = await Promise.all(workers.map((w) => probe.heapUsedBytes(w.threadId, 500)));
      const mb = heaps.map((b) => (b ?? 0) / 1048576);
      // The workers are stuck in a synchronous loop and still answer.
      expect(mb[1]).toBeGreaterThan(80);
      expect(mb[0]).toBeLessThan(40);
      expect(mb[2]).toBeLessThan(40);
    } finally {
      await Promise.all(workers.map((w) => w.terminate()));
      probe.close();
    }
  });

  it('answers undefined for a thread it does not follow, without waiting', async () => {
    const probe = new WorkerHeapProbe();
    const started = performance.now();
    expect(await probe.heapUsedBytes(987654, 1000)).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(500); // well under the 1000 ms it could wait
    probe.close();
  });
});
