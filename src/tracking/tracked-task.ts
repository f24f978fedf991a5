/** A task the tracker knows about, from dispatch to settlement (main thread only). */
export interface TrackedTask {
  readonly taskId: number;
  /** The leaf sandbox the task belongs to. */
  readonly sandboxId: string;
  /** Its slot in the shared task slots. */
  readonly slot: number;
  /** When it was handed to the pool, ms on the runtime's clock. */
  readonly dispatchedAtMs: number;
  /** Thread CPU time at the last sample (0 before the first), ns. */
  lastCpuNs: number;
  /** True once its final CPU was counted (no sample may count it again). */
  finalized: boolean;
  /** CPU usage over the last interval, ratio of node capacity (0..1). */
  cpuUsage: number;
  /** Memory usage at the last sample, ratio of the memory budget (0..1). */
  memoryUsage: number;
  /** Memory above the task's start, bytes, at the last sample. */
  memoryBytes: number;
  /** Total thread CPU of the task so far, ns. */
  cpuTimeNs: number;
  /** Memory above the task's start from the last inspector probe, bytes (0 before any). */
  probedMemoryBytes: number;
  /** A probe of this task's worker is under way. */
  probeInFlight: boolean;
}

/** Makes a TrackedTask with all figures at zero (one object shape for every task). */
export function newTrackedTask(
  taskId: number,
  sandboxId: string,
  slot: number,
  dispatchedAtMs: number,
): TrackedTask {
  return {
    taskId,
    sandboxId,
    slot,
    dispatchedAtMs,
    lastCpuNs: 0,
    finalized: false,
    cpuUsage: 0,
    memoryUsage: 0,
    memoryBytes: 0,
    cpuTimeNs: 0,
    probedMemoryBytes: 0,
    probeInFlight: false,
  };
}
