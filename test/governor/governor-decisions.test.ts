import { describe, expect, it } from 'vitest';
import { DuressDetector } from '../../src/governor/duress-detector.js';
import { Governor } from '../../src/governor/governor.js';
import type { CancellationDecision, StateChangeDecision } from '../../src/governor/governor-decisions.js';
import { SandboxCounterTable } from '../../src/governor/sandbox-counters.js';
import { parseSandboxDefinitions } from '../../src/sandbox/sandbox-file.js';
import { newTrackedTask, type TrackedTask } from '../../src/tracking/tracked-task.js';
import type { UsageSample } from '../../src/tracking/usage-tracker.js';

const sandboxes = parseSandboxDefinitions({
  sandboxes: [
    {
      _id: 'analysts',
      name: 'analysts',
      priority: 5,
      resourceConsumptionLimits: { cpu: { low: 0.2, high: 0.4 } },
      selectionAttributes: [{ name: 'userPattern', value: 'analyst_*' }],
    },
  ],
});

function harness() {
  let now = 0;
  let tasks: TrackedTask[] = [];
  const states: StateChangeDecision[] = [];
  const cancellations: CancellationDecision[] = [];
  const governor = new Governor(
    {
      intervalMs: 100,
      graceIntervals: 2,
      enforcement: 'enabled',
      selection: 'largest_usage',
      cancellationRatePerSecond: 3,
      cancellationRatio: 0.1,
      cancellationBurst: 5,
      boostPriority: 10,
      boostHalfLifeMs: 5000,
    },
    {
      sampleUsage: (): UsageSample => {
        const map = new Map<string, { cpu: number; memory: number; running: number }>();
        for (const t of tasks) {
          for (const id of [t.sandboxId, '_root']) {
            const u = map.get(id) ?? { cpu: 0, memory: 0, running: 0 };
            u.cpu += t.cpuUsage;
            u.running++;
            map.set(id, u);
          }
        }
        return { intervalNs: 100e6, tasks, sandboxes: map };
      },
      sampleNode: () => ({ cpu: 0.5, memory: 0.1 }),
      sandboxes: () => sandboxes,
      duress: new DuressDetector({ rejectThreshold: 0.8, cancelThreshold: 0.9, consecutiveIntervals: 3 }),
      counters: new SandboxCounterTable(),
      softCancel: () => {},
      hardCancel: () => {},
      nowMs: () => now,
      decisions: { stateChanged: (d) => states.push(d), cancelled: (d) => cancellations.push(d) },
    },
  );
  const task = (id: number, cpu: number) => {
    const t = newTrackedTask(id, 'analysts', 0, 0);
    t.cpuUsage = cpu;
    return t;
  };
  const tick = (ms = 100) => {
    now += ms;
    governor.tick();
  };
  return { governor, states, cancellations, task, tick, setTasks: (t: TrackedTask[]) => (tasks = t) };
}

describe('governor decisions told to a listener', () => {
  it('tells each state change once, and each soft then hard cancellation with usage against the limit', () => {
    const h = harness();
    h.setTasks([h.task(1, 0.1)]);
    h.tick();
    expect(h.states).toEqual([]);
    h.setTasks([h.task(1, 0.3)]);
    h.tick();
    h.tick();
    expect(h.states).toEqual([
      {
        sandboxId: 'analysts',
        from: 'ok',
        to: 'rejecting',
        resource: 'cpu',
        usage: 0.3,
        lowLimit: 0.2,
        highLimit: 0.4,
      },
    ]);
    h.setTasks([h.task(1, 0.3), h.task(2, 0.25)]);
    h.tick();
    expect(h.states[1]).toEqual({
      sandboxId: 'analysts',
      from: 'rejecting',
      to: 'cancelling',
      resource: 'cpu',
      usage: 0.55,
      lowLimit: 0.2,
      highLimit: 0.4,
    });
    // The excess (0.15) is covered by the largest task alone.
    expect(h.cancellations).toEqual([
      {
        taskId: 1,
        sandboxId: 'analysts',
        breachedSandboxId: 'analysts',
        reason: 'limit',
        resource: 'cpu',
        kind: 'soft',
        usage: 0.55,
        highLimit: 0.4,
        taskUsage: 0.3,
      },
    ]);
    // Still running two intervals later: hard.
    h.tick();
    h.tick();
    expect(h.cancellations.map((c) => [c.taskId, c.kind])).toEqual([
      [1, 'soft'],
      [1, 'hard'],
    ]);
    h.setTasks([]);
    h.tick();
    expect(h.states.map((s) => `${s.from}->${s.to}`)).toEqual([
      'ok->rejecting',
      'rejecting->cancelling',
      'cancelling->ok',
    ]);
    expect(h.states[2]).toMatchObject({ resource: undefined, usage: undefined });
    h.tick();
    expect(h.states).toHaveLength(3);
  });
});
