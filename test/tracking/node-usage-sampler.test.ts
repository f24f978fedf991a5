import v8 from 'node:v8';
import { describe, expect, it } from 'vitest';
import { NodeUsageSampler } from '../../src/tracking/node-usage-sampler.js';

describe('NodeUsageSampler', () => {
  it('gives process CPU over the interval as a ratio of all cores', () => {
    let nowNs = 0;
    let cpuUs = 0;
    const sampler = new NodeUsageSampler({
      cores: 2,
      nowNs: () => nowNs,
      cpuUsage: () => ({ user: cpuUs, system: 0 }),
    });
    nowNs += 100e6; // 100 ms
    cpuUs += 150_000; // 150 ms of CPU on 2 cores
    expect(sampler.sample(0, 1e9).cpu).toBeCloseTo(0.75, 9);
    nowNs += 100e6;
    cpuUs += 20_000;
    expect(sampler.sample(0, 1e9).cpu).toBeCloseTo(0.1, 9); // per interval, not since start
    nowNs += 100e6;
    cpuUs += 204_000; // a tick's worth over 2 cores x 100 ms: capped, usage is a ratio of capacity
    expect(sampler.sample(0, 1e9).cpu).toBe(1);
  });

  it("adds the workers' heap to the main thread's over all limits", () => {
    const sampler = new NodeUsageSampler({ cores: 1 });
    const low = sampler.sample(0, 4 * 1024 ** 3).memory;
    const high = sampler.sample(2 * 1024 ** 3, 4 * 1024 ** 3).memory;
    const mainLimit = v8.getHeapStatistics().heap_size_limit;
    // 2 GiB more of (the main thread's limit + 4 GiB); the main thread's own heap moves a little between samples.
    expect(high - low).toBeCloseTo((2 * 1024 ** 3) / (mainLimit + 4 * 1024 ** 3), 2);
    expect(high).toBeLessThan(1);
  });
});
