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
 *
 * **Aging is capped by a share** (`overtakeEvery`, N): a task that aging lifts over a waiting task of
 * higher priority *overtakes* it, and at most one take in every N may be an overtake; the N − 1 takes
 * after one go by priority (FIFO within a priority). So a queue full of old low-priority work cannot
 * hand the workers to whoever queued first (higher priority keeps at least (N − 1) / N of the takes
 * while it waits), and low priority still is not starved (once aged past the higher head, it gets at
 * least one take in N). N = 1 is plain aging; the FIFO baseline (aging 0) never applies the cap.
 *
 * **Adaptive LIFO** (`lifo`, set by the owner while its queue is overloaded): within a priority the
 * newest task is served first (Facebook, "Fail at Scale", 2015: under a standing queue the newest
 * requests are the ones whose clients still wait); between priorities the rules above hold.
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
    this.#skipLeft();
    return this.#entries[this.#head];
  }

  /**
   * The oldest queued entry accepted by `filter`, scanning from the head: O(queued entries it
   * skips). Used when some entries may not start yet (a sandbox at its concurrency cap) and must not
   * hold back the entries behind them.
   */
  first(filter: (item: T) => boolean): QueueEntry<T> | undefined {
    this.#skipLeft();
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

  /** Entries the level's array still holds, queued or not: what it costs in memory (diagnostics). */
  get held(): number {
    return this.#entries.length;
  }

  /**
   * Moves the head past entries that left (taken, evicted, removed), then drops the consumed prefix.
   * Every read from the head goes through here: a level that never empties would otherwise keep every
   * entry it ever held and rescan them on each read.
   */
  #skipLeft(): void {
    const entries = this.#entries;
    while (this.#head < entries.length && !entries[this.#head]!.queued) this.#head++;
    // Drop the consumed prefix once it is half the array: amortised O(1) per shift.
    if (this.#head > 1024 && this.#head * 2 > this.#entries.length) {
      this.#entries = this.#entries.slice(this.#head);
      this.#head = 0;
    }
  }
}

export class AgingPriorityQueue<T> {
  #agingMsPerPriority: number;
  readonly #overtakeEvery: number;
  /** Takes since the last overtake (starts allowing one). */
  #sinceOvertake: number;
  /** The last `peek`'s answer and whether it was an overtake, for `take`. */
  #peeked: QueueEntry<T> | undefined;
  #peekedOvertake = false;
  /** Newest first within a priority (adaptive LIFO); the owner sets it. Default false. */
  lifo = false;
  /** Non-empty levels, highest priority first. */
  #levels: Level<T>[] = [];
  readonly #byPriority = new Map<number, Level<T>>();
  #length = 0;
  #seq = 0;

  /**
   * @param agingMsPerPriority ms of waiting worth one priority point, >= 0; `Infinity` for strict
   *   priority, 0 for FIFO. Default 100.
   * @param overtakeEvery N >= 1: at most one take in N may be an aged overtake (see the module doc).
   *   Default 1 (plain aging).
   * @throws RangeError for a negative or NaN value, or N below 1.
   */
  constructor(agingMsPerPriority = 100, overtakeEvery = 1) {
    this.#agingMsPerPriority = checkAging(agingMsPerPriority);
    if (!Number.isInteger(overtakeEvery) || overtakeEvery < 1) {
      throw new RangeError(`overtakeEvery must be an integer >= 1; received ${overtakeEvery}`);
    }
    this.#overtakeEvery = overtakeEvery;
    this.#sinceOvertake = overtakeEvery - 1;
  }

  /** At most one take in this many may be an aged overtake. */
  get overtakeEvery(): number {
    return this.#overtakeEvery;
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
    const lifo = this.lifo;
    let best: QueueEntry<T> | undefined;
    let top: QueueEntry<T> | undefined;
    let bestKey = 0;
    for (const level of this.#levels) {
      if (level.priority < minPriority) break;
      const head = lifo ? level.newest(filter) : filter === undefined ? level.peek() : level.first(filter);
      if (head === undefined) continue;
      if (aging === Number.POSITIVE_INFINITY) {
        // Strict priority: the first (highest) level wins.
        return this.#remember(head, false);
      }
      top ??= head;
      const key = aging === 0 ? head.arrivalMs : head.arrivalMs - head.priority * aging;
      if (best === undefined || key < bestKey || (key === bestKey && head.seq < best.seq)) {
        best = head;
        bestKey = key;
      }
    }
    if (best === undefined || top === undefined) return this.#remember(undefined, false);
    // An aged overtake (a lower priority ahead of a waiting higher one), unless the share forbids it.
    const overtake = aging !== 0 && best.priority < top.priority;
    if (overtake && this.#sinceOvertake < this.#overtakeEvery - 1) return this.#remember(top, false);
    return this.#remember(best, overtake);
  }

  #remember(entry: QueueEntry<T> | undefined, overtake: boolean): QueueEntry<T> | undefined {
    this.#peeked = entry;
    this.#peekedOvertake = overtake;
    return entry;
  }

  /**
   * Removes `entry` as the next one served (what `peek` returned): counts it for the overtake share.
   * Same as `remove` for an entry `peek` did not return last. False when it already left.
   */
  take(entry: QueueEntry<T>): boolean {
    const overtake = entry === this.#peeked && this.#peekedOvertake;
    if (!this.remove(entry)) return false;
    this.#sinceOvertake = overtake ? 0 : this.#sinceOvertake + 1;
    return true;
  }

  /**
   * Removes and returns the next item among priorities >= `minPriority` (default: all), or undefined
   * when none waits.
   */
  shift(minPriority = Number.NEGATIVE_INFINITY): T | undefined {
    const entry = this.peek(minPriority);
    if (entry === undefined) return undefined;
    this.take(entry);
    return entry.item;
  }

  /** Arrival of the oldest queued entry, ms; undefined when empty. O(L). */
  oldestArrivalMs(): number | undefined {
    let oldest: number | undefined;
    for (const level of this.#levels) {
      const head = level.peek()!;
      if (oldest === undefined || head.arrivalMs < oldest) oldest = head.arrivalMs;
    }
    return oldest;
  }

  /**
   * Removes and returns every entry that arrived at or before `cutoffMs`, oldest first within each
   * level, highest level first. O(removed + L).
   */
  removeArrivedBy(cutoffMs: number): QueueEntry<T>[] {
    const out: QueueEntry<T>[] = [];
    for (const level of [...this.#levels]) {
      for (let head = level.peek(); head !== undefined && head.arrivalMs <= cutoffMs; head = level.peek()) {
        this.remove(head);
        out.push(head);
        if (level.live === 0) break;
      }
    }
    return out;
  }

  /** Removes a queued entry; false when it already left. O(1) amortised. */
  remove(entry: QueueEntry<T>): boolean {
    if (!entry.queued) return false;
    if (entry === this.#peeked) this.#peeked = undefined;
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

  /**
   * Entries the queue's arrays hold, at least `length`: those that left count until the consumed
   * prefix is dropped (lazy deletion, amortised). Diagnostics: a queue that never empties holds at
   * most about `length` + 1,024 per priority level, not every entry it ever held.
   */
  get heldEntries(): number {
    let held = 0;
    for (const level of this.#levels) held += level.held;
    return held;
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
