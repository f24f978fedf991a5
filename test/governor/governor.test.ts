import { describe, expect, it } from 'vitest';
import { DuressDetector } from '../../src/governor/duress-detector.js';
import { Governor, type GovernorOptions } from '../../src/governor/governor.js';
import { SandboxCounterTable } from '../../src/governor/sandbox-counters.js';
import { parseSandboxDefinitions } from '../../src/sandbox/sandbox-file.js';
import type { TrackedTask } from '../../src/tracking/tracked-task.js';
import { newTrackedTask } from '../../src/tracking/tracked-task.js';
import type { UsageSample } from '../../src/tracking/usage-tracker.js';

const sandboxes = parseSandboxDefinitions({
  sandboxes: [
    {
      name: 'analysts',
      priority: 5,
      resourceConsumptionLimits: { cpu: { low: 0.2, high: 0.4 } },
      selectionAttributes: [{ name: 'userPattern', value: 'analyst_*' }],
    },
    {
      name: 'batch',
      priority: 12,
      resourceConsumptionLimits: { cpu: { low: 0.2, high: 0.4 } },
      selectionAttributes: [{ name: 'userPattern', value: 'batch_*' }],
    },
    {
      name: 'nightly',
      priority: 2,
      mode: 'soft',
      resourceConsumptionLimits: { cpu: { low: 0.2, high: 0.4 } },
      selectionAttributes: [{ name: 'userPattern', value: 'nightly_*' }],
    },
    {
      name: 'watch',
      priority: 1,
      mode: 'monitor',
      resourceConsumptionLimits: { cpu: { low: 0.1, high: 0.2 } },
      selectionAttributes: [{ name: 'userPattern', value: 'watch_*' }],
    },
  ],
});

const DEFAULTS = {
  selection: 'largest_usage',
  cancellationRatePerSecond: 3,
  cancellationRatio: 0.1,
  cancellationBurst: 5,
  boostPriority: 10,
  boostHalfLifeMs: 5000,
} as const;

function harness(
  graceIntervals = 2,
  overrides: Partial<GovernorOptions> = {},
  graceMsOf?: (taskId: number) => number,
) {
  let now = 0;
  let node = { cpu: 0.5, memory: 0.1 };
  let tasks: TrackedTask[] = [];
  const soft: number[] = [];
  const hard: number[] = [];
  const counters = new SandboxCounterTable();
  const governor = new Governor(
    { intervalMs: 100, graceIntervals, enforcement: 'enabled', ...DEFAULTS, ...overrides },
    {
      sampleUsage: (): UsageSample => {
        const map = new Map<string, { cpu: number; memory: number; running: number }>();
        for (const t of tasks) {
          const u = map.get(t.sandboxId) ?? { cpu: 0, memory: 0, running: 0 };
          u.cpu += t.cpuUsage;
          u.running++;
          map.set(t.sandboxId, u);
        }
        return { intervalNs: 100e6, tasks, sandboxes: map };
      },
      sampleNode: () => node,
      sandboxes: () => sandboxes,
      duress: new DuressDetector({ rejectThreshold: 0.8, cancelThreshold: 0.9, consecutiveIntervals: 3 }),
      counters,
      softCancel: (id) => soft.push(id),
      hardCancel: (id) => hard.push(id),
      ...(graceMsOf !== undefined ? { graceMsOf } : {}),
      nowMs: () => now,
    },
  );
  const running = (id: number, sandboxId: string, cpu: number) => {
    const t = newTrackedTask(id, sandboxId, 0, 0);
    t.cpuUsage = cpu;
    return t;
  };
  return {
    governor,
    soft,
    hard,
    counters,
    setTasks: (t: TrackedTask[]) => {
      tasks = t;
    },
    running,
    advance: (ms: number) => {
      now += ms;
    },
    setNode: (cpu: number, memory: number) => {
      node = { cpu, memory };
    },
  };
}

describe('Governor', () => {
  it('publishes verdicts only at a tick, so the request path reads the last interval', () => {
    const h = harness();
    h.setTasks([h.running(1, 'analysts', 0.3)]);
    expect(h.governor.verdict('analysts').rejectNew).toBe(false);
    h.governor.tick();
    expect(h.governor.verdict('analysts').rejectNew).toBe(true);
    expect(h.governor.verdict('unknown').rejectNew).toBe(false);
  });

  it('cancels softly first, then hard after the grace period if the task still runs', () => {
    const h = harness(2);
    h.setTasks([h.running(1, 'analysts', 0.5)]);
    h.governor.tick(); // t=0: soft
    expect(h.soft).toEqual([1]);
    expect(h.hard).toEqual([]);
    h.advance(100);
    h.governor.tick(); // t=100: within grace, and not picked again
    expect(h.soft).toEqual([1]);
    expect(h.hard).toEqual([]);
    h.advance(100);
    h.governor.tick(); // t=200: grace of 2 intervals is over
    expect(h.hard).toEqual([1]);
    h.advance(100);
    h.governor.tick();
    expect(h.hard).toEqual([1]); // once
    expect(h.governor.cancellationOf(1)?.hard).toBe(true);
  });

  it("hard-cancels each task after its own sandbox's grace, and never one whose grace is Infinity", () => {
    const graces = new Map([
      [1, 500],
      [2, Number.POSITIVE_INFINITY],
    ]);
    const h = harness(2, {}, (id) => graces.get(id) ?? 200);
    h.setTasks([h.running(1, 'analysts', 0.5), h.running(2, 'analysts', 0.5)]);
    h.governor.tick(); // t=0: both soft (usage 1.0, excess 0.6 over high 0.4)
    expect(h.soft).toEqual([1, 2]);
    for (let t = 100; t <= 400; t += 100) {
      h.advance(100);
      h.governor.tick();
    }
    expect(h.hard).toEqual([]); // t=400: the default 200 ms grace would have struck already
    h.advance(100);
    h.governor.tick(); // t=500
    expect(h.hard).toEqual([1]);
    h.advance(60_000);
    h.governor.tick();
    expect(h.hard).toEqual([1]);
    expect(h.governor.cancellationOf(2)?.hard).toBe(false);
    expect(h.soft).toEqual([1, 2]); // still picked, not asked again
  });

  it('does not hard-cancel a task that settled within the grace period', () => {
    const h = harness(2);
    h.setTasks([h.running(1, 'analysts', 0.5)]);
    h.governor.tick();
    h.governor.forget(1);
    h.setTasks([]);
    h.advance(300);
    h.governor.tick();
    expect(h.hard).toEqual([]);
  });

  it('counts would_cancel for a monitor sandbox above its high limit and cancels nothing', () => {
    const h = harness();
    h.setTasks([h.running(1, 'watch', 0.5)]);
    h.governor.tick();
    h.governor.tick();
    expect(h.soft).toEqual([]);
    expect(h.counters.of('watch').cpu.wouldCancel).toBe(2);
  });

  it('stops acting when enforcement is switched off at runtime', () => {
    const h = harness();
    h.setTasks([h.running(1, 'analysts', 0.5)]);
    h.governor.enforcement = 'disabled';
    h.governor.tick();
    expect(h.soft).toEqual([]);
    expect(h.governor.verdict('analysts').rejectNew).toBe(false);
  });
});

describe('Governor rate limit and boost', () => {
  // 0.125 is exact in binary, so coverage sums carry no rounding.
  const heavy = (h: ReturnType<typeof harness>, n: number, sandboxId: string, first = 1) =>
    Array.from({ length: n }, (_, i) => h.running(first + i, sandboxId, 0.125));

  it('cancels exactly the burst in the first tick, then exactly what the time refill allows', () => {
    const h = harness(1000, { cancellationBurst: 5, cancellationRatePerSecond: 3, cancellationRatio: 0.1 });
    // 20 tasks at 0.125: usage 2.5 against high 0.4, an excess of 2.1 that needs 17 cancellations.
    h.setTasks(heavy(h, 20, 'analysts'));
    h.governor.tick();
    expect(h.soft).toHaveLength(5);
    expect(h.governor.stats().rateLimited).toBe(12);
    // 3 tokens a second: 0.3 per 100 ms tick, so the next whole token comes on the 4th tick.
    for (let t = 1; t <= 3; t++) {
      h.advance(100);
      h.governor.tick();
      expect(h.soft).toHaveLength(5);
    }
    h.advance(100);
    h.governor.tick();
    expect(h.soft).toHaveLength(6);
    // Two seconds later the time bucket is full again (burst 5), not 6.
    h.advance(2000);
    h.governor.tick();
    expect(h.soft).toHaveLength(11);
  });

  it('adds 0.1 token per completed task to the completion bucket', () => {
    const h = harness(1000, { cancellationBurst: 2, cancellationRatePerSecond: 0, cancellationRatio: 0.1 });
    h.setTasks(heavy(h, 20, 'analysts'));
    h.governor.tick();
    expect(h.soft).toHaveLength(2);
    for (let i = 0; i < 9; i++) h.governor.onTaskCompleted();
    h.governor.tick();
    expect(h.soft).toHaveLength(2); // 0.9 token
    h.governor.onTaskCompleted();
    h.governor.tick();
    expect(h.soft).toHaveLength(3);
    expect(h.governor.stats().tokens.completions).toBeCloseTo(0, 9);
  });

  // analysts (5) is cut at t=0 and gets +10 halving every 1000 ms: it ranks above batch (12) while
  // the boost is above 7, that is until t = 1000 * log2(10/7) = 515 ms.
  const cutAnalystsThenBoth = (checkAtMs: number) => {
    const h = harness(100_000, {
      cancellationBurst: 1,
      cancellationRatePerSecond: 10,
      boostPriority: 10,
      boostHalfLifeMs: 1000,
    });
    h.setTasks(heavy(h, 6, 'analysts', 1));
    h.governor.tick();
    expect(h.soft).toEqual([1]);
    h.advance(checkAtMs);
    h.setTasks([...heavy(h, 6, 'analysts', 1), ...heavy(h, 6, 'batch', 101)]);
    h.governor.tick();
    return h.soft[1];
  };

  it('boosts a sandbox just cut back so that another breaching one goes first', () => {
    expect(cutAnalystsThenBoth(400)).toBe(101); // boost 7.6: analysts at 12.6 > batch at 12
  });

  it('lets the boost decay with its half-life', () => {
    expect(cutAnalystsThenBoth(600)).toBe(2); // boost 6.6: analysts at 11.6 < batch at 12
    expect(cutAnalystsThenBoth(30_000)).toBe(2);
  });

  it('counts a task held back by the rate limit once, however many ticks it waits', () => {
    const h = harness(100_000, { cancellationBurst: 1, cancellationRatePerSecond: 0, cancellationRatio: 0 });
    h.setTasks(heavy(h, 20, 'analysts'));
    h.governor.tick();
    h.governor.tick();
    h.governor.tick();
    expect(h.soft).toHaveLength(1);
    expect(h.governor.stats().rateLimited).toBe(16); // 17 needed, 1 cancelled, 16 waiting
  });
});

describe('Governor and node duress', () => {
  it("applies a soft sandbox's limits only after the node has been over the threshold for 3 intervals", () => {
    const h = harness();
    h.setTasks([h.running(1, 'nightly', 0.5)]);
    h.setNode(0.95, 0.1);
    h.governor.tick();
    h.governor.tick();
    expect(h.governor.verdict('nightly').rejectNew).toBe(false);
    expect(h.soft).toEqual([]);
    h.governor.tick(); // third interval over 0.9: cancel level
    expect(h.governor.snapshot.duressLevel).toBe('cancel');
    expect(h.governor.verdict('nightly').rejectNew).toBe(true);
    expect(h.soft).toEqual([1]);
  });

  it('at the reject level refuses new work of a soft sandbox but cancels nothing', () => {
    const h = harness();
    h.setTasks([h.running(1, 'nightly', 0.5)]);
    h.setNode(0.85, 0.1);
    for (let i = 0; i < 3; i++) h.governor.tick();
    expect(h.governor.snapshot.duressLevel).toBe('reject');
    expect(h.governor.verdict('nightly').rejectNew).toBe(true);
    expect(h.soft).toEqual([]);
  });

  it("cancels a deleted sandbox's task first under memory duress, naming memory", () => {
    const h = harness();
    const cancelled: string[] = [];
    h.setTasks([h.running(9, 'gone', 0.01)]);
    h.setNode(0.1, 0.95);
    for (let i = 0; i < 3; i++) h.governor.tick();
    expect(h.soft).toEqual([9]);
    expect(h.governor.cancellationOf(9)?.cancellation.resource).toBe('memory');
    expect(cancelled).toEqual([]);
  });
});

describe('DuressDetector', () => {
  it('enters a level after N consecutive intervals over its threshold and leaves on the first one under', () => {
    const d = new DuressDetector({ rejectThreshold: 0.8, cancelThreshold: 0.9, consecutiveIntervals: 3 });
    expect(d.update(0.95, 0)).toBe('none');
    expect(d.update(0.95, 0)).toBe('none');
    expect(d.update(0.5, 0.95)).toBe('cancel');
    expect(d.resource).toBe('memory');
    expect(d.update(0.85, 0.5)).toBe('reject'); // still over 0.8: the reject streak is 4
    expect(d.update(0.5, 0.5)).toBe('none');
    expect(d.update(0.91, 0)).toBe('none');
    expect(d.update(0.85, 0)).toBe('none');
    expect(d.update(0.81, 0)).toBe('reject');
  });
});
