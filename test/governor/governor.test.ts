import { describe, expect, it } from 'vitest';
import { DuressDetector } from '../../src/governor/duress-detector.js';
import { Governor } from '../../src/governor/governor.js';
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
      name: 'watch',
      priority: 1,
      mode: 'monitor',
      resourceConsumptionLimits: { cpu: { low: 0.1, high: 0.2 } },
      selectionAttributes: [{ name: 'userPattern', value: 'watch_*' }],
    },
  ],
});

function harness(graceIntervals = 2) {
  let now = 0;
  let tasks: TrackedTask[] = [];
  const soft: number[] = [];
  const hard: number[] = [];
  const counters = new SandboxCounterTable();
  const governor = new Governor(
    { intervalMs: 100, graceIntervals, enforcement: 'enabled' },
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
      sampleNode: () => ({ cpu: 0.5, memory: 0.1 }),
      sandboxes: () => sandboxes,
      duress: new DuressDetector({ cpuThreshold: 0.9, memoryThreshold: 0.9, consecutiveIntervals: 3 }),
      counters,
      softCancel: (id) => soft.push(id),
      hardCancel: (id) => hard.push(id),
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

describe('DuressDetector', () => {
  it('enters duress after N consecutive intervals over a threshold and leaves on the first one under', () => {
    const d = new DuressDetector({ cpuThreshold: 0.9, memoryThreshold: 0.9, consecutiveIntervals: 3 });
    expect(d.update(0.95, 0)).toBe(false);
    expect(d.update(0.95, 0)).toBe(false);
    expect(d.update(0.5, 0.95)).toBe(true);
    expect(d.update(0.5, 0.5)).toBe(false);
    expect(d.update(0.91, 0)).toBe(false);
  });
});
