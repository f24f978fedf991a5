import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compiledModuleUrl } from '../../src/pool/compiled-module-url.js';
import { allocateTaskSlotBuffers, SlotState } from '../../src/pool/task-slots.js';
import type { HarnessWorkerData } from '../../src/pool/task-envelope.js';

interface Answer {
  readonly isPromise: boolean;
  readonly outcome: {
    ok: boolean;
    revoked: boolean | undefined;
    result: unknown;
    cancelCode: number | undefined;
    message: string | undefined;
  };
  readonly cpu: { start: number; end: number; state: number };
}

describe('the worker harness, called as piscina calls it', () => {
  let worker: Worker;
  const ask = (bodies: unknown[]) =>
    new Promise<Answer[]>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.postMessage(bodies);
    });

  beforeAll(async () => {
    const slots = allocateTaskSlotBuffers(4);
    const data: HarnessWorkerData & { harnessUrl: string; slotsUrl: string } = {
      engineUrl: new URL('../fixtures/sync-engine.mjs', import.meta.url).href,
      engineOptions: {},
      cacheDir: '/tmp',
      slots,
      channelName: 'harness-probe',
      weight: 0,
      harnessUrl: compiledModuleUrl('./worker-harness.js', new URL('../../src/pool/', import.meta.url).href),
      slotsUrl: compiledModuleUrl('./task-slots.js', new URL('../../src/pool/', import.meta.url).href),
    };
    worker = new Worker(new URL('../fixtures/harness-probe.mjs', import.meta.url), { workerData: data });
    // The first answer proves the harness has loaded its engine.
    await ask([{ echo: 'warm' }]);
  });

  afterAll(async () => {
    await worker.terminate();
  });

  it('answers a synchronous handler without a promise, and closes its CPU window where the next opens', async () => {
    const [a, b] = await ask([{ echo: 1 }, { echo: 2 }]);
    expect(a!.isPromise).toBe(false);
    expect(a!.outcome).toMatchObject({ ok: true, result: { echo: 1, indices: ['alpha'] } });
    expect(a!.cpu.end).toBeGreaterThanOrEqual(a!.cpu.start);
    expect(b!.cpu.start).toBe(a!.cpu.end);
  });

  it('runs nothing for a hand-over the main thread took back, and leaves its slot as assigned', async () => {
    const [a, b] = await ask([{ revoked: true, fail: true }, { echo: 3 }]);
    expect(a!.isPromise).toBe(false);
    expect(a!.outcome).toMatchObject({ ok: false, revoked: true });
    expect(a!.cpu).toEqual({ start: 0, end: 0, state: SlotState.ASSIGNED });
    expect(b!.outcome).toMatchObject({ ok: true, result: { echo: 3 } });
  });

  it('answers a handler that throws with a failed outcome, synchronously, not cancelled', async () => {
    const [a] = await ask([{ fail: true }]);
    expect(a!.isPromise).toBe(false);
    expect(a!.outcome.ok).toBe(false);
    expect(a!.outcome.message).toBe('the sync engine was told to fail');
    expect(a!.outcome.cancelCode).toBe(0);
    expect(a!.cpu.end).toBeGreaterThanOrEqual(a!.cpu.start);
  });

  it('answers an asynchronous handler with a promise of its outcome, its end recorded', async () => {
    const [a] = await ask([{ sleepMs: 5 }]);
    expect(a!.isPromise).toBe(true);
    expect(a!.outcome).toMatchObject({ ok: true, result: { slept: 5 } });
    expect(a!.cpu.end).toBeGreaterThanOrEqual(a!.cpu.start);
    expect(a!.cpu.end).toBeGreaterThan(0);
  });
});
