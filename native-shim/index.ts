/** Per-thread CPU clock, heap probe and core count: the only code that touches /proc and cgroups. */
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
