/**
 * The queue of tasks waiting for a worker: one FIFO per priority level, served by priority with
 * bounded aging.
 *
 * An item of priority p that arrived at `t` has the key `t − p × agingMsPerPriority`; the next item
 * is the level head with the smallest key (ties to the earlier arrival). Within one level keys grow
 * with arrival, so each level is a plain FIFO and only the heads compete: push is O(1) and shift is
 * O(L), L being the number of distinct priorities waiting (a handful), whatever the queue's length.
 * Because keys are computed when heads compete, `agingMsPerPriority` can change at any time.
 *
 * - `agingMsPerPriority > 0`: a task of priority p is served before every task of priority q > p
 *   that arrives more than `(q − p) × agingMsPerPriority` ms after it, so high-priority load alone
 *   cannot starve it.
 * - `Infinity`: strict priority (FIFO within a priority).
 * - `0`: FIFO across priorities (the baseline).
 *
 * `shift(minPriority)` serves only levels at or above `minPriority`: what a reserved worker takes.
 */

/** A queued item's handle, for `remove`. */
export interface QueueEntry<T> {
  readonly item: T;
  readonly priority: number;
  /** Arrival, ms on the caller's clock. */
  readonly arrivalMs: number;
  /** Global arrival order, breaks ties. */
  readonly seq: number;
  /** False once the entry left the queue (shifted, evicted or removed). */
  queued: boolean;
}

/** One priority level: a FIFO with lazy deletion (removed entries are skipped at the head). */
class Level<T> {
  readonly priority: number;
  #entries: QueueEntry<T>[] = [];
  #head = 0;
  /** Entries still queued. */
  live = 0;

  constructor(priority: number) {
    this.priority = priority;
  }

  push(entry: QueueEntry<T>): void {
    this.#entries.push(entry);
    this.live++;
  }

  /** The oldest queued entry. */
  peek(): QueueEntry<T> | undefined {
    const entries = this.#entries;
    while (this.#head < entries.length && !entries[this.#head]!.queued) this.#head++;
    this.#compact();
    return this.#entries[this.#head];
  }

  /**
   * The oldest queued entry accepted by `filter`, scanning from the head: O(entries it skips). Used
   * when some entries may not start yet (a sandbox at its concurrency cap) and must not hold back the
   * entries behind them.
   */
  first(filter: (item: T) => boolean): QueueEntry<T> | undefined {
    const entries = this.#entries;
    for (let i = this.#head; i < entries.length; i++) {
      const e = entries[i]!;
      if (e.queued && filter(e.item)) return e;
    }
    return undefined;
  }

  /** The newest queued entry accepted by `filter`, scanning from the back. */
  newest(filter?: (item: T) => boolean): QueueEntry<T> | undefined {
    const entries = this.#entries;
    for (let i = entries.length - 1; i >= this.#head; i--) {
      const e = entries[i]!;
      if (e.queued && (filter === undefined || filter(e.item))) return e;
    }
    return undefined;
  }

  /** Marks `entry` (of this level) as gone. */
  drop(entry: QueueEntry<T>): void {
    entry.queued = false;
    this.live--;
    const entries = this.#entries;
    // Trim removed entries at the back so a level of evicted items does not grow.
    while (entries.length > this.#head && !entries[entries.length - 1]!.queued) entries.pop();
    if (this.live === 0) {
      this.#entries = [];
      this.#head = 0;
    }
  }

  *[Symbol.iterator](): IterableIterator<QueueEntry<T>> {
    const entries = this.#entries;
    for (let i = this.#head; i < entries.length; i++) if (entries[i]!.queued) yield entries[i]!;
  }

  #compact(): void {
    // Drop the consumed prefix once it is half the array: amortised O(1) per shift.
    if (this.#head > 1024 && this.#head * 2 > this.#entries.length) {
      this.#entries = this.#entries.slice(this.#head);
      this.#head = 0;
    }
  }
}

export class AgingPriorityQueue<T> {
  #agingMsPerPriority: number;
  /** Non-empty levels, highest priority first. */
  #levels: Level<T>[] = [];
  readonly #byPriority = new Map<number, Level<T>>();
  #length = 0;
  #seq = 0;

  /**
   * @param agingMsPerPriority ms of waiting worth one priority point, >= 0; `Infinity` for strict
   *   priority, 0 for FIFO. Default 100.
   * @throws RangeError for a negative or NaN value.
   */
  constructor(agingMsPerPriority = 100) {
    this.#agingMsPerPriority = checkAging(agingMsPerPriority);
  }

  get agingMsPerPriority(): number {
    return this.#agingMsPerPriority;
  }

  /** Changes the aging rate; applies to every queued item from the next `shift`. */
  set agingMsPerPriority(value: number) {
    this.#agingMsPerPriority = checkAging(value);
  }

  /** Adds `item` with `priority` (higher = more important) arriving at `nowMs`; O(1) for a known level. */
  push(item: T, priority: number, nowMs: number): QueueEntry<T> {
    let level = this.#byPriority.get(priority);
    if (level === undefined) {
      level = new Level<T>(priority);
      this.#byPriority.set(priority, level);
      const levels = this.#levels;
      let i = 0;
      while (i < levels.length && levels[i]!.priority > priority) i++;
      levels.splice(i, 0, level);
    }
    const entry: QueueEntry<T> = { item, priority, arrivalMs: nowMs, seq: this.#seq++, queued: true };
    level.push(entry);
    this.#length++;
    return entry;
  }

  /**
   * The entry `shift(minPriority)` would return, left queued. With `filter`, each level competes with
   * its oldest entry that `filter` accepts (entries it refuses are passed over, not removed).
   */
  peek(minPriority = Number.NEGATIVE_INFINITY, filter?: (item: T) => boolean): QueueEntry<T> | undefined {
    const aging = this.#agingMsPerPriority;
    let best: QueueEntry<T> | undefined;
    let bestKey = 0;
    for (const level of this.#levels) {
      if (level.priority < minPriority) break;
      const head = filter === undefined ? level.peek()! : level.first(filter);
      if (head === undefined) continue;
      if (aging === Number.POSITIVE_INFINITY) {
        // Strict priority: the first (highest) level wins.
        return head;
      }
      const key = aging === 0 ? head.arrivalMs : head.arrivalMs - head.priority * aging;
      if (best === undefined || key < bestKey || (key === bestKey && head.seq < best.seq)) {
        best = head;
        bestKey = key;
      }
    }
    return best;
  }

  /**
   * Removes and returns the next item among priorities >= `minPriority` (default: all), or undefined
   * when none waits.
   */
  shift(minPriority = Number.NEGATIVE_INFINITY): T | undefined {
    const entry = this.peek(minPriority);
    if (entry === undefined) return undefined;
    this.remove(entry);
    return entry.item;
  }

  /** Removes a queued entry; false when it already left. O(1) amortised. */
  remove(entry: QueueEntry<T>): boolean {
    if (!entry.queued) return false;
    const level = this.#byPriority.get(entry.priority)!;
    level.drop(entry);
    this.#length--;
    if (level.live === 0) {
      this.#byPriority.delete(level.priority);
      this.#levels.splice(this.#levels.indexOf(level), 1);
    }
    return true;
  }

  get length(): number {
    return this.#length;
  }

  /** Queued items per priority, highest first. */
  levelLengths(): Array<{ priority: number; length: number }> {
    return this.#levels.map((l) => ({ priority: l.priority, length: l.live }));
  }

  /**
   * The newest of the lowest-priority entries accepted by `filter`, if its priority is below
   * `priority`; else undefined. Walks levels from the lowest up, each from its newest entry.
   */
  newestBelow(priority: number, filter?: (item: T) => boolean): QueueEntry<T> | undefined {
    for (let i = this.#levels.length - 1; i >= 0; i--) {
      const level = this.#levels[i]!;
      if (level.priority >= priority) return undefined;
      const entry = level.newest(filter);
      if (entry !== undefined) return entry;
    }
    return undefined;
  }

  /**
   * When the queue is full: removes and returns the newest of the lowest-priority items if its
   * priority is below `priority` (the incoming item's), else returns undefined (refuse the incoming
   * one instead).
   */
  evictBelow(priority: number): T | undefined {
    const entry = this.newestBelow(priority);
    if (entry === undefined) return undefined;
    this.remove(entry);
    return entry.item;
  }

  /** Every queued entry, highest priority first, oldest first within a priority. */
  *entries(): IterableIterator<QueueEntry<T>> {
    for (const level of this.#levels) yield* level;
  }

  /** Every queued item, highest priority first, oldest first within a priority. */
  *[Symbol.iterator](): IterableIterator<T> {
    for (const entry of this.entries()) yield entry.item;
  }
}

function checkAging(value: number): number {
  if (!(value >= 0)) {
    throw new RangeError(
      `agingMsPerPriority must be >= 0 (0: FIFO, Infinity: strict priority); received ${value}`,
    );
  }
  return value;
}
