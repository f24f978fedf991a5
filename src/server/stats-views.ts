/**
 * JSON views of the runtime for the REST API: sandboxes in the seed-000 shape, sandbox stats shaped
 * like OpenSearch's `_wlm/stats`, node stats. Usage is a ratio in 0..1.
 */
import type { Runtime } from '../runtime.js';
import { RESOURCES } from '../sandbox/sandbox.js';
import { toSandboxDocument } from '../sandbox/sandbox-document.js';

/** `GET /_sandbox`: `{ "<id>": {...} }`, root first. */
export function sandboxesView(runtime: Runtime): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const s of runtime.sandboxes()) out[s.id] = toSandboxDocument(s);
  return out;
}

/** Paging and filtering of `GET /_sandbox/_stats`. */
export interface StatsQuery {
  /** Only sandboxes with a resource above its low limit (whatever their mode). */
  readonly breach: boolean;
  /** First sandbox to show, in tree order, >= 0. */
  readonly from: number;
  /** Most sandboxes to show, 1..1000. */
  readonly size: number;
}

/**
 * `GET /_sandbox/_stats`: `{ "<nodeId>": { "total": n, "from", "size", "sandboxes": { "<id>": {...} } } }`;
 * `total` counts the sandboxes that pass the filter, before paging.
 */
export function sandboxStatsView(
  runtime: Runtime,
  query: StatsQuery = { breach: false, from: 0, size: 1000 },
): Record<string, unknown> {
  const sandboxes: Record<string, unknown> = {};
  const limitsOf = new Map(runtime.sandboxes().map((s) => [s.id, s.limits]));
  const namesOf = new Map(runtime.sandboxes().map((s) => [s.id, s.name]));
  const rows = [...runtime.sandboxStats()].filter(
    ([id, s]) =>
      !query.breach ||
      RESOURCES.some((r) => {
        const limit = limitsOf.get(id)?.[r];
        return limit !== undefined && s.usage[r] > limit.low;
      }),
  );
  for (const [id, s] of rows.slice(query.from, query.from + query.size)) {
    const c = s.counters;
    sandboxes[id] = {
      name: namesOf.get(id) ?? id,
      state: s.state,
      running: s.running,
      queued: s.queued,
      concurrency: {
        running: s.concurrency.running,
        max_running: s.concurrency.peak,
        waiting_for_cap: s.concurrency.waitingForCap,
      },
      total_completions: c.completions,
      total_rejections: c.rejections,
      total_cancellations: c.cancellations,
      hard_cancellations: c.hardCancellations,
      wall_clock_cancellations: c.wallClockCancellations,
      timed_out: c.timedOut,
      failures: c.failures,
      aborted: c.aborted,
      call_timeouts: c.callTimeouts,
      queue_wait_rejections: c.queueWaitRejections,
      duress_rejections: c.duressRejections,
      duress_cancellations: c.duressCancellations,
      cpu: {
        current_usage: s.usage.cpu,
        rejections: c.cpu.rejections,
        cancellations: c.cpu.cancellations,
        would_reject: c.cpu.wouldReject,
        would_cancel: c.cpu.wouldCancel,
      },
      memory: {
        current_usage: s.usage.memory,
        rejections: c.memory.rejections,
        cancellations: c.memory.cancellations,
        would_reject: c.memory.wouldReject,
        would_cancel: c.memory.wouldCancel,
      },
    };
  }
  return { [runtime.options.nodeId]: { total: rows.length, from: query.from, size: query.size, sandboxes } };
}

/** `GET /_nodes/stats`. */
export function nodeStatsView(runtime: Runtime): Record<string, unknown> {
  const n = runtime.nodeStats();
  return {
    _nodes: { total: 1, successful: 1, failed: 0 },
    nodes: {
      [n.nodeId]: {
        name: n.nodeId,
        cores: n.cores,
        duress: n.duress,
        // Sandboxes shed while the node is in duress (docs/overload.md): id -> intervals shed so far.
        duress_shed: Object.fromEntries(runtime.governorSnapshot().shed),
        enforcement: n.enforcement,
        cpu: { usage: n.usage.cpu },
        heap: {
          usage: n.usage.memory,
          main_thread_heap_used_bytes: n.mainHeapUsedBytes,
          rss_bytes: n.rssBytes,
        },
        isolation: n.isolation,
        gc_threads: n.gcThreads,
        lanes: n.lanes.map((l) => ({
          name: l.name,
          min_priority: l.minPriority,
          weight: l.weight,
          weighted: l.weighted,
          nice: l.nice ?? null,
          weight_reason: l.weightReason ?? null,
          workers: l.workers,
          spare: l.spareWorkers,
          live: l.liveWorkers,
          loading: l.loadingWorkers,
          replaced: l.replacedWorkers,
          pipelined: l.pipelinedTasks,
          stolen: l.stolenTasks,
          busy: l.busy,
          queued: l.queued,
        })),
        workers: {
          threads: n.threads,
          spare: n.spareWorkers,
          live: n.liveWorkers,
          loading: n.loadingWorkers,
          running: n.running,
          queued: n.queued,
          started_total: n.workersStarted,
          startup_ms: n.workerStartupMs.map((ms) => Math.round(ms)),
          last_replacement_startup_ms:
            n.lastReplacementStartupMs === undefined ? null : Math.round(n.lastReplacementStartupMs),
        },
        governor: (() => {
          const g = runtime.governorStats();
          return {
            ticks: g.ticks,
            interval_ms: runtime.options.intervalMs,
            tick_median_us: Math.round(g.tickMedianUs),
            tick_p99_us: Math.round(g.tickP99Us),
            soft_cancellations: g.softCancellations,
            hard_cancellations: g.hardCancellations,
            wall_clock_cancellations: g.wallClockCancellations,
            wall_clock_hard_cancellations: g.wallClockHardCancellations,
            rate_limited: g.rateLimited,
          };
        })(),
        scheduler: schedulerView(runtime),
        resource_usage: resourceUsageView(runtime),
        indices: n.engineIndices ?? null,
      },
    },
  };
}

/**
 * The `resource_usage` section of `GET /_nodes/stats`: what this node sends a coordinator in the
 * `Resource_Usage_Stats` header (moving averages, ratios 0..1; `io` null without an IO source).
 */
function resourceUsageView(runtime: Runtime) {
  const u = runtime.resourceUsage();
  const w = runtime.options.resourceUsage;
  return {
    cpu: u.cpu,
    heap: u.heap,
    io: u.ioSource === 'none' ? null : u.io,
    io_source: u.ioSource,
    ready: u.ready,
    samples: { cpu: u.cpuSamples, heap: u.heapSamples, io: u.ioSamples },
    interval_ms: w.intervalMs,
    window_ms: w.windowMs,
    timestamp_ms: u.timestampMs,
  };
}

/** The scheduler section of `GET /_nodes/stats`: lanes with their reservations, and per-priority queue figures (wait in ms). */
function schedulerView(runtime: Runtime) {
  const s = runtime.schedulerStats();
  const round = (ms: number) => Math.round(ms * 100) / 100;
  return {
    queue_order: s.queueOrder,
    queued: s.queued,
    running: s.running,
    capacity: s.capacity,
    aging_ms_per_priority: Number.isFinite(s.agingMsPerPriority) ? s.agingMsPerPriority : 'Infinity',
    lending: s.lending,
    lanes: s.lanes.map((l) => ({
      name: l.name,
      min_priority: l.minPriority,
      workers: l.workers,
      busy: l.busy,
      prefetch: l.prefetch,
      queued: l.queued,
      overloaded: l.overloaded,
      reservations_suspended: l.reservationsSuspended ?? null,
      reservations: l.reservations.map((r) => ({
        min_priority: r.minPriority,
        workers: r.workers,
        busy: r.busy,
      })),
    })),
    priorities: s.priorities.map((p) => ({
      priority: p.priority,
      queued: p.queued,
      dequeued: p.dequeued,
      evicted: p.evicted,
      expired: p.expired,
      removed: p.removed,
      lent: p.lent,
      wait_ms: {
        count: p.waitMs.count,
        mean: round(p.waitMs.mean),
        p50: round(p.waitMs.p50),
        p99: round(p.waitMs.p99),
        max: round(p.waitMs.max),
      },
    })),
  };
}
