import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import { parseQueryPriority, type QueryPriorityConfig } from '../../src/scheduler/query-priority.js';
import { type Dispatch, TaskScheduler } from '../../src/scheduler/task-scheduler.js';
import { checkReservations, planReservations } from '../../src/scheduler/worker-reservations.js';
import { resolveLanes } from '../../src/scheduler/lanes.js';

function scheduler(
  capacity: number,
  doc: unknown = {},
  over: { maxQueuedTasks?: number; aging?: number; fifo?: boolean } = {},
) {
  return new TaskScheduler<string>({
    capacity,
    maxQueuedTasks: over.maxQueuedTasks ?? 1000,
    agingMsPerPriority: over.aging ?? 100,
    fifo: over.fifo ?? false,
    config: parseQueryPriority(doc),
  });
}

/** Takes every task the scheduler hands out now. */
function takeAll(s: TaskScheduler<string>, now = 0): Dispatch<string>[] {
  const out: Dispatch<string>[] = [];
  for (let d = s.next(now); d !== undefined; d = s.next(now)) out.push(d);
  return out;
}

const RESERVE_ONE_FOR_10 = { priorities: [{ priority: 10, reserved_workers: 1 }] };

describe('worker reservations', () => {
  const config = (doc: unknown): QueryPriorityConfig => parseQueryPriority(doc);

  it('splits the pool: a count, a fraction rounded up, the general lane first', () => {
    const plan = planReservations(
      config({
        priorities: [
          { priority: 5, reserved_workers: 0.25 },
          { priority: 10, reserved_workers: 2 },
        ],
      }),
      10,
    );
    expect(plan.groups).toEqual([
      { minPriority: Number.NEGATIVE_INFINITY, workers: 5 },
      { minPriority: 10, workers: 2 },
      { minPriority: 5, workers: 3 },
    ]);
    expect(plan.reserved).toBe(5);
  });

  it('refuses reservations that add up to the whole pool at configuration time', () => {
    const c = config({
      priorities: [
        { priority: 5, reserved_workers: 0.5 },
        { priority: 10, reserved_workers: 1 },
      ],
    });
    expect(() => checkReservations(c, 2)).toThrow(InvalidArgumentError);
    expect(() => checkReservations(c, 2)).toThrow(
      "query_priority.priorities must leave at least one of the pool's 2 workers unreserved; the reservations take 2 (1 for priority 5, 1 for priority 10)",
    );
    expect(() => checkReservations(c, 3)).toThrow(
      'the reservations take 3 (2 for priority 5, 1 for priority 10)',
    );
    expect(() => checkReservations(c, 4)).not.toThrow();
  });

  it('suspends them when the pool shrinks under them, and recomputes fractions', () => {
    const s = scheduler(4, { priorities: [{ priority: 10, reserved_workers: 0.5 }] });
    expect(s.stats().lanes[0]!.reservations.map((l) => l.workers)).toEqual([2, 2]);
    s.setCapacity(8);
    expect(s.stats().lanes[0]!.reservations.map((l) => l.workers)).toEqual([4, 4]);
    const t = scheduler(3, { priorities: [{ priority: 10, reserved_workers: 2 }] });
    t.setCapacity(2);
    expect(t.stats().lanes[0]!.reservationsSuspended).toBe('pool_too_small');
    expect(t.stats().lanes[0]!.reservations).toEqual([{ minPriority: null, workers: 2, busy: 0 }]);
  });
});

describe('TaskScheduler', () => {
  it('hands out no more tasks than the lane has live workers, and the held ones wait under their bounds', () => {
    const s = scheduler(2);
    s.setLiveWorkers(0, 1);
    for (const t of ['a', 'b', 'c']) s.offer(t, 'x', 5, 0, 300);
    const first = takeAll(s, 10);
    expect(first.map((d) => d.item)).toEqual(['a']);
    // No live worker at all (the one left was replaced too): nothing more, whatever frees up.
    s.setLiveWorkers(0, 0);
    s.release(first[0]!);
    expect(s.next(20)).toBeUndefined();
    // The held tasks are still queued, so their queue-wait bound takes them.
    expect(s.expire(301).map((e) => [e.item, e.reason])).toEqual([
      ['b', 'queue_wait'],
      ['c', 'queue_wait'],
    ]);
    s.offer('d', 'x', 5, 400, 300);
    s.offer('e', 'x', 5, 400, 300);
    s.offer('f', 'x', 5, 400, 300);
    // Replacements loaded: up to the lane's workers again (2), not its live count (3, a spare).
    s.setLiveWorkers(0, 3);
    expect(takeAll(s, 410).map((d) => d.item)).toEqual(['d', 'e']);
    s.setLiveWorkers(0, Number.POSITIVE_INFINITY);
    expect(() => s.setLiveWorkers(0, -1)).toThrow(RangeError);
    expect(() => s.setLiveWorkers(0, 1.5)).toThrow(RangeError);
    expect(() => s.setLiveWorkers(3, 1)).toThrow(RangeError);
  });

  it('keeps FIFO order within a priority (stable)', () => {
    const s = scheduler(1);
    s.offer('first', 'a', 0, 0);
    const d = takeAll(s);
    for (let i = 0; i < 50; i++) s.offer(`t${i}`, 'a', 3, 0);
    expect(d.map((x) => x.item)).toEqual(['first']);
    const order: string[] = [];
    for (let cur = d[0]!; ; ) {
      s.release(cur);
      const next = s.next(0);
      if (next === undefined) break;
      order.push(next.item);
      cur = next;
    }
    expect(order).toEqual(Array.from({ length: 50 }, (_, i) => `t${i}`));
  });

  it('a reserved worker never takes a lower priority (lending off)', () => {
    const s = scheduler(2, RESERVE_ONE_FOR_10);
    for (let i = 0; i < 5; i++) s.offer(`low${i}`, 'a', 0, i);
    const first = takeAll(s, 10);
    expect(first.map((d) => d.item)).toEqual(['low0']); // only the general worker runs
    expect(s.stats().lanes[0]!.reservations).toEqual([
      { minPriority: null, workers: 1, busy: 1 },
      { minPriority: 10, workers: 1, busy: 0 },
    ]);
    s.offer('high', 'b', 10, 11);
    const second = takeAll(s, 12);
    expect(second.map((d) => d.item)).toEqual(['high']);
    expect(second[0]!.lent).toBe(false);
    // The reserved worker is free again: still no low-priority task on it.
    s.release(second[0]!);
    expect(s.next(13)).toBeUndefined();
  });

  it('a high-priority task takes the reserved worker first and leaves the general one free', () => {
    const s = scheduler(2, RESERVE_ONE_FOR_10);
    s.offer('high', 'b', 10, 0);
    const [d] = takeAll(s);
    expect(s.stats().lanes[0]!.reservations.map((l) => l.busy)).toEqual([0, 1]);
    s.offer('low', 'a', 0, 1);
    expect(takeAll(s).map((x) => x.item)).toEqual(['low']);
    expect(d!.item).toBe('high');
  });

  it('lending: an idle reserved worker takes one lower-priority task when nothing eligible waits', () => {
    const s = scheduler(2, { ...RESERVE_ONE_FOR_10, lending: true });
    for (let i = 0; i < 3; i++) s.offer(`low${i}`, 'a', 0, i);
    const d = takeAll(s, 5);
    expect(d.map((x) => [x.item, x.lent])).toEqual([
      ['low0', false],
      ['low1', true],
    ]);
    // A high-priority task now waits for the loan to end: that is the trade lending makes.
    s.offer('high', 'b', 10, 6);
    expect(s.next(7)).toBeUndefined();
    s.release(d[1]!);
    expect(s.next(8)?.item).toBe('high');
    expect(s.stats().priorities.find((p) => p.priority === 0)!.lent).toBe(1);
  });

  it('bounds the wait of a low-priority task while high-priority load alone fills capacity (aging)', () => {
    // One worker, 10 ms tasks, a priority-10 task arriving every 5 ms (2x capacity): strict priority
    // would never run the priority-0 task. With 100 ms per point it runs before every high task that
    // arrived more than 10 × 100 ms after it: after the 200 that arrived in [0, 1000), which take
    // 2000 ms at this overload.
    const s = scheduler(1, {}, { aging: 100 });
    let lastBeforeLow: string | undefined;
    s.offer('low', 'a', 0, 0);
    let now = 0;
    let running: Dispatch<string> | undefined;
    let lowStartedAt: number | undefined;
    let nextArrival = 0;
    let seq = 0;
    while (now < 5000 && lowStartedAt === undefined) {
      while (nextArrival <= now) {
        s.offer(`high${seq++}`, 'b', 10, nextArrival);
        nextArrival += 5;
      }
      if (running !== undefined) s.release(running);
      running = s.next(now);
      if (running?.item === 'low') lowStartedAt = now;
      else lastBeforeLow = running?.item;
      now += 10;
    }
    expect(lowStartedAt).toBeDefined();
    expect(lastBeforeLow).toBe('high199'); // arrived at 995 ms; high200 (1000 ms) ties and goes after
    expect(lowStartedAt).toBe(2000);
    // Strict priority never runs it.
    const strict = scheduler(1, { aging_ms_per_priority: 'Infinity' });
    strict.offer('low', 'a', 0, 0);
    strict.offer('high', 'b', 10, 1);
    expect(strict.next(2)?.item).toBe('high');
  });

  it('when full, evicts the newest of the lowest priority for a more important task, else refuses', () => {
    const s = scheduler(1, {}, { maxQueuedTasks: 3 });
    s.offer('running', 'a', 5, 0);
    takeAll(s);
    s.offer('low-old', 'a', 1, 1);
    s.offer('mid', 'a', 3, 2);
    s.offer('low-new', 'a', 1, 3);
    const refused = s.offer('low-incoming', 'a', 1, 4);
    expect(refused).toMatchObject({ accepted: false, reason: 'queue_full' });
    const r = s.offer('high', 'b', 9, 5);
    expect(r.accepted).toBe(true);
    expect(r.accepted && r.evicted.map((e) => [e.item, e.reason])).toEqual([['low-new', 'queue_full']]);
    const stats = s.stats();
    expect(stats.priorities.find((p) => p.priority === 1)).toMatchObject({ queued: 1, evicted: 1 });
  });

  it('a sandbox bound sheds within the sandbox only', () => {
    const s = scheduler(1, { max_queued_per_sandbox: 2, sandbox_queue_limits: { vip: 5 } });
    s.offer('run', 'x', 0, 0);
    takeAll(s);
    s.offer('a-low', 'a', 1, 1);
    s.offer('b-low', 'b', 0, 2);
    s.offer('a-mid', 'a', 2, 3);
    // Sandbox a is full: its own lowest goes, not b's lower task.
    const r = s.offer('a-high', 'a', 3, 4);
    expect(r.accepted && r.evicted.map((e) => [e.item, e.reason])).toEqual([['a-low', 'sandbox_queue_full']]);
    expect(s.offer('a-low2', 'a', 0, 5)).toMatchObject({ accepted: false, reason: 'sandbox_queue_full' });
    for (let i = 0; i < 5; i++) expect(s.offer(`vip${i}`, 'vip', 0, 6).accepted).toBe(true);
    expect(s.offer('vip5', 'vip', 0, 7).accepted).toBe(false);
  });

  it('lowering a bound at runtime drops the newest excess, lowest priority first', () => {
    const s = scheduler(1);
    s.offer('run', 'x', 0, 0);
    takeAll(s);
    s.offer('a1', 'a', 5, 1);
    s.offer('a2', 'a', 1, 2);
    s.offer('a3', 'a', 5, 3);
    s.offer('a4', 'a', 1, 4);
    s.offer('b1', 'b', 0, 5);
    const dropped = s.configure(parseQueryPriority({ sandbox_queue_limits: { a: 2 } }));
    expect(dropped.map((d) => [d.item, d.reason])).toEqual([
      ['a4', 'limit_lowered'],
      ['a2', 'limit_lowered'],
    ]);
    expect(dropped[0]!.message).toContain("sandbox [a]'s queue bound was lowered to 2 while 4 tasks waited");
    expect(s.length).toBe(3);
    expect(s.queuedBySandbox().get('a')).toBe(2);
  });

  it('reconfiguring keeps running tasks counted: no worker is handed out twice', () => {
    const s = scheduler(3);
    s.offer('a', 'x', 0, 0);
    s.offer('b', 'x', 10, 0);
    s.offer('c', 'x', 0, 0);
    const running = takeAll(s);
    expect(running).toHaveLength(3);
    s.offer('d', 'x', 10, 1);
    s.configure(parseQueryPriority(RESERVE_ONE_FOR_10));
    expect(s.next(2)).toBeUndefined();
    expect(s.stats().lanes[0]!.reservations.map((l) => l.busy)).toEqual([2, 1]);
    // A low task ends: the general worker is free, but the high task 'd' is the best waiting one.
    s.release(running.find((r) => r.item === 'a')!);
    expect(s.next(3)?.item).toBe('d');
  });

  it('FIFO baseline ignores priorities and reservations', () => {
    const s = scheduler(2, RESERVE_ONE_FOR_10, { fifo: true });
    s.offer('low', 'a', 0, 0);
    s.offer('low2', 'a', 0, 1);
    s.offer('high', 'b', 10, 2);
    expect(takeAll(s).map((d) => d.item)).toEqual(['low', 'low2']);
  });

  it('counts dequeues and wait times per priority', () => {
    const s = scheduler(1);
    s.offer('a', 'x', 1, 0);
    s.offer('b', 'x', 2, 0);
    const d1 = s.next(40)!;
    s.release(d1);
    const d2 = s.next(100)!;
    s.release(d2);
    const stats = s.stats();
    expect(stats.priorities.map((p) => [p.priority, p.dequeued, p.waitMs.count])).toEqual([
      [2, 1, 1],
      [1, 1, 1],
    ]);
    expect(stats.priorities[0]!.waitMs.p50).toBeCloseTo(40, 0);
    expect(stats.priorities[1]!.waitMs.max).toBeCloseTo(100, 0);
  });
});

describe('TaskScheduler lanes', () => {
  /** Foreground (priority >= 11) and background lanes of 2 workers each, as the runtime's default. */
  function laned(doc: unknown = {}, over: { maxQueuedTasks?: number; workers?: number } = {}) {
    const workers = over.workers ?? 2;
    return new TaskScheduler<string>({
      lanes: resolveLanes(undefined, { workers, spareWorkers: 1 }),
      maxQueuedTasks: over.maxQueuedTasks ?? 1000,
      agingMsPerPriority: 100,
      config: parseQueryPriority(doc),
    });
  }

  it('runs each task in the lane whose band holds its priority', () => {
    const s = laned();
    s.offer('dash', 'dashboards', 20, 0);
    s.offer('root', '_root', 10, 0);
    s.offer('edge', 'x', 11, 0);
    const d = takeAll(s);
    expect(d.map((x) => [x.item, x.lane])).toEqual([
      ['dash', 0],
      ['edge', 0],
      ['root', 1],
    ]);
    expect(s.stats().lanes.map((l) => [l.name, l.minPriority, l.busy])).toEqual([
      ['foreground', 11, 2],
      ['background', null, 1],
    ]);
  });

  it('never lends an idle foreground worker to background work', () => {
    const s = laned();
    for (let i = 0; i < 5; i++) s.offer(`bg${i}`, 'analysts', 5, i);
    const first = takeAll(s, 10);
    expect(first.map((x) => x.item)).toEqual(['bg0', 'bg1']);
    expect(first.every((x) => x.lane === 1)).toBe(true);
    expect(s.stats().lanes.map((l) => [l.busy, l.queued])).toEqual([
      [0, 0],
      [2, 3],
    ]);
    // A foreground task arriving now runs at once on its own lane's idle worker.
    s.offer('fg', 'dashboards', 20, 11);
    const second = takeAll(s, 12);
    expect(second.map((x) => [x.item, x.lane, x.waitMs])).toEqual([['fg', 0, 1]]);
    // Freeing a background worker hands it the next background task, in FIFO order.
    s.release(first[0]!);
    expect(s.next(13)?.item).toBe('bg2');
  });

  it('sheds the lowest priority across lanes when the global bound is reached', () => {
    const s = laned({}, { maxQueuedTasks: 3, workers: 1 });
    takeAll(s); // nothing yet
    s.offer('fg-run', 'dashboards', 20, 0);
    s.offer('bg-run', 'analysts', 5, 0);
    expect(takeAll(s).map((x) => x.item)).toEqual(['fg-run', 'bg-run']);
    expect(s.offer('bg-a', 'analysts', 5, 1).accepted).toBe(true);
    expect(s.offer('fg-b', 'dashboards', 20, 2).accepted).toBe(true);
    expect(s.offer('bg-c', 'analysts', 5, 3).accepted).toBe(true);
    // Full (3 waiting over both lanes): a foreground task evicts the newest background one.
    const offered = s.offer('fg-d', 'dashboards', 20, 4);
    expect(offered.accepted).toBe(true);
    expect(offered.accepted && offered.evicted.map((e) => [e.item, e.reason])).toEqual([
      ['bg-c', 'queue_full'],
    ]);
    // A background task finds nothing lower to evict: refused.
    const refused = s.offer('bg-e', 'analysts', 5, 5);
    expect(refused.accepted).toBe(false);
    expect(s.length).toBe(3);
    expect(s.stats().lanes.map((l) => l.queued)).toEqual([2, 1]);
  });

  it('keeps a reservation in the lane of its priority', () => {
    const s = laned({
      priorities: [
        { priority: 30, reserved_workers: 1 },
        { priority: 8, reserved_workers: 1 },
      ],
    });
    expect(s.stats().lanes.map((l) => l.reservations)).toEqual([
      [
        { minPriority: null, workers: 1, busy: 0 },
        { minPriority: 30, workers: 1, busy: 0 },
      ],
      [
        { minPriority: null, workers: 1, busy: 0 },
        { minPriority: 8, workers: 1, busy: 0 },
      ],
    ]);
    for (let i = 0; i < 3; i++) s.offer(`fg${i}`, 'dashboards', 20, i);
    // Priority 20 may not take the worker reserved for 30 in its lane.
    expect(takeAll(s, 5).map((x) => x.item)).toEqual(['fg0']);
    s.offer('top', 'dashboards', 30, 6);
    expect(takeAll(s, 7).map((x) => [x.item, x.lane])).toEqual([['top', 0]]);
  });

  it('checks reservations lane by lane, naming the lane', () => {
    const lanes = resolveLanes(undefined, { workers: 2, spareWorkers: 0 });
    const c = parseQueryPriority({ priorities: [{ priority: 20, reserved_workers: 2 }] });
    expect(() => checkReservations(c, lanes)).toThrow(
      "query_priority.priorities must leave at least one of lane [foreground]'s 2 workers unreserved; the reservations take 2 (2 for priority 20)",
    );
    expect(() =>
      checkReservations(parseQueryPriority({ priorities: [{ priority: 5, reserved_workers: 1 }] }), lanes),
    ).not.toThrow();
  });

  it('drains every lane at shutdown', () => {
    const s = laned({}, { workers: 1 });
    for (const [item, p] of [
      ['a', 20],
      ['b', 20],
      ['c', 5],
      ['d', 5],
    ] as const)
      s.offer(item, 'x', p, 0);
    takeAll(s);
    expect(s.drain().sort()).toEqual(['b', 'd']);
    expect(s.length).toBe(0);
    expect(s.queuedBySandbox().size).toBe(0);
  });
});

describe('laneFull', () => {
  const accepted = (r: ReturnType<TaskScheduler<string>['offer']>) => {
    if (!r.accepted) throw new Error(r.message);
    return r;
  };

  it('says a task was queued while every worker of its lane was busy, and not while one was free', () => {
    const s = scheduler(2);
    expect(accepted(s.offer('a', 'root', 10, 0)).laneFull).toBe(false);
    takeAll(s);
    expect(accepted(s.offer('b', 'root', 10, 0)).laneFull).toBe(false);
    const [b] = takeAll(s);
    expect(accepted(s.offer('c', 'root', 10, 0)).laneFull).toBe(true);
    s.release(b!);
    expect(accepted(s.offer('d', 'root', 10, 0)).laneFull).toBe(false);
  });

  it('counts the live workers it was told of: with none loaded, the lane is full', () => {
    const s = scheduler(2);
    s.setLiveWorkers(0, 0);
    expect(accepted(s.offer('a', 'root', 10, 0)).laneFull).toBe(true);
    s.setLiveWorkers(0, 1);
    expect(accepted(s.offer('b', 'root', 10, 0)).laneFull).toBe(false);
  });

  it('is false for a free reserved worker, which lending may give the task', () => {
    const s = scheduler(2, { ...RESERVE_ONE_FOR_10, lending: true });
    accepted(s.offer('a', 'root', 1, 0));
    expect(takeAll(s)).toHaveLength(1);
    // The general worker is busy; the reserved one is free: lending may hand it this task.
    expect(accepted(s.offer('b', 'root', 1, 0)).laneFull).toBe(false);
  });
});

describe('prefetch', () => {
  it('hands out up to workers + prefetch tasks in a lane without reservations, and counts them in busy', () => {
    const s = scheduler(2);
    for (const id of ['a', 'b', 'c', 'd']) s.offer(id, 'root', 10, 0);
    s.setPrefetch(0, 1);
    expect(takeAll(s).map((d) => d.item)).toEqual(['a', 'b', 'c']);
    expect(s.stats().lanes[0]).toMatchObject({ workers: 2, busy: 3, prefetch: 1, queued: 1 });
    s.setPrefetch(0, 0);
    expect(takeAll(s)).toEqual([]);
  });

  it('says the lane is full only once its prefetch is handed out too', () => {
    const s = scheduler(1);
    s.setPrefetch(0, 1);
    const first = s.offer('a', 'root', 10, 0);
    takeAll(s);
    const second = s.offer('b', 'root', 10, 0);
    takeAll(s);
    const third = s.offer('c', 'root', 10, 0);
    expect([first, second, third].map((r) => r.accepted && r.laneFull)).toEqual([false, false, true]);
  });

  it('prefetches nothing in a lane with reserved workers', () => {
    const s = scheduler(2, RESERVE_ONE_FOR_10);
    s.setPrefetch(0, 1);
    for (const id of ['a', 'b', 'c']) s.offer(id, 'root', 10, 0);
    expect(takeAll(s)).toHaveLength(2);
    expect(s.stats().lanes[0]!.prefetch).toBe(0);
  });

  it('refuses a negative or fractional prefetch, and an unknown lane', () => {
    const s = scheduler(2);
    expect(() => s.setPrefetch(0, -1)).toThrow(RangeError);
    expect(() => s.setPrefetch(0, 0.5)).toThrow(RangeError);
    expect(() => s.setPrefetch(3, 1)).toThrow(RangeError);
  });
});
