/**
 * A token bucket: holds at most `burst` tokens, refilled by `refill(units)` at `tokensPerUnit` per
 * unit (ms of time, or completed tasks). Starts full. Used to rate-limit cancellations, after
 * OpenSearch's search backpressure (`cancellation_rate` per ms, `cancellation_ratio` per completed
 * task, `cancellation_burst`).
 */
export class TokenBucket {
  readonly #tokensPerUnit: number;
  readonly #burst: number;
  #tokens: number;

  /**
   * @param tokensPerUnit tokens added per unit, >= 0
   * @param burst most tokens held, >= 1; also the initial count
   * @throws RangeError for values out of range
   */
  constructor(tokensPerUnit: number, burst: number) {
    if (!(tokensPerUnit >= 0) || !Number.isFinite(tokensPerUnit)) {
      throw new RangeError(`tokensPerUnit must be a finite number >= 0; received ${tokensPerUnit}`);
    }
    if (!(burst >= 1) || !Number.isFinite(burst))
      throw new RangeError(`burst must be >= 1; received ${burst}`);
    this.#tokensPerUnit = tokensPerUnit;
    this.#burst = burst;
    this.#tokens = burst;
  }

  /** Adds `units` worth of tokens (capped at the burst). */
  refill(units: number): void {
    if (units > 0) this.#tokens = Math.min(this.#burst, this.#tokens + units * this.#tokensPerUnit);
  }

  /** Takes one token when a whole one is there (within 1e-9: ten refills of 0.1 make one token). */
  tryTake(): boolean {
    if (this.#tokens < 1 - 1e-9) return false;
    this.#tokens = Math.max(0, this.#tokens - 1);
    return true;
  }

  get tokens(): number {
    return this.#tokens;
  }
}
