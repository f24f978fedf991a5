import { describe, expect, it } from 'vitest';
import { DuressDetector } from '../../src/governor/duress-detector.js';
import { Governor } from '../../src/governor/governor.js';
import { SandboxCounterTable } from '../../src/governor/sandbox-counters.js';
import { dueWithin, overdueTasks } from '../../src/governor/wall-clock-watchdog.js';
import { parseSandboxDefinitions } from '../../src/sandbox/sandbox-file.js';
import { newTrackedTask, type TrackedTask } from '../../src/tracking/tracked-task.js';
import type {
  CancellationDecision,
  GovernorDecisionListener,
} from '../../src/governor/governor-decisions.js';

describe('overdueTasks', () => {
  const task = (taskId: number, startedAtMs: number, cancelling = false) => ({
    taskId,
    sandboxId: 's',
    startedAtMs,
    cancelling,
  });

  it('picks the tasks that ran at least their limit, whatever else they do, in the order given', () => {
    const limits = new Map([
      [1, 500],
      [2, 500],
      [3, 1000],
    ]);
    const picked = overdueTasks([task(1, 0), task(2, 150), task(3, 0)], 600, (id) => limits.get(id));
    expect(picked).toEqual([{ taskId: 1, sandboxId: 's', cancelAfterMs: 500, ranMs: 600, resource: 'time' }]);
    expect(overdueTasks([task(2, 100)], 600, (id) => limits.get(id))).toHaveLength(1); // exactly at the limit
  });

  it('lists the tasks that reach their limit before the next tick, with how long until then', () => {
    const limits = new Map([
      [1, 250],
      [2, 1000],
      [3, 150],
    ]);
    expect(dueWithin([task(1, 0), task(2, 0), task(3, 0)], 200, 100, (id) => limits.get(id))).toEqual([
      { taskId: 1, sandboxId: 's', cancelAfterMs: 250, inMs: 50 },
    ]);
  });

  it('skips tasks without a limit, with a non-positive one, and tasks already being cancelled', () => {
    expect(overdueTasks([task(1, 0)], 10_000, () => undefined)).toEqual([]);
    expect(overdueTasks([task(1, 0)], 10_000, () => 0)).toEqual([]);
    expect(overdueTasks([task(1, 0, true)], 10_000, () => 5)).toEqual([]);
  });
});

describe('the governor runs the watchdog at every tick', () => {
  const sandboxes = parseSandboxDefinitions({
    sandboxes: [
      {
        name: 'capped',
        priority: 5,
        resourceConsumptionLimits: { cpu: { low: 0.2, high: 0.4 } },
        selectionAttributes: [{ name: 'userPattern', value: 'a_*' }],
      },
    ],
  });

  function harness(decisions?: GovernorDecisionListener) {
    let now = 0;
    let tasks: TrackedTask[] = [];
    const soft: Array<[number, string]> = [];
    const hard: Array<[number, string]> = [];
    const limits = new Map<number, number>();
    const timers: Array<{ callback: () => void; delayMs: number; cancelled: boolean }> = [];
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
        sampleUsage: () => ({ intervalNs: 100e6, tasks, sandboxes: new Map() }),
        sampleNode: () => ({ cpu: 0, memory: 0 }),
        sandboxes: () => sandboxes,
        duress: new DuressDetector({ rejectThreshold: 0.8, cancelThreshold: 0.9, consecutiveIntervals: 3 }),
        counters: new SandboxCounterTable(),
        softCancel: (id, resource) => soft.push([id, resource]),
        hardCancel: (id, resource) => hard.push([id, resource]),
        nowMs: () => now,
        cancelAfterMs: (id) => limits.get(id),
        decisions,
        schedule: (callback, delayMs) => {
          const timer = { callback, delayMs, cancelled: false };
          timers.push(timer);
          return () => {
            timer.cancelled = true;
          };
        },
      },
    );
    return {
      governor,
      timers,
      soft,
      hard,
      limits,
      at: (ms: number) => {
        now = ms;
      },
      run: (id: number, sandboxId: string, startedAtMs: number) => {
        const t = newTrackedTask(id, sandboxId, 0, startedAtMs);
        tasks = [...tasks, t];
      },
      end: (id: number) => {
        tasks = tasks.filter((t) => t.taskId !== id);
        governor.forget(id);
      },
    };
  }

  it('cancels a task using no CPU soft at the first tick past its limit, hard a grace period later, counted apart', () => {
    const h = harness();
    h.run(7, 'capped', 0);
    h.limits.set(7, 250);
    h.at(200);
    h.governor.tick();
    expect(h.soft).toEqual([]);
    h.at(300);
    h.governor.tick();
    expect(h.soft).toEqual([[7, 'time']]);
    expect(h.governor.cancellationOf(7)?.cancellation).toMatchObject({
      resource: 'time',
      cancelAfterMs: 250,
      ranMs: 300,
    });
    h.at(400);
    h.governor.tick();
    expect(h.hard).toEqual([]);
    h.at(500);
    h.governor.tick();
    expect(h.hard).toEqual([[7, 'time']]);
    const stats = h.governor.stats();
    expect(stats).toMatchObject({
      wallClockCancellations: 1,
      wallClockHardCancellations: 1,
      softCancellations: 0,
      hardCancellations: 0,
      rateLimited: 0,
    });
    // Picked once: later ticks do not pick it again.
    h.at(900);
    h.governor.tick();
    expect(h.soft).toHaveLength(1);
  });

  it('tells the decision listener of both stages, as resource time with the limit it ran past', () => {
    const seen: CancellationDecision[] = [];
    const h = harness({ stateChanged: () => {}, cancelled: (d) => seen.push(d) });
    h.run(7, 'capped', 0);
    h.limits.set(7, 250);
    for (const ms of [300, 400, 500]) {
      h.at(ms);
      h.governor.tick();
    }
    expect(seen.map((d) => [d.taskId, d.resource, d.kind, d.cancelAfterMs, d.breachedSandboxId])).toEqual([
      [7, 'time', 'soft', 250, 'capped'],
      [7, 'time', 'hard', 250, 'capped'],
    ]);
    expect(seen[0]).toMatchObject({ usage: undefined, highLimit: undefined, taskUsage: undefined });
  });

  it('arms a timer at the tick before the limit and cancels at the limit, not a whole interval later', () => {
    const h = harness();
    h.run(3, 'capped', 0);
    h.limits.set(3, 250);
    h.at(200);
    h.governor.tick();
    expect(h.soft).toEqual([]);
    expect(h.timers.map((t) => t.delayMs)).toEqual([50]);
    h.at(250);
    h.timers[0]!.callback();
    expect(h.soft).toEqual([[3, 'time']]);
    expect(h.governor.cancellationOf(3)?.cancellation).toMatchObject({ cancelAfterMs: 250, ranMs: 250 });
    // The next tick does not pick it again; hard comes a grace period after the timer's soft.
    h.at(300);
    h.governor.tick();
    h.at(450);
    h.governor.tick();
    expect(h.hard).toEqual([[3, 'time']]);
    expect(h.governor.stats().wallClockCancellations).toBe(1);
  });

  it('a timer does nothing once its task ended or its limit was raised', () => {
    const h = harness();
    h.run(4, 'capped', 0);
    h.run(5, 'capped', 0);
    h.limits.set(4, 250);
    h.limits.set(5, 250);
    h.at(200);
    h.governor.tick();
    expect(h.timers).toHaveLength(2);
    h.end(4);
    expect(h.timers[0]!.cancelled).toBe(true);
    h.limits.set(5, 10_000);
    h.at(250);
    h.timers[1]!.callback();
    expect(h.soft).toEqual([]);
  });

  it('a task that ends after its soft cancellation is not cancelled hard; a raised limit spares a running task', () => {
    const h = harness();
    h.run(1, 'capped', 0);
    h.run(2, 'capped', 0);
    h.limits.set(1, 100);
    h.limits.set(2, 100);
    h.at(100);
    h.limits.set(2, 10_000);
    h.governor.tick();
    expect(h.soft).toEqual([[1, 'time']]);
    h.end(1);
    h.at(400);
    h.governor.tick();
    expect(h.hard).toEqual([]);
    expect(h.governor.stats().wallClockHardCancellations).toBe(0);
  });
});
