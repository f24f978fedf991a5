import { describe, expect, it } from 'vitest';
import { allocateTaskSlotBuffers, TaskSlots } from '../../src/pool/task-slots.js';
import { newTrackedTask } from '../../src/tracking/tracked-task.js';
import { UsageTracker } from '../../src/tracking/usage-tracker.js';

const MS = 1e6;

function setup() {
  const slots = new TaskSlots(allocateTaskSlotBuffers(8));
  let now = 0;
  const cpu = new Map<number, number>(); // tid -> thread CPU ns
  const tracker = new UsageTracker({
    slots,
    cores: 2,
    memoryBudgetBytes: 1000,
    parentOf: (id) => ({ child: 'parent', parent: '_root', other: '_root' })[id] ?? null,
    nowNs: () => now,
    reader: { cpuTimeNs: (tid) => cpu.get(tid), close: () => {} },
  });
  return {
    slots,
    tracker,
    cpu,
    advance: (ms: number) => {
      now += ms * MS;
    },
  };
}

describe('UsageTracker', () => {
  it('computes per-interval CPU usage as thread CPU / (wall × cores)', () => {
    const { slots, tracker, cpu, advance } = setup();
    slots.assign(0, 1);
    slots.begin(0, 1, 501, 10 * MS, 0);
    cpu.set(501, 10 * MS);
    tracker.add(newTrackedTask(1, 'child', 0, 0));
    advance(100);
    cpu.set(501, 110 * MS); // 100 ms of CPU in 100 ms on 2 cores: 0.5
    const first = tracker.sample();
    expect(first.tasks[0]!.cpuUsage).toBeCloseTo(0.5, 9);
    advance(100);
    cpu.set(501, 135 * MS); // 25 ms in the next 100 ms: 0.125, not an average since start
    const second = tracker.sample();
    expect(second.tasks[0]!.cpuUsage).toBeCloseTo(0.125, 9);
    expect(second.tasks[0]!.cpuTimeNs).toBe(125 * MS);
  });

  it('caps a task at one thread for the interval and a sandbox at the whole node (tick granularity)', () => {
    const { slots, tracker, cpu, advance } = setup();
    for (const [slot, tid] of [
      [0, 11],
      [1, 12],
      [2, 13],
    ] as const) {
      slots.assign(slot, slot + 1);
      slots.begin(slot, slot + 1, tid, 0, 0);
      cpu.set(tid, 0);
      tracker.add(newTrackedTask(slot + 1, 'child', slot, 0));
    }
    advance(100);
    cpu.set(11, 104 * MS); // read a tick late: 104 ms of CPU in a 100 ms interval
    cpu.set(12, 100 * MS);
    cpu.set(13, 100 * MS); // three threads at once on 2 cores cannot all have run the whole interval
    const s = tracker.sample();
    expect(s.tasks[0]!.cpuUsage).toBeCloseTo(0.5, 9);
    expect(s.tasks[0]!.cpuTimeNs).toBe(104 * MS); // the task's own total keeps the clock's figure
    expect(s.sandboxes.get('child')!.cpu).toBe(1);
    expect(s.sandboxes.get('_root')!.cpu).toBe(1);
  });

  it("adds a task's usage to its sandbox and every ancestor", () => {
    const { slots, tracker, cpu, advance } = setup();
    slots.assign(0, 1);
    slots.begin(0, 1, 1, 0, 0);
    slots.assign(1, 2);
    slots.begin(1, 2, 2, 0, 0);
    cpu.set(1, 0);
    cpu.set(2, 0);
    tracker.add(newTrackedTask(1, 'child', 0, 0));
    tracker.add(newTrackedTask(2, 'other', 1, 0));
    advance(100);
    cpu.set(1, 40 * MS);
    cpu.set(2, 60 * MS);
    const s = tracker.sample();
    expect(s.sandboxes.get('child')!.cpu).toBeCloseTo(0.2, 9);
    expect(s.sandboxes.get('parent')!.cpu).toBeCloseTo(0.2, 9);
    expect(s.sandboxes.get('other')!.cpu).toBeCloseTo(0.3, 9);
    expect(s.sandboxes.get('_root')!.cpu).toBeCloseTo(0.5, 9);
    expect(s.sandboxes.get('_root')!.running).toBe(2);
  });

  it('counts the CPU of a task that ended between samples, from its own end figure', () => {
    const { slots, tracker, cpu, advance } = setup();
    slots.assign(0, 1);
    slots.begin(0, 1, 7, 5 * MS, 0);
    cpu.set(7, 5 * MS);
    const task = newTrackedTask(1, 'other', 0, 0);
    tracker.add(task);
    advance(50);
    slots.end(0, 1, 25 * MS, 0); // 20 ms of CPU, then it settles before the next sample
    tracker.complete(task);
    slots.release(0);
    advance(50);
    const s = tracker.sample();
    expect(s.tasks).toHaveLength(0);
    expect(s.sandboxes.get('other')!.cpu).toBeCloseTo(20 / 200, 9);
    expect(s.sandboxes.get('other')!.running).toBe(0);
    expect(tracker.sample().sandboxes.get('other')).toBeUndefined(); // counted once
  });

  it('reports memory above the task start as a ratio of the budget', () => {
    const { slots, tracker, cpu, advance } = setup();
    slots.assign(0, 1);
    slots.begin(0, 1, 3, 0, 200);
    cpu.set(3, 0);
    slots.checkpoint(0, 1, 450);
    tracker.add(newTrackedTask(1, 'other', 0, 0));
    advance(100);
    const s = tracker.sample();
    expect(s.tasks[0]!.memoryBytes).toBe(250);
    expect(s.sandboxes.get('other')!.memory).toBeCloseTo(0.25, 9);
  });

  it('probes the heap of a task whose checkpoints went stale and counts it from the next sample', async () => {
    const slots = new TaskSlots(allocateTaskSlotBuffers(2));
    let wall = 1_000_000;
    const asked: number[] = [];
    const tracker = new UsageTracker({
      slots,
      cores: 2,
      memoryBudgetBytes: 1000,
      parentOf: () => null,
      nowNs: () => wall * 1e6,
      wallMs: () => wall,
      reader: { cpuTimeNs: () => 0, close: () => {} },
      staleCheckpointMs: 200,
      heapProbe: {
        heapUsedBytes: async (threadId) => {
          asked.push(threadId);
          return 700;
        },
      },
    });
    slots.assign(0, 1);
    slots.begin(0, 1, 55, 0, 100, 7, wall); // threadId 7, baseline 100 bytes
    tracker.add(newTrackedTask(1, 'a', 0, 0));
    wall += 100;
    expect(tracker.sample().tasks[0]!.memoryBytes).toBe(0); // fresh checkpoint: no probe
    expect(asked).toEqual([]);
    wall += 150; // 250 ms since the last checkpoint
    tracker.sample();
    expect(asked).toEqual([7]);
    await Promise.resolve();
    wall += 100;
    const s = tracker.sample();
    expect(s.tasks[0]!.memoryBytes).toBe(600); // 700 - 100
    expect(s.sandboxes.get('a')!.memory).toBeCloseTo(0.6, 9);
  });

  it('leaves out tasks that are assigned but not yet started', () => {
    const { slots, tracker, advance } = setup();
    slots.assign(0, 1);
    tracker.add(newTrackedTask(1, 'other', 0, 0));
    advance(100);
    const s = tracker.sample();
    expect(s.tasks).toHaveLength(0);
    expect(s.sandboxes.size).toBe(0);
  });

  it('keeps what it counted when the thread disappears (worker terminated)', () => {
    const { slots, tracker, cpu, advance } = setup();
    slots.assign(0, 1);
    slots.begin(0, 1, 9, 0, 0);
    cpu.set(9, 0);
    const task = newTrackedTask(1, 'other', 0, 0);
    tracker.add(task);
    advance(100);
    cpu.set(9, 30 * MS);
    tracker.sample();
    cpu.delete(9);
    advance(100);
    expect(tracker.sample().tasks[0]!.cpuUsage).toBe(0);
    tracker.complete(task);
    expect(task.cpuTimeNs).toBe(30 * MS);
  });
});
