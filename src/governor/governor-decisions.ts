/**
 * What the governor tells a listener about its decisions (for decision logs; later for
 * `diagnostics_channel` events): plain data, built only when a listener is set.
 */
import type { Resource } from '../sandbox/sandbox.js';
import type { SandboxState } from './decide.js';

/** A sandbox's published state moved (ok → rejecting → cancelling, and back). */
export interface StateChangeDecision {
  readonly sandboxId: string;
  readonly from: SandboxState;
  readonly to: SandboxState;
  /** The resource over its limit (absent when back at `ok`). */
  readonly resource: Resource | undefined;
  /** The sandbox's usage of `resource` in the interval, ratio 0..1. */
  readonly usage: number | undefined;
  readonly lowLimit: number | undefined;
  readonly highLimit: number | undefined;
}

/** A running task was cancelled: `soft` (its AbortSignal) or `hard` (its worker terminated). */
export interface CancellationDecision {
  readonly taskId: number;
  /** The task's own (leaf) sandbox, when the task was still in the usage sample. */
  readonly sandboxId: string | undefined;
  /**
   * The sandbox whose high limit was breached: the task's own or an ancestor; for `time`, the task's
   * sandbox (whose `cancel_after_time_interval`, its own or inherited, it ran past).
   */
  readonly breachedSandboxId: string;
  /** `limit` (a high limit or the watchdog; the default) or `duress` (the node in duress shed the sandbox: docs/overload.md). */
  readonly reason?: 'limit' | 'duress';
  /** `time`: the wall-clock watchdog (`cancel_after_time_interval`), whatever the task's usage. */
  readonly resource: Resource | 'time';
  readonly kind: 'soft' | 'hard';
  /** The breached sandbox's usage of `resource`, ratio 0..1 (absent for `time`). */
  readonly usage: number | undefined;
  readonly highLimit: number | undefined;
  /** The task's own usage of `resource` in the interval, ratio 0..1 (absent for `time`). */
  readonly taskUsage: number | undefined;
  /** For `time`: the limit the task ran past, ms. */
  readonly cancelAfterMs?: number | undefined;
}

/** Receives the governor's decisions, on the governor's tick (must be cheap and must not throw). */
export interface GovernorDecisionListener {
  stateChanged(decision: StateChangeDecision): void;
  cancelled(decision: CancellationDecision): void;
}
