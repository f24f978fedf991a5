/**
 * Progress lines for long-running commands (`demo`, `npm run bench`): the current phase and the time
 * spent in it and in all, printed when a phase starts and then every `everyMs` while it runs, e.g.
 * `demo: enforcement on (enabled), 4 s of 10 s (total 17 s): dashboards 80 ok, analysts 20 rejected`.
 * Plain lines (no cursor tricks), so they read the same in a terminal and in a log file.
 */
export interface ProgressReporterOptions {
  /** Prefix of every line, e.g. `demo`. */
  readonly label: string;
  /** Where lines go (a line feed is added). */
  readonly write: (line: string) => void;
  /** ms between lines while a phase runs, >= 100. @default 2000 */
  readonly everyMs?: number;
}

export class ProgressReporter {
  readonly #label: string;
  readonly #write: (line: string) => void;
  readonly #everyMs: number;
  readonly #startedMs = performance.now();
  #timer: NodeJS.Timeout | undefined;
  #phase: string | undefined;
  #phaseStartedMs = 0;
  #plannedMs: number | undefined;
  #detail: (() => string) | undefined;

  /** @throws RangeError for an interval below 100 ms. */
  constructor(options: ProgressReporterOptions) {
    const everyMs = options.everyMs ?? 2000;
    if (!(everyMs >= 100)) throw new RangeError(`everyMs must be >= 100; received ${everyMs}`);
    this.#label = options.label;
    this.#write = options.write;
    this.#everyMs = everyMs;
  }

  /**
   * Starts a phase: prints its line now, then every `everyMs`. `plannedMs`: its planned length (shown
   * as "of N s"); `detail`: read at each line for live figures.
   */
  phase(name: string, options: { readonly plannedMs?: number; readonly detail?: () => string } = {}): void {
    this.#phase = name;
    this.#phaseStartedMs = performance.now();
    this.#plannedMs = options.plannedMs;
    this.#detail = options.detail;
    this.#print();
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#print(), this.#everyMs);
      this.#timer.unref();
    }
  }

  /** The line that would be printed now. */
  line(): string {
    const now = performance.now();
    const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;
    const inPhase = seconds(now - this.#phaseStartedMs);
    const planned = this.#plannedMs === undefined ? '' : ` of ${seconds(this.#plannedMs)}`;
    let detail = '';
    try {
      const d = this.#detail?.();
      if (d !== undefined && d !== '') detail = `: ${d}`;
    } catch {
      // A figure that cannot be read now is left out of this line.
    }
    return `${this.#label}: ${this.#phase ?? 'starting'}, ${inPhase}${planned} (total ${seconds(now - this.#startedMs)})${detail}`;
  }

  /** Stops the periodic lines (idempotent). */
  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #print(): void {
    this.#write(this.line());
  }
}
