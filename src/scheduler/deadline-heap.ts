/**
 * Queued tasks by the time they must leave the queue (their queue-wait deadline): a binary min-heap
 * with lazy deletion. A task that left the queue another way (dispatched, evicted, removed) stays in
 * the heap until it reaches the top, where it is skipped; the owner reports such departures with
 * `forgetOne` so the heap rebuilds itself from the live entries once the dead outnumber them, which
 * keeps its size within a small multiple of the queue's whatever the deadlines.
 *
 * push O(log n), `popDue` O(k log n) for k entries due, `nextDeadlineMs` O(1) amortised.
 */

/** What the heap orders: anything with a deadline and a flag saying whether it is still queued. */
export interface Deadlined {
  /** ms on the owner's clock. */
  readonly deadlineMs: number;
  /** Global arrival order, breaks ties (earlier first). */
  readonly seq: number;
  readonly queued: boolean;
}

export class DeadlineHeap<E extends Deadlined> {
  #heap: E[] = [];
  #dead = 0;

  /** Entries held, live and dead. */
  get size(): number {
    return this.#heap.length;
  }

  push(entry: E): void {
    const heap = this.#heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  /** One pushed entry left the queue without being popped; rebuilds when the dead outnumber the live. */
  forgetOne(): void {
    this.#dead++;
    if (this.#dead > 64 && this.#dead * 2 > this.#heap.length) {
      const live = this.#heap.filter((e) => e.queued);
      this.#heap = [];
      this.#dead = 0;
      for (const e of live) this.push(e);
    }
  }

  /** The earliest deadline of a queued entry, or undefined. Drops dead entries on top. */
  nextDeadlineMs(): number | undefined {
    this.#dropDeadTop();
    return this.#heap[0]?.deadlineMs;
  }

  /** Removes and returns the queued entries whose deadline is at or before `nowMs`, earliest first. */
  popDue(nowMs: number): E[] {
    const out: E[] = [];
    for (;;) {
      this.#dropDeadTop();
      const top = this.#heap[0];
      if (top === undefined || top.deadlineMs > nowMs) return out;
      this.#pop();
      out.push(top);
    }
  }

  clear(): void {
    this.#heap = [];
    this.#dead = 0;
  }

  #dropDeadTop(): void {
    while (this.#heap.length > 0 && !this.#heap[0]!.queued) {
      this.#pop();
      if (this.#dead > 0) this.#dead--;
    }
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop()!;
    if (heap.length === 0) return;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
      if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  }
}

function before(a: Deadlined, b: Deadlined): boolean {
  return a.deadlineMs < b.deadlineMs || (a.deadlineMs === b.deadlineMs && a.seq < b.seq);
}
