/**
 * Shared-memory slots through which a worker reports on the task it runs and the main thread asks it
 * to stop. One slot per task in flight (assigned by the main thread before dispatch, freed when the
 * task settles), so a slot's owner is always known without tracking worker lifecycles.
 *
 * Layout per slot:
 * - control (Int32Array, 6 words): `taskId`, `state` (FREE, ASSIGNED, RUNNING, DONE), `cancel` (0 or a
 *   CancelRequest code), `tid` (kernel thread id of the worker that runs the task), `threadId` (its
 *   worker_threads id, for the inspector heap probe), `claim` (the number of the task's current
 *   hand-over to a worker while no worker has begun it, else 0: see `offer`).
 * - figures (Float64Array, 5 words): `startCpuNs`, `endCpuNs` (worker's own thread clock),
 *   `heapBaselineBytes` (heap + external at task start), `heapBytes` (last checkpoint),
 *   `checkpointAtMs` (wall clock, ms since the epoch, of the last checkpoint).
 *
 * A worker writes a slot only while `taskId` still names its task, so a late write from a worker that
 * is being terminated cannot touch the slot's next task.
 */

export const SlotState = { FREE: 0, ASSIGNED: 1, RUNNING: 2, DONE: 3 } as const;
export type SlotState = (typeof SlotState)[keyof typeof SlotState];

const CONTROL_WORDS = 6;
const C_TASK_ID = 0;
const C_STATE = 1;
const C_CANCEL = 2;
const C_TID = 3;
const C_THREAD_ID = 4;
const C_CLAIM = 5;

const FIGURE_WORDS = 5;
const F_START_CPU = 0;
const F_END_CPU = 1;
const F_BASELINE = 2;
const F_HEAP = 3;
const F_CHECKPOINT_AT = 4;

/** The buffers behind the slots; structured-cloneable into workers (SharedArrayBuffers are shared). */
export interface TaskSlotBuffers {
  readonly control: SharedArrayBuffer;
  readonly figures: SharedArrayBuffer;
  readonly slotCount: number;
}

/** Allocates buffers for `slotCount` slots (1..65536). */
export function allocateTaskSlotBuffers(slotCount: number): TaskSlotBuffers {
  if (!Number.isInteger(slotCount) || slotCount < 1 || slotCount > 65536) {
    throw new RangeError(`slotCount must be an integer in 1..65536; received ${slotCount}`);
  }
  return {
    control: new SharedArrayBuffer(slotCount * CONTROL_WORDS * 4),
    figures: new SharedArrayBuffer(slotCount * FIGURE_WORDS * 8),
    slotCount,
  };
}

/** A view over the slot buffers, usable from the main thread and from workers. */
export class TaskSlots {
  readonly #control: Int32Array;
  readonly #figures: Float64Array;
  readonly slotCount: number;

  constructor(buffers: TaskSlotBuffers) {
    this.#control = new Int32Array(buffers.control);
    this.#figures = new Float64Array(buffers.figures);
    this.slotCount = buffers.slotCount;
  }

  // ---- main thread ----

  /** Marks `slot` as assigned to `taskId` and clears its figures. */
  assign(slot: number, taskId: number): void {
    const c = slot * CONTROL_WORDS;
    const f = slot * FIGURE_WORDS;
    this.#figures.fill(0, f, f + FIGURE_WORDS);
    Atomics.store(this.#control, c + C_CANCEL, 0);
    Atomics.store(this.#control, c + C_TID, 0);
    Atomics.store(this.#control, c + C_THREAD_ID, 0);
    Atomics.store(this.#control, c + C_CLAIM, 0);
    Atomics.store(this.#control, c + C_TASK_ID, taskId);
    Atomics.store(this.#control, c + C_STATE, SlotState.ASSIGNED);
  }

  /**
   * Hands the task in `slot` over to a worker as hand-over number `dispatch` (an integer in
   * 1..2^31-1, new for each hand-over): the worker that reads a message carrying that number runs the
   * task only if it `claim`s it first; until then the main thread may take it back with `revoke` and
   * hand it over again under a new number. The two compete for the same word, so exactly one wins.
   */
  offer(slot: number, dispatch: number): void {
    Atomics.store(this.#control, slot * CONTROL_WORDS + C_CLAIM, dispatch);
  }

  /**
   * Takes hand-over `dispatch` of the task in `slot` back: true when no worker has claimed it (none
   * will now), false when a worker has begun it or it was taken back before.
   */
  revoke(slot: number, dispatch: number): boolean {
    return this.#take(slot, dispatch);
  }

  /** The swap `revoke` and `claim` compete with: hand-over `dispatch` of `slot`'s task, taken by whoever swaps first. */
  #take(slot: number, dispatch: number): boolean {
    return (
      dispatch > 0 &&
      Atomics.compareExchange(this.#control, slot * CONTROL_WORDS + C_CLAIM, dispatch, 0) === dispatch
    );
  }

  /** True once hand-over `dispatch` of the task in `slot` was claimed by a worker or revoked. */
  taken(slot: number, dispatch: number): boolean {
    return Atomics.load(this.#control, slot * CONTROL_WORDS + C_CLAIM) !== dispatch;
  }

  /** Frees `slot`; later writes by the old task's worker are ignored. */
  release(slot: number): void {
    const c = slot * CONTROL_WORDS;
    Atomics.store(this.#control, c + C_TASK_ID, 0);
    Atomics.store(this.#control, c + C_STATE, SlotState.FREE);
  }

  /**
   * Asks the task in `slot` to stop (soft cancellation); `code` > 0 says why. Wakes the worker's
   * `waitForCancel` at once, so an async handler's signal fires without waiting for a poll.
   */
  requestCancel(slot: number, code: number): void {
    const at = slot * CONTROL_WORDS + C_CANCEL;
    Atomics.store(this.#control, at, code);
    Atomics.notify(this.#control, at);
  }

  state(slot: number): SlotState {
    return Atomics.load(this.#control, slot * CONTROL_WORDS + C_STATE) as SlotState;
  }

  threadId(slot: number): number {
    return Atomics.load(this.#control, slot * CONTROL_WORDS + C_THREAD_ID);
  }

  /** Heap + external at the task's start, bytes. */
  baselineBytes(slot: number): number {
    return this.#figures[slot * FIGURE_WORDS + F_BASELINE]!;
  }

  /** When the worker last wrote a checkpoint for this slot, ms since the epoch. */
  checkpointAtMs(slot: number): number {
    return this.#figures[slot * FIGURE_WORDS + F_CHECKPOINT_AT]!;
  }

  tid(slot: number): number {
    return Atomics.load(this.#control, slot * CONTROL_WORDS + C_TID);
  }

  taskId(slot: number): number {
    return Atomics.load(this.#control, slot * CONTROL_WORDS + C_TASK_ID);
  }

  startCpuNs(slot: number): number {
    return this.#figures[slot * FIGURE_WORDS + F_START_CPU]!;
  }

  endCpuNs(slot: number): number {
    return this.#figures[slot * FIGURE_WORDS + F_END_CPU]!;
  }

  /** Task memory: heap + external above the task's start, bytes (0 when it shrank). */
  memoryBytes(slot: number): number {
    const f = slot * FIGURE_WORDS;
    const grown = this.#figures[f + F_HEAP]! - this.#figures[f + F_BASELINE]!;
    return Math.max(grown, 0);
  }

  /** Last heap + external figure the worker wrote, bytes. */
  heapBytes(slot: number): number {
    return this.#figures[slot * FIGURE_WORDS + F_HEAP]!;
  }

  // ---- worker ----

  /**
   * Worker: claims hand-over `dispatch` of the task in `slot` before running it. False when the main
   * thread revoked it (the task was handed to another worker, or the slot is no longer the task's):
   * the worker must not run it.
   */
  claim(slot: number, dispatch: number): boolean {
    return this.#take(slot, dispatch);
  }

  /** Worker: records the start of `taskId` in `slot`. Returns false when the slot is no longer its. */
  begin(
    slot: number,
    taskId: number,
    tid: number,
    cpuNs: number,
    heapBytes: number,
    threadId = 0,
    nowMs = Date.now(),
  ): boolean {
    const c = slot * CONTROL_WORDS;
    if (Atomics.load(this.#control, c + C_TASK_ID) !== taskId) return false;
    const f = slot * FIGURE_WORDS;
    this.#figures[f + F_START_CPU] = cpuNs;
    this.#figures[f + F_BASELINE] = heapBytes;
    this.#figures[f + F_HEAP] = heapBytes;
    this.#figures[f + F_CHECKPOINT_AT] = nowMs;
    Atomics.store(this.#control, c + C_THREAD_ID, threadId);
    Atomics.store(this.#control, c + C_TID, tid);
    Atomics.store(this.#control, c + C_STATE, SlotState.RUNNING);
    return true;
  }

  /** Worker: records a heap checkpoint; returns the cancel code (0: keep going). */
  checkpoint(slot: number, taskId: number, heapBytes: number, nowMs = Date.now()): number {
    const c = slot * CONTROL_WORDS;
    if (Atomics.load(this.#control, c + C_TASK_ID) !== taskId) return 0;
    this.#figures[slot * FIGURE_WORDS + F_HEAP] = heapBytes;
    this.#figures[slot * FIGURE_WORDS + F_CHECKPOINT_AT] = nowMs;
    return Atomics.load(this.#control, c + C_CANCEL);
  }

  /** Worker: the cancel code for `taskId` (0 when none or the slot is no longer its). */
  cancelCode(slot: number, taskId: number): number {
    const c = slot * CONTROL_WORDS;
    if (Atomics.load(this.#control, c + C_TASK_ID) !== taskId) return 0;
    return Atomics.load(this.#control, c + C_CANCEL);
  }

  /**
   * Worker: resolves when the main thread asks `taskId` to stop (`'cancelled'`), after `timeoutMs`
   * (`'timed-out'`), or at once when a cancellation is already there or the slot is no longer the
   * task's. Never rejects. The promise settles on the worker's event loop, so only while the handler
   * awaits; `wakeCancelWaiter` ends a wait early (at the task's end).
   */
  waitForCancel(slot: number, taskId: number, timeoutMs: number): Promise<'cancelled' | 'timed-out'> {
    const at = slot * CONTROL_WORDS + C_CANCEL;
    if (Atomics.load(this.#control, slot * CONTROL_WORDS + C_TASK_ID) !== taskId) return CANCELLED;
    const wait = Atomics.waitAsync(this.#control, at, 0, timeoutMs);
    if (!wait.async) return CANCELLED;
    return wait.value.then((v) => (v === 'timed-out' ? 'timed-out' : 'cancelled'));
  }

  /** Worker: wakes a pending `waitForCancel` on `slot` (its answer is then ignored by its task). */
  wakeCancelWaiter(slot: number): void {
    Atomics.notify(this.#control, slot * CONTROL_WORDS + C_CANCEL);
  }

  /** Worker: records the end of `taskId`. */
  end(slot: number, taskId: number, cpuNs: number, heapBytes: number): void {
    const c = slot * CONTROL_WORDS;
    if (Atomics.load(this.#control, c + C_TASK_ID) !== taskId) return;
    const f = slot * FIGURE_WORDS;
    this.#figures[f + F_END_CPU] = cpuNs;
    this.#figures[f + F_HEAP] = heapBytes;
    Atomics.store(this.#control, c + C_STATE, SlotState.DONE);
  }
}

const CANCELLED: Promise<'cancelled'> = Promise.resolve('cancelled');

/** Free-list of slot indices, main thread only. */
export class SlotAllocator {
  readonly #free: number[];
  constructor(slotCount: number) {
    this.#free = [];
    for (let i = slotCount - 1; i >= 0; i--) this.#free.push(i);
  }
  /** A free slot index, or -1 when none is left. */
  acquire(): number {
    return this.#free.pop() ?? -1;
  }
  release(slot: number): void {
    this.#free.push(slot);
  }
  get available(): number {
    return this.#free.length;
  }
}

/**
 * Why the main thread asked a task to stop (the `cancel` word of a slot). `TIME`: the task ran past
 * its `cancel_after_time_interval` (the wall-clock watchdog). `ABORTED`: its caller gave up (aborted,
 * timed out, or the HTTP client disconnected). A cancellation of a sandbox shed in node duress uses
 * the resource's code.
 */
export const CancelReason = { CPU: 1, MEMORY: 2, SHUTDOWN: 3, TIME: 4, ABORTED: 5 } as const;
export type CancelReason = (typeof CancelReason)[keyof typeof CancelReason];
