import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { describe, expect, it } from 'vitest';
import type { IoUsageSampler } from '../../src/tracking/io-usage-sampler.js';
import { NodeUsageSampler, type NodeUsageSample } from '../../src/tracking/node-usage-sampler.js';

/** A sampler on fake clocks: the main isolate holds `main` of 1000 bytes, the workers `workers` of 3000. */
function fakeSampler(
  cores: number,
  overrides: Partial<ConstructorParameters<typeof NodeUsageSampler>[0]> = {},
) {
  const state = { nowMs: 0, cpuUs: 0, main: 0, workers: 0 };
  const sampler = new NodeUsageSampler({
    cores,
    monotonicMs: () => state.nowMs,
    epochMs: () => 1_700_000_000_000 + state.nowMs,
    cpuTimeUs: () => state.cpuUs,
    mainHeap: () => ({ usedHeapBytes: state.main, externalBytes: 0, heapLimitBytes: 1000 }),
    workersHeap: () => ({ usedBytes: state.workers, limitBytes: 3000 }),
    rssBytes: () => 5000,
    ...overrides,
  });
  return { sampler, state };
}

describe('NodeUsageSampler', () => {
  it('gives process CPU over the interval as a ratio of all cores', () => {
    const { sampler, state } = fakeSampler(2);
    state.nowMs += 100;
    state.cpuUs += 150_000; // 150 ms of CPU on 2 cores in 100 ms
    expect(sampler.sample().cpu).toBeCloseTo(0.75, 9);
    state.nowMs += 100;
    state.cpuUs += 20_000;
    expect(sampler.sample().cpu).toBeCloseTo(0.1, 9); // per interval, not since start
    state.nowMs += 100;
    state.cpuUs += 204_000; // a tick's worth over 2 cores x 100 ms: capped, usage is a ratio of capacity
    expect(sampler.sample().cpu).toBe(1);
  });

  it("gives memory as the main isolate's heap plus the workers' over all limits", () => {
    const { sampler, state } = fakeSampler(1);
    state.nowMs += 100;
    state.main = 200;
    state.workers = 1800;
    const s = sampler.sample();
    expect(s.memory).toBe(0.5);
    expect(s.heap).toEqual({ usedBytes: 2000, limitBytes: 4000 });
    expect(s.mainHeapUsedBytes).toBe(200);
    expect(s.rssBytes).toBe(5000);
  });

  it("reads this process's own heap and resident set by default", () => {
    const sampler = new NodeUsageSampler({
      cores: 1,
      workersHeap: () => ({ usedBytes: 0, limitBytes: 4 * 1024 ** 3 }),
    });
    const s = sampler.sample();
    const mainLimit = v8.getHeapStatistics().heap_size_limit;
    expect(s.heap.limitBytes).toBe(mainLimit + 4 * 1024 ** 3);
    expect(s.memory).toBeGreaterThan(0);
    expect(s.memory).toBeLessThan(1);
    expect(s.mainHeapUsedBytes).toBeGreaterThan(0);
    expect(s.rssBytes).toBeGreaterThan(s.mainHeapUsedBytes);
  });

  it('hands every sample, the same frozen object, to its listeners and as last', () => {
    const { sampler, state } = fakeSampler(1);
    const seen: NodeUsageSample[] = [];
    sampler.onSample((s) => seen.push(s));
    expect(sampler.last.seq).toBe(0);
    state.nowMs += 100;
    const first = sampler.sample();
    state.nowMs += 100;
    const second = sampler.sample();
    expect(seen).toEqual([first, second]);
    expect(seen[1]).toBe(second);
    expect(sampler.last).toBe(second);
    expect(second.seq).toBe(2);
    expect(Object.isFrozen(second)).toBe(true);
  });

  it('samples IO once every ioIntervalMs, as a whole number of samples', () => {
    let reads = 0;
    const io: IoUsageSampler = {
      source: 'psi-system',
      sample: () => {
        reads++;
        return 0.25;
      },
    };
    const { sampler, state } = fakeSampler(1, { io, intervalMs: 100, ioIntervalMs: 500 });
    const figures: (number | undefined)[] = [];
    for (let i = 0; i < 10; i++) {
      state.nowMs += 100;
      figures.push(sampler.sample().io);
    }
    expect(reads).toBe(2);
    expect(figures.filter((f) => f !== undefined)).toEqual([0.25, 0.25]);
    expect(figures[4]).toBe(0.25);
    expect(sampler.ioSource).toBe('psi-system');
  });

  it('repeats the previous figure when a reading fails, counts it, and measures the next CPU over the whole gap', () => {
    let fail = false;
    const clock = { cpuUs: 0 };
    const { sampler, state } = fakeSampler(1, {
      cpuTimeUs: () => {
        if (fail) throw new Error('no clock');
        return clock.cpuUs;
      },
    });
    state.nowMs += 100;
    clock.cpuUs += 50_000;
    expect(sampler.sample().cpu).toBeCloseTo(0.5, 12);
    fail = true;
    state.nowMs += 100;
    clock.cpuUs += 100_000;
    const failed = sampler.sample();
    expect(failed).toMatchObject({ cpuValid: false, heapValid: true });
    expect(failed.cpu).toBeCloseTo(0.5, 12);
    expect(sampler.sampleErrors).toBe(1);
    fail = false;
    state.nowMs += 100;
    clock.cpuUs += 0;
    // 100 ms of CPU over the 200 ms since the last good reading
    expect(sampler.sample().cpu).toBeCloseTo(0.5, 12);
  });
});

describe('one node sampler', () => {
  const src = fileURLToPath(new URL('../../src/', import.meta.url));
  const files = (readdirSync(src, { recursive: true }) as string[])
    .filter((f) => f.endsWith('.ts'))
    .map((f) => f.split(path.sep).join('/'));
  const text = (f: string) => readFileSync(path.join(src, f), 'utf8');

  it('is the only place in src/ that reads process CPU, process memory or the heap', () => {
    // Where each of these is allowed, and why it is not node sampling.
    const allowed: Record<string, string> = {
      'tracking/node-usage-sampler.ts': 'the one node sampler',
      // Inside a worker: the running task's own heap checkpoints (per-task usage, not the node's).
      'pool/worker-harness.ts': 'per-task checkpoints',
      // The heap limit (a constant of the process) read once for a default, not a usage.
      'indices/indexing-pressure.ts': 'heap limit for a default',
    };
    const reads = /process\.cpuUsage\(|process\.memoryUsage|getHeapStatistics\(|sampleHeap\(/;
    const readers = files.filter((f) => reads.test(text(f)));
    expect(readers.filter((f) => !(f in allowed))).toEqual([]);
    // The IO source is built once, for the sampler, where the sampler is built.
    const ioSources = files.filter(
      (f) => /createIoUsageSampler\(/.test(text(f)) && f !== 'tracking/io-usage-sampler.ts',
    );
    expect(ioSources).toEqual(files.filter((f) => /new NodeUsageSampler\(/.test(text(f))));
  });

  it('is constructed once, in one file', () => {
    const constructions = files.filter((f) => /new NodeUsageSampler\(/.test(text(f)));
    expect(constructions).toHaveLength(1);
    expect(text(constructions[0]!).match(/new NodeUsageSampler\(/g)).toHaveLength(1);
  });
});
