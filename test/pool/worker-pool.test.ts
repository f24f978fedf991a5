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

interface Blocked extends Slept {
  readonly threadId: number;
}

interface Handed {
  readonly slot: number;
  readonly taskId: number;
  readonly done: Promise<Blocked>;
}

/** Hands `pool` tasks of the sync engine, each in its own slot, freed when it settles unless kept. */
function handing(pool: WorkerPool): (body: Record<string, unknown>, keepSlot?: boolean) => Handed {
  const allocator = new SlotAllocator(4);
  let taskId = 0;
  return (body, keepSlot = false) => {
    const slot = allocator.acquire();
    const id = ++taskId;
    pool.slots.assign(slot, id);
    const outcome = pool.run({ taskId: id, slot, request: { indices: ['a'], body } }).then((o) => {
      if (!o.ok) throw new Error(o.error.message);
      return o.result as Blocked;
    });
    const release = (): void => {
      pool.slots.release(slot);
      allocator.release(slot);
    };
    return { slot, taskId: id, done: keepSlot ? outcome : outcome.finally(release) };
  };
}

/** Resolves once the task in `slot` has begun on a worker (its slot names the worker's thread). */
async function begun(pool: WorkerPool, slot: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (pool.slots.threadId(slot) === 0) {
    if (Date.now() > deadline) throw new Error(`the task in slot ${slot} did not begin`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Hands `pool` a task that blocks its worker `ms` and resolves once it has begun; `ended()` says whether it has ended. */
async function begunLong(
  pool: WorkerPool,
  run: ReturnType<typeof handing>,
  ms: number,
): Promise<Handed & { ended: () => boolean }> {
  const long = run({ blockMs: ms });
  await begun(pool, long.slot);
  let ended = false;
  void long.done.then(() => (ended = true));
  return { ...long, ended: () => ended };
}

/** Runs `body` with a pool from `startPool(maxRunning)` and its `handing` runner; closes the pool after. */
async function withPool(
  maxRunning: number | undefined,
  body: (pool: WorkerPool, run: ReturnType<typeof handing>) => Promise<void>,
): Promise<void> {
  const pool = await startPool(maxRunning);
  try {
    await body(pool, handing(pool));
  } finally {
    await pool.close();
  }
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

  it('pipelines a task handed over beyond maxRunning to a busy worker, one per worker, run after its current one', async () => {
    await withPool(undefined, async (pool, run) => {
      const first = [run({ blockMs: 80 }), run({ blockMs: 80 })];
      for (const t of first) await begun(pool, t.slot);
      const next = [run({ blockMs: 20 }), run({ blockMs: 20 })];
      // Both workers busy with begun tasks: each is given one more, none waits in piscina's queue.
      expect(pool.tasksPipelined).toBe(2);
      const [a, b] = await Promise.all(first.map((t) => t.done));
      const [c, d] = await Promise.all(next.map((t) => t.done));
      expect(new Set([c!.threadId, d!.threadId])).toEqual(new Set([a!.threadId, b!.threadId]));
      for (const later of [c!, d!]) {
        const before = [a!, b!].find((t) => t.threadId === later.threadId)!;
        expect(later.startedAt).toBeGreaterThanOrEqual(before.endedAt);
      }
      expect(pool.tasksStolen).toBe(0);
    });
  });

  it('moves a pipelined task not yet begun to a worker that goes idle, away from a long task', async () => {
    await withPool(undefined, async (pool, run) => {
      const long = await begunLong(pool, run, 1_500);
      // In one turn: the short task goes to the idle worker, which has not begun it, so the next one
      // can only be pipelined behind the long task.
      const short = run({ blockMs: 30 });
      const behind = run({ blockMs: 10 });
      expect(pool.tasksPipelined).toBe(1);
      const [s, p] = await Promise.all([short.done, behind.done]);
      expect(long.ended()).toBe(false);
      expect(pool.tasksStolen).toBe(1);
      expect(p!.threadId).toBe(s!.threadId);
      expect(p!.startedAt).toBeGreaterThanOrEqual(s!.endedAt);
      const l = await long.done;
      expect(l.threadId).not.toBe(p!.threadId);
    });
  });

  it('moves a pipelined task away from a long task to a busy worker whose shorter task just ended', async () => {
    await withPool(undefined, async (pool, run) => {
      const long = await begunLong(pool, run, 3_000);
      // The long task has run far longer than twice the short one by the time that ends.
      await new Promise((r) => setTimeout(r, 400));
      const short = run({ blockMs: 60 });
      const behind = run({ blockMs: 10 }); // pipelined behind the long task (the short one not begun)
      await begun(pool, short.slot);
      const after = run({ blockMs: 60 }); // pipelined behind the short one: that worker never idles
      expect(pool.tasksPipelined).toBe(2);
      await short.done;
      // Taken back as the short task ended, while its worker went on to the next: not idle.
      expect(pool.tasksStolen).toBe(1);
      const p = await behind.done;
      expect(long.ended()).toBe(false);
      const [s, a] = await Promise.all([short.done, after.done]);
      expect(p.threadId).toBe(s.threadId);
      expect(a.threadId).toBe(s.threadId);
      expect(p.startedAt).toBeGreaterThanOrEqual(a.endedAt);
      await long.done;
    });
  });

  it('lets a worker left idle by a task it found taken back take a task waiting behind a long one', async () => {
    await withPool(undefined, async (pool, run) => {
      const first = run({ blockMs: 600 });
      await begun(pool, first.slot);
      const short = run({ blockMs: 30 });
      const moved = run({ blockMs: 10 }); // pipelined behind the first, taken by the short one's worker
      await moved.done;
      expect(pool.tasksStolen).toBe(1);
      // The first's worker still holds the taken-back message behind the first task.
      const long = await begunLong(pool, run, 3_000);
      const waiting = run({ blockMs: 10 }); // pipelined behind the long task
      expect(pool.tasksPipelined).toBe(2);
      const [f, w] = await Promise.all([first.done, waiting.done]);
      expect(long.ended()).toBe(false);
      expect(pool.tasksStolen).toBe(2);
      expect(w!.threadId).toBe(f!.threadId);
      await Promise.all([short.done, long.done]);
    });
  });

  it('hands a pipelined task on when its worker is terminated for the task before it', async () => {
    await withPool(undefined, async (pool, run) => {
      const doomed = run({ blockMs: 5_000 }, true);
      await begun(pool, doomed.slot);
      const doomedThread = pool.slots.threadId(doomed.slot);
      const other = run({ blockMs: 100 });
      const behind = run({ blockMs: 10 });
      expect(pool.tasksPipelined).toBe(1);
      expect(pool.terminateWorkerOf(doomed.slot, doomed.taskId)).toBe(true);
      await expect(doomed.done).rejects.toThrow();
      const p = await behind.done;
      expect(p.threadId).not.toBe(doomedThread);
      await other.done;
    });
  });

  it('terminates nothing once the worker has begun the task pipelined after the one to cancel', async () => {
    await withPool(1, async (pool, run) => {
      const ended = run({ blockMs: 50 }, true);
      await begun(pool, ended.slot);
      const next = run({ blockMs: 300 });
      expect(pool.tasksPipelined).toBe(1);
      await begun(pool, next.slot);
      // The task to cancel has ended (its slot not yet freed): its worker now runs an innocent one.
      expect(pool.terminateWorkerOf(ended.slot, ended.taskId)).toBe(false);
      await ended.done;
      await expect(next.done).resolves.toMatchObject({ blocked: 300 });
      expect(pool.workersStarted).toBe(2);
    });
  });

  it('starts a task pipelined behind an asynchronous one only once that one has ended', async () => {
    await withPool(1, async (pool, run) => {
      const slow = run({ sleepMs: 100 });
      await begun(pool, slow.slot);
      const next = run({ blockMs: 10 });
      expect(pool.tasksPipelined).toBe(1);
      const [a, b] = await Promise.all([slow.done, next.done]);
      expect(b!.threadId).toBe(a!.threadId);
      expect(b!.startedAt).toBeGreaterThanOrEqual(a!.endedAt);
    });
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
