import { pathToFileURL } from 'node:url';
import { Piscina } from 'piscina';
import { describe, expect, it } from 'vitest';
import { SlotAllocator } from '../../src/pool/task-slots.js';
import type { TaskOutcome } from '../../src/pool/task-envelope.js';
import { pinWorkerView, WorkerPool } from '../../src/pool/worker-pool.js';

const syncEngine = pathToFileURL(new URL('../fixtures/sync-engine.mjs', import.meta.url).pathname).href;
const piscinaEcho = new URL('../fixtures/piscina-echo.mjs', import.meta.url).pathname;

interface Slept {
  readonly startedAt: number;
  readonly endedAt: number;
}

/** A pool of 2 workers of the sync engine, 4 task slots. */
function startPool(maxRunning?: number): Promise<WorkerPool> {
  return WorkerPool.start({
    engineUrl: syncEngine,
    engineOptions: {},
    cacheDir: '/tmp',
    threads: 2,
    ...(maxRunning === undefined ? {} : { maxRunning }),
    workerHeapMb: 128,
    slotCount: 4,
    startTimeoutMs: 20_000,
  });
}

describe('WorkerPool', () => {
  it('runs at most maxRunning tasks at once, the spare idle, and starts a task handed over beyond it on the worker that frees', async () => {
    const pool = await startPool(1);
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

  // The pinned views are read live: the maxRunning test above fails if currentUsage were a snapshot.
  it("pins every worker's piscina view, a replacement's too", async () => {
    const pool = await startPool();
    try {
      // piscina 5.x: a failure here means its worker view changed shape and the cache no longer applies.
      expect(pool.workerViewsPinned).toBe(2);
      pool.slots.assign(0, 1);
      const ran = pool.run({ taskId: 1, slot: 0, request: { indices: ['a'], body: { sleepMs: 5_000 } } });
      const deadline = Date.now() + 10_000;
      while (pool.slots.threadId(0) === 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10));
      expect(pool.terminateWorkerOf(0, 1)).toBe(true);
      await expect(ran).rejects.toThrow();
      while (pool.workersStarted < 3 && Date.now() < deadline + 10_000)
        await new Promise((r) => setTimeout(r, 10));
      expect(pool.workersStarted).toBe(3);
      expect(pool.workerViewsPinned).toBe(3);
    } finally {
      await pool.close();
    }
  });

  it('leaves a view of another shape as it is', () => {
    const getter = {
      get interface() {
        return 'piscina';
      },
    };
    class Info {
      postTask(): void {}
      get interface(): string {
        return 'piscina';
      }
    }
    const info = new Info();
    const view = { [Symbol('kWorkerData')]: info };
    expect(pinWorkerView({})).toBe(false);
    expect(pinWorkerView({ [Symbol('a')]: info, [Symbol('b')]: info })).toBe(false);
    expect(pinWorkerView({ [Symbol('x')]: { interface: 1 } })).toBe(false);
    expect(pinWorkerView({ [Symbol('x')]: Object.assign(Object.create(getter), { postTask() {} }) })).toBe(
      true,
    );
    expect(pinWorkerView({ [Symbol('x')]: { postTask() {} } })).toBe(false);
    expect(info.interface).toBe('piscina');
    expect(pinWorkerView(view)).toBe(true);
    expect(info.interface).toBe(view);
    expect(pinWorkerView(view)).toBe(true);
  });

  it("makes piscina's balancer see one view per worker once pinned, a different one for each worker", async () => {
    const seen: object[][] = [];
    const pool = new Piscina({
      filename: piscinaEcho,
      minThreads: 2,
      maxThreads: 2,
      loadBalancer: (_task, workers) => {
        seen.push([...workers]);
        return workers.find((w) => w.currentUsage === 0) ?? null;
      },
    });
    let pinned = 0;
    pool.on('workerCreate', (view: object) => {
      if (pinWorkerView(view)) pinned++;
    });
    try {
      await Promise.all(Array.from({ length: 4 }, (_, i) => pool.run(i)));
      while (pinned < 2) await new Promise((r) => setTimeout(r, 10));
      seen.length = 0;
      for (let round = 0; round < 20; round++) await Promise.all([pool.run(round), pool.run(round)]);
      const views = new Set(seen.flat());
      // Fails if piscina stops reading the pinned view (a new object per pick again).
      expect(views.size).toBe(2);
      const ids = new Set([...views].map((v) => (v as { id: number }).id));
      expect(ids.size).toBe(2);
    } finally {
      await pool.destroy();
    }
  });
});
