/**
 * Latency figures for the demo (and benchmarks): an hdr-histogram-js histogram in microseconds plus
 * counts of outcomes. Percentiles in ms.
 */
import * as hdr from 'hdr-histogram-js';

export class LatencyRecorder {
  readonly #histogram = hdr.build({
    bitBucketSize: 64,
    autoResize: true,
    lowestDiscernibleValue: 1,
    highestTrackableValue: 600_000_000,
    numberOfSignificantValueDigits: 3,
  });
  requests = 0;
  ok = 0;
  rejected = 0;
  cancelled = 0;
  errors = 0;

  /** Records one successful request's latency, ms. */
  recordMs(ms: number): void {
    this.#histogram.recordValue(Math.max(1, Math.round(ms * 1000)));
  }

  /** Latency at `percentile` (0..100) of the successful requests, ms; NaN when none. */
  percentileMs(percentile: number): number {
    return this.#histogram.totalCount === 0
      ? Number.NaN
      : this.#histogram.getValueAtPercentile(percentile) / 1000;
  }

  get count(): number {
    return this.#histogram.totalCount;
  }
}
