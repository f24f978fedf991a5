import { afterEach, describe, expect, it, vi } from 'vitest';
import { NO_IO_SAMPLER, type IoUsageSampler } from '../../src/admission/io-usage-sampler.js';
import { MovingAverage } from '../../src/admission/moving-average.js';
import { NodeUsageTracker, type NodeUsageTrackerOptions } from '../../src/admission/node-usage-tracker.js';
import { InvalidArgumentError } from '../../src/errors.js';

/** A tracker on a fake clock: 2 cores, 100 ms interval, 400 ms window (4 samples). */
function fakeTracker(overrides: Partial<NodeUsageTrackerOptions> = {}) {
  const state = { nowMs: 1_000, epochMs: 1_700_000_000_000, cpuUs: 0, used: 0, limit: 1000 };
  const tracker = new NodeUsageTracker({
    intervalMs: 100,
    windowMs: 400,
    ioIntervalMs: 1000,
    ioWindowMs: 3000,
    cores: 2,
    cpuTimeUs: () => state.cpuUs,
    heapUsage: () => ({ usedBytes: state.used, limitBytes: state.limit }),
    io: NO_IO_SAMPLER,
    monotonicMs: () => state.nowMs,
    epochMs: () => state.epochMs,
    ...overrides,
  });
  /** Advances 100 ms during which the process used `cpuMs` of CPU, then samples with heap `used`. */
  const step = (cpuMs: number, used: number) => {
    state.nowMs += 100;
    state.epochMs += 100;
    state.cpuUs += cpuMs * 1000;
    state.used = used;
    tracker.sample();
  };
  return { tracker, state, step };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('MovingAverage', () => {
  it('averages the last windowSize observations and is ready once the window is full', () => {
    const m = new MovingAverage(3);
    expect(m.average).toBe(0);
    m.record(3);
    expect(m.average).toBe(3);
    expect(m.ready).toBe(false);
    m.record(6);
    m.record(9);
    expect(m.ready).toBe(true);
    expect(m.average).toBe(6);
    m.record(0); // evicts 3
    expect(m.average).toBe(5);
    expect(m.count).toBe(4);
  });

  it('does not drift over many windows', () => {
    const m = new MovingAverage(7);
    for (let i = 0; i < 100_000; i++) m.record((i % 10) / 10 + 0.01);
    let expected = 0;
    for (let i = 100_000 - 7; i < 100_000; i++) expected += (i % 10) / 10 + 0.01;
    expect(m.average).toBeCloseTo(expected / 7, 12);
  });
});

describe('NodeUsageTracker', () => {
  it('defaults to OpenSearch ResourceTrackerSettings: 500 ms / 30 s for CPU and heap, 5 s / 120 s for IO', () => {
    const tracker = new NodeUsageTracker({ io: NO_IO_SAMPLER, cores: 1 });
    expect(tracker.options).toEqual({
      intervalMs: 500,
      windowMs: 30_000,
      ioIntervalMs: 5_000,
      ioWindowMs: 120_000,
      cores: 1,
    });
  });

  it('gives CPU as process CPU over the interval / (wall × cores), averaged over the window', () => {
    const { tracker, step } = fakeTracker();
    step(100, 100); // 100 ms CPU in 100 ms on 2 cores: 0.5
    expect(tracker.snapshot().cpu).toBeCloseTo(0.5, 12);
    step(200, 100); // 1.0
    step(0, 100); // 0
    step(20, 100); // 0.1
    expect(tracker.snapshot().cpu).toBeCloseTo((0.5 + 1 + 0 + 0.1) / 4, 12);
    step(60, 100); // 0.3 evicts the first 0.5
    expect(tracker.snapshot().cpu).toBeCloseTo((1 + 0 + 0.1 + 0.3) / 4, 12);
    expect(tracker.snapshot().cpuSamples).toBe(5);
  });

  it('clamps a CPU sample above all cores to 1', () => {
    const { tracker, step } = fakeTracker();
    step(500, 0); // 2.5 of capacity: measurement jitter or a wrong core count
    expect(tracker.snapshot().cpu).toBe(1);
  });

  it('gives heap as used / limit summed over isolates, averaged over the window', () => {
    const { tracker, step } = fakeTracker();
    step(0, 100);
    step(0, 300);
    expect(tracker.snapshot().heap).toBeCloseTo(0.2, 12);
    step(0, 500);
    step(0, 700);
    step(0, 900); // window is now 300, 500, 700, 900
    expect(tracker.snapshot().heap).toBeCloseTo(0.6, 12);
  });

  it('is ready once the CPU and heap windows are full, with the last sample time as timestamp', () => {
    const { tracker, step, state } = fakeTracker();
    expect(tracker.snapshot()).toMatchObject({ ready: false, timestampMs: 0, cpu: 0, heap: 0 });
    for (let i = 0; i < 3; i++) step(10, 10);
    expect(tracker.snapshot().ready).toBe(false);
    step(10, 10);
    expect(tracker.snapshot().ready).toBe(true);
    expect(tracker.snapshot().timestampMs).toBe(state.epochMs);
    expect(Object.isFrozen(tracker.snapshot())).toBe(true);
  });

  it('returns the published snapshot without sampling', () => {
    let reads = 0;
    const { tracker, step } = fakeTracker({
      heapUsage: () => {
        reads++;
        return { usedBytes: 1, limitBytes: 2 };
      },
    });
    step(0, 0);
    const first = tracker.snapshot();
    expect(tracker.snapshot()).toBe(first);
    expect(reads).toBe(1);
  });

  it('reports IO 0 with ioSource none when the machine has no IO figure', () => {
    const { tracker } = fakeTracker();
    tracker.sampleIo();
    expect(tracker.snapshot()).toMatchObject({ io: 0, ioSource: 'none', ioSamples: 0 });
  });

  it('averages IO samples over the IO window', () => {
    const values = [0.2, 0.4, undefined, 0.6, 0.8];
    let i = 0;
    const io: IoUsageSampler = { source: 'psi-system', sample: () => values[i++] };
    const { tracker } = fakeTracker({ io });
    for (let n = 0; n < values.length; n++) tracker.sampleIo();
    // window 3000 / 1000 = 3 samples; the undefined sample is skipped
    expect(tracker.snapshot().io).toBeCloseTo((0.4 + 0.6 + 0.8) / 3, 12);
    expect(tracker.snapshot()).toMatchObject({ ioSource: 'psi-system', ioSamples: 4 });
  });

  it('counts a sampler that throws or reports nonsense, and keeps going', () => {
    let fail = true;
    const { tracker, step } = fakeTracker({
      heapUsage: () => {
        if (fail) throw new Error('probe failed');
        return { usedBytes: 5, limitBytes: 10 };
      },
    });
    step(100, 0);
    expect(tracker.sampleErrors).toBe(1);
    expect(tracker.snapshot().heapSamples).toBe(0);
    expect(tracker.snapshot().cpuSamples).toBe(1);
    fail = false;
    step(100, 0);
    expect(tracker.snapshot().heap).toBe(0.5);
    const zeroLimit = fakeTracker({ heapUsage: () => ({ usedBytes: 5, limitBytes: 0 }) });
    zeroLimit.step(0, 0);
    expect(zeroLimit.tracker.sampleErrors).toBe(1);
  });

  it('samples on its timers once started, and stops', () => {
    vi.useFakeTimers({ now: 0 });
    let cpuUs = 0;
    const ioValues: number[] = [];
    const tracker = new NodeUsageTracker({
      cores: 1,
      cpuTimeUs: () => cpuUs,
      heapUsage: () => ({ usedBytes: 1, limitBytes: 4 }),
      io: {
        source: 'psi-cgroup',
        sample: () => {
          ioValues.push(0.5);
          return 0.5;
        },
      },
      monotonicMs: () => Date.now(),
    });
    tracker.start();
    tracker.start(); // idempotent: one timer
    cpuUs += 250_000;
    vi.advanceTimersByTime(500);
    expect(tracker.snapshot()).toMatchObject({ cpuSamples: 1, heap: 0.25 });
    expect(tracker.snapshot().cpu).toBeCloseTo(0.5, 12);
    vi.advanceTimersByTime(4_500);
    expect(tracker.snapshot().cpuSamples).toBe(10);
    expect(ioValues).toHaveLength(1);
    tracker.stop();
    vi.advanceTimersByTime(10_000);
    expect(tracker.snapshot().cpuSamples).toBe(10);
  });

  it.each([
    [{ intervalMs: 0 }, 'options.intervalMs must be an integer in 1..60000; received 0'],
    [{ intervalMs: 1.5 }, 'options.intervalMs must be an integer in 1..60000; received 1.5'],
    [{ intervalMs: 500, windowMs: 100 }, 'options.windowMs must be an integer in 500..3600000; received 100'],
    [
      { intervalMs: 1, windowMs: 60_000 },
      'options.windowMs must hold at most 10000 samples of 1 ms; received 60000',
    ],
    [{ cores: 0 }, 'options.cores must be a finite number > 0; received 0'],
    [{ ioCapacityBytesPerSec: -1 }, 'options.ioCapacityBytesPerSec must be a number > 0; received -1'],
  ])('rejects %j', (options, message) => {
    expect(() => new NodeUsageTracker({ io: NO_IO_SAMPLER, ...options })).toThrow(InvalidArgumentError);
    expect(() => new NodeUsageTracker({ io: NO_IO_SAMPLER, ...options })).toThrow(message);
  });

  it('measures this process for real with the default samplers', () => {
    const tracker = new NodeUsageTracker({ intervalMs: 10, windowMs: 20, io: NO_IO_SAMPLER });
    const until = performance.now() + 30;
    while (performance.now() < until) {
      // burn CPU so the sample is above 0
    }
    tracker.sample();
    const s = tracker.snapshot();
    expect(s.cpu).toBeGreaterThan(0);
    expect(s.cpu).toBeLessThanOrEqual(1);
    expect(s.heap).toBeGreaterThan(0);
    expect(s.heap).toBeLessThan(1);
  });
});
