/**
 * The scheduler against FIFO, after Mimir's published queue benchmark (FACTS.md: 12 consumers, 1 ms
 * and 100 ms requests, 10 % slow; fast-class mean wait 0.733 s round-robin vs 0.127 s prioritised).
 *
 * Twelve simulated workers run the real `TaskScheduler`; a task is a timer of its length (1 ms fast,
 * 100 ms slow), so the figures are the scheduler's ordering, not CPU contention on this machine.
 * Two workloads, each with 10 % and 25 % slow tasks, in a fixed shuffled order (seeded):
 * - `batch`: 1,000 tasks queued at once, then drained (Mimir's set-up).
 * - `stream`: open-loop arrivals at 1.2x the workers' capacity for 2 s (Poisson, seeded); wait is
 *   measured from the intended arrival time.
 * Policies, interleaved per repetition: `fifo` (the baseline), `priority` (fast = 10, slow = 0,
 * aging 100 ms per point), `reserved` (priority + 2 of 12 workers reserved for priority 10), and
 * `reserved+lending`. Reported: the fast class's mean and p99 wait, the slow class's mean wait and
 * completions, medians over the repetitions, and ratios to FIFO from the same repetition set.
 *
 * Usage: `npm run bench:priority` (3 repetitions) or `-- --full` (7). Writes
 * `bench/results/priority-queue.json`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import * as hdr from 'hdr-histogram-js';
import { parseQueryPriority } from '../src/scheduler/query-priority.js';
import { TaskScheduler } from '../src/scheduler/task-scheduler.js';
import { median } from './harness.js';

const full = process.argv.includes('--full');
const repetitions = full ? 7 : 3;
const WORKERS = 12;
const FAST_MS = 1;
const SLOW_MS = 100;
const FAST = 10;
const SLOW = 0;

type Policy = 'fifo' | 'priority' | 'reserved' | 'reserved+lending';
const POLICIES: readonly Policy[] = ['fifo', 'priority', 'reserved', 'reserved+lending'];

interface Task {
  readonly slow: boolean;
  /** Intended arrival, ms after the start. */
  readonly atMs: number;
}

interface RunResult {
  readonly fastMeanMs: number;
  readonly fastP99Ms: number;
  readonly slowMeanMs: number;
  readonly slowDone: number;
  readonly fastDone: number;
}

/** Mulberry32: a small seeded generator so every policy sees the same tasks. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function workload(kind: 'batch' | 'stream', slowShare: number, seed: number): Task[] {
  const next = random(seed);
  if (kind === 'batch') {
    return Array.from({ length: 1000 }, () => ({ slow: next() < slowShare, atMs: 0 }));
  }
  const meanServiceMs = slowShare * SLOW_MS + (1 - slowShare) * FAST_MS;
  const ratePerMs = (1.2 * WORKERS) / meanServiceMs;
  const tasks: Task[] = [];
  for (let t = -Math.log(1 - next()) / ratePerMs; t < 2000; t += -Math.log(1 - next()) / ratePerMs) {
    tasks.push({ slow: next() < slowShare, atMs: t });
  }
  return tasks;
}

function configFor(policy: Policy) {
  const reserved = [{ priority: FAST, reserved_workers: 2 }];
  switch (policy) {
    case 'fifo':
    case 'priority':
      return parseQueryPriority({ aging_ms_per_priority: 100 });
    case 'reserved':
      return parseQueryPriority({ aging_ms_per_priority: 100, priorities: reserved });
    case 'reserved+lending':
      return parseQueryPriority({ aging_ms_per_priority: 100, lending: true, priorities: reserved });
  }
}

function histogram() {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 600_000_000,
    numberOfSignificantValueDigits: 3,
  });
}

/** Runs one workload under one policy with real timers; resolves when every task has run. */
function run(policy: Policy, tasks: readonly Task[]): Promise<RunResult> {
  const scheduler = new TaskScheduler<Task>({
    capacity: WORKERS,
    maxQueuedTasks: 1_000_000,
    agingMsPerPriority: 100,
    fifo: policy === 'fifo',
    config: configFor(policy),
  });
  const fast = histogram();
  const slow = histogram();
  const started = performance.now();
  let done = 0;
  return new Promise((resolve) => {
    const pump = () => {
      const now = performance.now() - started;
      for (let d = scheduler.next(now); d !== undefined; d = scheduler.next(now)) {
        const dispatch = d;
        // Open-loop: the wait counts from the intended arrival, not from when the timer fired.
        const waitUs = Math.max(1, Math.round((now - dispatch.item.atMs) * 1000));
        (dispatch.item.slow ? slow : fast).recordValue(waitUs);
        setTimeout(
          () => {
            scheduler.release(dispatch);
            done++;
            if (done === tasks.length) {
              resolve({
                fastMeanMs: fast.mean / 1000,
                fastP99Ms: fast.getValueAtPercentile(99) / 1000,
                slowMeanMs: slow.totalCount === 0 ? 0 : slow.mean / 1000,
                slowDone: slow.totalCount,
                fastDone: fast.totalCount,
              });
            } else pump();
          },
          dispatch.item.slow ? SLOW_MS : FAST_MS,
        );
      }
    };
    for (const task of tasks) {
      const offer = () => {
        scheduler.offer(task, task.slow ? 'slow' : 'fast', task.slow ? SLOW : FAST, task.atMs);
        pump();
      };
      if (task.atMs === 0) offer();
      else setTimeout(offer, task.atMs - (performance.now() - started));
    }
  });
}

async function main(): Promise<void> {
  const rows: Array<Record<string, unknown>> = [];
  console.log(
    `priority-queue benchmark: ${WORKERS} simulated workers, ${FAST_MS} ms vs ${SLOW_MS} ms tasks, ` +
      `${repetitions} repetitions (medians); machine: ${os.availableParallelism()} cores, Node ${process.versions.node}`,
  );
  for (const kind of ['batch', 'stream'] as const) {
    for (const slowShare of [0.1, 0.25]) {
      const results = new Map<Policy, RunResult[]>(POLICIES.map((p) => [p, []]));
      for (let r = 0; r < repetitions; r++) {
        const tasks = workload(kind, slowShare, 1000 + r);
        for (const policy of POLICIES) results.get(policy)!.push(await run(policy, tasks));
      }
      const fifo = results.get('fifo')!;
      const fifoMean = median(fifo.map((x) => x.fastMeanMs));
      const fifoP99 = median(fifo.map((x) => x.fastP99Ms));
      for (const policy of POLICIES) {
        const list = results.get(policy)!;
        const row = {
          workload: kind,
          slowShare,
          policy,
          fastMeanWaitMs: median(list.map((x) => x.fastMeanMs)),
          fastP99WaitMs: median(list.map((x) => x.fastP99Ms)),
          slowMeanWaitMs: median(list.map((x) => x.slowMeanMs)),
          fastDone: median(list.map((x) => x.fastDone)),
          slowDone: median(list.map((x) => x.slowDone)),
          fastMeanRatioToFifo: median(list.map((x) => x.fastMeanMs)) / fifoMean,
          fastP99RatioToFifo: median(list.map((x) => x.fastP99Ms)) / fifoP99,
        };
        rows.push(row);
      }
    }
  }
  const header = [
    'workload',
    'slow %',
    'policy',
    'fast mean ms',
    'fast p99 ms',
    'mean / FIFO',
    'p99 / FIFO',
    'slow mean ms',
  ];
  console.log(header.join(' | '));
  for (const row of rows) {
    console.log(
      [
        row['workload'],
        `${Math.round((row['slowShare'] as number) * 100)}`,
        row['policy'],
        (row['fastMeanWaitMs'] as number).toFixed(1),
        (row['fastP99WaitMs'] as number).toFixed(1),
        (row['fastMeanRatioToFifo'] as number).toFixed(3),
        (row['fastP99RatioToFifo'] as number).toFixed(3),
        (row['slowMeanWaitMs'] as number).toFixed(1),
      ].join(' | '),
    );
  }
  console.log(
    'published (Mimir, 10 % slow): fast mean wait 733 ms round-robin vs 127 ms prioritised (0.173)',
  );
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(
    'bench/results/priority-queue.json',
    `${JSON.stringify({ machine: { cores: os.availableParallelism(), node: process.versions.node }, workers: WORKERS, repetitions, rows }, null, 2)}\n`,
  );
}

await main();
