/**
 * Scheduling weight of one kernel thread: its nice value (Linux nice is per thread), or the
 * `SCHED_IDLE` policy, for the pool's lanes. Only ever lowers a thread's weight, so it never needs
 * CAP_SYS_NICE: raising nice is unprivileged (setpriority(2)); lowering it needs CAP_SYS_NICE or
 * RLIMIT_NICE, which this module does not try. `SCHED_IDLE` (sched(7)) is unprivileged to enter; it
 * is set through util-linux `chrt --idle` since Node has no binding for sched_setscheduler(2).
 *
 * CFS / EEVDF weights (kernel `sched_prio_to_weight`): nice 0 = 1024, nice 10 = 110, nice 19 = 15,
 * `SCHED_IDLE` = 3; a waking normal thread always preempts a `SCHED_IDLE` one, and a CPU that runs
 * only `SCHED_IDLE` threads counts as idle when the kernel places a waking thread.
 *
 * Nice is relative to every thread on the host, not only this process's: a weighted lane gives way
 * to other busy processes too (see docs/lanes.md).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';

/** A lane's OS scheduling weight: a nice value in 0..19, or `idle` for `SCHED_IDLE`. */
export type ThreadWeight = number | 'idle';

/** What `applyThreadWeight` got. */
export interface ThreadWeightResult {
  /** True when the thread now runs at the weight asked for. */
  readonly applied: boolean;
  /** The thread's nice after the call (`undefined` where it cannot be read). */
  readonly nice: number | undefined;
  /** Why it was not applied, when it was not. */
  readonly reason: string | undefined;
}

/** The nice value of kernel thread `tid` (Linux), or undefined where it cannot be read. */
export function threadNice(tid: number): number | undefined {
  try {
    return os.getPriority(tid);
  } catch {
    return undefined;
  }
}

/**
 * Gives kernel thread `tid` (of this process) the weight `weight`: `os.setPriority(tid, nice)` for a
 * nice value, `chrt --idle -p 0 <tid>` for `idle`. Weight 0 asks for nothing (a new thread inherits
 * the creating thread's nice). Never throws.
 * @param tid kernel thread id, from `readlink /proc/thread-self` in the thread (see thread-cpu-clock).
 * @param weight nice 0..19, or `idle`.
 */
export function applyThreadWeight(tid: number, weight: ThreadWeight): ThreadWeightResult {
  if (process.platform !== 'linux') {
    return { applied: false, nice: undefined, reason: `per-thread priorities need Linux (platform ${process.platform})` };
  }
  if (!Number.isInteger(tid) || tid <= 0) {
    return { applied: false, nice: undefined, reason: `no kernel thread id (received ${tid})` };
  }
  const before = threadNice(tid);
  if (weight === 'idle') {
    try {
      execFileSync('chrt', ['--idle', '-p', '0', String(tid)], { stdio: 'pipe', timeout: 5000 });
      return { applied: true, nice: threadNice(tid), reason: undefined };
    } catch (error) {
      const e = error as { code?: string; stderr?: Buffer };
      const why = e.code === 'ENOENT' ? 'chrt (util-linux) is not installed' : (e.stderr?.toString().trim() || String(error));
      return { applied: false, nice: before, reason: `SCHED_IDLE could not be set: ${why}` };
    }
  }
  if (before === undefined) {
    return { applied: false, nice: undefined, reason: `the nice of thread ${tid} cannot be read` };
  }
  if (weight === before) return { applied: true, nice: before, reason: undefined };
  if (weight < before) {
    return {
      applied: false,
      nice: before,
      reason: `thread ${tid} already runs at nice ${before}; lowering it to ${weight} needs CAP_SYS_NICE, which the runtime never asks for`,
    };
  }
  try {
    os.setPriority(tid, weight);
  } catch (error) {
    return { applied: false, nice: before, reason: `setpriority failed: ${(error as Error).message}` };
  }
  const after = threadNice(tid);
  return after === weight
    ? { applied: true, nice: after, reason: undefined }
    : { applied: false, nice: after, reason: `asked for nice ${weight}, the thread reports ${after}` };
}

/** Kernel thread ids of every thread of this process now (Linux; `[]` elsewhere). */
export function processThreadIds(): number[] {
  try {
    return fs
      .readdirSync('/proc/self/task')
      .map(Number)
      .filter((tid) => Number.isInteger(tid) && tid > 0);
  } catch {
    return [];
  }
}
