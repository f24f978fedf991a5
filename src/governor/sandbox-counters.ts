/**
 * Per-sandbox counters for the stats API, shaped after OpenSearch's `_wlm/stats`. Incremented on the
 * request path and by the governor; read as plain snapshots.
 */
import type { Resource } from '../sandbox/sandbox.js';

export interface ResourceCounters {
  rejections: number;
  cancellations: number;
  /** Of `cancellations`, those where the worker had to be terminated. */
  hardCancellations: number;
  /** Monitor mode (or enforcement off for this sandbox): requests it would have rejected. */
  wouldReject: number;
  /** Monitor mode: intervals in which it was above its high limit and would have cancelled. */
  wouldCancel: number;
}

export interface SandboxCounters {
  completions: number;
  rejections: number;
  cancellations: number;
  /** Of `cancellations`, those where the worker had to be terminated. */
  hardCancellations: number;
  /** Tasks that failed (engine errors), not counting rejections and cancellations. */
  failures: number;
  /** Of `cancellations`, those for running past `cancel_after_time_interval` (the wall-clock watchdog). */
  wallClockCancellations: number;
  /** Completed searches whose result says `timed_out: true` (the search `timeout`: partial hits). */
  timedOut: number;
  /** Calls whose caller gave up (`signal` aborted, HTTP client gone), queued or running. */
  aborted: number;
  /** Calls past their `timeoutMs` (`search(request, { timeoutMs })`), queued or running. */
  callTimeouts: number;
  /** Of `rejections`, those of tasks that waited past their queue-wait bound or the controlled-delay target. */
  queueWaitRejections: number;
  /** Of `rejections` and `cancellations`, those made because the node shed this sandbox in duress. */
  duressRejections: number;
  duressCancellations: number;
  readonly cpu: ResourceCounters;
  readonly memory: ResourceCounters;
}

function newResourceCounters(): ResourceCounters {
  return { rejections: 0, cancellations: 0, hardCancellations: 0, wouldReject: 0, wouldCancel: 0 };
}

/** Counters keyed by sandbox id; created on first use, kept for deleted sandboxes until `prune`. */
export class SandboxCounterTable {
  readonly #table = new Map<string, SandboxCounters>();

  of(sandboxId: string): SandboxCounters {
    let c = this.#table.get(sandboxId);
    if (c === undefined) {
      c = {
        completions: 0,
        rejections: 0,
        cancellations: 0,
        hardCancellations: 0,
        failures: 0,
        wallClockCancellations: 0,
        timedOut: 0,
        aborted: 0,
        callTimeouts: 0,
        queueWaitRejections: 0,
        duressRejections: 0,
        duressCancellations: 0,
        cpu: newResourceCounters(),
        memory: newResourceCounters(),
      };
      this.#table.set(sandboxId, c);
    }
    return c;
  }

  countRejection(sandboxId: string, resource: Resource | 'queue'): void {
    const c = this.of(sandboxId);
    c.rejections++;
    if (resource !== 'queue') c[resource].rejections++;
  }

  countCancellation(sandboxId: string, resource: Resource | 'time' | 'shutdown', hard: boolean): void {
    const c = this.of(sandboxId);
    c.cancellations++;
    if (hard) c.hardCancellations++;
    if (resource === 'time') c.wallClockCancellations++;
    else if (resource !== 'shutdown') {
      c[resource].cancellations++;
      if (hard) c[resource].hardCancellations++;
    }
  }
}
