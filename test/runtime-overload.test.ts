import diagnostics_channel from 'node:diagnostics_channel';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChannelName, type TaskEndedEvent, type TaskRejectedEvent } from '../src/diagnostics.js';
import {
  AbortedError,
  ErrorCode,
  InvalidArgumentError,
  RejectedError,
  TimedOutError,
} from '../src/errors.js';
import { createRuntime, type Runtime, type TaskEndEvent } from '../src/runtime.js';

const echoEngine = fileURLToPath(new URL('./fixtures/echo-engine.mjs', import.meta.url));

const sandboxFile = {
  sandboxes: [
    { _id: '_root', priority: 10 },
    {
      name: 'team',
      priority: 5,
      max_queue_wait: '400ms',
      selectionAttributes: [{ name: 'userPattern', value: 'team_*' }],
    },
    {
      name: 'kid',
      parent_id: 'team',
      priority: 6,
      selectionAttributes: [{ name: 'userPattern', value: 'kid_*' }],
    },
  ],
};

/** What a promise settled with, and when (ms after `since`). */
async function settle(
  p: Promise<unknown>,
  since: number,
): Promise<{ value?: unknown; error?: unknown; ms: number }> {
  try {
    const value = await p;
    return { value, ms: performance.now() - since };
  } catch (error) {
    return { error, ms: performance.now() - since };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('runtime under overload: queue-wait bounds and callers that give up', () => {
  let runtime: Runtime;
  const ended: TaskEndEvent[] = [];
  beforeAll(async () => {
    runtime = await createRuntime({
      engine: echoEngine,
      // One worker for every priority, so that one long task makes the others wait.
      lanes: false,
      threads: 1,
      spareWorkers: 1,
      sandboxes: sandboxFile,
      maxQueueWaitMs: 300,
      // The bounds alone here: controlled delay (off by default) has its own tests (scheduler); no duress.
      duressShedding: false,
      dataDir: mkdtempSync(path.join(tmpdir(), 'qs-overload-')),
      onTaskEnd: (e) => ended.push(e),
    });
  });
  afterAll(async () => {
    await runtime.close();
  });

  /** Keeps the only worker busy for `ms` (cooperative: it stops at once when cancelled). */
  const occupy = (ms: number) => runtime.search({ index: 'alpha', body: { sleepMs: ms }, user: 'occupier' });

  it("rejects a task past its queue-wait bound with 429 queue_wait naming the wait: the node's default, the sandbox's, an inherited one, a smaller request timeout", async () => {
    const before = ended.length;
    const busy = occupy(1200);
    await sleep(20);
    const t0 = performance.now();
    const results = await Promise.all([
      settle(runtime.search({ index: 'alpha', body: { echo: 'root' }, user: 'x' }), t0),
      settle(
        runtime.search({ index: 'alpha', body: { echo: 'body-timeout', timeout: '100ms' }, user: 'x' }),
        t0,
      ),
      settle(runtime.search({ index: 'alpha', body: { echo: 'numeric', timeout: '150ms' }, user: 'x' }), t0),
      settle(
        runtime.search({ index: 'alpha', body: { echo: 'larger-timeout', timeout: '10s' }, user: 'x' }),
        t0,
      ),
      settle(runtime.search({ index: 'alpha', body: { echo: 'team' }, user: 'team_1' }), t0),
      settle(runtime.search({ index: 'alpha', body: { echo: 'kid' }, user: 'kid_1' }), t0),
    ]);
    await busy;
    const expected: Array<[number, string]> = [
      [300, "past its bound of 300 ms (the node's default (maxQueueWaitMs))"],
      [100, "past its bound of 100 ms (the request's timeout)"],
      [150, "past its bound of 150 ms (the request's timeout)"],
      [300, "past its bound of 300 ms (the node's default (maxQueueWaitMs))"],
      [400, "past its bound of 400 ms (sandbox [team]'s max_queue_wait)"],
      [400, 'past its bound of 400 ms (max_queue_wait of [team], inherited by [kid])'],
    ];
    results.forEach((r, i) => {
      const [bound, text] = expected[i]!;
      expect(r.error, `request ${i}`).toBeInstanceOf(RejectedError);
      const e = r.error as RejectedError;
      expect(e.reason).toBe('queue_wait');
      expect(e.resource).toBe('queue');
      expect(e.message).toContain(text);
      // At its bound, not when the worker frees (1,200 ms): a busy machine may add some delay.
      expect(r.ms).toBeGreaterThanOrEqual(bound - 5);
      expect(r.ms).toBeLessThan(bound + 500);
    });
    // None of them reached a worker: only the occupier ran.
    await sleep(50);
    expect(ended.slice(before).map((e) => [e.sandboxId, e.outcome])).toEqual([['_root', 'completed']]);
    expect(runtime.sandboxStats().get('team')!.counters.queueWaitRejections).toBe(1);
  });

  it('takes a max_queue_wait changed at runtime through the sandbox registry, and null to inherit again', async () => {
    await runtime.sandboxRegistry.update('team', { max_queue_wait: '50ms' });
    let busy = occupy(600);
    await sleep(20);
    let t0 = performance.now();
    let kid = await settle(runtime.search({ index: 'alpha', body: {}, user: 'kid_2' }), t0);
    expect((kid.error as RejectedError).message).toContain(
      'past its bound of 50 ms (max_queue_wait of [team], inherited by [kid])',
    );
    expect(kid.ms).toBeLessThan(450);
    await busy;
    await runtime.sandboxRegistry.update('team', { max_queue_wait: null });
    busy = occupy(600);
    await sleep(20);
    t0 = performance.now();
    kid = await settle(runtime.search({ index: 'alpha', body: {}, user: 'kid_3' }), t0);
    expect((kid.error as RejectedError).message).toContain(
      "past its bound of 300 ms (the node's default (maxQueueWaitMs))",
    );
    await busy;
    await expect(runtime.sandboxRegistry.update('team', { max_queue_wait: '2 minutes' })).rejects.toThrow(
      'max_queue_wait must be a time value such as "5s" or "500ms" (whole milliseconds, 1ms to 1d), or -1 for no bound; received "2 minutes"',
    );
  });

  it('a caller that aborts while its task is queued gets QS_ABORTED at once, and the task never runs', async () => {
    const busy = occupy(500);
    await sleep(20);
    const controller = new AbortController();
    const t0 = performance.now();
    const call = settle(
      runtime.search({ index: 'alpha', body: { echo: 'never' }, user: 'x' }, { signal: controller.signal }),
      t0,
    );
    await sleep(50);
    expect(runtime.nodeStats().queued).toBe(1);
    const abortedAt = performance.now();
    controller.abort();
    const r = await call;
    expect(r.error).toBeInstanceOf(AbortedError);
    expect((r.error as AbortedError).code).toBe(ErrorCode.ABORTED);
    expect((r.error as AbortedError).queued).toBe(true);
    expect(performance.now() - abortedAt).toBeLessThan(50);
    expect(runtime.nodeStats().queued).toBe(0);
    const before = ended.length;
    await busy;
    await sleep(50);
    // Only the occupier ended since: the aborted task never reached the worker.
    expect(ended.slice(before).map((e) => e.sandboxId)).toEqual(['_root']);
    expect(runtime.sandboxStats().get('_root')!.counters.aborted).toBeGreaterThanOrEqual(1);
    expect(runtime.schedulerStats().priorities.reduce((n, p) => n + p.removed, 0)).toBe(1);
  });

  it('a caller that aborts while its task runs gets QS_ABORTED at once, and the task is cancelled softly', async () => {
    const controller = new AbortController();
    const call = runtime.search(
      { index: 'alpha', body: { sleepMs: 5000 }, user: 'x' },
      { signal: controller.signal },
    );
    await sleep(100);
    expect(runtime.nodeStats().running).toBe(1);
    const before = ended.length;
    const t0 = performance.now();
    controller.abort();
    const r = await settle(call, t0);
    expect(r.error).toBeInstanceOf(AbortedError);
    expect((r.error as AbortedError).queued).toBe(false);
    expect(r.ms).toBeLessThan(50);
    // The worker sees its signal within its poll (25 ms) and stops: long before the 5 s sleep.
    for (let i = 0; i < 100 && ended.length === before; i++) await sleep(20);
    expect(ended.slice(before)).toMatchObject([
      {
        sandboxId: '_root',
        outcome: 'cancelled',
        ran: true,
        cancellation: { hard: false, reason: 'aborted' },
        errorCode: 'QS_ABORTED',
      },
    ]);
    expect(performance.now() - t0).toBeLessThan(1500);
  });

  it('terminates the worker of an uncooperative task whose caller gave up, after the grace period', async () => {
    const started = runtime.nodeStats().workersStarted;
    const controller = new AbortController();
    const call = runtime.search(
      { index: 'alpha', body: { spinWallMs: 4000 }, user: 'x' },
      { signal: controller.signal },
    );
    await sleep(100);
    const before = ended.length;
    const t0 = performance.now();
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(AbortedError);
    for (let i = 0; i < 150 && ended.length === before; i++) await sleep(20);
    expect(ended.slice(before)).toMatchObject([
      { outcome: 'cancelled', cancellation: { hard: true, reason: 'aborted' } },
    ]);
    // Grace: 2 intervals of 100 ms; well before the 4 s spin ends.
    expect(performance.now() - t0).toBeLessThan(2500);
    for (let i = 0; i < 200 && runtime.nodeStats().workersStarted === started; i++) await sleep(20);
    expect(runtime.nodeStats().workersStarted).toBe(started + 1);
    // The next search runs (on the spare or the replacement).
    await expect(
      runtime.search({ index: 'alpha', body: { echo: 'after' }, user: 'x' }),
    ).resolves.toMatchObject({ echo: 'after' });
  });

  it('times a call out with QS_TIMED_OUT after timeoutMs, queued or running', async () => {
    const busy = occupy(700);
    await sleep(20);
    const t0 = performance.now();
    const queued = await settle(
      runtime.search({ index: 'alpha', body: {}, user: 'x' }, { timeoutMs: 120 }),
      t0,
    );
    expect(queued.error).toBeInstanceOf(TimedOutError);
    expect(queued.error).toMatchObject({ code: 'QS_TIMED_OUT', timeoutMs: 120, queued: true });
    expect(queued.ms).toBeGreaterThanOrEqual(115);
    expect(queued.ms).toBeLessThan(600);
    await busy;
    const running = await settle(
      runtime.search({ index: 'alpha', body: { sleepMs: 3000 }, user: 'x' }, { timeoutMs: 150 }),
      performance.now(),
    );
    expect(running.error).toMatchObject({ code: 'QS_TIMED_OUT', queued: false });
    expect(runtime.sandboxStats().get('_root')!.counters.callTimeouts).toBe(2);
  });

  it('tells the events of a caller that gave up while queued and of a task past its queue-wait bound', async () => {
    const endedEvents: TaskEndedEvent[] = [];
    const rejectedEvents: TaskRejectedEvent[] = [];
    const onEnded = (m: unknown) => endedEvents.push(m as TaskEndedEvent);
    const onRejected = (m: unknown) => rejectedEvents.push(m as TaskRejectedEvent);
    diagnostics_channel.subscribe(ChannelName.TASK_ENDED, onEnded);
    diagnostics_channel.subscribe(ChannelName.TASK_REJECTED, onRejected);
    try {
      const busy = occupy(700);
      await sleep(20);
      const controller = new AbortController();
      const aborted = settle(
        runtime.search({ index: 'alpha', body: {}, user: 'x' }, { signal: controller.signal }),
        0,
      );
      // The node's default bound (300 ms) passes while the occupier runs.
      const late = settle(runtime.search({ index: 'alpha', body: {}, user: 'x' }), 0);
      await sleep(50);
      controller.abort();
      expect((await aborted).error).toBeInstanceOf(AbortedError);
      expect((await late).error).toMatchObject({ reason: 'queue_wait' });
      await busy;
      const gaveUp = endedEvents.filter((e) => e.errorCode === 'QS_ABORTED');
      expect(gaveUp).toMatchObject([
        {
          sandboxId: '_root',
          ran: false,
          outcome: 'cancelled',
          cancellation: { hard: false, reason: 'aborted', breachedSandboxId: '_root' },
          runMs: 0,
        },
      ]);
      expect(rejectedEvents).toMatchObject([
        {
          sandboxId: '_root',
          reason: 'queue',
          queueReason: 'queue_wait',
          rejectionReason: 'queue_wait',
          queued: true,
        },
      ]);
    } finally {
      diagnostics_channel.unsubscribe(ChannelName.TASK_ENDED, onEnded);
      diagnostics_channel.unsubscribe(ChannelName.TASK_REJECTED, onRejected);
    }
  });

  it('refuses an already aborted signal and bad call options before queueing anything', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(
      runtime.search({ index: 'alpha', body: {} }, { signal: controller.signal }),
    ).rejects.toBeInstanceOf(AbortedError);
    await expect(runtime.search({ index: 'alpha', body: {} }, { timeoutMs: -5 })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    await expect(runtime.search({ index: 'alpha', body: { timeout: 'later' } })).rejects.toThrow(
      'timeout must be a time value with a unit',
    );
    expect(runtime.nodeStats().queued).toBe(0);
  });
});

describe('runtime under overload: a lane whose workers are all being replaced', () => {
  let runtime: Runtime;
  const ended: TaskEndEvent[] = [];
  beforeAll(async () => {
    runtime = await createRuntime({
      engine: echoEngine,
      // Each worker takes 2 s to load (an engine loading a large index), and there is no spare: while
      // the one worker's replacement loads, the lane has no live worker at all.
      engineOptions: { initDelayMs: 2000 },
      lanes: false,
      threads: 1,
      spareWorkers: 0,
      sandboxes: {
        sandboxes: [
          { _id: '_root', priority: 10 },
          {
            name: 'patient',
            priority: 10,
            max_queue_wait: '6s',
            selectionAttributes: [{ name: 'userPattern', value: 'patient_*' }],
          },
        ],
      },
      maxQueueWaitMs: 300,
      duressShedding: false,
      dataDir: mkdtempSync(path.join(tmpdir(), 'qs-overload-replaced-')),
      onTaskEnd: (e) => ended.push(e),
    });
  });
  afterAll(async () => {
    await runtime.close();
  });

  it('keeps a task in the queue, under its queue-wait bound, while no live worker can take it, and runs the next one on the replacement', async () => {
    // An uncooperative task whose caller gives up: its worker is terminated after the grace.
    const controller = new AbortController();
    const spin = runtime.search(
      { index: 'alpha', body: { spinWallMs: 6000 }, user: 'x' },
      { signal: controller.signal },
    );
    await sleep(100);
    controller.abort();
    await expect(spin).rejects.toBeInstanceOf(AbortedError);
    for (let i = 0; i < 150 && !ended.some((e) => e.cancellation?.hard === true); i++) await sleep(20);
    expect(ended).toMatchObject([{ outcome: 'cancelled', cancellation: { hard: true, reason: 'aborted' } }]);
    expect(runtime.nodeStats().liveWorkers).toBe(0);
    // Sent while the replacement loads: they wait in the queue, where their bounds apply, not inside
    // the pool until the replacement has loaded (2 s), unseen as waiting. The one bounded at 300 ms is
    // refused when its bound passes; the one bounded at 6 s runs as soon as the replacement has loaded.
    const t0 = performance.now();
    const [bounded, patient] = await Promise.all([
      settle(runtime.search({ index: 'alpha', body: { echo: 'bounded' }, user: 'x' }), t0),
      settle(runtime.search({ index: 'alpha', body: { echo: 'patient' }, user: 'patient_1' }), t0),
    ]);
    expect(bounded.error).toBeInstanceOf(RejectedError);
    expect((bounded.error as RejectedError).reason).toBe('queue_wait');
    expect(bounded.ms).toBeLessThan(1500);
    expect(patient.value).toMatchObject({ echo: 'patient' });
    expect(runtime.nodeStats().workersStarted).toBe(2);
    // It waited for the replacement in the queue (its wait counted there), and ran at once.
    const patientEnd = ended.find((e) => e.sandboxId === 'patient')!;
    expect(patientEnd.waitMs).toBeGreaterThan(1000);
    expect(patientEnd.runMs).toBeLessThan(1000);
    expect(patient.ms).toBeLessThan(5500);
  });
});
