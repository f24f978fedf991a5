/**
 * Node duress, in two levels: `reject` when the node's CPU or memory usage has been above the reject
 * threshold for `consecutiveIntervals` intervals in a row, `cancel` when above the cancel threshold as
 * long. A level is left on the first interval below its threshold. (OpenSearch's node duress: 0.9 for
 * 3 one-second samples; the reject level lets `soft` sandboxes stop taking work before anything has
 * to be cancelled.)
 */
import type { DuressLevel } from './decide.js';

export interface DuressOptions {
  /** Node usage ratio in (0, 1] above which soft limits refuse new work. Default 0.8. */
  readonly rejectThreshold: number;
  /** Node usage ratio in (0, 1], >= rejectThreshold, above which soft limits cancel. Default 0.9. */
  readonly cancelThreshold: number;
  /** Intervals in a row, >= 1. Default 3. */
  readonly consecutiveIntervals: number;
}

export class DuressDetector {
  readonly #options: DuressOptions;
  #rejectStreak = 0;
  #cancelStreak = 0;
  #resource: 'cpu' | 'memory' | undefined;

  constructor(options: DuressOptions) {
    this.#options = options;
  }

  /** Feeds one interval's node usage (ratios); returns the duress level now. */
  update(cpu: number, memory: number): DuressLevel {
    const { rejectThreshold, cancelThreshold } = this.#options;
    const worst = Math.max(cpu, memory);
    this.#resource = cpu > rejectThreshold ? 'cpu' : memory > rejectThreshold ? 'memory' : undefined;
    if (cpu > cancelThreshold) this.#resource = 'cpu';
    else if (memory > cancelThreshold) this.#resource = 'memory';
    this.#rejectStreak = worst > rejectThreshold ? this.#rejectStreak + 1 : 0;
    this.#cancelStreak = worst > cancelThreshold ? this.#cancelStreak + 1 : 0;
    return this.level;
  }

  get level(): DuressLevel {
    const n = this.#options.consecutiveIntervals;
    if (this.#cancelStreak >= n) return 'cancel';
    if (this.#rejectStreak >= n) return 'reject';
    return 'none';
  }

  get inDuress(): boolean {
    return this.level !== 'none';
  }

  /** Node usage ratio above which the node is in duress (the reject level). */
  get threshold(): number {
    return this.#options.rejectThreshold;
  }

  /** The resource over a threshold in the last interval (the one over the cancel threshold first). */
  get resource(): 'cpu' | 'memory' | undefined {
    return this.#resource;
  }
}
