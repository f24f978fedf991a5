/**
 * "Every task settles exactly once, and gives back everything it held", as a property: fast-check
 * drives the request path (`execution/`) over a fake pool with random submissions, answers, engine
 * errors, governor cancellations (soft and hard), caller aborts and time-outs, worker crashes and
 * out-of-memory exits, verdict changes, time passing, and a close.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { hardCancel, softCancel, cancelQueued } from '../../src/execution/cancel.js';
import type { AnyCancellation } from '../../src/governor/governor.js';
import type { TaskOutcome } from '../../src/pool/task-envelope.js';
import { type FakeExecution, fakeExecution, held } from './fake-execution.js';

type Op =
  | { t: 'submit'; user: string; signal: boolean; timeoutMs: number | null }
  | { t: 'answer'; pick: number; kind: 'ok' | 'timedOut' | 'engineError' | 'requestError' }
  | { t: 'soft' | 'hard'; pick: number; resource: 'cpu' | 'memory' | 'time'; duress: boolean }
  | { t: 'crash'; pick: number; oom: boolean }
  | { t: 'abort'; pick: number }
  | { t: 'advance'; ms: number }
  | { t: 'verdict'; sandboxId: string; reject: boolean }
  | { t: 'close' };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant('submit' as const),
      user: fc.constantFrom('f1', 'f2', 'b1', 'c1', 'c2'),
      signal: fc.boolean(),
      timeoutMs: fc.option(fc.constantFrom(5, 25, 60)),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('answer' as const),
      pick: fc.nat(),
      kind: fc.constantFrom(
        'ok' as const,
        'timedOut' as const,
        'engineError' as const,
        'requestError' as const,
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constantFrom('soft' as const, 'hard' as const),
      pick: fc.nat(),
      resource: fc.constantFrom('cpu' as const, 'memory' as const, 'time' as const),
      duress: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant('crash' as const), pick: fc.nat(), oom: fc.boolean() }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('abort' as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constant('advance' as const), ms: fc.constantFrom(1, 10, 30, 50) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('verdict' as const),
      sandboxId: fc.constantFrom('fg', 'bg', 'capped'),
      reject: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ t: 'close' as const }) },
);

interface Call {
  readonly controller: AbortController | undefined;
  settlements: number;
  outcome: 'pending' | 'resolved' | 'rejected';
}

/** Lets the pool's promise callbacks (settle, then the dispatch loop) run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

function outcomeOf(kind: 'ok' | 'timedOut' | 'engineError' | 'requestError'): TaskOutcome {
  if (kind === 'ok') return { ok: true, result: { hits: [] } };
  if (kind === 'timedOut') return { ok: true, result: { hits: [], timed_out: true } };
  return {
    ok: false,
    error: {
      name: 'Error',
      message: kind,
      type: kind === 'requestError' ? 'parsing_exception' : undefined,
      statusCode: kind === 'requestError' ? 400 : undefined,
      stack: undefined,
    },
    cancelCode: 0,
  };
}

function pickRun(f: FakeExecution, pick: number): number | undefined {
  const ids = [...f.pool.runs.keys()];
  return ids.length === 0 ? undefined : ids[pick % ids.length];
}

async function apply(f: FakeExecution, calls: Call[], state: { closed: boolean }, o: Op): Promise<void> {
  switch (o.t) {
    case 'submit': {
      if (state.closed) return; // the runtime refuses searches once close was called
      const controller = o.signal ? new AbortController() : undefined;
      const call: Call = { controller, settlements: 0, outcome: 'pending' };
      calls.push(call);
      const control =
        controller === undefined && o.timeoutMs === null
          ? undefined
          : { signal: controller?.signal, timeoutMs: o.timeoutMs ?? undefined };
      let promise: Promise<unknown>;
      try {
        promise = f.search(o.user, control);
      } catch (error) {
        promise = Promise.reject(error);
      }
      promise.then(
        () => {
          call.settlements++;
          call.outcome = 'resolved';
        },
        () => {
          call.settlements++;
          call.outcome = 'rejected';
        },
      );
      break;
    }
    case 'answer': {
      const id = pickRun(f, o.pick);
      if (id !== undefined) f.pool.answer(id, outcomeOf(o.kind));
      break;
    }
    case 'soft':
    case 'hard': {
      const id = pickRun(f, o.pick);
      const running = id === undefined ? undefined : f.x.running.get(id);
      if (id === undefined || running === undefined) break;
      const sandboxId = running.queued.sandbox.id;
      const cancellation: AnyCancellation =
        o.resource === 'time'
          ? { taskId: id, sandboxId, resource: 'time', cancelAfterMs: 10, ranMs: 12 }
          : { taskId: id, sandboxId, resource: o.resource, reason: o.duress ? 'duress' : 'limit' };
      f.governor.picks.set(id, { cancellation, hard: o.t === 'hard' });
      if (o.t === 'soft') softCancel(f.x, id, o.resource);
      else hardCancel(f.x, id, o.resource);
      break;
    }
    case 'crash': {
      const id = pickRun(f, o.pick);
      if (id === undefined) break;
      const error = o.oom
        ? Object.assign(new Error('worker ran out of memory'), { code: 'ERR_WORKER_OUT_OF_MEMORY' })
        : new Error('worker exited with code 1');
      f.pool.crash(id, error);
      break;
    }
    case 'abort': {
      const open = calls.filter((c) => c.controller !== undefined && !c.controller.signal.aborted);
      if (open.length > 0) open[o.pick % open.length]!.controller!.abort(new Error('client went away'));
      break;
    }
    case 'advance':
      vi.advanceTimersByTime(o.ms);
      break;
    case 'verdict':
      f.governor.reject(o.sandboxId, o.reject);
      break;
    case 'close': {
      if (state.closed) return;
      state.closed = true;
      // As GovernedRuntime.#shutdown: queued tasks cancelled, then the pool's close ends the running ones.
      cancelQueued(f.x);
      for (const id of [...f.pool.runs.keys()]) f.pool.crash(id, new Error('Terminating worker thread'));
      break;
    }
  }
  await flush();
}

/** The invariants that hold between any two steps: what is held matches what runs. */
function checkStep(f: FakeExecution): void {
  const h = held(f);
  expect(h.allocatorSlots).toBe(h.running);
  expect(h.sharedSlots).toBe(h.running);
  expect(h.laneDispatches).toBe(h.running);
  expect(h.tracked).toBe(h.running);
  expect(f.x.caps.counts('capped').running).toBeLessThanOrEqual(1);
}

describe('settle, as a property over random task lives', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('settles every task exactly once and leaks no slot, lane dispatch, cap hold or governor record', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 60 }), async (ops) => {
        const f = fakeExecution();
        try {
          const calls: Call[] = [];
          const state = { closed: false };
          for (const o of ops) {
            await apply(f, calls, state, o);
            checkStep(f);
          }
          // The end: every worker answers (verdicts as they are, then lifted) and time passes until nothing is left.
          for (let round = 0; round < 200 && (f.pool.runs.size > 0 || f.x.scheduler.length > 0); round++) {
            if (round === 1) for (const id of ['fg', 'bg', 'capped']) f.governor.reject(id, false);
            for (const id of [...f.pool.runs.keys()]) f.pool.answer(id, outcomeOf('ok'));
            await flush();
            vi.advanceTimersByTime(100);
            await flush();
            checkStep(f);
          }
          vi.advanceTimersByTime(1000);
          await flush();

          // Every call settled, once.
          expect(calls.map((c) => c.settlements)).toEqual(calls.map(() => 1));
          // Nothing held: no running task, no queued one, no slot, lane dispatch, cap hold, tracking or governor record.
          expect(held(f)).toEqual({
            running: 0,
            queued: 0,
            laneDispatches: 0,
            allocatorSlots: 0,
            sharedSlots: 0,
            capHolds: 0,
            tracked: 0,
            governorPicks: 0,
            poolRuns: 0,
          });
          // Events: each task that ran ends once (ran: true); each queued task ends or is rejected once, not both.
          const { queued, started, ended, rejected } = f.events;
          expect(new Set(queued).size).toBe(queued.length);
          expect(new Set(started).size).toBe(started.length);
          const ranEnds = ended.filter((e) => e.ran).map((e) => e.taskId);
          expect([...ranEnds].sort((a, b) => a - b)).toEqual([...started].sort((a, b) => a - b));
          const terminal = [
            ...ended.map((e) => e.taskId),
            ...rejected.filter((r) => r.queued).map((r) => r.taskId!),
          ].sort((a, b) => a - b);
          expect(terminal).toEqual([...queued].sort((a, b) => a - b));
          // The governor forgot each task that ran, once.
          expect(f.governor.forgotten).toBe(started.length);
          // Every queued task's call is among the calls; the rest were refused at admission.
          expect(calls.filter((c) => c.outcome === 'resolved').length).toBeLessThanOrEqual(started.length);
        } finally {
          f.dispose();
        }
      }),
      { numRuns: 1000 },
    );
    // Not a timing bound: 1000 runs take about 3 s on an idle core; room for a busy machine.
  }, 180_000);
});
