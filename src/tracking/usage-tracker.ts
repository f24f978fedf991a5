/**
 * Per-task and per-sandbox usage, sampled once per governor interval (never on the request path).
 *
 * Task CPU usage over an interval = Δ thread CPU ns of the task's worker while it ran that task /
 * (Δ wall ns × cores). Running tasks are read through the worker's kernel tid (kept fd on schedstat,
 * works while the worker is busy); a task that ended during the interval contributes the CPU between
 * its last sample and its end (the worker writes its own end figure), so short tasks are not
 * invisible. A sandbox's usage is the sum over its tasks and its descendants' tasks.
 *
 * Task memory = heap + external of the worker's isolate above its figure at task start, from the
 * checkpoints the worker writes; memory usage = bytes / the memory budget. A task whose last
 * checkpoint is older than `staleCheckpointMs` (stuck in code that never checkpoints) is probed
 * through the inspector (heap only, with a time-out); the answer counts from the next sample on.
 */
import { ThreadCpuReader, type WorkerHeapProbe } from '../../native-shim/index.js';
import { SlotState, type TaskSlots } from '../pool/task-slots.js';
import type { TrackedTask } from './tracked-task.js';

/** Usage figures of one sandbox over one interval (ratios in 0..1; may exceed 1 briefly). */
export interface SandboxUsage {
  cpu: number;
  memory: number;
  /** Tasks running in this sandbox and its descendants. */
  running: number;
}

/** Result of one sample. */
export interface UsageSample {
  /** Wall time covered, ns. */
  readonly intervalNs: number;
  /** Running tasks with their fresh figures. */
  readonly tasks: readonly TrackedTask[];
  /** Per sandbox id, its own tasks plus its descendants'. */
  readonly sandboxes: ReadonlyMap<string, SandboxUsage>;
}

export interface UsageTrackerOptions {
  readonly slots: TaskSlots;
  /** Cores of the node (see native-shim `availableCores`). */
  readonly cores: number;
  /** Bytes that count as 100 % memory usage. */
  readonly memoryBudgetBytes: number;
  /** Parent of a sandbox id (null for the root or an unknown id). */
  readonly parentOf: (sandboxId: string) => string | null;
  /** Monotonic clock, ns. Default `process.hrtime.bigint()` as a number. */
  readonly nowNs?: () => number;
  /** Reader of other threads' CPU. Default a new `ThreadCpuReader`. */
  readonly reader?: Pick<ThreadCpuReader, 'cpuTimeNs' | 'close'>;
  /** Heap probe for tasks that stopped checkpointing. Default: none (checkpoints only). */
  readonly heapProbe?: Pick<WorkerHeapProbe, 'heapUsedBytes'>;
  /** A checkpoint older than this makes the task a probe candidate, ms. Default 200. */
  readonly staleCheckpointMs?: number;
  /** Time-out of one probe, ms. Default 50. */
  readonly probeTimeoutMs?: number;
  /** Wall clock, ms since the epoch (the workers stamp checkpoints with it). Default `Date.now`. */
  readonly wallMs?: () => number;
}

const defaultNowNs = (): number => Number(process.hrtime.bigint());

export class UsageTracker {
  readonly #slots: TaskSlots;
  readonly #cores: number;
  readonly #memoryBudgetBytes: number;
  readonly #parentOf: (sandboxId: string) => string | null;
  readonly #nowNs: () => number;
  readonly #reader: Pick<ThreadCpuReader, 'cpuTimeNs' | 'close'>;
  readonly #heapProbe: Pick<WorkerHeapProbe, 'heapUsedBytes'> | undefined;
  readonly #staleCheckpointMs: number;
  readonly #probeTimeoutMs: number;
  readonly #wallMs: () => number;
  #probes = 0;
  readonly #tasks = new Map<number, TrackedTask>();
  /** CPU ns of tasks that ended since the last sample, per leaf sandbox. */
  readonly #endedCpuNs = new Map<string, number>();
  #lastSampleNs: number;

  constructor(options: UsageTrackerOptions) {
    this.#slots = options.slots;
    this.#cores = options.cores;
    this.#memoryBudgetBytes = options.memoryBudgetBytes;
    this.#parentOf = options.parentOf;
    this.#nowNs = options.nowNs ?? defaultNowNs;
    this.#reader = options.reader ?? new ThreadCpuReader();
    this.#heapProbe = options.heapProbe;
    this.#staleCheckpointMs = options.staleCheckpointMs ?? 200;
    this.#probeTimeoutMs = options.probeTimeoutMs ?? 50;
    this.#wallMs = options.wallMs ?? Date.now;
    this.#lastSampleNs = this.#nowNs();
  }

  /** Starts tracking a task that was just handed to the pool. */
  add(task: TrackedTask): void {
    this.#tasks.set(task.taskId, task);
  }

  get(taskId: number): TrackedTask | undefined {
    return this.#tasks.get(taskId);
  }

  /** Tasks being tracked (dispatched and not settled). */
  get size(): number {
    return this.#tasks.size;
  }

  /**
   * Stops tracking a settled task, counting its CPU since the last sample into the next sample.
   * Call before the task's slot is released.
   */
  complete(task: TrackedTask): void {
    if (!this.#tasks.delete(task.taskId)) return;
    const delta = this.#cpuDelta(task);
    task.finalized = true;
    if (delta > 0) this.#endedCpuNs.set(task.sandboxId, (this.#endedCpuNs.get(task.sandboxId) ?? 0) + delta);
  }

  /** CPU since the task's last sample, ns; advances `lastCpuNs` and `cpuTimeNs`. */
  #cpuDelta(task: TrackedTask): number {
    if (task.finalized) return 0;
    const slot = task.slot;
    const state = this.#slots.state(slot);
    if (state === SlotState.ASSIGNED || state === SlotState.FREE) return 0;
    let now: number | undefined;
    if (state === SlotState.DONE) {
      now = this.#slots.endCpuNs(slot);
      task.finalized = true;
    } else {
      now = this.#reader.cpuTimeNs(this.#slots.tid(slot));
      // The thread is gone (terminated): nothing more can be read; keep what was counted.
      if (now === undefined) return 0;
    }
    const base = task.lastCpuNs > 0 ? task.lastCpuNs : this.#slots.startCpuNs(slot);
    task.lastCpuNs = now;
    const delta = now - base;
    if (delta <= 0) return 0;
    task.cpuTimeNs += delta;
    return delta;
  }

  /** Samples every tracked task and aggregates up the sandbox tree. Call once per interval. */
  sample(): UsageSample {
    const nowNs = this.#nowNs();
    const intervalNs = Math.max(1, nowNs - this.#lastSampleNs);
    this.#lastSampleNs = nowNs;
    const capacityNs = intervalNs * this.#cores;
    const sandboxes = new Map<string, SandboxUsage>();
    const tasks: TrackedTask[] = [];

    for (const [sandboxId, cpuNs] of this.#endedCpuNs) {
      this.#addUp(sandboxes, sandboxId, cpuNs / capacityNs, 0, 0);
    }
    this.#endedCpuNs.clear();

    for (const task of this.#tasks.values()) {
      const running = this.#slots.state(task.slot) !== SlotState.ASSIGNED;
      // One thread cannot run longer than the interval; a larger delta is tick granularity (schedstat
      // moves at scheduler ticks), so it is capped there (the task's total keeps the clock's figure).
      const delta = Math.min(this.#cpuDelta(task), intervalNs);
      task.cpuUsage = delta / capacityNs;
      task.memoryBytes = running ? this.#memoryBytes(task) : 0;
      task.memoryUsage = task.memoryBytes / this.#memoryBudgetBytes;
      if (!running) continue;
      tasks.push(task);
      this.#addUp(sandboxes, task.sandboxId, task.cpuUsage, task.memoryUsage, 1);
    }
    // A ratio of the node's capacity: tick granularity can add up to a few percent over 1 with every
    // core busy (1.01 seen), and ended tasks' remainders land in the interval they are read in.
    for (const usage of sandboxes.values()) usage.cpu = Math.min(1, usage.cpu);
    return { intervalNs, tasks, sandboxes };
  }

  /** Inspector probes started so far. */
  get probes(): number {
    return this.#probes;
  }

  /** Checkpointed memory, or the last probe's when the checkpoints went stale; starts a probe then. */
  #memoryBytes(task: TrackedTask): number {
    const slot = task.slot;
    const checkpointed = this.#slots.memoryBytes(slot);
    if (this.#heapProbe === undefined || this.#slots.state(slot) !== SlotState.RUNNING) return checkpointed;
    if (this.#wallMs() - this.#slots.checkpointAtMs(slot) <= this.#staleCheckpointMs) return checkpointed;
    if (!task.probeInFlight) {
      task.probeInFlight = true;
      this.#probes++;
      const baseline = this.#slots.baselineBytes(slot);
      void this.#heapProbe.heapUsedBytes(this.#slots.threadId(slot), this.#probeTimeoutMs).then((used) => {
        task.probeInFlight = false;
        if (used !== undefined && !task.finalized) task.probedMemoryBytes = Math.max(0, used - baseline);
      });
    }
    return Math.max(checkpointed, task.probedMemoryBytes);
  }

  #addUp(
    sandboxes: Map<string, SandboxUsage>,
    leafId: string,
    cpu: number,
    memory: number,
    running: number,
  ): void {
    let id: string | null = leafId;
    // Depth is bounded by the sandbox model; the guard stops a malformed parent function looping.
    for (let depth = 0; id !== null && depth < 64; depth++) {
      let usage = sandboxes.get(id);
      if (usage === undefined) {
        usage = { cpu: 0, memory: 0, running: 0 };
        sandboxes.set(id, usage);
      }
      usage.cpu += cpu;
      usage.memory += memory;
      usage.running += running;
      id = this.#parentOf(id);
    }
  }

  /** Releases kept file descriptors. */
  close(): void {
    this.#reader.close();
  }
}
