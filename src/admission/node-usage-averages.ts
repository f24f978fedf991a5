/**
 * This node's resource usage for admission control and replica ranking (the `Resource_Usage_Stats`
 * header, the `resource_usage` of `GET /_nodes/stats`): CPU, heap and IO, each a moving average of
 * the one node sampler's samples (`tracking/node-usage-sampler.ts`). It samples nothing itself: the
 * sampler, called once per governor interval, hands it every sample (`record`), and the request path
 * reads `snapshot()`, a frozen object published after every recorded sample (no sampling, no allocation).
 *
 * - CPU: every `intervalMs` (rounded to a whole number of governor intervals, at least one), process
 *   CPU over the span since the last recorded sample / (Δ wall × cores) (`cpuUsageBetween`, the
 *   formula duress uses; with one governor interval per sample the two figures are the same number).
 * - Heap: the sample's heap used / limit summed over isolates (the figure duress calls `memory`).
 * - IO: the sampler's IO figure every `ioIntervalMs` (see `io-usage-sampler.ts`: PSI, else a
 *   `/proc/self/io` byte rate over a configured capacity, else 0 with `ioSource: 'none'`).
 *
 * Defaults follow OpenSearch's `NodeResourceUsageTracker` (`ResourceTrackerSettings`): CPU and heap
 * every 500 ms averaged over 30 s (`node.resource.tracker.global_cpu_usage.polling_interval`
 * / `.window_duration`, `node.resource.tracker.global_jvmmp.*`), IO every 5 s over 120 s
 * (`node.resource.tracker.global_io_usage.*`). The window holds `floor(window / interval)` samples
 * (60 and 24), as in `AbstractAverageUsageTracker.setWindowSize`. A 30 s window smooths GC sawtooth
 * and single slow queries; a shorter one would let a coordinator reject on a spike that is already
 * over by the time its stats arrive.
 */
import { availableCores } from '../../native-shim/index.js';
import { InvalidArgumentError } from '../errors.js';
import {
  cpuUsageBetween,
  type NodeUsageSample,
  type NodeUsageSampler,
} from '../tracking/node-usage-sampler.js';
import type { IoSource } from '../tracking/io-usage-sampler.js';
import { MovingAverage } from './moving-average.js';
import { optionChecks } from '../common/option-checks.js';

export interface NodeUsageAveragesOptions {
  /** CPU and heap recording interval, integer ms in 1..60000. @default 500 */
  readonly intervalMs?: number;
  /** CPU and heap averaging window, integer ms, intervalMs..3600000, at most 10000 samples. @default 30000 */
  readonly windowMs?: number;
  /** IO sampling interval, integer ms in 1..600000. @default 5000 */
  readonly ioIntervalMs?: number;
  /** IO averaging window, integer ms, ioIntervalMs..3600000, at most 10000 samples. @default 120000 */
  readonly ioWindowMs?: number;
  /** Cores the CPU ratio divides by, > 0. @default availableCores() */
  readonly cores?: number;
}

/** What `snapshot()` returns: ratios in 0..1, plain numbers, frozen. */
export interface NodeUsageSnapshot {
  /** Moving average of process CPU / cores, 0..1. */
  readonly cpu: number;
  /** Moving average of heap used / heap limit, 0..1. */
  readonly heap: number;
  /** Moving average of IO usage, 0..1; 0 when `ioSource` is `'none'`. */
  readonly io: number;
  /** Where `io` comes from; `'none'` means `io` is not a measurement. */
  readonly ioSource: IoSource;
  /**
   * True once the CPU and heap windows are full (OpenSearch reports a node's usage only then:
   * `NodeResourceUsageTracker.isReady`). Before that the averages cover fewer samples.
   */
  readonly ready: boolean;
  readonly cpuSamples: number;
  readonly heapSamples: number;
  readonly ioSamples: number;
  /** Wall-clock time of the last CPU/heap sample, epoch ms; 0 before the first. */
  readonly timestampMs: number;
}

/** The averages' checked options (frozen). */
export interface ResolvedNodeUsageAveragesOptions {
  readonly intervalMs: number;
  readonly windowMs: number;
  readonly ioIntervalMs: number;
  readonly ioWindowMs: number;
  readonly cores: number;
}

const MAX_WINDOW_SAMPLES = 10_000;

function integerOption(
  prefix: string,
  name: string,
  value: unknown,
  min: number,
  max: number,
  fallback: number,
): number {
  return optionChecks.integerIn(`${prefix}.${name}`, value, min, max, fallback);
}

function windowOption(
  prefix: string,
  name: string,
  value: unknown,
  intervalMs: number,
  fallback: number,
): number {
  const windowMs = integerOption(prefix, name, value, intervalMs, 3_600_000, fallback);
  if (Math.floor(windowMs / intervalMs) > MAX_WINDOW_SAMPLES) {
    throw new InvalidArgumentError(
      `${prefix}.${name}`,
      `must hold at most ${MAX_WINDOW_SAMPLES} samples of ${intervalMs} ms`,
      value,
    );
  }
  return windowMs;
}

/**
 * Checks the numeric options (intervals, windows, cores) and fills the defaults; what the constructor
 * does first, exported so a caller can refuse bad options before starting anything.
 * @param prefix the path error messages name the options by. @default 'options'
 * @throws InvalidArgumentError naming `<prefix>.<option>` and the received value.
 */
export function resolveNodeUsageAveragesOptions(
  options: NodeUsageAveragesOptions,
  prefix = 'options',
): ResolvedNodeUsageAveragesOptions {
  const intervalMs = integerOption(prefix, 'intervalMs', options.intervalMs, 1, 60_000, 500);
  const windowMs = windowOption(
    prefix,
    'windowMs',
    options.windowMs,
    intervalMs,
    Math.max(intervalMs, 30_000),
  );
  const ioIntervalMs = integerOption(prefix, 'ioIntervalMs', options.ioIntervalMs, 1, 600_000, 5_000);
  const ioWindowMs = windowOption(
    prefix,
    'ioWindowMs',
    options.ioWindowMs,
    ioIntervalMs,
    Math.max(ioIntervalMs, 120_000),
  );
  const cores = options.cores ?? availableCores();
  if (typeof cores !== 'number' || !(cores > 0) || !Number.isFinite(cores)) {
    throw new InvalidArgumentError(`${prefix}.cores`, 'must be a finite number > 0', cores);
  }
  return Object.freeze({ intervalMs, windowMs, ioIntervalMs, ioWindowMs, cores });
}

/**
 * Moving averages of the node sampler's samples (see module doc). Wire it with `attach(sampler)` or
 * feed it with `record(sample)`.
 */
export class NodeUsageAverages {
  readonly #options: ResolvedNodeUsageAveragesOptions;
  readonly #every: number;
  readonly #ioSource: IoSource;
  readonly #cpu: MovingAverage;
  readonly #heap: MovingAverage;
  readonly #io: MovingAverage;
  #since = 0;
  #lastRecorded: NodeUsageSample | undefined;
  #timestampMs = 0;
  #snapshot: NodeUsageSnapshot;

  /**
   * @param sampleIntervalMs how often the sampler samples (the governor interval), ms > 0: CPU and
   *   heap are recorded every `round(intervalMs / sampleIntervalMs)` samples, at least every one.
   * @param ioSource where the sampler's IO figure comes from.
   * @throws InvalidArgumentError for an option out of range (message names it and the value).
   */
  constructor(options: NodeUsageAveragesOptions, sampleIntervalMs: number, ioSource: IoSource) {
    this.#options = resolveNodeUsageAveragesOptions(options);
    const { intervalMs, windowMs, ioIntervalMs, ioWindowMs } = this.#options;
    this.#every = Math.max(1, Math.round(intervalMs / sampleIntervalMs));
    this.#ioSource = ioSource;
    this.#cpu = new MovingAverage(Math.floor(windowMs / intervalMs));
    this.#heap = new MovingAverage(Math.floor(windowMs / intervalMs));
    this.#io = new MovingAverage(Math.floor(ioWindowMs / ioIntervalMs));
    this.#snapshot = this.#publish();
  }

  /** The resolved options (frozen). */
  get options(): ResolvedNodeUsageAveragesOptions {
    return this.#options;
  }

  /** Records every later sample of `sampler`; the first one only sets the CPU baseline. */
  attach(sampler: NodeUsageSampler): this {
    this.#lastRecorded = sampler.last;
    sampler.onSample((sample) => this.record(sample));
    return this;
  }

  /**
   * Takes one sample of the node sampler. Every `intervalMs` it records CPU over the span since the
   * last recorded sample and the sample's heap ratio; it records the IO figure whenever the sample
   * carries one. A sample whose CPU or heap reading failed records nothing for that figure.
   */
  record(sample: NodeUsageSample): void {
    if (sample.io !== undefined && this.#ioSource !== 'none') this.#io.record(sample.io);
    if (++this.#since >= this.#every) {
      this.#since = 0;
      const earlier = this.#lastRecorded;
      if (sample.cpuValid && earlier !== undefined)
        this.#cpu.record(cpuUsageBetween(earlier, sample, this.#options.cores));
      if (sample.cpuValid || earlier === undefined) this.#lastRecorded = sample;
      if (sample.heapValid) this.#heap.record(sample.memory);
      this.#timestampMs = sample.timestampMs;
    }
    this.#snapshot = this.#publish();
  }

  /** The last published usage (frozen; see `NodeUsageSnapshot`). Costs nothing. */
  snapshot(): NodeUsageSnapshot {
    return this.#snapshot;
  }

  #publish(): NodeUsageSnapshot {
    return Object.freeze({
      cpu: this.#cpu.average,
      heap: this.#heap.average,
      io: this.#ioSource === 'none' ? 0 : this.#io.average,
      ioSource: this.#ioSource,
      ready: this.#cpu.ready && this.#heap.ready,
      cpuSamples: this.#cpu.count,
      heapSamples: this.#heap.count,
      ioSamples: this.#io.count,
      timestampMs: this.#timestampMs,
    });
  }
}
