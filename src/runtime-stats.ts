/**
 * The runtime's stats snapshots (`Runtime.sandboxStats`, `Runtime.nodeStats`) and the workers' heap
 * figure the node samplers read: plain data from the request path's state, no sampling.
 */
import type { HeapUsage } from './tracking/node-usage-sampler.js';
import type { TaskExecution } from './execution/task-execution.js';
import type { EnforcementMode } from './governor/decide.js';
import type { LanePool } from './pool/lane-pool.js';
import type { NodeStats, SandboxStats } from './runtime-api.js';
import type { ResolvedRuntimeOptions } from './runtime-options.js';
import { gcThreadsOf } from './pool/helper-threads.js';
import { isolationOf } from './runtime-start.js';
import type { Sandbox } from './sandbox/sandbox.js';

/** Per-sandbox stats keyed by sandbox id, for the sandboxes given. */
export function sandboxStatsOf(
  x: TaskExecution,
  sandboxes: readonly Sandbox[],
): ReadonlyMap<string, SandboxStats> {
  const snapshot = x.governor.snapshot;
  const running = new Map<string, number>();
  for (const r of x.running.values()) {
    running.set(r.queued.sandbox.id, (running.get(r.queued.sandbox.id) ?? 0) + 1);
  }
  const queued = x.scheduler.queuedBySandbox();
  const waitingForCap = new Map<string, number>();
  if (x.caps.active) {
    for (const q of x.scheduler.queuedItems()) {
      if (!x.caps.mayStart(q.sandbox.id, q.user)) {
        waitingForCap.set(q.sandbox.id, (waitingForCap.get(q.sandbox.id) ?? 0) + 1);
      }
    }
  }
  const out = new Map<string, SandboxStats>();
  for (const s of sandboxes) {
    const c = x.counters.of(s.id);
    const usage = snapshot.usage.get(s.id);
    out.set(s.id, {
      running: running.get(s.id) ?? 0,
      queued: queued.get(s.id) ?? 0,
      concurrency: { ...x.caps.counts(s.id), waitingForCap: waitingForCap.get(s.id) ?? 0 },
      counters: structuredClone(c),
      usage: { cpu: usage?.cpu ?? 0, memory: usage?.memory ?? 0 },
      state: snapshot.verdicts.get(s.id)?.state ?? 'ok',
    });
  }
  return out;
}

/** The node's stats snapshot. */
export function nodeStatsOf(
  x: TaskExecution,
  pool: LanePool,
  options: ResolvedRuntimeOptions,
  engineIndices: readonly string[] | undefined,
  enforcement: EnforcementMode,
  sample: { readonly mainHeapUsedBytes: number; readonly rssBytes: number },
): NodeStats {
  const snapshot = x.governor.snapshot;
  const poolLanes = pool.laneStats();
  const scheduled = x.scheduler.stats().lanes;
  const lanes = poolLanes.map((lane, i) => ({
    ...lane,
    minPriority: scheduled[i]?.minPriority ?? null,
    busy: scheduled[i]?.busy ?? 0,
    queued: scheduled[i]?.queued ?? 0,
  }));
  return {
    nodeId: options.nodeId,
    cores: options.cores,
    threads: options.lanes.reduce((sum, l) => sum + l.workers, 0),
    spareWorkers: options.lanes.reduce((sum, l) => sum + l.spareWorkers, 0),
    liveWorkers: pool.liveWorkers,
    loadingWorkers: pool.loadingWorkers,
    isolation: isolationOf(poolLanes),
    gcThreads: gcThreadsOf(),
    lanes,
    running: x.running.size,
    queued: x.scheduler.length,
    duress: snapshot.duress,
    enforcement,
    usage: { cpu: snapshot.node.cpu, memory: snapshot.node.memory },
    mainHeapUsedBytes: sample.mainHeapUsedBytes,
    rssBytes: sample.rssBytes,
    workersStarted: pool.workersStarted,
    workerStartupMs: pool.initialStartups().map((s) => s.startupMs),
    lastReplacementStartupMs: pool.lastReplacement()?.startupMs,
    engineIndices,
    governorTicks: snapshot.ticks,
  };
}

/**
 * The workers' heap (live + external, bytes) from the running tasks' last checkpoints, with the idle
 * figure of a worker's start-up for the others, and their heap limits added up. No sampling: slot reads.
 */
export function workersHeapOf(x: TaskExecution, pool: LanePool, workerHeapMb: number): HeapUsage {
  const startups = pool.startups;
  const last = startups[startups.length - 1];
  const idleHeap = last?.heapBytes ?? 0;
  const heapLimit = last?.heapLimitBytes ?? workerHeapMb * 1024 * 1024;
  let workersHeap = 0;
  for (const r of x.running.values()) workersHeap += pool.slots.heapBytes(r.tracked.slot) || idleHeap;
  workersHeap += Math.max(0, pool.threads - x.running.size) * idleHeap;
  return { usedBytes: workersHeap, limitBytes: heapLimit * pool.threads };
}
