import { describe, expect, it } from 'vitest';
import { parseSandboxDefinitions } from '../../src/sandbox/sandbox-file.js';
import { ConcurrencyCaps } from '../../src/scheduler/concurrency-caps.js';
import { parseQueryPriority } from '../../src/scheduler/query-priority.js';
import { TaskScheduler } from '../../src/scheduler/task-scheduler.js';

const tree = parseSandboxDefinitions({
  sandboxes: [
    { name: 'org', priority: 1, max_concurrent_tasks: 3 },
    {
      name: 'team',
      parent_id: 'org',
      priority: 1,
      max_concurrent_tasks: 2,
      max_concurrent_tasks_per_user: 1,
    },
    { name: 'other', parent_id: 'org', priority: 2 },
    { name: 'free', priority: 2 },
  ],
});

describe('ConcurrencyCaps', () => {
  it('counts a task on its sandbox and every ancestor, and holds a subtree at its cap', () => {
    const caps = new ConcurrencyCaps(tree);
    expect(caps.active).toBe(true);
    const a = caps.started('team', 'ann');
    const b = caps.started('team', 'bob');
    expect(caps.counts('team')).toEqual({ running: 2, peak: 2 });
    expect(caps.counts('org')).toEqual({ running: 2, peak: 2 });
    expect(caps.blockedBy('team', 'cat')).toBe('team');
    // org has room for one more, through its other child.
    expect(caps.mayStart('other', 'cat')).toBe(true);
    const c = caps.started('other', 'cat');
    expect(caps.blockedBy('other', 'dan')).toBe('org');
    expect(caps.mayStart('free', 'dan')).toBe(true);
    caps.ended(a);
    expect(caps.mayStart('team', 'cat')).toBe(true);
    const d = caps.started('team', 'cat');
    // team is back at 2, org at 3: a task of its other child waits for org's cap.
    expect(caps.blockedBy('team', 'eve')).toBe('team');
    expect(caps.blockedBy('other', 'eve')).toBe('org');
    for (const h of [b, c, d]) caps.ended(h);
    expect(caps.counts('org')).toEqual({ running: 0, peak: 3 });
    expect(caps.counts('team')).toEqual({ running: 0, peak: 2 });
  });

  it('holds one user at the per-user cap while another user of the same sandbox starts', () => {
    const caps = new ConcurrencyCaps(tree);
    const a = caps.started('team', 'ann');
    expect(caps.blockedBy('team', 'ann')).toBe('team');
    expect(caps.mayStart('team', 'bob')).toBe(true);
    caps.ended(a);
    expect(caps.mayStart('team', 'ann')).toBe(true);
    // No user: one shared bucket.
    const n = caps.started('team', undefined);
    expect(caps.mayStart('team', undefined)).toBe(false);
    caps.ended(n);
  });

  it('gives back exactly what a task counted even after the tree changed, and lets unknown sandboxes start', () => {
    const caps = new ConcurrencyCaps(tree);
    const a = caps.started('team', 'ann');
    caps.setSandboxes(parseSandboxDefinitions({ sandboxes: [{ name: 'free', priority: 2 }] }));
    expect(caps.active).toBe(false);
    expect(caps.mayStart('team', 'ann')).toBe(true);
    caps.ended(a);
    expect(caps.counts('team').running).toBe(0);
    expect(caps.counts('org').running).toBe(0);
  });
});

describe('TaskScheduler with concurrency caps', () => {
  it('hands out tasks queued behind a task held back by its cap in the same lane and priority', () => {
    const caps = new ConcurrencyCaps(
      parseSandboxDefinitions({ sandboxes: [{ name: 'capped', priority: 1, max_concurrent_tasks: 1 }] }),
    );
    type Item = { id: string; sandboxId: string };
    const scheduler = new TaskScheduler<Item>({
      capacity: 3,
      maxQueuedTasks: 100,
      agingMsPerPriority: 100,
      config: parseQueryPriority({}),
      mayStart: (item) => caps.mayStart(item.sandboxId, undefined),
    });
    const offer = (id: string, sandboxId: string) => scheduler.offer({ id, sandboxId }, sandboxId, 5, 0);
    const started: string[] = [];
    const pump = () => {
      for (let d = scheduler.next(0); d !== undefined; d = scheduler.next(0)) {
        caps.started(d.item.sandboxId, undefined);
        started.push(d.item.id);
      }
    };
    offer('c1', 'capped');
    offer('c2', 'capped');
    offer('c3', 'capped');
    offer('o1', 'other');
    offer('o2', 'other');
    pump();
    // c1 runs; c2 and c3 wait for the cap; o1 and o2, behind them in the same FIFO, take the free workers.
    expect(started).toEqual(['c1', 'o1', 'o2']);
    expect(scheduler.length).toBe(2);
  });

  it('counts a task held back by its cap against the queue bound (it waits, it does not run at once)', () => {
    const scheduler = new TaskScheduler<{ id: string }>({
      capacity: 4,
      maxQueuedTasks: 1,
      agingMsPerPriority: 100,
      config: parseQueryPriority({}),
      mayStart: () => false,
    });
    expect(scheduler.offer({ id: 'a' }, 's', 1, 0).accepted).toBe(true);
    expect(scheduler.offer({ id: 'b' }, 's', 1, 0)).toMatchObject({ accepted: false, reason: 'queue_full' });
    expect(scheduler.next(0)).toBeUndefined();
  });
});
