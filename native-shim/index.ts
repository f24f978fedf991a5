/** Per-thread CPU clock, heap probe, core count and IO pressure: the only code that touches /proc and cgroups. */
export {
  currentThreadCpuTimeNs,
  currentThreadTid,
  ThreadCpuReader,
  ThreadCpuUnavailableError,
  threadCpuSupport,
  type ThreadCpuSource,
  type ThreadCpuSupport,
} from './thread-cpu-clock.js';
export { sampleHeap, type HeapSample } from './heap-probe.js';
export { availableCores } from './cpu-cores.js';
export { WorkerHeapProbe } from './worker-heap-probe.js';
export {
  findIoPressureSource,
  IO_PRESSURE_PATHS,
  parsePressureSomeAvg10,
  parseProcIoBytes,
  PROC_SELF_IO_PATH,
  readIoPressure,
  readProcessIoBytes,
  type IoPressureSource,
} from './io-pressure.js';
export {
  applyThreadWeight,
  processThreadIds,
  threadNice,
  type ThreadWeight,
  type ThreadWeightResult,
} from './thread-priority.js';
