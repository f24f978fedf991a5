/**
 * Decision logs: the governor's and the coordinator's decisions as pino lines at `info`, rate-limited
 * so that a flood of decisions cannot fill a disk.
 *
 * Lines (`msg`, then the fields):
 * - `sandbox state changed`: `sandboxId`, `from`, `to` (`ok` | `rejecting` | `cancelling`), `resource`
 *   (the one over its limit, absent back at `ok`), `usage` and `lowLimit` / `highLimit` (ratios 0..1).
 * - `task cancelled`: `taskId`, `sandboxId` (the task's own), `breachedSandboxId` (whose limit was
 *   breached: the task's sandbox or an ancestor; or the sandbox shed in duress), `reason` (`limit` |
 *   `duress`), `resource`, `kind` (`soft` | `hard`), `usage` (the
 *   breached sandbox's, ratio 0..1), `highLimit`, `taskUsage` (the task's own share, ratio 0..1).
 * - `admission rejected`: `nodeId` (the data node over its limit), `resource` (`cpu` | `heap`), `usage`,
 *   `limit`, `index`, `shard`.
 * - `decision log lines suppressed`: `suppressed` (lines dropped since the last line written), emitted
 *   with the first line that gets through again, so the count of what was lost is never lost.
 *
 * Rate limit: one token bucket for every decision line, `linesPerSecond` (default 20) with a burst of
 * `burst` (default 100). At the default, a flood writes at most about 100 + 20/s lines of a few
 * hundred bytes: under 1 MiB an hour of continuous flood.
 */
import type { RuntimeLogger } from '../runtime-logger.js';
import type {
  CancellationDecision,
  GovernorDecisionListener,
  StateChangeDecision,
} from '../governor/governor-decisions.js';
import { TokenBucket } from '../governor/token-bucket.js';

export type { CancellationDecision, StateChangeDecision } from '../governor/governor-decisions.js';

export interface DecisionLogOptions {
  /** Lines per second the bucket refills, > 0. @default 20 */
  readonly linesPerSecond?: number;
  /** Most lines written at once after a quiet period, >= 1. @default 100 */
  readonly burst?: number;
  /** Clock, ms (tests inject one). @default performance.now */
  readonly nowMs?: () => number;
}

/** The coordinator refused a search before fan-out. */
export interface AdmissionRejectionDecision {
  readonly nodeId: string;
  readonly resource: 'cpu' | 'heap';
  readonly usage: number;
  readonly limit: number;
  readonly index: string;
  readonly shard: number;
}

const round = (value: number | undefined): number | undefined =>
  value === undefined ? undefined : Math.round(value * 10_000) / 10_000;

/** Writes decision lines through `logger` at info, within the rate limit. */
export class DecisionLog implements GovernorDecisionListener {
  readonly #log: RuntimeLogger;
  readonly #bucket: TokenBucket;
  readonly #nowMs: () => number;
  #lastMs: number;
  /** Dropped since the last line written. */
  #suppressed = 0;
  #suppressedTotal = 0;
  #written = 0;

  /** @throws RangeError for a rate or burst out of range. */
  constructor(logger: RuntimeLogger, options: DecisionLogOptions = {}) {
    const perSecond = options.linesPerSecond ?? 20;
    if (!(perSecond > 0) || !Number.isFinite(perSecond)) {
      throw new RangeError(`linesPerSecond must be a finite number > 0; received ${perSecond}`);
    }
    this.#log = logger;
    this.#bucket = new TokenBucket(perSecond / 1000, options.burst ?? 100);
    this.#nowMs = options.nowMs ?? (() => performance.now());
    this.#lastMs = this.#nowMs();
  }

  /** Lines written and lines dropped by the rate limit so far. */
  get counts(): { readonly written: number; readonly suppressed: number } {
    return { written: this.#written, suppressed: this.#suppressedTotal };
  }

  stateChanged(d: StateChangeDecision): void {
    if (!this.#admit()) return;
    this.#log.info(
      {
        decision: 'state',
        sandboxId: d.sandboxId,
        from: d.from,
        to: d.to,
        resource: d.resource,
        usage: round(d.usage),
        lowLimit: d.lowLimit,
        highLimit: d.highLimit,
      },
      'sandbox state changed',
    );
  }

  cancelled(d: CancellationDecision): void {
    if (!this.#admit()) return;
    this.#log.info(
      {
        decision: 'cancellation',
        taskId: d.taskId,
        sandboxId: d.sandboxId,
        breachedSandboxId: d.breachedSandboxId,
        reason: d.reason ?? 'limit',
        resource: d.resource,
        kind: d.kind,
        usage: round(d.usage),
        highLimit: d.highLimit,
        taskUsage: round(d.taskUsage),
        ...(d.cancelAfterMs === undefined ? {} : { cancelAfterMs: d.cancelAfterMs }),
      },
      'task cancelled',
    );
  }

  admissionRejected(d: AdmissionRejectionDecision): void {
    if (!this.#admit()) return;
    this.#log.info(
      {
        decision: 'admission',
        nodeId: d.nodeId,
        resource: d.resource,
        usage: round(d.usage),
        limit: d.limit,
        index: d.index,
        shard: d.shard,
      },
      'admission rejected',
    );
  }

  /** Takes a token; reports what was suppressed before it when one is there again. */
  #admit(): boolean {
    const nowMs = this.#nowMs();
    this.#bucket.refill(nowMs - this.#lastMs);
    this.#lastMs = nowMs;
    if (!this.#bucket.tryTake()) {
      this.#suppressed++;
      this.#suppressedTotal++;
      return false;
    }
    if (this.#suppressed > 0) {
      this.#log.info(
        { decision: 'suppressed', suppressed: this.#suppressed },
        'decision log lines suppressed',
      );
      this.#suppressed = 0;
    }
    this.#written++;
    return true;
  }
}
