/**
 * A first-in, first-out queue of tasks waiting for a worker: the runtime's `queueOrder: 'fifo'`, the
 * baseline the priority queue is measured against. Index-based, so push and shift are O(1) without
 * Array#shift's copying.
 */
export class FifoQueue<T> {
  #items: (T | undefined)[] = [];
  #head = 0;
  /** Adds `item` at the back; priority and arrival time are ignored (the FIFO baseline). */
  push(item: T, _priority?: number, _nowMs?: number): void {
    this.#items.push(item);
  }
  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head++] = undefined;
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }
  /** FIFO sheds no one: a full queue refuses the incoming task. */
  evictBelow(_priority: number): T | undefined {
    return undefined;
  }

  get length(): number {
    return this.#items.length - this.#head;
  }
  *[Symbol.iterator](): IterableIterator<T> {
    for (let i = this.#head; i < this.#items.length; i++) yield this.#items[i]!;
  }
}
