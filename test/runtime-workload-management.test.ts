/**
 * The runtime with sandbox search settings and concurrency caps, on the echo engine: the wall-clock
 * watchdog, the search timeout and its precedence, concurrency caps under load.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CancelledError, InvalidArgumentError } from '../src/errors.js';
import { createRuntime, type Runtime } from '../src/runtime.js';

const echoEngine = fileURLToPath(new URL('./fixtures/echo-engine.mjs', import.meta.url));
const INTERVAL_MS = 100;

describe('runtime: search settings and concurrency caps', () => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await createRuntime({
      engine: echoEngine,
      threads: 4,
      lanes: false,
      intervalMs: INTERVAL_MS,
      maxQueuedTasks: 1000,
      dataDir: mkdtempSync(path.join(tmpdir(), 'qs-wlm-')),
      sandboxes: {
        sandboxes: [
          {
            name: 'stalls',
            priority: 1,
            search_settings: { cancel_after_time_interval: '400ms' },
            selectionAttributes: [{ name: 'userPattern', value: 'stall_*' }],
          },
          {
            name: 'timed',
            priority: 2,
            search_settings: { timeout: '150ms' },
            selectionAttributes: [{ name: 'userPattern', value: 'timed_*' }],
          },
          {
            name: 'strict',
            priority: 3,
            search_settings: { timeout: '150ms', override_request_values: true },
            selectionAttributes: [{ name: 'userPattern', value: 'strict_*' }],
          },
          {
            name: 'strict-child',
            parent_id: 'strict',
            priority: 1,
            selectionAttributes: [{ name: 'userPattern', value: 'strict_child_*' }],
          },
          {
            name: 'capped',
            priority: 4,
            max_concurrent_tasks: 2,
            selectionAttributes: [{ name: 'userPattern', value: 'capped_*' }],
          },
          {
            name: 'per-user',
            priority: 5,
            max_concurrent_tasks_per_user: 1,
            selectionAttributes: [{ name: 'userPattern', value: 'pu_*' }],
          },
        ],
      },
    });
  });
  afterAll(async () => {
    await runtime.close();
  });

  it('cancels a task that awaits forever, using no CPU, within one interval of its cancel_after_time_interval', async () => {
    // Workers up first: their start-up is not what is measured.
    await Promise.all(Array.from({ length: 4 }, () => runtime.search({ index: 'alpha', body: { echo: 0 } })));
    const before = runtime.governorStats();
    // How late this process's timers ran meanwhile (a busy host): added to the bound, not to the limit.
    const lag = monitorEventLoopDelay({ resolution: 10 });
    lag.enable();
    const started = performance.now();
    const error = await runtime.search({ index: 'alpha', body: { stall: true }, user: 'stall_1' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const elapsedMs = performance.now() - started;
    lag.disable();
    const hostDelayMs = lag.max / 1e6;
    expect(error).toBeInstanceOf(CancelledError);
    const e = error as CancelledError;
    expect(e.type).toBe('task_cancelled_exception');
    expect(e.resource).toBe('time');
    expect(e.sandboxId).toBe('stalls');
    expect(e.message).toContain('search_settings.cancel_after_time_interval [400ms] of sandbox [stalls]');
    // The tick before the limit arms a timer for it; the harness sees the flag within its 25 ms poll
    // and gives the stalled handler 5 ms more: within one interval of the limit (on a quiet host,
    // 411-423 ms; a host that delays this process's timers adds that delay).
    expect(elapsedMs).toBeGreaterThanOrEqual(400);
    expect(elapsedMs).toBeLessThan(400 + INTERVAL_MS + hostDelayMs);
    const after = runtime.governorStats();
    expect(after.wallClockCancellations - before.wallClockCancellations).toBe(1);
    expect(after.softCancellations).toBe(before.softCancellations);
    const stats = runtime.sandboxStats().get('stalls')!;
    expect(stats.counters.wallClockCancellations).toBe(1);
    expect(stats.counters.cpu.cancellations + stats.counters.memory.cancellations).toBe(0);
    // The stalled handler's worker was replaced: the next search runs normally.
    await expect(
      runtime.search({ index: 'alpha', body: { echo: 1 }, user: 'stall_1' }),
    ).resolves.toMatchObject({
      echo: 1,
    });
  });

  it("cancels a cooperative task soft at its cancel-after, the request's own value when the sandbox does not override", async () => {
    const error = await runtime
      .search({ index: 'alpha', body: { sleepMs: 5000 }, user: 'timed_1', cancelAfterTimeInterval: '200ms' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as CancelledError).hard).toBe(false);
    expect((error as Error).message).toContain("the request's cancel_after_time_interval [200ms]");
  });

  it('returns partial results with timed_out: true under the sandbox timeout; a request value wins without override', async () => {
    const body = { collectItems: 40, itemMs: 10 };
    const capped = (await runtime.search({ index: 'alpha', body, user: 'timed_1' })) as {
      timed_out: boolean;
      items: number[];
      timeoutMs: number;
    };
    expect(capped.timed_out).toBe(true);
    expect(capped.timeoutMs).toBe(150);
    expect(capped.items.length).toBeGreaterThan(0);
    expect(capped.items.length).toBeLessThan(40);
    // The request asks for 10 s: it wins over the sandbox's 150 ms (override_request_values is false).
    const asked = (await runtime.search({
      index: 'alpha',
      body: { ...body, timeout: '10s' },
      user: 'timed_1',
    })) as {
      timed_out: boolean;
      items: number[];
      timeoutMs: number;
    };
    expect(asked).toMatchObject({ timed_out: false, timeoutMs: 10_000 });
    expect(asked.items).toHaveLength(40);
    expect(runtime.sandboxStats().get('timed')!.counters.timedOut).toBeGreaterThanOrEqual(1);
  });

  it('with override_request_values the sandbox timeout beats the request, also in a child that inherits it', async () => {
    const body = { collectItems: 40, itemMs: 10, timeout: '10s' };
    for (const user of ['strict_1', 'strict_child_1']) {
      const result = (await runtime.search({ index: 'alpha', body, user })) as {
        timed_out: boolean;
        timeoutMs: number;
      };
      expect(result).toMatchObject({ timed_out: true, timeoutMs: 150 });
    }
    // The URL parameter form (SearchRequest.timeout) is overridden the same way.
    const viaParameter = (await runtime.search({
      index: 'alpha',
      body: { collectItems: 2, itemMs: 1 },
      user: 'strict_1',
      timeout: '1m',
    })) as { timeoutMs: number };
    expect(viaParameter.timeoutMs).toBe(150);
  });

  it('applies search settings changed at runtime: to the next request, and a cancel-after to running tasks', async () => {
    const timed = runtime.sandboxes().find((s) => s.name === 'timed')!;
    await runtime.sandboxRegistry.update(timed.id, { search_settings: { timeout: '-1' } });
    const untimed = (await runtime.search({
      index: 'alpha',
      body: { collectItems: 20, itemMs: 10 },
      user: 'timed_1',
    })) as {
      timed_out: boolean;
      timeoutMs: number | null;
    };
    expect(untimed).toMatchObject({ timed_out: false, timeoutMs: null });
    // A task already running gets a cancel-after set after it started.
    const started = performance.now();
    const running = runtime
      .search({ index: 'alpha', body: { sleepMs: 5000 }, user: 'timed_1' })
      .catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    await runtime.sandboxRegistry.update(timed.id, {
      search_settings: { timeout: '150ms', cancel_after_time_interval: '300ms' },
    });
    const error = await running;
    const elapsedMs = performance.now() - started;
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as Error).message).toContain(
      'search_settings.cancel_after_time_interval [300ms] of sandbox [timed]',
    );
    expect(elapsedMs).toBeGreaterThanOrEqual(300);
    expect(elapsedMs).toBeLessThan(300 + INTERVAL_MS + 200);
    await runtime.sandboxRegistry.update(timed.id, { search_settings: { cancel_after_time_interval: null } });
  });

  it('refuses a bad request timeout naming the parameter and the value', async () => {
    await expect(runtime.search({ index: 'alpha', body: { timeout: '5 parsecs' } })).rejects.toThrow(
      InvalidArgumentError,
    );
    await expect(
      runtime.search({ index: 'alpha', body: {}, cancelAfterTimeInterval: '1.5s' }),
    ).rejects.toThrow(/cancel_after_time_interval .*fractional.*received "1.5s"/);
  });

  it('holds a cap of 2 concurrent tasks exactly under 20 concurrent requests: the rest wait, none is refused', async () => {
    const waits: number[] = [];
    const probe = setInterval(
      () => waits.push(runtime.sandboxStats().get('capped')!.concurrency.waitingForCap),
      20,
    );
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        runtime.search({ index: 'alpha', body: { sleepMs: 60 }, user: `capped_${i}` }),
      ),
    );
    clearInterval(probe);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(20);
    const stats = runtime.sandboxStats().get('capped')!;
    expect(stats.concurrency.peak).toBe(2);
    expect(stats.concurrency.running).toBe(0);
    expect(stats.counters.rejections).toBe(0);
    expect(stats.counters.completions).toBe(20);
    // The stats showed tasks waiting for the cap while the others ran.
    expect(Math.max(...waits)).toBeGreaterThanOrEqual(10);
  });

  it("a task held back by its cap does not hold back other sandboxes' tasks queued behind it", async () => {
    // Fill the capped sandbox's two places with long tasks and queue more of its tasks behind them.
    const capped = Array.from({ length: 6 }, (_, i) =>
      runtime.search({ index: 'alpha', body: { sleepMs: 600 }, user: `capped_${i}` }),
    );
    await new Promise((r) => setTimeout(r, 50));
    expect(runtime.sandboxStats().get('capped')!.concurrency.waitingForCap).toBe(4);
    // The root's tasks arrive after the capped ones, in the same lane and priority level... they run now.
    const started = performance.now();
    await runtime.search({ index: 'alpha', body: { sleepMs: 10 } });
    await runtime.search({ index: 'alpha', body: { sleepMs: 10 } });
    expect(performance.now() - started).toBeLessThan(500);
    await Promise.all(capped);
  });

  it('holds one user at the per-user cap while another user of the sandbox runs', async () => {
    const t0 = performance.now();
    const ends: Record<string, number[]> = { pu_a: [], pu_b: [] };
    await Promise.all(
      ['pu_a', 'pu_a', 'pu_b'].map((user) =>
        runtime
          .search({ index: 'alpha', body: { sleepMs: 150 }, user })
          .then(() => ends[user]!.push(performance.now() - t0)),
      ),
    );
    // pu_a's two tasks ran one after the other; pu_b's beside the first.
    expect(Math.max(...ends['pu_a']!)).toBeGreaterThanOrEqual(300);
    expect(ends['pu_b']![0]!).toBeLessThan(290);
    expect(runtime.sandboxStats().get('per-user')!.concurrency.peak).toBe(2);
  });

  it("takes the node-mode words enforced and OpenSearch's enabled at setEnforcement", () => {
    runtime.setEnforcement('monitor_only');
    expect(runtime.nodeStats().enforcement).toBe('monitor_only');
    runtime.setEnforcement('enforced');
    expect(runtime.nodeStats().enforcement).toBe('enabled');
    expect(() => runtime.setEnforcement('on' as 'enforced')).toThrow(InvalidArgumentError);
  });

  it('applies a cap changed at runtime to the waiting tasks at once', async () => {
    const id = runtime.sandboxes().find((s) => s.name === 'capped')!.id;
    await runtime.sandboxRegistry.update(id, { max_concurrent_tasks: 1 });
    const many = Array.from({ length: 4 }, (_, i) =>
      runtime.search({ index: 'alpha', body: { sleepMs: 300 }, user: `capped_${i}` }),
    );
    await new Promise((r) => setTimeout(r, 50));
    expect(runtime.sandboxStats().get('capped')!.concurrency.running).toBe(1);
    await runtime.sandboxRegistry.update(id, { max_concurrent_tasks: null });
    expect(runtime.sandboxStats().get('capped')!.concurrency.running).toBe(4);
    await Promise.all(many);
  });
});

describe('runtime: prefetch', () => {
  /** Runs `count` echo searches at once; returns how many were ok and the most tasks the lane held at once. */
  async function flood(runtime: Runtime, count: number) {
    let maxBusy = 0;
    let maxPrefetch = 0;
    const results = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        runtime.search({ index: 'alpha', body: { echo: i } }).then(
          () => {
            const lane = runtime.schedulerStats().lanes[0]!;
            maxBusy = Math.max(maxBusy, lane.busy);
            maxPrefetch = Math.max(maxPrefetch, lane.prefetch);
            return true;
          },
          () => false,
        ),
      ),
    );
    return { ok: results.filter(Boolean).length, maxBusy, maxPrefetch };
  }

  /** Runs `body` with a runtime of the echo engine, one lane (lanes off) with one spare; closes it after. */
  async function withEchoLane(
    options: Parameters<typeof createRuntime>[0],
    body: (runtime: Runtime) => Promise<void>,
  ): Promise<void> {
    const runtime = await createRuntime({ engine: echoEngine, spareWorkers: 1, lanes: false, ...options });
    try {
      await body(runtime);
    } finally {
      await runtime.close();
    }
  }

  it('hands a lane of short tasks one task beyond its worker, loses none, and never uses the spare for it', async () => {
    await withEchoLane({ threads: 1, prefetchBelowMs: 50 }, async (runtime) => {
      const r = await flood(runtime, 300);
      expect(r).toEqual({ ok: 300, maxBusy: 2, maxPrefetch: 1 });
      expect(runtime.nodeStats().lanes[0]).toMatchObject({ workers: 1, spareWorkers: 1 });
      // Idle for longer than prefetchBelowMs: the lane no longer prefetches, and its stats say so.
      await new Promise((r) => setTimeout(r, 120));
      expect(runtime.schedulerStats().lanes[0]!.prefetch).toBe(0);
    });
  });

  it('prefetches per worker: a lane of 2 hands 2 beyond its workers, pipelined to them, and loses none', async () => {
    await withEchoLane({ threads: 2, prefetchBelowMs: 50 }, async (runtime) => {
      expect(await flood(runtime, 600)).toEqual({ ok: 600, maxBusy: 4, maxPrefetch: 2 });
      const lane = runtime.nodeStats().lanes[0]!;
      expect(lane.pipelinedTasks).toBeGreaterThan(0);
      expect(lane.stolenTasks).toBeLessThanOrEqual(lane.pipelinedTasks);
    });
  });

  it('with prefetchTasks 0 hands a lane no more tasks than its workers', async () => {
    await withEchoLane({ threads: 1, prefetchTasks: 0 }, async (runtime) => {
      expect(await flood(runtime, 300)).toEqual({ ok: 300, maxBusy: 1, maxPrefetch: 0 });
    });
  });
});

describe('runtime: prefetch and a node that queues nothing', () => {
  it('with maxQueuedTasks 0 refuses a task no worker takes at once, even after a run of short tasks', async () => {
    const runtime = await createRuntime({
      engine: echoEngine,
      threads: 1,
      spareWorkers: 0,
      lanes: false,
      maxQueuedTasks: 0,
      prefetchBelowMs: 60_000,
    });
    try {
      for (let i = 0; i < 20; i++) await runtime.search({ index: 'alpha', body: { echo: i } });
      const long = runtime.search({ index: 'alpha', body: { sleepMs: 300 } });
      await expect(runtime.search({ index: 'alpha', body: { echo: 'late' } })).rejects.toMatchObject({
        code: 'QS_REJECTED',
      });
      await long;
      expect(runtime.schedulerStats().lanes[0]!.prefetch).toBe(0);
    } finally {
      await runtime.close();
    }
  });
});
