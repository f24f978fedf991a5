import { describe, expect, it } from 'vitest';
import type { IoUsageSampler } from '../../src/tracking/io-usage-sampler.js';
import { MovingAverage } from '../../src/admission/moving-average.js';
import { NodeUsageAverages, type NodeUsageAveragesOptions } from '../../src/admission/node-usage-averages.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { NodeUsageSampler, type NodeUsageSamplerOptions } from '../../src/tracking/node-usage-sampler.js';

/**
 * The one sampler on a fake clock (2 cores, sampled every 100 ms) and averages attached to it: by
 * default recorded every 100 ms over a 400 ms window (4 samples).
 */
function fakeAverages(
  overrides: Partial<NodeUsageAveragesOptions> = {},
  samplerOverrides: Partial<NodeUsageSamplerOptions> = {},
) {
  const state = { nowMs: 1_000, epochMs: 1_700_000_000_000, cpuUs: 0, used: 0, limit: 1000, heapReads: 0 };
  const sampler = new NodeUsageSampler({
    cores: 2,
    intervalMs: 100,
    ioIntervalMs: 1000,
    cpuTimeUs: () => state.cpuUs,
    mainHeap: () => {
      state.heapReads++;
      return { usedHeapBytes: state.used, externalBytes: 0, heapLimitBytes: state.limit };
    },
    monotonicMs: () => state.nowMs,
    epochMs: () => state.epochMs,
    ...samplerOverrides,
  });
  const averages = new NodeUsageAverages(
    { intervalMs: 100, windowMs: 400, ioIntervalMs: 1000, ioWindowMs: 3000, cores: 2, ...overrides },
    100,
    sampler.ioSource,
  ).attach(sampler);
  /** Advances 100 ms during which the process used `cpuMs` of CPU, then samples with heap `used`. */
  const step = (cpuMs: number, used: number) => {
    state.nowMs += 100;
    state.epochMs += 100;
    state.cpuUs += cpuMs * 1000;
    state.used = used;
    return sampler.sample();
  };
  return { averages, sampler, state, step };
}

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

describe('NodeUsageAverages', () => {
  it('defaults to OpenSearch ResourceTrackerSettings: 500 ms / 30 s for CPU and heap, 5 s / 120 s for IO', () => {
    const averages = new NodeUsageAverages({ cores: 1 }, 100, 'none');
    expect(averages.options).toEqual({
      intervalMs: 500,
      windowMs: 30_000,
      ioIntervalMs: 5_000,
      ioWindowMs: 120_000,
      cores: 1,
    });
  });

  it('gives CPU as process CPU over the interval / (wall × cores), averaged over the window', () => {
    const { averages, step } = fakeAverages();
    step(100, 100); // 100 ms CPU in 100 ms on 2 cores: 0.5
    expect(averages.snapshot().cpu).toBeCloseTo(0.5, 12);
    step(200, 100); // 1.0
    step(0, 100); // 0
    step(20, 100); // 0.1
    expect(averages.snapshot().cpu).toBeCloseTo((0.5 + 1 + 0 + 0.1) / 4, 12);
    step(60, 100); // 0.3 evicts the first 0.5
    expect(averages.snapshot().cpu).toBeCloseTo((1 + 0 + 0.1 + 0.3) / 4, 12);
    expect(averages.snapshot().cpuSamples).toBe(5);
  });

  it('records every intervalMs, in whole sampler intervals, with CPU over the whole span', () => {
    const { averages, step } = fakeAverages({ intervalMs: 500, windowMs: 30_000 });
    for (const cpuMs of [200, 0, 0, 0]) step(cpuMs, 100);
    expect(averages.snapshot().cpuSamples).toBe(0);
    step(50, 100); // 250 ms CPU over 500 ms on 2 cores
    expect(averages.snapshot()).toMatchObject({ cpuSamples: 1, heapSamples: 1 });
    expect(averages.snapshot().cpu).toBeCloseTo(0.25, 12);
    expect(averages.snapshot().heap).toBeCloseTo(0.1, 12);
  });

  it('gives exactly the figures duress reads when it records every sample', () => {
    const { averages, step } = fakeAverages({ intervalMs: 100, windowMs: 100 });
    for (const [cpuMs, used] of [
      [37, 120],
      [151, 610],
      [3, 55],
    ] as const) {
      const sample = step(cpuMs, used);
      expect(averages.snapshot().cpu).toBe(sample.cpu);
      expect(averages.snapshot().heap).toBe(sample.memory);
      expect(averages.snapshot().timestampMs).toBe(sample.timestampMs);
    }
  });

  it('clamps a CPU sample above all cores to 1', () => {
    const { averages, step } = fakeAverages();
    step(500, 0); // 2.5 of capacity: measurement jitter or a wrong core count
    expect(averages.snapshot().cpu).toBe(1);
  });

  it('gives heap as used / limit summed over isolates, averaged over the window', () => {
    const { averages, step } = fakeAverages();
    step(0, 100);
    step(0, 300);
    expect(averages.snapshot().heap).toBeCloseTo(0.2, 12);
    step(0, 500);
    step(0, 700);
    step(0, 900); // window is now 300, 500, 700, 900
    expect(averages.snapshot().heap).toBeCloseTo(0.6, 12);
  });

  it('is ready once the CPU and heap windows are full, with the last sample time as timestamp', () => {
    const { averages, step, state } = fakeAverages();
    expect(averages.snapshot()).toMatchObject({ ready: false, timestampMs: 0, cpu: 0, heap: 0 });
    for (let i = 0; i < 3; i++) step(10, 10);
    expect(averages.snapshot().ready).toBe(false);
    step(10, 10);
    expect(averages.snapshot().ready).toBe(true);
    expect(averages.snapshot().timestampMs).toBe(state.epochMs);
    expect(Object.isFrozen(averages.snapshot())).toBe(true);
  });

  it('returns the published snapshot without sampling', () => {
    const { averages, step, state } = fakeAverages();
    step(0, 0);
    const reads = state.heapReads;
    const first = averages.snapshot();
    expect(averages.snapshot()).toBe(first);
    expect(state.heapReads).toBe(reads);
  });

  it('reports IO 0 with ioSource none when the machine has no IO figure', () => {
    const { averages, step } = fakeAverages();
    for (let i = 0; i < 20; i++) step(0, 0);
    expect(averages.snapshot()).toMatchObject({ io: 0, ioSource: 'none', ioSamples: 0 });
  });

  it("averages the sampler's IO figures over the IO window", () => {
    const values = [0.2, 0.4, undefined, 0.6, 0.8];
    let i = 0;
    const io: IoUsageSampler = { source: 'psi-system', sample: () => values[i++] };
    const { averages, step } = fakeAverages({}, { io });
    for (let n = 0; n < values.length * 10; n++) step(0, 0); // one IO sample every 10 samples
    // window 3000 / 1000 = 3 samples; the undefined sample is skipped
    expect(averages.snapshot().io).toBeCloseTo((0.4 + 0.6 + 0.8) / 3, 12);
    expect(averages.snapshot()).toMatchObject({ ioSource: 'psi-system', ioSamples: 4 });
  });

  it('records nothing for a figure whose reading failed, and keeps going', () => {
    let fail = false;
    const { averages, step, sampler } = fakeAverages(
      {},
      {
        mainHeap: () => {
          if (fail) throw new Error('probe failed');
          return { usedHeapBytes: 5, externalBytes: 0, heapLimitBytes: 10 };
        },
      },
    );
    fail = true;
    step(100, 0);
    expect(sampler.sampleErrors).toBe(1);
    expect(averages.snapshot().heapSamples).toBe(0);
    expect(averages.snapshot().cpuSamples).toBe(1);
    fail = false;
    step(100, 0);
    expect(averages.snapshot().heap).toBe(0.5);
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
  ])('rejects %j', (options, message) => {
    expect(() => new NodeUsageAverages(options, 100, 'none')).toThrow(InvalidArgumentError);
    expect(() => new NodeUsageAverages(options, 100, 'none')).toThrow(message);
  });

  it('measures this process for real with the default readings', () => {
    const sampler = new NodeUsageSampler({ cores: 1 });
    const averages = new NodeUsageAverages({ intervalMs: 10, windowMs: 20, cores: 1 }, 10, 'none').attach(
      sampler,
    );
    const until = performance.now() + 30;
    while (performance.now() < until) {
      // burn CPU so the sample is above 0
    }
    sampler.sample();
    const s = averages.snapshot();
    expect(s.cpu).toBeGreaterThan(0);
    expect(s.cpu).toBeLessThanOrEqual(1);
    expect(s.heap).toBeGreaterThan(0);
    expect(s.heap).toBeLessThan(1);
  });
});
