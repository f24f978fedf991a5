/**
 * A simple moving average over the last `windowSize` observations, kept in a ring buffer: O(1) per
 * observation (amortized), no allocation after construction. The same structure as OpenSearch's
 * `org.opensearch.common.util.MovingAverage`, which its resource usage trackers
 * (`AbstractAverageUsageTracker`) fill on every poll.
 */
export class MovingAverage {
  readonly #window: Float64Array;
  #count = 0;
  #sum = 0;

  /** @param windowSize observations averaged over, integer >= 1 (the caller validates). */
  constructor(windowSize: number) {
    this.#window = new Float64Array(windowSize);
  }

  /** Adds one observation, evicting the oldest one once the window is full. */
  record(value: number): void {
    const index = this.#count % this.#window.length;
    if (this.#count >= this.#window.length) this.#sum -= this.#window[index]!;
    this.#window[index] = value;
    this.#sum += value;
    this.#count++;
    // Re-add the window once per wrap so rounding from the running subtractions cannot build up.
    if (index === this.#window.length - 1) {
      let sum = 0;
      for (const v of this.#window) sum += v;
      this.#sum = sum;
    }
  }

  /** Mean of the observations in the window; 0 before the first one. */
  get average(): number {
    const n = Math.min(this.#count, this.#window.length);
    return n === 0 ? 0 : this.#sum / n;
  }

  /** Observations recorded since construction (not capped at the window size). */
  get count(): number {
    return this.#count;
  }

  /** The window size. */
  get windowSize(): number {
    return this.#window.length;
  }

  /** True once the window is full (OpenSearch `MovingAverage.isReady`). */
  get ready(): boolean {
    return this.#count >= this.#window.length;
  }
}
