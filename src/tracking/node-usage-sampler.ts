/**
 * The one node-usage sampler. Once per governor interval, off the request path, it reads this
 * process's CPU time, the heap over every isolate, the main thread's resident set and (every
 * `ioIntervalMs`) the IO figure, and hands the same sample to its three consumers: the governor's
 * duress (`cpu`, `memory`), the node stats (`GET /_nodes/stats`, through the governor snapshot) and
 * the moving averages behind the `Resource_Usage_Stats` header (`admission/node-usage-averages.ts`,
 * a listener). Nothing else in the runtime samples the node.
 *
 * Formulas (DESIGN.md, "Node usage"):
 * - CPU over an interval = Δ `process.cpuUsage()` (user + system, µs) / (Δ wall × cores), a ratio
 *   capped to 0..1 (`cpuUsageBetween`, also used for the header's longer spans).
 * - Memory = heap used / heap limit summed over isolates: the main isolate's live heap plus external
 *   memory plus the workers' figures, over the main isolate's limit plus the workers' limits (the
 *   workers' come from `workersHeap`, wired by the composition root, which knows the workers: slot
 *   reads, no sampling).
 *
 * About 1 µs for the CPU read, 0.5 µs per isolate for the heap, a few µs for the resident set.
 */
import { sampleHeap, type HeapSample } from '../../native-shim/index.js';
import { NO_IO_SAMPLER, type IoSource, type IoUsageSampler } from './io-usage-sampler.js';

/** Heap figures summed over the isolates that count (main thread and workers). */
export interface HeapUsage {
  /** Live JS heap plus external memory, bytes, >= 0. */
  readonly usedBytes: number;
  /** Heap limits added up, bytes, > 0. */
  readonly limitBytes: number;
}

/** What duress reads: ratios of the node's capacity over one interval. */
export interface NodeUsage {
  /** Process CPU over the last interval, ratio of node capacity (0..1). */
  readonly cpu: number;
  /** Heap used / heap limit over all isolates (0..1). */
  readonly memory: number;
}

/** One sample: the ratios duress reads plus the raw readings the other consumers need (frozen). */
export interface NodeUsageSample extends NodeUsage {
  /** 1 for the first sample, then one more each time. */
  readonly seq: number;
  /** Process CPU time so far (user + system), µs. */
  readonly cpuTimeUs: number;
  /** Monotonic clock at the sample, ms. */
  readonly monotonicMs: number;
  /** Wall clock at the sample, epoch ms. */
  readonly timestampMs: number;
  /** The heap over all isolates at the sample (what `memory` divides). */
  readonly heap: HeapUsage;
  /** The main isolate's live heap, bytes (Node's `process.memoryUsage().heapUsed`). */
  readonly mainHeapUsedBytes: number;
  /** The process's resident set, bytes (`process.memoryUsage.rss()`). */
  readonly rssBytes: number;
  /** IO usage (0..1) when an IO sample was due and measured this time; otherwise undefined. */
  readonly io: number | undefined;
  /** False when the CPU reading failed (then `cpu` repeats the previous figure). */
  readonly cpuValid: boolean;
  /** False when the heap reading failed or made no sense (then `memory` repeats the previous figure). */
  readonly heapValid: boolean;
}

export interface NodeUsageSamplerOptions {
  /** Cores the CPU ratio divides by, > 0. */
  readonly cores: number;
  /** How often `sample()` is called (the governor interval), ms > 0: sets how often IO is sampled. @default 100 */
  readonly intervalMs?: number;
  /** IO sampling interval, ms, rounded to a whole number of samples (at least 1). @default 5000 */
  readonly ioIntervalMs?: number;
  /** The IO source. @default NO_IO_SAMPLER */
  readonly io?: IoUsageSampler;
  /** Process CPU time so far (user + system), µs. @default process.cpuUsage() */
  readonly cpuTimeUs?: () => number;
  /** The workers' heap (live + external) and heap limits added up, bytes. @default none (0 of 0) */
  readonly workersHeap?: () => HeapUsage;
  /** The main isolate's heap. @default native-shim `sampleHeap()` (`v8.getHeapStatistics()`) */
  readonly mainHeap?: () => HeapSample;
  /** Resident set, bytes. @default process.memoryUsage.rss() */
  readonly rssBytes?: () => number;
  /** Monotonic clock, ms. @default performance.now() */
  readonly monotonicMs?: () => number;
  /** Wall clock, epoch ms. @default Date.now() */
  readonly epochMs?: () => number;
}

/** Listener of every sample; called synchronously from `sample()`, must be cheap and not throw. */
export type NodeUsageListener = (sample: NodeUsageSample) => void;

function defaultCpuTimeUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

const NO_WORKERS: HeapUsage = Object.freeze({ usedBytes: 0, limitBytes: 0 });

function clampRatio(value: number): number {
  return Math.min(1, Math.max(0, value));
}

/**
 * Process CPU between two samples as a ratio of `cores` over the wall time between them, capped to
 * 0..1 (the kernel updates CPU times at scheduler ticks, so one short interval can read a few percent
 * over capacity: 1.02 was seen with every core busy). 0 when no time passed.
 */
export function cpuUsageBetween(earlier: NodeUsageSample, later: NodeUsageSample, cores: number): number {
  const elapsedMs = later.monotonicMs - earlier.monotonicMs;
  if (!(elapsedMs > 0)) return 0;
  return clampRatio((later.cpuTimeUs - earlier.cpuTimeUs) / 1000 / (elapsedMs * cores));
}

/** Samples the node when called (see module doc) and hands each sample to its listeners. */
export class NodeUsageSampler {
  readonly cores: number;
  readonly ioSource: IoSource;
  readonly #ioEvery: number;
  readonly #io: IoUsageSampler;
  readonly #cpuTimeUs: () => number;
  readonly #workersHeap: () => HeapUsage;
  readonly #mainHeap: () => HeapSample;
  readonly #rssBytes: () => number;
  readonly #monotonicMs: () => number;
  readonly #epochMs: () => number;
  readonly #listeners: NodeUsageListener[] = [];
  #last: NodeUsageSample;
  #errors = 0;

  constructor(options: NodeUsageSamplerOptions) {
    this.cores = options.cores;
    this.#io = options.io ?? NO_IO_SAMPLER;
    this.ioSource = this.#io.source;
    this.#ioEvery = Math.max(1, Math.round((options.ioIntervalMs ?? 5000) / (options.intervalMs ?? 100)));
    this.#cpuTimeUs = options.cpuTimeUs ?? defaultCpuTimeUs;
    this.#workersHeap = options.workersHeap ?? (() => NO_WORKERS);
    this.#mainHeap = options.mainHeap ?? sampleHeap;
    this.#rssBytes = options.rssBytes ?? (() => process.memoryUsage.rss());
    this.#monotonicMs = options.monotonicMs ?? (() => performance.now());
    this.#epochMs = options.epochMs ?? Date.now;
    // The baseline the first interval is measured from (seq 0: never handed to listeners). A reading
    // that fails here leaves its figure invalid until the first sample that works.
    const attempt = <T>(read: () => T, fallback: T): T => {
      try {
        return read();
      } catch {
        this.#errors++;
        return fallback;
      }
    };
    this.#last = Object.freeze({
      seq: 0,
      cpu: 0,
      memory: 0,
      cpuTimeUs: attempt(this.#cpuTimeUs, 0),
      monotonicMs: this.#monotonicMs(),
      timestampMs: 0,
      heap: { usedBytes: 0, limitBytes: 1 },
      mainHeapUsedBytes: attempt(() => this.#mainHeap().usedHeapBytes, 0),
      rssBytes: attempt(this.#rssBytes, 0),
      io: undefined,
      cpuValid: false,
      heapValid: false,
    });
  }

  /** The last sample (the baseline, seq 0, before the first). Costs nothing. */
  get last(): NodeUsageSample {
    return this.#last;
  }

  /** Readings that threw or made no sense (that figure repeated the previous one). */
  get sampleErrors(): number {
    return this.#errors;
  }

  /** Adds a listener of every later sample. */
  onSample(listener: NodeUsageListener): void {
    this.#listeners.push(listener);
  }

  /** Takes one sample now, publishes it as `last` and hands it to the listeners. Never throws. */
  sample(): NodeUsageSample {
    const before = this.#last;
    const seq = before.seq + 1;
    const monotonicMs = this.#monotonicMs();
    let cpuTimeUs = before.cpuTimeUs;
    let cpuValid = false;
    try {
      const us = this.#cpuTimeUs();
      if (Number.isFinite(us) && monotonicMs > before.monotonicMs) {
        cpuTimeUs = us;
        cpuValid = true;
      }
    } catch {
      // counted below
    }
    let heap = before.heap;
    let heapValid = false;
    let mainHeapUsedBytes = before.mainHeapUsedBytes;
    try {
      const main = this.#mainHeap();
      const workers = this.#workersHeap();
      const h = {
        usedBytes: main.usedHeapBytes + main.externalBytes + workers.usedBytes,
        limitBytes: main.heapLimitBytes + workers.limitBytes,
      };
      mainHeapUsedBytes = main.usedHeapBytes;
      if (h.limitBytes > 0 && h.usedBytes >= 0 && Number.isFinite(h.usedBytes / h.limitBytes)) {
        heap = h;
        heapValid = true;
      }
    } catch {
      // counted below
    }
    if (!cpuValid) this.#errors++;
    if (!heapValid) this.#errors++;
    let io: number | undefined;
    if (this.ioSource !== 'none' && seq % this.#ioEvery === 0) {
      try {
        const value = this.#io.sample();
        if (value !== undefined && Number.isFinite(value)) io = clampRatio(value);
      } catch {
        this.#errors++;
      }
    }
    let rssBytes = before.rssBytes;
    try {
      rssBytes = this.#rssBytes();
    } catch {
      this.#errors++;
    }
    const partial = { monotonicMs, cpuTimeUs };
    const sample: NodeUsageSample = Object.freeze({
      seq,
      cpu: cpuValid ? cpuUsageBetween(before, partial as NodeUsageSample, this.cores) : before.cpu,
      memory: heapValid ? clampRatio(heap.usedBytes / heap.limitBytes) : before.memory,
      cpuTimeUs,
      monotonicMs: cpuValid ? monotonicMs : before.monotonicMs,
      timestampMs: this.#epochMs(),
      heap,
      mainHeapUsedBytes,
      rssBytes,
      io,
      cpuValid,
      heapValid,
    });
    this.#last = sample;
    for (const listener of this.#listeners) listener(sample);
    return sample;
  }
}
