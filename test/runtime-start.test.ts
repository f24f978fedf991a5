import { describe, expect, it } from 'vitest';
import type { LanePool, PoolLaneStats } from '../src/pool/lane-pool.js';
import { logLanes } from '../src/runtime-start.js';

const lane = (name: string, weight: number): PoolLaneStats => ({
  name,
  weight,
  weighted: true,
  nice: weight,
  weightReason: undefined,
  workers: 2,
  spareWorkers: 1,
  liveWorkers: 3,
  loadingWorkers: 0,
  replacedWorkers: 0,
  pipelinedTasks: 0,
  stolenTasks: 0,
});

function logged(lanes: PoolLaneStats[]): { warnings: string[]; ready: Record<string, unknown> | undefined } {
  const warnings: string[] = [];
  let ready: Record<string, unknown> | undefined;
  const log = {
    info: (fields: object | string, message?: string) => {
      if (message === 'lanes ready') ready = fields as Record<string, unknown>;
    },
    warn: (fields: object | string, message?: string) => warnings.push(message ?? String(fields)),
    error: () => {},
  };
  logLanes(log, { laneStats: () => lanes } as unknown as LanePool);
  return { warnings, ready };
}

describe('logLanes', () => {
  it("warns that lanes share V8's GC helper threads when node runs without --single-threaded-gc", () => {
    // vitest's workers run without the flag: the collector's helper threads are shared.
    expect(process.execArgv).not.toContain('--single-threaded-gc');
    const { warnings, ready } = logged([lane('foreground', 0), lane('background', 19)]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/shared helper threads at nice 0.*--single-threaded-gc/);
    expect(ready).toMatchObject({ isolation: 'weighted', gcThreads: 'shared' });
  });

  it('does not warn about GC threads for one lane, and warns per unweighted lane', () => {
    expect(logged([lane('default', 0)]).warnings).toEqual([]);
    const unweighted = { ...lane('background', 19), weighted: false, nice: 0, weightReason: 'EPERM' };
    const { warnings, ready } = logged([lane('foreground', 0), unweighted]);
    expect(warnings.some((w) => w.startsWith('lane [background] is unweighted'))).toBe(true);
    expect(ready).toMatchObject({ isolation: 'unweighted' });
  });
});
