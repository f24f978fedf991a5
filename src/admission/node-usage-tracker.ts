/**
 * This node's resource usage for admission control and replica ranking: CPU, heap and IO, each a
 * moving average of samples taken on an unref'd timer, off the request path. The request path reads
 * `snapshot()`, a frozen object published after every sample (no sampling, no allocation).
 *
 * - CPU: Δ `process.cpuUsage()` (user + system, the whole process) / (Δ wall × cores), where cores is
 *   `availableCores()` (cgroup quota or `os.availableParallelism()`).
 * - Heap: used / limit, summed over isolates by the injected `heapUsage` (the pool knows its
 *   workers); the default sees the main isolate only.
 * - IO: see `io-usage-sampler.ts` (PSI, else a `/proc/self/io` byte rate over a configured capacity,
 *   else 0 with `ioSource: 'none'`).
 *
 * Defaults follow OpenSearch's `NodeResourceUsageTracker` (`ResourceTrackerSettings`): CPU and heap
 * polled every 500 ms and averaged over 30 s (`node.resource.tracker.global_cpu_usage.polling_interval`
 * / `.window_duration`, `node.resource.tracker.global_jvmmp.*`), IO every 5 s over 120 s
 * (`node.resource.tracker.global_io_usage.*`). The window holds `floor(window / interval)` samples
 * (60 and 24), as in `AbstractAverageUsageTracker.setWindowSize`. 500 ms keeps a sample's cost
 * (about 1 µs for `process.cpuUsage()`, 0.5 µs per isolate for the heap) invisible while a 30 s
 * window still smooths GC sawtooth and single slow queries; a shorter window would let a coordinator
 * reject on a spike that is already over by the time its stats arrive.
 */
import { availableCores, sampleHeap } from '../../native-shim/index.js';
import { InvalidArgumentError } from '../errors.js';
import { createIoUsageSampler, type IoSource, type IoUsageSampler } from './io-usage-sampler.js';
import { MovingAverage } from './moving-average.js';

/** Heap figures summed over the isolates that count (main thread and workers). */
export interface HeapUsage {
  /** Live JS heap, bytes, >= 0. */
  readonly usedBytes: number;
  /** Heap limits added up, bytes, > 0. */
  readonly limitBytes: number;
}

export interface NodeUsageTrackerOptions {
  /** CPU and heap sampling interval, integer ms in 1..60000. @default 500 */
  readonly intervalMs?: number;
  /** CPU and heap averaging window, integer ms, intervalMs..3600000, at most 10000 samples. @default 30000 */
  readonly windowMs?: number;
  /** IO sampling interval, integer ms in 1..600000. @default 5000 */
  readonly ioIntervalMs?: number;
  /** IO averaging window, integer ms, ioIntervalMs..3600000, at most 10000 samples. @default 120000 */
  readonly ioWindowMs?: number;
  /** Cores the CPU ratio divides by, > 0. @default availableCores() */
  readonly cores?: number;
  /** Process CPU time so far (user + system), µs. @default process.cpuUsage() */
  readonly cpuTimeUs?: () => number;
  /** Heap used and limit summed over isolates. @default the main isolate's `v8.getHeapStatistics()` */
  readonly heapUsage?: () => HeapUsage;
  /** IO sampler. @default createIoUsageSampler({ capacityBytesPerSec: ioCapacityBytesPerSec }) */
  readonly io?: IoUsageSampler;
  /** Storage bandwidth counted as full IO usage where PSI is missing, bytes/s, > 0. No default. */
  readonly ioCapacityBytesPerSec?: number;
  /** Monotonic clock for rates, ms. @default performance.now() */
  readonly monotonicMs?: () => number;
  /** Wall clock for the snapshot's timestamp, epoch ms. @default Date.now() */
  readonly epochMs?: () => number;
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

/** The tracker's checked options (frozen). */
export interface ResolvedNodeUsageTrackerOptions {
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
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(`${prefix}.${name}`, `must be an integer in ${min}..${max}`, value);
  }
  return value;
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
export function resolveNodeUsageTrackerOptions(
  options: NodeUsageTrackerOptions,
  prefix = 'options',
): ResolvedNodeUsageTrackerOptions {
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

function defaultCpuTimeUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

function mainIsolateHeap(): HeapUsage {
  const s = sampleHeap();
  return { usedBytes: s.usedHeapBytes, limitBytes: s.heapLimitBytes };
}

function clampRatio(value: number): number {
  return Math.min(1, Math.max(0, value));
}

/** Samples CPU, heap and IO on timers and publishes their moving averages (see module doc). */
export class NodeUsageTracker {
  readonly #options: ResolvedNodeUsageTrackerOptions;
  readonly #cpuTimeUs: () => number;
  readonly #heapUsage: () => HeapUsage;
  readonly #io: IoUsageSampler;
  readonly #monotonicMs: () => number;
  readonly #epochMs: () => number;
  readonly #cpu: MovingAverage;
  readonly #heap: MovingAverage;
  readonly #ioAverage: MovingAverage;
  #lastCpuUs: number;
  #lastMs: number;
  #timestampMs = 0;
  #sampleErrors = 0;
  #timer: NodeJS.Timeout | undefined;
  #ioTimer: NodeJS.Timeout | undefined;
  #snapshot: NodeUsageSnapshot;

  /** @throws InvalidArgumentError for an option out of range (message names it and the value). */
  constructor(options: NodeUsageTrackerOptions = {}) {
    this.#options = resolveNodeUsageTrackerOptions(options);
    this.#cpuTimeUs = options.cpuTimeUs ?? defaultCpuTimeUs;
    this.#heapUsage = options.heapUsage ?? mainIsolateHeap;
    this.#monotonicMs = options.monotonicMs ?? (() => performance.now());
    this.#epochMs = options.epochMs ?? Date.now;
    const ioCapacity = options.ioCapacityBytesPerSec;
    if (ioCapacity !== undefined && !(typeof ioCapacity === 'number' && ioCapacity > 0)) {
      throw new InvalidArgumentError('options.ioCapacityBytesPerSec', 'must be a number > 0', ioCapacity);
    }
    this.#io =
      options.io ??
      createIoUsageSampler({
        monotonicMs: this.#monotonicMs,
        ...(ioCapacity === undefined ? {} : { capacityBytesPerSec: ioCapacity }),
      });
    const { intervalMs, windowMs, ioIntervalMs, ioWindowMs } = this.#options;
    this.#cpu = new MovingAverage(Math.floor(windowMs / intervalMs));
    this.#heap = new MovingAverage(Math.floor(windowMs / intervalMs));
    this.#ioAverage = new MovingAverage(Math.floor(ioWindowMs / ioIntervalMs));
    this.#lastCpuUs = this.#cpuTimeUs();
    this.#lastMs = this.#monotonicMs();
    this.#snapshot = this.#publish();
  }

  /** The resolved options (frozen). */
  get options(): ResolvedNodeUsageTrackerOptions {
    return this.#options;
  }

  /** Samplers that threw or returned nonsense (the sample was skipped); a sampler never stops the timer. */
  get sampleErrors(): number {
    return this.#sampleErrors;
  }

  /** Starts the sampling timers (unref'd, so they never keep the process alive). Idempotent. */
  start(): void {
    if (this.#timer !== undefined) return;
    this.#lastCpuUs = this.#cpuTimeUs();
    this.#lastMs = this.#monotonicMs();
    this.#timer = setInterval(() => this.sample(), this.#options.intervalMs);
    this.#timer.unref();
    if (this.#io.source !== 'none') {
      this.#ioTimer = setInterval(() => this.sampleIo(), this.#options.ioIntervalMs);
      this.#ioTimer.unref();
    }
  }

  /** Stops the timers; the last snapshot stays readable. Idempotent. */
  stop(): void {
    clearInterval(this.#timer);
    clearInterval(this.#ioTimer);
    this.#timer = undefined;
    this.#ioTimer = undefined;
  }

  /** Takes one CPU and one heap sample now and publishes a new snapshot (the timer's body). */
  sample(): void {
    try {
      const cpuUs = this.#cpuTimeUs();
      const nowMs = this.#monotonicMs();
      const elapsedMs = nowMs - this.#lastMs;
      if (elapsedMs > 0 && Number.isFinite(cpuUs)) {
        this.#cpu.record(clampRatio((cpuUs - this.#lastCpuUs) / 1000 / (elapsedMs * this.#options.cores)));
        this.#lastCpuUs = cpuUs;
        this.#lastMs = nowMs;
      } else {
        this.#sampleErrors++;
      }
    } catch {
      this.#sampleErrors++;
    }
    try {
      const { usedBytes, limitBytes } = this.#heapUsage();
      if (limitBytes > 0 && usedBytes >= 0 && Number.isFinite(usedBytes / limitBytes)) {
        this.#heap.record(clampRatio(usedBytes / limitBytes));
      } else {
        this.#sampleErrors++;
      }
    } catch {
      this.#sampleErrors++;
    }
    this.#timestampMs = this.#epochMs();
    this.#snapshot = this.#publish();
  }

  /** Takes one IO sample now and publishes a new snapshot (the IO timer's body). */
  sampleIo(): void {
    try {
      const io = this.#io.sample();
      if (io !== undefined && Number.isFinite(io)) this.#ioAverage.record(clampRatio(io));
    } catch {
      this.#sampleErrors++;
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
      io: this.#io.source === 'none' ? 0 : this.#ioAverage.average,
      ioSource: this.#io.source,
      ready: this.#cpu.ready && this.#heap.ready,
      cpuSamples: this.#cpu.count,
      heapSamples: this.#heap.count,
      ioSamples: this.#ioAverage.count,
      timestampMs: this.#timestampMs,
    });
  }
}
