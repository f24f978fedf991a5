import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SlotAllocator } from '../../src/pool/task-slots.js';
import type { TaskOutcome } from '../../src/pool/task-envelope.js';
import { WorkerPool } from '../../src/pool/worker-pool.js';

const syncEngine = pathToFileURL(new URL('../fixtures/sync-engine.mjs', import.meta.url).pathname).href;

interface Slept {
  readonly startedAt: number;
  readonly endedAt: number;
}

describe('WorkerPool', () => {
  it('runs at most maxRunning tasks at once, the spare idle, and starts a task handed over beyond it on the worker that frees', async () => {
    const pool = await WorkerPool.start({
      engineUrl: syncEngine,
      engineOptions: {},
      cacheDir: '/tmp',
      threads: 2,
      maxRunning: 1,
      workerHeapMb: 128,
      slotCount: 4,
      startTimeoutMs: 20_000,
    });
    const allocator = new SlotAllocator(4);
    let taskId = 0;
    const run = async (sleepMs: number): Promise<Slept> => {
      const slot = allocator.acquire();
      const id = ++taskId;
      pool.slots.assign(slot, id);
      try {
        const outcome: TaskOutcome = await pool.run({
          taskId: id,
          slot,
          request: { indices: ['a'], body: { sleepMs } },
        });
        if (!outcome.ok) throw new Error(outcome.error.message);
        return outcome.result as Slept;
      } finally {
        pool.slots.release(slot);
        allocator.release(slot);
      }
    };
    try {
      expect(pool.maxRunning).toBe(1);
      const [a, b, c] = await Promise.all([run(60), run(60), run(60)]);
      // One at a time, in the order handed over, though a second worker sat idle.
      expect(b!.startedAt).toBeGreaterThanOrEqual(a!.endedAt);
      expect(c!.startedAt).toBeGreaterThanOrEqual(b!.endedAt);
    } finally {
      await pool.close();
    }
  });
});
