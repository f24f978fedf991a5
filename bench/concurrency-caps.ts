/**
 * What concurrency caps cost the dispatch path: the scheduler's offer, next and release for one task
 * of an uncapped sandbox, against the same scheduler without caps (the baseline), in the same run.
 *
 * With caps, a task held back by its cap stays queued and `next` passes over it (`mayStart`), so the
 * cost grows with the number of held-back tasks ahead of the one that may start, in the same lane and
 * priority level. Cases: no caps (`mayStart` absent); caps configured but none binding; and 10, 100,
 * 1,000 tasks of a capped sandbox (cap 1, reached) waiting ahead. Reported: ns per dispatched task,
 * median of the rounds, and the ratio to the baseline.
 *
 * Usage: `npm run bench:caps` (5 rounds of 20,000 tasks) or `-- --full` (9 rounds). Writes
 * `bench/results/concurrency-caps.json`.
 */
import { parseSandboxDefinitions } from '../src/sandbox/sandbox-file.js';
import { ConcurrencyCaps } from '../src/scheduler/concurrency-caps.js';
import { parseQueryPriority } from '../src/scheduler/query-priority.js';
import { TaskScheduler } from '../src/scheduler/task-scheduler.js';
import { median, printTable, writeResult } from './harness.js';

const full = process.argv.includes('--full');
const rounds = full ? 9 : 5;
const TASKS = 20_000;

interface Item {
  readonly sandboxId: string;
}

const sandboxes = parseSandboxDefinitions({
  sandboxes: [
    { name: 'capped', priority: 1, max_concurrent_tasks: 1 },
    { name: 'free', priority: 2 },
  ],
});

/** ns per task dispatched for `free`, with `heldAhead` tasks of `capped` waiting ahead of it. */
function measure(withCaps: boolean, heldAhead: number): number {
  const caps = new ConcurrencyCaps(sandboxes);
  const scheduler = new TaskScheduler<Item>({
    capacity: 4,
    maxQueuedTasks: heldAhead + 10,
    agingMsPerPriority: 100,
    config: parseQueryPriority({}),
    ...(withCaps
      ? { mayStart: (item: Item) => !caps.active || caps.mayStart(item.sandboxId, undefined) }
      : {}),
  });
  if (heldAhead > 0) {
    // One capped task runs (the cap is reached); the rest wait ahead of everything that follows.
    const first = scheduler.offer({ sandboxId: 'capped' }, 'capped', 5, 0);
    if (!first.accepted) throw new Error('setup refused');
    const running = scheduler.next(0)!;
    caps.started(running.item.sandboxId, undefined);
    for (let i = 0; i < heldAhead; i++) scheduler.offer({ sandboxId: 'capped' }, 'capped', 5, 0);
  }
  const started = process.hrtime.bigint();
  for (let i = 0; i < TASKS; i++) {
    scheduler.offer({ sandboxId: 'free' }, 'free', 5, 0);
    const d = scheduler.next(0);
    if (d === undefined || d.item.sandboxId !== 'free') throw new Error('the free task did not start');
    const hold = caps.started('free', undefined);
    caps.ended(hold);
    scheduler.release(d);
  }
  return Number(process.hrtime.bigint() - started) / TASKS;
}

const cases: Array<{ name: string; withCaps: boolean; heldAhead: number }> = [
  { name: 'no caps (baseline)', withCaps: false, heldAhead: 0 },
  { name: 'caps, none binding', withCaps: true, heldAhead: 0 },
  { name: '10 held ahead', withCaps: true, heldAhead: 10 },
  { name: '100 held ahead', withCaps: true, heldAhead: 100 },
  { name: '1000 held ahead', withCaps: true, heldAhead: 1000 },
];

// Warm-up, then interleaved rounds so that machine noise hits every case alike.
for (const c of cases) measure(c.withCaps, c.heldAhead);
const samples = cases.map(() => [] as number[]);
for (let r = 0; r < rounds; r++) {
  cases.forEach((c, i) => {
    samples[i]!.push(measure(c.withCaps, c.heldAhead));
  });
}
const medians = samples.map(median);
const baseline = medians[0]!;
const rows = cases.map((c, i) => [c.name, medians[i]!, medians[i]! / baseline]);
console.log(
  `concurrency caps: ns per dispatched task (offer, next, release), median of ${rounds} rounds of ${TASKS}`,
);
printTable(['case', 'ns/task', 'x baseline'], rows);
await writeResult('concurrency-caps', {
  rounds,
  tasks: TASKS,
  results: cases.map((c, i) => ({ case: c.name, nsPerTask: medians[i], ratio: medians[i]! / baseline })),
});
