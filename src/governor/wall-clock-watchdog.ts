/**
 * The wall-clock watchdog: which running tasks have run longer than the `cancel_after_time_interval`
 * in force for them (their sandbox's search setting, or the request's). A pure function of (tasks,
 * clock, limits), run by the governor at every tick; the governor cancels what it returns soft, then
 * hard after the grace period, whatever the task's CPU or memory use: the task that stalls (awaits
 * a lock, a stuck refresh, a remote call) uses neither, so usage-based cancellation never sees it.
 *
 * A task's time counts from its dispatch to a worker (its wait in the queue does not count). Its
 * limit is looked up at every tick, so a sandbox's lowered limit reaches tasks already running. A
 * task whose limit falls before the next tick (`dueWithin`) gets a timer for the exact moment, when
 * the governor is given one (`GovernorDeps.schedule`), so a task is cancelled at its limit, not up to
 * one interval late.
 * Wall-clock cancellations are not rate limited by the governor's token buckets: like a search
 * timeout, the limit is a rule the request runs under, not a shedding decision.
 */

/** A running task as the watchdog sees it. */
export interface WatchedTask {
  readonly taskId: number;
  readonly sandboxId: string;
  /** When it was handed to a worker, ms on the governor's clock. */
  readonly startedAtMs: number;
  /** Already being cancelled (for any reason): skipped. */
  readonly cancelling: boolean;
}

/** A task past its limit. */
export interface WallClockCancellation {
  readonly taskId: number;
  readonly sandboxId: string;
  /** The limit it ran past, ms (> 0). */
  readonly cancelAfterMs: number;
  /** How long it had run at this tick, ms. */
  readonly ranMs: number;
  /** Always `time`: what the cancellation is about, beside `cpu` and `memory`. */
  readonly resource: 'time';
}

/** A task whose limit falls before the next tick: when, in ms from now, it is due. */
export interface DueSoon {
  readonly taskId: number;
  readonly sandboxId: string;
  readonly cancelAfterMs: number;
  readonly inMs: number;
}

/**
 * The tasks not yet at their limit that reach it within `horizonMs` (the next interval): the
 * governor arms a timer for each, so that a task is cancelled at its limit rather than up to one
 * interval after it.
 */
export function dueWithin(
  tasks: readonly WatchedTask[],
  nowMs: number,
  horizonMs: number,
  cancelAfterMsOf: (taskId: number) => number | undefined,
): DueSoon[] {
  const out: DueSoon[] = [];
  for (const t of tasks) {
    if (t.cancelling) continue;
    const limit = cancelAfterMsOf(t.taskId);
    if (limit === undefined || !(limit > 0)) continue;
    const inMs = limit - (nowMs - t.startedAtMs);
    if (inMs > 0 && inMs < horizonMs)
      out.push({ taskId: t.taskId, sandboxId: t.sandboxId, cancelAfterMs: limit, inMs });
  }
  return out;
}

/**
 * The tasks whose run time at `nowMs` is at or above their limit, in the order given.
 * @param cancelAfterMsOf the limit in force for a task, ms (> 0), or undefined for none.
 */
export function overdueTasks(
  tasks: readonly WatchedTask[],
  nowMs: number,
  cancelAfterMsOf: (taskId: number) => number | undefined,
): WallClockCancellation[] {
  const out: WallClockCancellation[] = [];
  for (const t of tasks) {
    if (t.cancelling) continue;
    const limit = cancelAfterMsOf(t.taskId);
    if (limit === undefined || !(limit > 0)) continue;
    const ranMs = nowMs - t.startedAtMs;
    if (ranMs >= limit) {
      out.push({ taskId: t.taskId, sandboxId: t.sandboxId, cancelAfterMs: limit, ranMs, resource: 'time' });
    }
  }
  return out;
}
