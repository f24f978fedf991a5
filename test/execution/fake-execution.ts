/**
 * A `TaskExecution` over a fake worker pool and a fake governor, with the real scheduler, caps, slot
 * allocator, shared task slots, usage tracker and counters: a test drives each running task's end by
 * hand (answer, engine error, crash, out of memory, termination) and reads what is left held.
 */
import diagnostics_channel from 'node:diagnostics_channel';
import { SandboxClassifier } from '../../src/classify/sandbox-classifier.js';
import { ChannelName, nextRuntimeId } from '../../src/diagnostics.js';
import { admit } from '../../src/execution/admit.js';
import { EngineChecks } from '../../src/execution/engine-checks.js';
import type { SearchCallOptions } from '../../src/execution/search-call.js';
import type { QueuedTask } from '../../src/execution/task.js';
import {
  type ExecutionGovernor,
  type ExecutionPool,
  TaskExecution,
} from '../../src/execution/task-execution.js';
import type { SandboxVerdict } from '../../src/governor/decide.js';
import type { AnyCancellation, GovernorSnapshot } from '../../src/governor/governor.js';
import { SandboxCounterTable } from '../../src/governor/sandbox-counters.js';
import type { EngineModule } from '../../src/pool/engine-module.js';
import type { TaskEnvelope, TaskOutcome } from '../../src/pool/task-envelope.js';
import { allocateTaskSlotBuffers, SlotAllocator, SlotState, TaskSlots } from '../../src/pool/task-slots.js';
import { SILENT_LOGGER } from '../../src/runtime-logger.js';
import { parseSandboxDefinitions } from '../../src/sandbox/sandbox-file.js';
import type { Sandbox } from '../../src/sandbox/sandbox.js';
import { ConcurrencyCaps } from '../../src/scheduler/concurrency-caps.js';
import { resolveLanes } from '../../src/scheduler/lanes.js';
import { parseQueryPriority } from '../../src/scheduler/query-priority.js';
import { TaskScheduler } from '../../src/scheduler/task-scheduler.js';
import { UsageTracker } from '../../src/tracking/usage-tracker.js';

/** A task handed to the fake pool and not answered yet. */
export interface FakeRun {
  readonly lane: number;
  readonly envelope: TaskEnvelope;
  readonly resolve: (outcome: TaskOutcome) => void;
  readonly reject: (error: unknown) => void;
}

/** Runs wait until the test answers them; a termination rejects the run as piscina does. */
export class FakePool implements ExecutionPool {
  readonly slots: TaskSlots;
  readonly runs = new Map<number, FakeRun>();
  terminations = 0;

  constructor(slotCount: number) {
    this.slots = new TaskSlots(allocateTaskSlotBuffers(slotCount));
  }

  run(lane: number, envelope: TaskEnvelope): Promise<TaskOutcome> {
    return new Promise((resolve, reject) => {
      this.runs.set(envelope.taskId, { lane, envelope, resolve, reject });
    });
  }

  terminateWorkerOf(_lane: number, slot: number, taskId: number): boolean {
    const run = this.runs.get(taskId);
    if (run === undefined || run.envelope.slot !== slot) return false;
    this.terminations++;
    this.runs.delete(taskId);
    run.reject(new Error('Terminating worker thread'));
    return true;
  }

  /** Every worker stays live: a termination's replacement is ready at once. */
  readyWorkersOf(_lane: number): number {
    return 2;
  }

  /** The worker answers: the cancel code its slot holds if one was asked (a cooperative stop), else `outcome`. */
  answer(taskId: number, outcome: TaskOutcome): void {
    const run = this.runs.get(taskId)!;
    this.runs.delete(taskId);
    const cancelCode = this.slots.cancelCode(run.envelope.slot, taskId);
    if (cancelCode !== 0) {
      run.resolve({
        ok: false,
        error: {
          name: 'Error',
          message: 'cancelled',
          type: undefined,
          statusCode: undefined,
          stack: undefined,
        },
        cancelCode,
      });
    } else {
      run.resolve(outcome);
    }
  }

  /** The worker exits under the task (a crash, or `ERR_WORKER_OUT_OF_MEMORY`). */
  crash(taskId: number, error: unknown): void {
    const run = this.runs.get(taskId)!;
    this.runs.delete(taskId);
    run.reject(error);
  }
}

const ALLOW: SandboxVerdict = Object.freeze({
  state: 'ok',
  resource: undefined,
  rejectNew: false,
  rejectedBy: undefined,
  rejectResource: undefined,
  wouldReject: false,
  wouldCancel: false,
});

/** Publishes what the test sets; keeps the cancellations it was told to pick until `forget`. */
export class FakeGovernor implements ExecutionGovernor {
  readonly picks = new Map<number, { readonly cancellation: AnyCancellation; readonly hard: boolean }>();
  readonly verdicts = new Map<string, SandboxVerdict>();
  completed = 0;
  forgotten = 0;
  readonly snapshot: GovernorSnapshot = {
    atMs: 0,
    ticks: 0,
    duress: false,
    duressLevel: 'none',
    enforcement: 'enforced',
    node: { cpu: 0, memory: 0 },
    usage: new Map(),
    verdicts: new Map(),
    shed: new Map(),
  } as unknown as GovernorSnapshot;

  verdict(sandboxId: string): SandboxVerdict {
    return this.verdicts.get(sandboxId) ?? ALLOW;
  }
  cancellationOf(taskId: number) {
    return this.picks.get(taskId);
  }
  forget(taskId: number): void {
    this.forgotten++;
    this.picks.delete(taskId);
  }
  onTaskCompleted(): void {
    this.completed++;
  }
  /** Refuses new tasks of `sandboxId` (its cpu over the low limit) or allows them again. */
  reject(sandboxId: string, on: boolean): void {
    if (!on) this.verdicts.delete(sandboxId);
    else
      this.verdicts.set(sandboxId, {
        ...ALLOW,
        state: 'rejecting',
        resource: 'cpu',
        rejectNew: true,
        rejectResource: 'cpu',
      });
  }
}

/** The sandboxes of the fake: `fg` (foreground lane), `bg` (background), `capped` (one task at a time). */
export const SANDBOXES: readonly Sandbox[] = parseSandboxDefinitions({
  sandboxes: [
    { name: 'fg', priority: 12, selectionAttributes: [{ name: 'userPattern', value: ['f*'] }] },
    { name: 'bg', priority: 5, selectionAttributes: [{ name: 'userPattern', value: ['b*'] }] },
    {
      name: 'capped',
      priority: 13,
      max_concurrent_tasks: 1,
      cancellationGraceMs: 40,
      selectionAttributes: [{ name: 'userPattern', value: ['c*'] }],
    },
  ],
});

/** Every event of the fake's runtime id, by channel. */
export interface EventLog {
  readonly queued: number[];
  readonly started: number[];
  readonly ended: { readonly taskId: number; readonly ran: boolean }[];
  readonly rejected: { readonly taskId: number | undefined; readonly queued: boolean }[];
}

export interface FakeExecution {
  readonly x: TaskExecution;
  readonly pool: FakePool;
  readonly governor: FakeGovernor;
  readonly tracker: UsageTracker;
  readonly events: EventLog;
  readonly slotCount: number;
  /** Admits a request as `runtime.search` does (after its option check); throws what admission throws. */
  search(user: string, control?: SearchCallOptions): Promise<unknown>;
  /** Stops listening to the events. */
  dispose(): void;
}

/** Two lanes of two workers (slots: one per worker), the sandboxes above, a 20 ms default grace. */
export function fakeExecution(): FakeExecution {
  const lanes = resolveLanes(undefined, { workers: 2, spareWorkers: 0 });
  const slotCount = lanes.reduce((n, l) => n + l.workers, 0);
  const sandboxes = SANDBOXES;
  const caps = new ConcurrencyCaps(sandboxes);
  const scheduler = new TaskScheduler<QueuedTask>({
    lanes,
    maxQueuedTasks: 1000,
    agingMsPerPriority: 100,
    config: parseQueryPriority({}),
    mayStart: (q) => !caps.active || caps.mayStart(q.sandbox.id, q.user),
  });
  const pool = new FakePool(slotCount);
  const governor = new FakeGovernor();
  const tracker = new UsageTracker({
    slots: pool.slots,
    cores: 2,
    memoryBudgetBytes: 1 << 30,
    parentOf: () => null,
    reader: { cpuTimeNs: () => 0, close: () => {} },
  });
  const runtimeId = nextRuntimeId();
  const x = new TaskExecution({
    scheduler,
    caps,
    allocator: new SlotAllocator(slotCount),
    pool,
    tracker,
    counters: new SandboxCounterTable(),
    governor,
    source: Object.freeze({ runtimeId, nodeId: 'fake' }),
    laneNames: lanes.map((l) => l.name),
    log: SILENT_LOGGER,
    settings: {
      maxQueueWaitMs: Number.POSITIVE_INFINITY,
      defaultGraceMs: 20,
      workerHeapMb: 64,
      standingQueueMs: 100,
      duressRejectThreshold: 0.9,
    },
    sandboxes,
  });
  const engine = new EngineChecks(
    { handle: () => null } as unknown as EngineModule,
    ['docs'],
    undefined,
    SILENT_LOGGER,
  );
  const classifier = new SandboxClassifier(sandboxes);
  const events: EventLog = { queued: [], started: [], ended: [], rejected: [] };
  const mine = (m: unknown) => (m as { runtimeId: number }).runtimeId === runtimeId;
  const listeners: [string, (m: unknown) => void][] = [
    [ChannelName.TASK_QUEUED, (m) => mine(m) && events.queued.push((m as { taskId: number }).taskId)],
    [ChannelName.TASK_STARTED, (m) => mine(m) && events.started.push((m as { taskId: number }).taskId)],
    [
      ChannelName.TASK_ENDED,
      (m) =>
        mine(m) &&
        events.ended.push({ taskId: (m as { taskId: number }).taskId, ran: (m as { ran: boolean }).ran }),
    ],
    [
      ChannelName.TASK_REJECTED,
      (m) =>
        mine(m) &&
        events.rejected.push({
          taskId: (m as { taskId: number | undefined }).taskId,
          queued: (m as { queued: boolean }).queued,
        }),
    ],
  ];
  for (const [name, fn] of listeners) diagnostics_channel.subscribe(name, fn);
  return {
    x,
    pool,
    governor,
    tracker,
    events,
    slotCount,
    search: (user, control) =>
      admit(x, engine, classifier, { index: 'docs', body: { q: user }, user }, control),
    dispose: () => {
      for (const [name, fn] of listeners) diagnostics_channel.unsubscribe(name, fn);
    },
  };
}

/** What the execution still holds: all zero (and every slot free) once every task has settled. */
export function held(f: FakeExecution): Record<string, number> {
  let slotsInUse = 0;
  for (let s = 0; s < f.slotCount; s++) if (f.pool.slots.state(s) !== SlotState.FREE) slotsInUse++;
  return {
    running: f.x.running.size,
    queued: f.x.scheduler.length,
    laneDispatches: f.x.scheduler.running,
    allocatorSlots: f.slotCount - f.x.allocator.available,
    sharedSlots: slotsInUse,
    capHolds: SANDBOXES.reduce((n, s) => n + f.x.caps.counts(s.id).running, 0),
    tracked: f.tracker.size,
    governorPicks: f.governor.picks.size,
    poolRuns: f.pool.runs.size,
  };
}
