/**
 * The queue of tasks waiting for a worker, ordered by priority with bounded aging, stable within a
 * priority. Each item's key is `arrival − priority × agingMsPerPriority` (a fixed key, so a plain
 * binary heap keeps the order without re-keying: O(log n) push and shift); ties go to the earlier
 * arrival. A task of priority p is therefore served before every task of priority q > p that arrives
 * more than `(q − p) × agingMsPerPriority` after it: high-priority load alone cannot starve it.
 * `agingMsPerPriority: Infinity` is strict priority (FIFO within a priority).
 */

interface Entry<T> {
  readonly item: T;
  readonly priority: number;
  readonly key: number;
  readonly seq: number;
}

export class AgingPriorityQueue<T> {
  readonly #agingMsPerPriority: number;
  readonly #heap: Entry<T>[] = [];
  #seq = 0;

  /**
   * @param agingMsPerPriority ms of waiting worth one priority point, > 0; `Infinity` for strict
   *   priority. Default 100.
   * @throws RangeError for a value that is not > 0.
   */
  constructor(agingMsPerPriority = 100) {
    if (!(agingMsPerPriority > 0)) {
      throw new RangeError(
        `agingMsPerPriority must be > 0 (Infinity: strict priority); received ${agingMsPerPriority}`,
      );
    }
    this.#agingMsPerPriority = agingMsPerPriority;
  }

  /** Adds `item` with `priority` (higher = more important) arriving at `nowMs`. */
  push(item: T, priority: number, nowMs: number): void {
    const key = Number.isFinite(this.#agingMsPerPriority)
      ? nowMs - priority * this.#agingMsPerPriority
      : -priority;
    const heap = this.#heap;
    heap.push({ item, priority, key, seq: this.#seq++ });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  /** Removes and returns the next item, or undefined when empty. */
  shift(): T | undefined {
    const heap = this.#heap;
    const top = heap[0];
    if (top === undefined) return undefined;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      this.#siftDown(0);
    }
    return top.item;
  }

  get length(): number {
    return this.#heap.length;
  }

  /**
   * When the queue is full: removes and returns the newest of the lowest-priority items if its
   * priority is below `priority` (the incoming item's), else returns undefined (refuse the incoming
   * one instead). O(n): only on the full-queue path.
   */
  evictBelow(priority: number): T | undefined {
    const heap = this.#heap;
    let victim = -1;
    for (let i = 0; i < heap.length; i++) {
      const e = heap[i]!;
      const v = heap[victim];
      if (v === undefined || e.priority < v.priority || (e.priority === v.priority && e.seq > v.seq))
        victim = i;
    }
    const entry = heap[victim];
    if (entry === undefined || entry.priority >= priority) return undefined;
    this.#removeAt(victim);
    return entry.item;
  }

  #removeAt(index: number): void {
    const heap = this.#heap;
    const last = heap.pop()!;
    if (index === heap.length) return;
    heap[index] = last;
    // The moved entry may belong above or below its new place.
    let i = index;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
    this.#siftDown(i);
  }

  #siftDown(start: number): void {
    const heap = this.#heap;
    let i = start;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
      if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
      if (m === i) break;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  }

  /** Every queued item, in no particular order. */
  *[Symbol.iterator](): IterableIterator<T> {
    for (const entry of this.#heap) yield entry.item;
  }
}

function before<T>(a: Entry<T>, b: Entry<T>): boolean {
  return a.key < b.key || (a.key === b.key && a.seq < b.seq);
}
