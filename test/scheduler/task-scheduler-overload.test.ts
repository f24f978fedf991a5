import { describe, expect, it } from 'vitest';
import { parseQueryPriority } from '../../src/scheduler/query-priority.js';
import { type OverloadPolicy, TaskScheduler } from '../../src/scheduler/task-scheduler.js';

function scheduler(
  capacity: number,
  over: { maxQueuedTasks?: number; overtakeEvery?: number; overload?: OverloadPolicy } = {},
) {
  return new TaskScheduler<string>({
    capacity,
    maxQueuedTasks: over.maxQueuedTasks ?? 10_000,
    agingMsPerPriority: 100,
    config: parseQueryPriority({}),
    ...(over.overtakeEvery !== undefined ? { agingOvertakeEvery: over.overtakeEvery } : {}),
    ...(over.overload !== undefined ? { overload: over.overload } : {}),
  });
}

/** Offers a task of `priority` and takes it: the one worker is busy. */
function occupy(s: TaskScheduler<string>, priority: number) {
  s.offer('blocker', 'x', priority, 0);
  return s.next(0)!;
}

/**
 * One worker; `dispatches` times: a new high-priority task arrives, the worker takes the next task,
 * runs it for 10 ms and gives the worker back. Returns the items taken, in order.
 */
function runWithHighLoad(s: TaskScheduler<string>, startMs: number, dispatches: number): string[] {
  const taken: string[] = [];
  for (let i = 0; i < dispatches; i++) {
    const now = startMs + i * 10;
    s.offer(`high-${i}`, 'dashboards', 20, now);
    const d = s.next(now)!;
    taken.push(d.item);
    s.release(d);
  }
  return taken;
}

describe('TaskScheduler under overload: priority survives aging', () => {
  it('does not hand the worker to a full queue of older low-priority tasks (aging share)', () => {
    const s = scheduler(1);
    const blocker = s.offer('blocker', 'x', 99, 0);
    expect(blocker.accepted).toBe(true);
    const running = s.next(0)!;
    // 1,000 low-priority tasks, all at least 2 s older than any high-priority one (aging gives them
    // 20+ points over priority 20's 10-point lead): plain aging would serve every one of them first.
    for (let i = 0; i < 1000; i++) s.offer(`low-${i}`, 'root', 10, i);
    s.release(running);
    const taken = runWithHighLoad(s, 3000, 100);
    const high = taken.filter((t) => t.startsWith('high'));
    // At most one take in 4 is an aged overtake: exactly 75 high and 25 low of 100.
    expect(high.length).toBe(75);
    expect(taken.filter((t) => t.startsWith('low')).length).toBe(25);
    // Overtake first (the share starts open), then 3 by priority, and so on.
    expect(taken.slice(0, 8)).toEqual([
      'low-0',
      'high-0',
      'high-1',
      'high-2',
      'low-1',
      'high-3',
      'high-4',
      'high-5',
    ]);
    // The low tasks still go oldest first.
    expect(taken.filter((t) => t.startsWith('low')).slice(0, 3)).toEqual(['low-0', 'low-1', 'low-2']);
  });

  it('with plain aging (overtakeEvery 1) the same queue starves the high priority: the fault it fixes', () => {
    const s = scheduler(1, { overtakeEvery: 1 });
    const running = occupy(s, 99);
    for (let i = 0; i < 1000; i++) s.offer(`low-${i}`, 'root', 10, i);
    s.release(running);
    const taken = runWithHighLoad(s, 3000, 100);
    expect(taken.filter((t) => t.startsWith('high')).length).toBe(0);
  });

  it('still does not starve low priority under high-priority load alone: it goes once aged past the high head', () => {
    const s = scheduler(1);
    const running = occupy(s, 99);
    s.offer('low', 'root', 10, 0);
    s.release(running);
    // A high task arrives every 10 ms and one task runs every 10 ms: the queue always holds a high one.
    const taken = runWithHighLoad(s, 0, 200);
    // 10 points at 100 ms a point: the low task overtakes the high head that arrived 1,000 ms after it.
    const at = taken.indexOf('low');
    expect(at).toBe(100);
    expect(taken[at - 1]).toBe('high-99');
  });
});

describe('TaskScheduler: queue-wait bound', () => {
  it('hands back each task at its own deadline, earliest first, and never dispatches it after', () => {
    const s = scheduler(1);
    const running = occupy(s, 5);
    s.offer('a', 'root', 5, 0, 1000);
    s.offer('b', 'root', 5, 100, 300); // deadline 400
    s.offer('c', 'root', 5, 200); // no bound
    expect(s.nextExpiryMs()).toBe(400);
    expect(s.expire(399)).toEqual([]);
    const first = s.expire(400);
    expect(first.map((e) => [e.item, e.reason, e.waitedMs, e.boundMs])).toEqual([
      ['b', 'queue_wait', 300, 300],
    ]);
    expect(s.nextExpiryMs()).toBe(1000);
    expect(s.expire(5000).map((e) => e.item)).toEqual(['a']);
    expect(s.nextExpiryMs()).toBeUndefined();
    expect(s.length).toBe(1);
    s.release(running);
    expect(s.next(5000)!.item).toBe('c');
    expect(s.stats().priorities.find((p) => p.priority === 5)!.expired).toBe(2);
  });

  it('removes a task whose caller gave up, once, and forgets its deadline', () => {
    const s = scheduler(1);
    s.offer('blocker', 'x', 5, 0);
    s.next(0);
    const offered = s.offer('gone', 'root', 5, 0, 1000);
    if (!offered.accepted) throw new Error('refused');
    expect(s.queuedBySandbox().get('root')).toBe(1);
    expect(s.remove(offered.ticket)).toBe(true);
    expect(s.remove(offered.ticket)).toBe(false);
    expect(offered.ticket.queued).toBe(false);
    expect(s.length).toBe(0);
    expect(s.queuedBySandbox().get('root')).toBeUndefined();
    expect(s.expire(2000)).toEqual([]);
    expect(s.nextExpiryMs()).toBeUndefined();
    expect(s.stats().priorities.find((p) => p.priority === 5)!.removed).toBe(1);
  });

  it('keeps the deadline heap small when tasks are dispatched long before their deadline', () => {
    const s = scheduler(1);
    for (let i = 0; i < 10_000; i++) {
      s.offer(`t${i}`, 'root', 5, i, 3_600_000);
      const d = s.next(i)!;
      s.release(d);
    }
    expect(s.length).toBe(0);
    expect(s.nextExpiryMs()).toBeUndefined();
  });
});

describe('TaskScheduler: controlled delay and adaptive LIFO', () => {
  const policy: OverloadPolicy = { intervalMs: 500, targetMs: 100, lifo: true };

  it('sheds tasks older than the target only once the queue has not emptied for the interval', () => {
    const s = scheduler(1, { overload: policy });
    const running = occupy(s, 5);
    for (let t = 0; t < 10; t++) s.offer(`t${t}`, 'root', 5, t * 50); // 0..450 ms
    // At 400 ms the queue has held tasks for 400 ms < 500: a burst, nothing is shed though most waited > 100 ms.
    expect(s.overloaded(0, 400)).toBe(false);
    expect(s.expire(400)).toEqual([]);
    // The next time something is due: when the lane becomes overloaded (500 ms).
    expect(s.nextExpiryMs()).toBe(500);
    expect(s.overloaded(0, 500)).toBe(true);
    const shed = s.expire(500);
    // Waited >= 100 ms at 500 ms: arrived at or before 400 ms.
    expect(shed.map((e) => e.item)).toEqual(['t0', 't1', 't2', 't3', 't4', 't5', 't6', 't7', 't8']);
    expect(new Set(shed.map((e) => e.reason))).toEqual(new Set(['controlled_delay']));
    expect(shed[0]!.waitedMs).toBe(500);
    expect(shed[0]!.boundMs).toBe(100);
    expect(s.length).toBe(1);
    s.release(running);
    // Emptied: the next burst gets a fresh interval.
    expect(s.next(510)!.item).toBe('t9');
    s.offer('u', 'root', 5, 600);
    expect(s.overloaded(0, 900)).toBe(false);
  });

  it('serves newest first within a priority while overloaded, FIFO otherwise', () => {
    const s = scheduler(1, { overload: { intervalMs: 500, targetMs: undefined, lifo: true } });
    let running = occupy(s, 5);
    for (let t = 0; t < 5; t++) s.offer(`t${t}`, 'root', 5, t);
    s.release(running);
    running = s.next(100)!; // not overloaded yet: the oldest
    expect(running.item).toBe('t0');
    s.release(running);
    running = s.next(600)!; // the queue has held tasks since 0 ms: overloaded, the newest
    expect(running.item).toBe('t4');
    expect(s.stats().lanes[0]!.overloaded).toBe(true);
    s.release(running);
    // Between priorities nothing changes: a higher priority still goes first.
    s.offer('high', 'dash', 20, 600);
    expect(s.next(600)!.item).toBe('high');
  });

  it('applies no controlled delay without a target, whatever the waits', () => {
    const s = scheduler(1, { overload: { intervalMs: 500, targetMs: undefined, lifo: false } });
    s.offer('blocker', 'x', 5, 0);
    s.next(0);
    for (let t = 0; t < 5; t++) s.offer(`t${t}`, 'root', 5, t);
    expect(s.expire(60_000)).toEqual([]);
    expect(s.nextExpiryMs()).toBeUndefined();
  });
});
