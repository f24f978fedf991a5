import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { abandon } from '../../src/execution/call-control.js';
import { cancelQueued, hardCancel, softCancel } from '../../src/execution/cancel.js';
import {
  AbortedError,
  CancelledError,
  EngineFailureError,
  EngineRequestError,
  RejectedError,
  TimedOutError,
} from '../../src/errors.js';
import { CancelReason } from '../../src/pool/task-slots.js';
import { type FakeExecution, fakeExecution, held } from './fake-execution.js';

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
const NOTHING_HELD = {
  running: 0,
  queued: 0,
  laneDispatches: 0,
  allocatorSlots: 0,
  sharedSlots: 0,
  capHolds: 0,
  tracked: 0,
  governorPicks: 0,
  poolRuns: 0,
};

/** The id of the task of the last accepted search. */
const lastTaskId = (f: FakeExecution) => f.events.queued.at(-1)!;

describe('settle (request path over a fake pool)', () => {
  let f: FakeExecution;
  beforeEach(() => {
    f = fakeExecution();
  });
  afterEach(() => {
    f.dispose();
    vi.useRealTimers();
  });

  it('resolves with the worker result, counts a completion and gives everything back', async () => {
    const call = f.search('f1');
    const id = lastTaskId(f);
    expect(held(f)).toMatchObject({
      running: 1,
      allocatorSlots: 1,
      sharedSlots: 1,
      laneDispatches: 1,
      tracked: 1,
    });
    f.pool.answer(id, { ok: true, result: { hits: [1], timed_out: true } });
    await expect(call).resolves.toEqual({ hits: [1], timed_out: true });
    expect(f.x.counters.of('fg')).toMatchObject({ completions: 1, timedOut: 1, failures: 0 });
    expect(f.governor.completed).toBe(1);
    expect(held(f)).toEqual(NOTHING_HELD);
    expect(f.events.ended).toEqual([{ taskId: id, ran: true }]);
  });

  it('maps an engine 4xx to EngineRequestError and another failure to EngineFailureError', async () => {
    const refused = f.search('f1');
    f.pool.answer(lastTaskId(f), {
      ok: false,
      error: {
        name: 'Error',
        message: 'bad query',
        type: 'parsing_exception',
        statusCode: 400,
        stack: undefined,
      },
      cancelCode: 0,
    });
    await expect(refused).rejects.toMatchObject({ statusCode: 400, message: 'bad query' });
    await expect(refused).rejects.toBeInstanceOf(EngineRequestError);
    const failed = f.search('f2');
    f.pool.answer(lastTaskId(f), {
      ok: false,
      error: { name: 'Error', message: 'boom', type: undefined, statusCode: undefined, stack: undefined },
      cancelCode: 0,
    });
    await expect(failed).rejects.toBeInstanceOf(EngineFailureError);
    expect(f.x.counters.of('fg').failures).toBe(2);
    expect(held(f)).toEqual(NOTHING_HELD);
  });

  it('rejects a softly cancelled task that stopped with CancelledError (soft) naming the resource', async () => {
    const call = f.search('b1');
    const id = lastTaskId(f);
    f.governor.picks.set(id, { cancellation: { taskId: id, sandboxId: 'bg', resource: 'cpu' }, hard: false });
    softCancel(f.x, id, 'cpu');
    expect(f.pool.slots.cancelCode(f.x.running.get(id)!.tracked.slot, id)).toBe(CancelReason.CPU);
    f.pool.answer(id, { ok: true, result: 'ignored: the slot asked it to stop' });
    const error = (await call.catch((e: unknown) => e)) as CancelledError;
    expect(error).toBeInstanceOf(CancelledError);
    expect(error).toMatchObject({ sandboxId: 'bg', resource: 'cpu', hard: false });
    expect(error.message).toContain('sandbox [bg] is above its high cpu limit');
    expect(f.x.counters.of('bg')).toMatchObject({ cancellations: 1, hardCancellations: 0 });
    expect(held(f)).toEqual(NOTHING_HELD);
  });

  it('rejects a hard-cancelled task with CancelledError (hard) once its worker is terminated', async () => {
    const call = f.search('f1');
    const id = lastTaskId(f);
    f.governor.picks.set(id, {
      cancellation: { taskId: id, sandboxId: 'fg', resource: 'memory', reason: 'duress' },
      hard: true,
    });
    hardCancel(f.x, id, 'memory');
    const error = (await call.catch((e: unknown) => e)) as CancelledError;
    expect(error).toMatchObject({ resource: 'memory', hard: true, reason: 'duress' });
    expect(f.pool.terminations).toBe(1);
    expect(f.x.counters.of('fg')).toMatchObject({
      cancellations: 1,
      hardCancellations: 1,
      duressCancellations: 1,
    });
    expect(held(f)).toEqual(NOTHING_HELD);
  });

  it('tells a lost worker (EngineFailureError) from an exhausted worker heap (CancelledError, memory)', async () => {
    const lost = f.search('f1');
    f.pool.crash(lastTaskId(f), new Error('worker exited with code 1'));
    await expect(lost).rejects.toBeInstanceOf(EngineFailureError);
    const oom = f.search('f2');
    f.pool.crash(lastTaskId(f), Object.assign(new Error('oom'), { code: 'ERR_WORKER_OUT_OF_MEMORY' }));
    await expect(oom).rejects.toMatchObject({ resource: 'memory', hard: true });
    expect(f.x.counters.of('fg')).toMatchObject({ failures: 1, cancellations: 1, hardCancellations: 1 });
    expect(held(f)).toEqual(NOTHING_HELD);
  });

  it('settles an aborted running call at once, then terminates its worker after the grace; ends the task once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const controller = new AbortController();
    const call = f.search('c1', { signal: controller.signal });
    const id = lastTaskId(f);
    controller.abort();
    await expect(call).rejects.toMatchObject({ queued: false });
    await expect(call).rejects.toBeInstanceOf(AbortedError);
    // Still running: the worker has its cancel word and holds its slot and its cap until it stops.
    expect(held(f)).toMatchObject({ running: 1, capHolds: 2 });
    vi.advanceTimersByTime(39); // capped's cancellationGraceMs is 40
    expect(f.pool.terminations).toBe(0);
    vi.advanceTimersByTime(1);
    expect(f.pool.terminations).toBe(1);
    await flush();
    expect(held(f)).toEqual(NOTHING_HELD);
    expect(f.events.ended).toEqual([{ taskId: id, ran: true }]);
    expect(f.x.counters.of('capped')).toMatchObject({ aborted: 1, cancellations: 0, failures: 0 });
  });

  it('removes a queued call that times out without running it', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const first = f.search('c1');
    const waiting = f.search('c2', { timeoutMs: 25 }); // capped runs one task at a time: this one waits
    const waitingId = lastTaskId(f);
    expect(held(f)).toMatchObject({ running: 1, queued: 1 });
    vi.advanceTimersByTime(25);
    await expect(waiting).rejects.toBeInstanceOf(TimedOutError);
    expect(f.events.started).not.toContain(waitingId);
    expect(f.events.ended).toEqual([{ taskId: waitingId, ran: false }]);
    f.pool.answer(f.events.started[0]!, { ok: true, result: 1 });
    await expect(first).resolves.toBe(1);
    expect(held(f)).toEqual(NOTHING_HELD);
  });

  it('rejects a queued task at dispatch when the verdict turned against its sandbox while it waited', async () => {
    const first = f.search('c1');
    const second = f.search('c2');
    f.governor.reject('capped', true);
    f.pool.answer(f.events.started[0]!, { ok: true, result: 1 });
    await expect(first).resolves.toBe(1);
    await expect(second).rejects.toBeInstanceOf(RejectedError);
    expect(f.events.rejected.at(-1)).toMatchObject({ queued: true });
    expect(held(f)).toEqual(NOTHING_HELD);
  });

  it('at close, cancels the queued tasks (shutdown) and maps the running ones lost with the pool to shutdown', async () => {
    const running = f.search('c1');
    const queued = f.search('c2');
    cancelQueued(f.x);
    await expect(queued).rejects.toMatchObject({ resource: 'shutdown', hard: false });
    f.pool.crash(f.events.started[0]!, new Error('Terminating worker thread'));
    await expect(running).rejects.toMatchObject({ resource: 'shutdown', hard: true });
    expect(held(f)).toEqual(NOTHING_HELD);
  });

  it('does nothing for a caller that gives up after its call settled', async () => {
    const call = f.search('f1');
    const id = lastTaskId(f);
    const task = f.x.running.get(id)!.queued;
    f.pool.answer(id, { ok: true, result: 2 });
    await expect(call).resolves.toBe(2);
    abandon(f.x, task, 'aborted');
    expect(f.x.counters.of('fg').aborted).toBe(0);
    expect(f.events.ended).toHaveLength(1);
  });
});
