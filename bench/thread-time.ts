/**
 * Where a benchmark's CPU went, thread by thread: the run time and the run-queue wait of every thread
 * of this process, from Linux `/proc/self/task/<tid>/schedstat` (three fields: time on a CPU, ns;
 * time runnable but waiting for a CPU, ns; timeslices run; Documentation/scheduler/sched-stats.rst).
 *
 * The isolation benchmark uses it to tell the host from the code when the background lane completes
 * fewer queries than bare piscina: if the lane's workers ran as large a share of the wall time as bare
 * piscina's, the kernel gave them the cores, and a gap is in what a query costs; if they waited on the
 * run queue instead, something else (at a better nice) had the cores.
 */
import fs from 'node:fs';
import { processThreadIds } from '../native-shim/index.js';

/** One thread's counters, ns since it started. */
export interface ThreadTime {
  readonly runNs: number;
  readonly waitNs: number;
}

/** The threads of this process at one moment: tid → counters, and when, `performance.now()` ms. */
export interface ThreadTimeSnapshot {
  readonly at: number;
  readonly threads: ReadonlyMap<number, ThreadTime>;
}

/**
 * Parses one `schedstat` line (`"<run ns> <wait ns> <slices>\n"`).
 * @returns the counters, or undefined for a line that is not three non-negative integers.
 */
export function parseSchedstat(line: string): ThreadTime | undefined {
  const fields = line.trim().split(/\s+/);
  if (fields.length < 3 || !fields.every((f) => /^\d+$/.test(f))) return undefined;
  return { runNs: Number(fields[0]), waitNs: Number(fields[1]) };
}

/**
 * Reads every thread of this process. A thread that exits while it is read is left out; where
 * `/proc` has no `schedstat` (not Linux, or a kernel without schedstats) the map is empty.
 */
export function threadTimes(): ThreadTimeSnapshot {
  const threads = new Map<number, ThreadTime>();
  for (const tid of processThreadIds()) {
    try {
      const t = parseSchedstat(fs.readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8'));
      if (t !== undefined) threads.set(tid, t);
    } catch {
      // The thread exited between the listing and the read.
    }
  }
  return { at: performance.now(), threads };
}

/** What the busiest threads of an interval did, summed over them. */
export interface BusiestThreads {
  /** How many threads were summed (fewer than asked when fewer ran). */
  readonly count: number;
  /** Their time on a CPU, ms. */
  readonly runMs: number;
  /** Their time runnable but waiting for a CPU, ms. */
  readonly waitMs: number;
  /** The interval's wall time, ms. */
  readonly wallMs: number;
}

/**
 * The `n` threads, other than `exclude` (the main thread's tid, which is the pid), that ran the most
 * between two snapshots: in a phase where one pool's workers are busy, those are its workers.
 * Threads present in only one snapshot are left out.
 */
export function busiestThreads(
  before: ThreadTimeSnapshot,
  after: ThreadTimeSnapshot,
  n: number,
  exclude: number = process.pid,
): BusiestThreads {
  const deltas: ThreadTime[] = [];
  for (const [tid, a] of after.threads) {
    const b = before.threads.get(tid);
    if (b === undefined || tid === exclude) continue;
    deltas.push({ runNs: a.runNs - b.runNs, waitNs: a.waitNs - b.waitNs });
  }
  deltas.sort((x, y) => y.runNs - x.runNs);
  const top = deltas.slice(0, n);
  return {
    count: top.length,
    runMs: top.reduce((s, t) => s + t.runNs, 0) / 1e6,
    waitMs: top.reduce((s, t) => s + t.waitNs, 0) / 1e6,
    wallMs: after.at - before.at,
  };
}
