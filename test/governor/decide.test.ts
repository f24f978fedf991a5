import { describe, expect, it } from 'vitest';
import { type DecisionInput, decide, type TaskUsageView } from '../../src/governor/decide.js';
import { parseSandboxDefinitions } from '../../src/sandbox/sandbox-file.js';
import type { Sandbox } from '../../src/sandbox/sandbox.js';

function sandboxes(): Sandbox[] {
  return parseSandboxDefinitions({
    sandboxes: [
      { _id: '_root', priority: 10 },
      {
        name: 'dash',
        priority: 20,
        resourceConsumptionLimits: { cpu: { low: 0.5, high: 0.8 }, memory: { low: 0.5, high: 0.8 } },
        selectionAttributes: [{ name: 'userPattern', value: 'dash_*' }],
      },
      {
        name: 'analysts',
        priority: 5,
        resourceConsumptionLimits: { cpu: { low: 0.2, high: 0.4 }, memory: { low: 0.2, high: 0.3 } },
        selectionAttributes: [{ name: 'userPattern', value: 'analyst_*' }],
      },
      {
        name: 'watch',
        priority: 1,
        mode: 'monitor',
        resourceConsumptionLimits: { cpu: { low: 0.1, high: 0.2 } },
        selectionAttributes: [{ name: 'userPattern', value: 'watch_*' }],
      },
      {
        name: 'batch',
        priority: 2,
        mode: 'soft',
        resourceConsumptionLimits: { cpu: { low: 0.1, high: 0.2 } },
        selectionAttributes: [{ name: 'userPattern', value: 'batch_*' }],
      },
    ],
  });
}

function task(
  taskId: number,
  sandboxId: string,
  cpuUsage: number,
  memoryUsage = 0,
  cancelling = false,
  startedAtMs = taskId,
): TaskUsageView {
  return { taskId, sandboxId, cpuUsage, memoryUsage, cancelling, startedAtMs };
}

function input(tasks: TaskUsageView[], overrides: Partial<DecisionInput> = {}): DecisionInput {
  const usage = new Map<string, { cpu: number; memory: number }>();
  for (const t of tasks) {
    const u = usage.get(t.sandboxId) ?? { cpu: 0, memory: 0 };
    u.cpu += t.cpuUsage;
    u.memory += t.memoryUsage;
    usage.set(t.sandboxId, u);
  }
  return { enforcement: 'enabled', duress: 'none', sandboxes: sandboxes(), usage, tasks, ...overrides };
}

describe('decide', () => {
  it('rejects new tasks of a sandbox above its low limit and cancels none below its high limit', () => {
    const d = decide(input([task(1, 'analysts', 0.3)]));
    const v = d.verdicts.get('analysts')!;
    expect(v.state).toBe('rejecting');
    expect(v.rejectNew).toBe(true);
    expect(v.rejectResource).toBe('cpu');
    expect(d.cancellations).toEqual([]);
    expect(d.verdicts.get('dash')!.rejectNew).toBe(false);
  });

  it('cancels the largest consumers until the excess over the high limit is covered', () => {
    // usage 0.1 + 0.25 + 0.15 + 0.05 = 0.55; high 0.4; excess 0.15: the 0.25 task alone covers it.
    const d = decide(
      input([
        task(1, 'analysts', 0.1),
        task(2, 'analysts', 0.25),
        task(3, 'analysts', 0.15),
        task(4, 'analysts', 0.05),
      ]),
    );
    expect(d.verdicts.get('analysts')!.state).toBe('cancelling');
    expect(d.cancellations).toEqual([{ taskId: 2, sandboxId: 'analysts', resource: 'cpu' }]);
  });

  it('picks several tasks when one does not cover the excess', () => {
    // usage 0.8, high 0.4, excess 0.4: 0.2 + 0.2 (ties broken by the older task id).
    const d = decide(
      input([
        task(5, 'analysts', 0.2),
        task(3, 'analysts', 0.2),
        task(4, 'analysts', 0.2),
        task(6, 'analysts', 0.2),
      ]),
    );
    expect(d.cancellations.map((c) => c.taskId)).toEqual([3, 4]);
  });

  it('counts tasks already being cancelled towards the excess and does not pick them again', () => {
    const d = decide(input([task(1, 'analysts', 0.3, 0, true), task(2, 'analysts', 0.2)]));
    // excess 0.1 is covered by task 1 already in cancellation.
    expect(d.cancellations).toEqual([]);
  });

  it('lets a task picked for cpu count for memory too', () => {
    // cpu excess 0.5 - 0.4 = 0.1 → task 1 (largest cpu); memory 0.35 - 0.3 = 0.05, covered by task 1's 0.2.
    const d = decide(input([task(1, 'analysts', 0.3, 0.2), task(2, 'analysts', 0.2, 0.15)]));
    expect(d.cancellations).toEqual([{ taskId: 1, sandboxId: 'analysts', resource: 'cpu' }]);
  });

  it('picks by memory when memory is the breached resource', () => {
    const d = decide(input([task(1, 'analysts', 0.01, 0.05), task(2, 'analysts', 0.01, 0.3)]));
    expect(d.cancellations).toEqual([{ taskId: 2, sandboxId: 'analysts', resource: 'memory' }]);
  });

  it('lists cancellations of the lowest-priority breaching sandbox first', () => {
    const d = decide(input([task(1, 'dash', 0.9), task(2, 'analysts', 0.5)]));
    expect(d.cancellations.map((c) => c.sandboxId)).toEqual(['analysts', 'dash']);
  });

  it('picks the oldest tasks first with the oldest_first strategy', () => {
    // excess 0.15: the oldest (started at 1) is small, so the next oldest is needed too.
    const tasks = [
      task(1, 'analysts', 0.1, 0, false, 5),
      task(2, 'analysts', 0.3, 0, false, 9),
      task(3, 'analysts', 0.15, 0, false, 1),
    ];
    const d = decide(input(tasks, { selection: 'oldest_first' }));
    expect(d.cancellations.map((c) => c.taskId)).toEqual([3, 1]);
    expect(decide(input(tasks)).cancellations.map((c) => c.taskId)).toEqual([2]);
  });

  it('orders breaching sandboxes by priority plus boost', () => {
    const tasks = [task(1, 'dash', 0.9), task(2, 'analysts', 0.5)];
    // analysts (5) boosted by 20 now ranks above dash (20): dash is cut first.
    const d = decide(input(tasks, { priorityBoost: new Map([['analysts', 20]]) }));
    expect(d.cancellations.map((c) => c.sandboxId)).toEqual(['dash', 'analysts']);
  });

  it('never acts for a monitor sandbox but reports what it would do', () => {
    const d = decide(input([task(1, 'watch', 0.5)]));
    const v = d.verdicts.get('watch')!;
    expect(v.rejectNew).toBe(false);
    expect(v.state).toBe('ok');
    expect(v.wouldReject).toBe(true);
    expect(v.wouldCancel).toBe(true);
    expect(v.resource).toBe('cpu');
    expect(d.cancellations).toEqual([]);
  });

  it('applies soft limits only while the node is in duress', () => {
    const calm = decide(input([task(1, 'batch', 0.5)]));
    expect(calm.verdicts.get('batch')!.rejectNew).toBe(false);
    expect(calm.cancellations).toEqual([]);
    // Reject level: soft limits refuse new work but cancel nothing yet.
    const rejectLevel = decide(input([task(1, 'batch', 0.5)], { duress: 'reject' }));
    expect(rejectLevel.verdicts.get('batch')!.rejectNew).toBe(true);
    expect(rejectLevel.verdicts.get('batch')!.state).toBe('rejecting');
    expect(rejectLevel.cancellations).toEqual([]);
    const duress = decide(input([task(1, 'batch', 0.5)], { duress: 'cancel' }));
    expect(duress.verdicts.get('batch')!.rejectNew).toBe(true);
    expect(duress.cancellations).toEqual([{ taskId: 1, sandboxId: 'batch', resource: 'cpu' }]);
  });

  it('only counts in monitor_only and does nothing when disabled', () => {
    const monitor = decide(input([task(1, 'analysts', 0.9)], { enforcement: 'monitor_only' }));
    expect(monitor.cancellations).toEqual([]);
    expect(monitor.verdicts.get('analysts')!.rejectNew).toBe(false);
    expect(monitor.verdicts.get('analysts')!.wouldCancel).toBe(true);
    const disabled = decide(input([task(1, 'analysts', 0.9)], { enforcement: 'disabled' }));
    expect(disabled.cancellations).toEqual([]);
    expect(disabled.verdicts.get('analysts')!.wouldReject).toBe(false);
  });

  it('cancels the tasks of a deleted sandbox first, and only while the node is in duress', () => {
    const orphan = task(9, 'deleted-sandbox', 0.1);
    const calm = decide(input([orphan, task(1, 'analysts', 0.1)]));
    expect(calm.cancellations).toEqual([]);
    const duress = decide(
      input([orphan, task(1, 'analysts', 0.5)], { duress: 'cancel', duressResource: 'memory' }),
    );
    expect(duress.cancellations[0]).toEqual({
      taskId: 9,
      sandboxId: 'deleted-sandbox',
      resource: 'memory',
      reason: 'duress',
    });
    expect(duress.cancellations.map((c) => c.taskId)).toEqual([9, 1]);
  });

  it("refuses a child's new tasks while its parent is above its low limit", () => {
    const tree = parseSandboxDefinitions({
      sandboxes: [
        { name: 'team', priority: 5, resourceConsumptionLimits: { cpu: { low: 0.3, high: 0.5 } } },
        {
          name: 'team-a',
          parent_id: 'team',
          priority: 1,
          selectionAttributes: [{ name: 'userPattern', value: 'a_*' }],
        },
        {
          name: 'team-b',
          parent_id: 'team',
          priority: 2,
          selectionAttributes: [{ name: 'userPattern', value: 'b_*' }],
        },
      ],
    });
    const usage = new Map([
      ['team', { cpu: 0.6, memory: 0 }],
      ['team-a', { cpu: 0.2, memory: 0 }],
      ['team-b', { cpu: 0.4, memory: 0 }],
    ]);
    const d = decide({
      enforcement: 'enabled',
      duress: 'none',
      sandboxes: tree,
      usage,
      tasks: [task(1, 'team-b', 0.4), task(2, 'team-a', 0.2)],
    });
    expect(d.verdicts.get('team-a')!.rejectNew).toBe(true);
    expect(d.verdicts.get('team-a')!.rejectedBy).toBe('team');
    // excess 0.1: the lowest-priority child's task goes first even though it is smaller.
    expect(d.cancellations).toEqual([{ taskId: 2, sandboxId: 'team', resource: 'cpu' }]);
  });
});
