/**
 * Node usage for duress: process CPU from `process.cpuUsage()` deltas / (Δ wall × cores), and heap used
 * / heap limit summed over the isolates (main thread plus the workers' last reported figures).
 * About 1 µs a sample; called once per governor interval.
 */
import { sampleHeap } from '../../native-shim/index.js';

export interface NodeUsage {
  /** Process CPU over the last interval, ratio of node capacity (0..1). */
  readonly cpu: number;
  /** Heap used / heap limit over all isolates (0..1). */
  readonly memory: number;
}

export interface NodeUsageSamplerOptions {
  readonly cores: number;
  readonly nowNs?: () => number;
  readonly cpuUsage?: () => NodeJS.CpuUsage;
}

export class NodeUsageSampler {
  readonly #cores: number;
  readonly #nowNs: () => number;
  readonly #cpuUsage: () => NodeJS.CpuUsage;
  #lastNs: number;
  #lastCpuUs: number;

  constructor(options: NodeUsageSamplerOptions) {
    this.#cores = options.cores;
    this.#nowNs = options.nowNs ?? (() => Number(process.hrtime.bigint()));
    this.#cpuUsage = options.cpuUsage ?? (() => process.cpuUsage());
    this.#lastNs = this.#nowNs();
    const u = this.#cpuUsage();
    this.#lastCpuUs = u.user + u.system;
  }

  /**
   * One sample.
   * @param workersHeapBytes heap + external of all workers, bytes
   * @param workersHeapLimitBytes their heap limits added up, bytes
   */
  sample(workersHeapBytes: number, workersHeapLimitBytes: number): NodeUsage {
    const nowNs = this.#nowNs();
    const u = this.#cpuUsage();
    const cpuUs = u.user + u.system;
    const wallNs = Math.max(1, nowNs - this.#lastNs);
    const cpu = ((cpuUs - this.#lastCpuUs) * 1000) / (wallNs * this.#cores);
    this.#lastNs = nowNs;
    this.#lastCpuUs = cpuUs;
    const main = sampleHeap();
    const memory =
      (main.usedHeapBytes + main.externalBytes + workersHeapBytes) /
      (main.heapLimitBytes + workersHeapLimitBytes);
    // The kernel updates thread CPU times at scheduler ticks (4 ms here), so one 100 ms interval can
    // read a few percent over its capacity (1.02 seen with every core busy): usage is a ratio, capped at 1.
    return { cpu: Math.min(1, Math.max(0, cpu)), memory };
  }
}
