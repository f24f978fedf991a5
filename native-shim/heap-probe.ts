/**
 * Heap of the calling isolate (a worker's own heap when called in a worker), from
 * `v8.getHeapStatistics()` (about 0.5 µs).
 */
import v8 from 'node:v8';

export interface HeapSample {
  /** Live JS heap of this isolate, bytes. */
  readonly usedHeapBytes: number;
  /** Memory held outside the JS heap by this isolate (ArrayBuffers, Buffers), bytes. */
  readonly externalBytes: number;
  /** The isolate's heap limit, bytes. */
  readonly heapLimitBytes: number;
}

/** One sample of the calling isolate's heap. */
export function sampleHeap(): HeapSample {
  const s = v8.getHeapStatistics() as v8.HeapInfo & { external_memory?: number };
  return {
    usedHeapBytes: s.used_heap_size,
    externalBytes: s.external_memory ?? 0,
    heapLimitBytes: s.heap_size_limit,
  };
}
