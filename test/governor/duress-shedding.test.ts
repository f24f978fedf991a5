import { describe, expect, it } from 'vitest';
import { decide, type DecisionInput, type TaskUsageView } from '../../src/governor/decide.js';
import type { CancellationDecision } from '../../src/governor/governor-decisions.js';
import { DuressDetector } from '../../src/governor/duress-detector.js';
import { Governor } from '../../src/governor/governor.js';
import { SandboxCounterTable } from '../../src/governor/sandbox-counters.js';
import { parseSandboxDefinitions } from '../../src/sandbox/sandbox-file.js';
import { newTrackedTask, type TrackedTask } from '../../src/tracking/tracked-task.js';
import type { UsageSample } from '../../src/tracking/usage-tracker.js';

// The bundled shape: the root at 10 with no limits, dashboards above it, analysts below it, and a
// monitor sandbox below everyone (which must never act).
const sandboxes = parseSandboxDefinitions({
  sandboxes: [
    { _id: '_root', priority: 10 },
    {
      name: 'dashboards',
      priority: 20,
      resourceConsumptionLimits: { cpu: { low: 0.6, high: 0.9 } },
      selectionAttributes: [{ name: 'userPattern', value: 'dash_*' }],
    },
    {
      name: 'analysts',
      priority: 5,
      resourceConsumptionLimits: { cpu: { low: 0.6, high: 0.8 } },
      selectionAttributes: [{ name: 'userPattern', value: 'analyst_*' }],
    },
    {
      name: 'watch',
      priority: 1,
      mode: 'monitor',
      resourceConsumptionLimits: { cpu: { low: 0.5, high: 0.9 } },
      selectionAttributes: [{ name: 'userPattern', value: 'watch_*' }],
    },
  ],
});

/** A governor on an injected clock, node usage and task list; records soft and hard cancellations. */
function harness(options: { burst?: number } = {}) {
  let now = 0;
  let node = { cpu: 0.5, memory: 0.1 };
  let tasks: TrackedTask[] = [];
  let standing = true;
  const soft: number[] = [];
  const hard: number[] = [];
  const decisions: CancellationDecision[] = [];
  const counters = new SandboxCounterTable();
  const governor = new Governor(
    {
      intervalMs: 100,
      graceIntervals: 2,
      enforcement: 'enabled',
      selection: 'largest_usage',
      cancellationRatePerSecond: 3,
      cancellationRatio: 0.1,
      cancellationBurst: options.burst ?? 5,
      boostPriority: 10,
      boostHalfLifeMs: 5000,
      duressShedding: { cancelAfterIntervals: 3, minUsage: 0.05 },
    },
    {
      sampleUsage: (): UsageSample => {
        const map = new Map<string, { cpu: number; memory: number; running: number }>();
        for (const t of tasks) {
          // Usage is summed up the tree: a child's tasks count for the root too.
          for (const id of t.sandboxId === '_root' ? ['_root'] : [t.sandboxId, '_root']) {
            const u = map.get(id) ?? { cpu: 0, memory: 0, running: 0 };
            u.cpu += t.cpuUsage;
            u.running++;
            map.set(id, u);
          }
        }
        return { intervalNs: 100e6, tasks, sandboxes: map };
      },
      sampleNode: () => node,
      sandboxes: () => sandboxes,
      duress: new DuressDetector({ rejectThreshold: 0.8, cancelThreshold: 0.9, consecutiveIntervals: 3 }),
      counters,
      softCancel: (id) => soft.push(id),
      hardCancel: (id) => hard.push(id),
      nowMs: () => now,
      standingQueue: () => standing,
      decisions: { stateChanged: () => {}, cancelled: (d) => decisions.push(d) },
    },
  );
  const task = (id: number, sandboxId: string, cpu: number) => {
    const t = newTrackedTask(id, sandboxId, 0, 0);
    t.cpuUsage = cpu;
    return t;
  };
  const tick = () => {
    governor.tick();
    now += 100;
  };
  return {
    governor,
    soft,
    hard,
    decisions,
    task,
    tick,
    setTasks: (t: TrackedTask[]) => {
      tasks = t;
    },
    setNode: (cpu: number, memory = 0.1) => {
      node = { cpu, memory };
    },
    setStanding: (value: boolean) => {
      standing = value;
    },
    shed: () => [...governor.snapshot.shed.keys()],
  };
}

describe('shedding in duress when no sandbox breaches a limit', () => {
  it('sheds the lowest-priority sandbox using the CPU (the root), cancels after the duress persists, and stops when it ends', () => {
    const h = harness();
    // The root's own tasks use 0.96 of the node; analysts (priority 5) use 0.02, below minUsage 0.05;
    // the monitor sandbox (priority 1) uses 0.1 but never acts. Nobody is over a limit.
    const rootTasks = [1, 2, 3, 4, 5, 6].map((id) => h.task(id, '_root', 0.14));
    h.setTasks([...rootTasks, h.task(7, 'analysts', 0.02), h.task(8, 'watch', 0.1)]);
    h.setNode(0.96);
    h.tick();
    h.tick();
    // Two intervals above 0.8: not yet duress (3 in a row are needed).
    expect(h.governor.snapshot.duress).toBe(false);
    expect(h.governor.verdict('_root').rejectNew).toBe(false);
    h.tick(); // the third: duress
    expect(h.governor.snapshot.duress).toBe(true);
    expect(h.shed()).toEqual(['_root']);
    const root = h.governor.verdict('_root');
    expect(root).toMatchObject({
      rejectNew: true,
      rejectedBy: '_root',
      rejectResource: 'cpu',
      shedInDuress: true,
    });
    // Only the root's own work: its children, analysts and dashboards, still take work; so does the monitor.
    for (const id of ['analysts', 'dashboards', 'watch'])
      expect(h.governor.verdict(id).rejectNew).toBe(false);
    expect(h.soft).toEqual([]);
    h.tick(); // shed 1 interval
    h.tick(); // 2
    expect(h.soft).toEqual([]);
    h.tick(); // 3 intervals of persisting duress: cancel the largest until 0.96 − 0.8 = 0.16 is covered
    expect(h.soft).toEqual([1, 2]);
    expect(h.governor.lastCancellations).toEqual([
      { taskId: 1, sandboxId: '_root', resource: 'cpu', reason: 'duress' },
      { taskId: 2, sandboxId: '_root', resource: 'cpu', reason: 'duress' },
    ]);
    // The decision log says why: the root was shed in duress, not over a limit (it has none).
    expect(h.decisions.map((d) => [d.taskId, d.breachedSandboxId, d.reason, d.kind])).toEqual([
      [1, '_root', 'duress', 'soft'],
      [2, '_root', 'duress', 'soft'],
    ]);
    h.tick(); // the two being cancelled cover the excess: nothing more
    expect(h.soft).toEqual([1, 2]);
    // They settle; the node comes out of duress: the root takes work again, nothing more is cancelled.
    h.governor.forget(1);
    h.governor.forget(2);
    h.setTasks([...rootTasks.slice(2), h.task(7, 'analysts', 0.02), h.task(8, 'watch', 0.1)]);
    h.setNode(0.6);
    h.tick();
    expect(h.governor.snapshot.duress).toBe(false);
    expect(h.shed()).toEqual([]);
    expect(h.governor.verdict('_root').rejectNew).toBe(false);
    h.tick();
    h.tick();
    expect(h.soft).toEqual([1, 2]);
    expect(h.hard).toEqual([]);
    expect(h.governor.stats().softCancellations).toBe(2);
  });

  it('adds the next lowest once the shed ones no longer use the resource and the duress persists', () => {
    const h = harness();
    h.setTasks([h.task(1, 'analysts', 0.3), h.task(2, '_root', 0.6)]);
    h.setNode(0.95);
    h.tick();
    h.tick();
    h.tick();
    // analysts (5) is below the root (10): it goes first, though it is within its limits (low 0.6).
    expect(h.shed()).toEqual(['analysts']);
    expect(h.governor.verdict('_root').rejectNew).toBe(false);
    // analysts' work is gone, the duress is not: the root is shed too, analysts stays shed.
    h.setTasks([h.task(2, '_root', 0.6), h.task(3, '_root', 0.35)]);
    h.tick();
    expect(h.shed()).toEqual(['analysts', '_root']);
    expect(h.governor.verdict('analysts').rejectNew).toBe(true);
    expect(h.governor.verdict('_root').rejectNew).toBe(true);
    expect(h.governor.verdict('dashboards').rejectNew).toBe(false);
  });

  it('cancels within the token buckets: a burst of 2 holds back the rest', () => {
    const h = harness({ burst: 2 });
    h.setTasks(Array.from({ length: 10 }, (_, i) => h.task(i + 1, '_root', 0.1)));
    h.setNode(1);
    for (let i = 0; i < 6; i++) h.tick(); // 3 to enter duress, 3 shed
    // Excess 1 − 0.8 = 0.2 needs two tasks of 0.1: the burst allows two.
    expect(h.soft).toEqual([1, 2]);
    expect(h.governor.stats().rateLimited).toBe(0);
    h.governor.forget(1);
    h.governor.forget(2);
    h.setTasks(Array.from({ length: 8 }, (_, i) => h.task(i + 3, '_root', 0.1)));
    h.tick(); // both buckets nearly empty (0.3 tokens by time, none by completions): held back
    expect(h.soft).toEqual([1, 2]);
    expect(h.governor.stats().rateLimited).toBe(2);
  });

  it('starts shedding in CPU duress only while work piles up (a standing queue), and keeps it until the duress ends', () => {
    const h = harness();
    h.setTasks([h.task(1, '_root', 0.5), h.task(2, '_root', 0.45)]);
    h.setNode(0.97);
    h.setStanding(false); // a busy node whose queues keep emptying: it keeps up
    for (let i = 0; i < 8; i++) h.tick();
    expect(h.governor.snapshot.duress).toBe(true);
    expect(h.shed()).toEqual([]);
    expect(h.governor.verdict('_root').rejectNew).toBe(false);
    expect(h.soft).toEqual([]);
    h.setStanding(true);
    h.tick();
    expect(h.shed()).toEqual(['_root']);
    // Shedding empties the queue; the root stays shed while the duress lasts.
    h.setStanding(false);
    h.tick();
    expect(h.shed()).toEqual(['_root']);
    h.setNode(0.5);
    h.tick();
    expect(h.shed()).toEqual([]);
  });

  it('sheds in memory duress without waiting for a standing queue', () => {
    const h = harness();
    const t = h.task(1, 'analysts', 0);
    t.memoryUsage = 0.9;
    h.setTasks([t, h.task(2, '_root', 0.1)]);
    h.setNode(0.3, 0.95);
    h.setStanding(false);
    h.tick();
    h.tick();
    h.tick();
    expect(h.shed()).toEqual(['analysts']);
    expect(h.governor.verdict('analysts')).toMatchObject({
      rejectNew: true,
      rejectResource: 'memory',
      shedInDuress: true,
    });
  });

  it('never sheds in monitor_only or when shedding is off', () => {
    const input = (overrides: Partial<DecisionInput>): DecisionInput => {
      const tasks: TaskUsageView[] = [
        { taskId: 1, sandboxId: '_root', cpuUsage: 0.9, memoryUsage: 0, cancelling: false, startedAtMs: 0 },
      ];
      return {
        enforcement: 'enabled',
        duress: 'cancel',
        sandboxes,
        usage: new Map([['_root', { cpu: 0.9, memory: 0 }]]),
        tasks,
        duressShedding: {
          shed: new Map([['_root', 5]]),
          cancelAfterIntervals: 3,
          minUsage: 0.05,
          excess: 0.1,
        },
        ...overrides,
      };
    };
    expect(decide(input({})).cancellations).toHaveLength(1);
    for (const d of [
      decide(input({ enforcement: 'monitor_only' })),
      decide(input({ duressShedding: undefined })),
    ]) {
      expect(d.cancellations).toEqual([]);
      expect(d.shed.size).toBe(0);
      expect(d.verdicts.get('_root')!.rejectNew).toBe(false);
    }
    // Out of duress the set empties at once.
    expect(decide(input({ duress: 'none' })).shed.size).toBe(0);
  });
});
