/**
 * IO usage of this node as a ratio in 0..1, from the best source the machine has:
 *
 * 1. PSI `some avg10` (cgroup v2 `io.pressure` first, then `/proc/pressure/io`): the share of time at
 *    least one task stalled on IO. Already a ratio; preferred.
 * 2. `/proc/self/io` bytes rate (`read_bytes + write_bytes` per second) divided by a configured
 *    `capacityBytesPerSec`. Only used when a capacity is given: a rate alone says nothing about how
 *    close the device is to its limit.
 * 3. Neither: source `'none'`, and the tracker reports IO 0 with `ioSource: 'none'` so no one takes
 *    the 0 for an idle disk.
 *
 * OpenSearch's `AverageIoUsageTracker` uses the device IO time from `/proc/diskstats` instead (busy ms
 * per elapsed ms, the maximum over devices); that needs the data paths' devices, which this runtime
 * does not know. All file access goes through `native-shim/io-pressure.ts`.
 */
import {
  findIoPressureSource,
  IO_PRESSURE_PATHS,
  type IoPressureSource,
  PROC_SELF_IO_PATH,
  readIoPressure,
  readProcessIoBytes,
} from '../../native-shim/index.js';

/** Where the IO figure comes from; `'none'` when the machine offers nothing usable. */
export type IoSource = IoPressureSource | 'proc-io' | 'none';

/** One IO sample per call; stateful for byte rates. */
export interface IoUsageSampler {
  readonly source: IoSource;
  /**
   * IO usage since the previous call (a byte rate) or over the last 10 s (PSI), ratio in 0..1;
   * `undefined` when no figure can be had this time (the first byte-rate read, a failed read). Never
   * throws.
   */
  sample(): number | undefined;
}

export interface IoUsageSamplerOptions {
  /**
   * Storage bandwidth that counts as full IO usage, bytes per second, > 0. Only used where PSI is
   * missing; without it (the default) such a machine reports `'none'`.
   */
  readonly capacityBytesPerSec?: number;
  /** Monotonic clock, ms. Default `performance.now()`. */
  readonly monotonicMs?: () => number;
  /** PSI files to try, most specific first. Default `IO_PRESSURE_PATHS` (for tests). */
  readonly pressurePaths?: readonly { readonly path: string; readonly source: IoPressureSource }[];
  /** The process IO file. Default `/proc/self/io` (for tests). */
  readonly procIoPath?: string;
}

/** The sampler that reports `'none'` and never a figure. */
export const NO_IO_SAMPLER: IoUsageSampler = Object.freeze({
  source: 'none' as const,
  sample: () => undefined,
});

/**
 * Picks the IO source once (see module doc) and returns its sampler. Reads the candidate files once
 * to probe them; never throws for a missing file.
 */
export function createIoUsageSampler(options: IoUsageSamplerOptions = {}): IoUsageSampler {
  const psi = findIoPressureSource(options.pressurePaths ?? IO_PRESSURE_PATHS);
  if (psi !== undefined) {
    return Object.freeze({ source: psi.source, sample: () => readIoPressure(psi.path) });
  }
  const capacity = options.capacityBytesPerSec;
  const procIoPath = options.procIoPath ?? PROC_SELF_IO_PATH;
  if (capacity === undefined || !(capacity > 0) || readProcessIoBytes(procIoPath) === undefined) {
    return NO_IO_SAMPLER;
  }
  const monotonicMs = options.monotonicMs ?? (() => performance.now());
  let lastBytes: number | undefined;
  let lastMs = 0;
  return Object.freeze({
    source: 'proc-io' as const,
    sample(): number | undefined {
      const bytes = readProcessIoBytes(procIoPath);
      const nowMs = monotonicMs();
      const previous = lastBytes;
      const elapsedMs = nowMs - lastMs;
      lastBytes = bytes;
      lastMs = nowMs;
      if (bytes === undefined || previous === undefined || !(elapsedMs > 0)) return undefined;
      const bytesPerSec = (Math.max(0, bytes - previous) * 1000) / elapsedMs;
      return Math.min(1, bytesPerSec / capacity);
    },
  });
}
