/**
 * Prometheus metrics of one runtime (prom-client), served at `GET /_prometheus/metrics` (the path of
 * OpenSearch's Prometheus exporter plugin; `GET /metrics` is an alias). Every figure is read from the
 * `RuntimeFeed` (snapshots at scrape time, task ends for the histograms): nothing here samples on the
 * request path.
 *
 * Names start with `prefix` (default `query_sandbox_`). Labels are bounded: `sandbox_id` and
 * `sandbox_name` (at most `maxSandboxes` + 1 sandboxes), `resource` (`cpu`, `memory`), `priority` (the
 * configured priorities), `state`, `reason`, `kind`, `outcome` (a few fixed values each). Users are
 * never labels. Usage and limits are ratios 0..1 of the node, as everywhere in the runtime.
 *
 * | series | type | labels |
 * |---|---|---|
 * | `sandbox_info` (1) | gauge | sandbox_id, sandbox_name, parent_id, mode |
 * | `sandbox_priority` | gauge | sandbox_id, sandbox_name |
 * | `sandbox_usage_ratio` | gauge | sandbox_id, sandbox_name, resource |
 * | `sandbox_limit_ratio` | gauge | sandbox_id, sandbox_name, resource, threshold (`low`, `high`) |
 * | `sandbox_state` (1 for the current one) | gauge | sandbox_id, sandbox_name, state (`ok`, `rejecting`, `cancelling`) |
 * | `sandbox_running_tasks`, `sandbox_queued_tasks` | gauge | sandbox_id, sandbox_name |
 * | `sandbox_completions_total`, `sandbox_failures_total` | counter | sandbox_id, sandbox_name |
 * | `sandbox_rejections_total` | counter | sandbox_id, sandbox_name, reason (`cpu`, `memory`, `queue`) |
 * | `sandbox_cancellations_total` | counter | sandbox_id, sandbox_name, resource (`cpu`, `memory`, `shutdown`), kind (`soft`, `hard`) |
 * | `sandbox_would_rejections_total`, `sandbox_would_cancel_intervals_total` | counter | sandbox_id, sandbox_name, resource |
 * | `task_queue_wait_seconds` | histogram | sandbox_id, sandbox_name |
 * | `task_run_seconds` | histogram | sandbox_id, sandbox_name, outcome (`completed`, `cancelled`, `failed`) |
 * | `task_cpu_seconds_total` | counter | sandbox_id, sandbox_name |
 * | `pool_workers`, `pool_busy_workers`, `pool_loading_workers`, `pool_threads`, `pool_spare_workers` | gauge | |
 * | `pool_worker_starts_total`, `pool_workers_replaced_total` | counter | |
 * | `pool_last_replacement_startup_seconds` | gauge | |
 * | `lane_info` | gauge (1) | lane, weight (nice or `idle`), weighted, min_priority (`none`: the lowest lane) |
 * | `lane_workers`, `lane_busy_workers`, `lane_queued_tasks`, `lane_live_workers`, `lane_loading_workers` | gauge | lane |
 * | `lane_workers_replaced_total`, `lane_pipelined_tasks_total`, `lane_stolen_tasks_total` | counter | lane |
 * | `lane_isolation` | gauge (1) | isolation (`weighted`, `unweighted`, `single_lane`) |
 * | `gc_threads` | gauge (1) | mode (`per_isolate`, `shared`) |
 * | `reservation_workers`, `reservation_busy_workers` | gauge | lane, min_priority (`none`: not reserved) |
 * | `scheduler_queued_tasks` | gauge | priority |
 * | `scheduler_dequeued_total`, `scheduler_evicted_total` | counter | priority |
 * | `node_usage_ratio` | gauge | resource (the governor's interval) |
 * | `node_resource_usage_ratio` | gauge | resource (`cpu`, `heap`, `io`: the moving averages sent to a coordinator) |
 * | `node_duress` (0/1), `node_duress_level` (1 for the current one) | gauge | —, level (`none`, `reject`, `cancel`) |
 * | `node_enforcement` (1 for the current one) | gauge | mode |
 * | `node_cores`, `node_running_tasks`, `node_queued_tasks` | gauge | |
 * | `governor_ticks_total`, `governor_soft_cancellations_total`, `governor_hard_cancellations_total`, `governor_rate_limited_total` | counter | |
 * | `governor_tick_seconds` | gauge | quantile (`0.5`, `0.99`; over the runtime's life) |
 * | `governor_cancellation_tokens` | gauge | bucket (`time`, `completions`) |
 * | `governor_interval_seconds` | gauge | |
 *
 * Plus Node's default process metrics (prom-client `collectDefaultMetrics`) under the same prefix
 * (`query_sandbox_process_cpu_user_seconds_total`, `query_sandbox_nodejs_eventloop_lag_seconds`, ...).
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { TaskEndEvent } from '../runtime-options.js';
import { RESOURCES } from '../sandbox/sandbox.js';
import { SnapshotMetrics } from './metric-builders.js';
import type { RuntimeFeed, RuntimeSnapshot } from './runtime-feed.js';
import { type CounterChild, type HistogramChild, TypedCounter, TypedHistogram } from './typed-series.js';

export interface MetricsOptions {
  /** Prefix of every metric name, `[a-zA-Z_:][a-zA-Z0-9_:]*`. @default 'query_sandbox_' */
  readonly prefix?: string;
  /** Node's default process metrics under the prefix. @default true */
  readonly processMetrics?: boolean;
}

/** Buckets of the task histograms, seconds: 1 ms to 1 min. */
export const TASK_SECONDS_BUCKETS = Object.freeze([
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
]);

const STATES = ['ok', 'rejecting', 'cancelling'] as const;
const DURESS_LEVELS = ['none', 'reject', 'cancel'] as const;
const ENFORCEMENT_MODES = ['enabled', 'monitor_only', 'disabled'] as const;

const processRegistries = new Map<string, Registry>();

/**
 * Node's default process metrics under `prefix`, one registry per prefix for the whole process: they
 * describe the process, whatever number of servers it runs, and each `collectDefaultMetrics` starts
 * its own event-loop monitor and GC observer.
 */
export function processMetricsRegistry(prefix: string): Registry {
  let registry = processRegistries.get(prefix);
  if (registry === undefined) {
    registry = new Registry();
    collectDefaultMetrics({ register: registry, prefix });
    processRegistries.set(prefix, registry);
  }
  return registry;
}

/** @throws RangeError for a prefix that is not a valid metric name start. */
export function checkPrefix(prefix: string): string {
  if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(prefix)) {
    throw new RangeError(
      `metrics prefix must match [a-zA-Z_:][a-zA-Z0-9_:]*; received ${JSON.stringify(prefix)}`,
    );
  }
  return prefix;
}

/** The registry of one runtime's metrics. */
export class RuntimeMetrics {
  /** This runtime's series, and the process metrics when asked for (shared, see `processMetricsRegistry`). */
  readonly registry: Registry;
  readonly #feed: RuntimeFeed;

  /** @throws RangeError for a bad prefix. */
  constructor(feed: RuntimeFeed, options: MetricsOptions = {}) {
    const prefix = checkPrefix(options.prefix ?? 'query_sandbox_');
    this.#feed = feed;
    const own = new Registry();
    const m = new SnapshotMetrics<RuntimeSnapshot>(own, prefix, () => feed.snapshot());
    sandboxSeries(m);
    poolSeries(m);
    laneSeries(m);
    reservationSeries(m);
    schedulerSeries(m);
    nodeSeries(m);
    governorSeries(m);
    taskSeries(own, prefix, feed);
    this.registry =
      (options.processMetrics ?? true) ? Registry.merge([own, processMetricsRegistry(prefix)]) : own;
  }

  /** Whether the per-task histograms are fed (the runtime was created with the feed's `onTaskEnd`). */
  get taskHistograms(): boolean {
    return this.#feed.receivesTaskEnds;
  }

  /** The exposition, Prometheus text format 0.0.4. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/** Per-sandbox gauges and counters from `sandboxStats()` and the sandbox list. */
function sandboxSeries(m: SnapshotMetrics<RuntimeSnapshot>): void {
  const each = (
    s: RuntimeSnapshot,
    fn: (labels: { sandbox_id: string; sandbox_name: string }, id: string) => void,
  ) => {
    for (const sandbox of s.sandboxes) fn({ sandbox_id: sandbox.id, sandbox_name: sandbox.name }, sandbox.id);
  };
  const SB = ['sandbox_id', 'sandbox_name'] as const;
  m.gauge(
    'sandbox_info',
    'A sandbox of the tree (1), with its parent and mode.',
    [...SB, 'parent_id', 'mode'],
    (emit, s) => {
      for (const x of s.sandboxes) {
        emit({ sandbox_id: x.id, sandbox_name: x.name, parent_id: x.parentId ?? '', mode: x.mode }, 1);
      }
    },
  );
  m.gauge('sandbox_priority', 'Priority of the sandbox (higher = more important).', SB, (emit, s) => {
    for (const x of s.sandboxes) emit({ sandbox_id: x.id, sandbox_name: x.name }, x.priority);
  });
  m.gauge(
    'sandbox_usage_ratio',
    "Usage of the node's capacity by the sandbox and its descendants over the last governor interval, ratio 0..1.",
    [...SB, 'resource'],
    (emit, s) =>
      each(s, (labels, id) => {
        const usage = s.sandboxStats.get(id)?.usage;
        for (const resource of RESOURCES) emit({ ...labels, resource }, usage?.[resource] ?? 0);
      }),
  );
  m.gauge(
    'sandbox_limit_ratio',
    'Low (reject above) and high (cancel above) limit of the sandbox, ratio 0..1; absent where none is set.',
    [...SB, 'resource', 'threshold'],
    (emit, s) => {
      for (const x of s.sandboxes) {
        for (const resource of RESOURCES) {
          const limit = x.limits[resource];
          if (limit === undefined) continue;
          const labels = { sandbox_id: x.id, sandbox_name: x.name, resource };
          emit({ ...labels, threshold: 'low' }, limit.low);
          emit({ ...labels, threshold: 'high' }, limit.high);
        }
      }
    },
  );
  m.gauge(
    'sandbox_state',
    'Governor state of the sandbox: 1 for the current one.',
    [...SB, 'state'],
    (emit, s) =>
      each(s, (labels, id) => {
        const state = s.sandboxStats.get(id)?.state ?? 'ok';
        for (const x of STATES) emit({ ...labels, state: x }, x === state ? 1 : 0);
      }),
  );
  m.gauge('sandbox_running_tasks', 'Tasks of the sandbox running on a worker.', SB, (emit, s) =>
    each(s, (labels, id) => emit(labels, s.sandboxStats.get(id)?.running ?? 0)),
  );
  m.gauge('sandbox_queued_tasks', 'Tasks of the sandbox waiting for a worker.', SB, (emit, s) =>
    each(s, (labels, id) => emit(labels, s.sandboxStats.get(id)?.queued ?? 0)),
  );
  m.counter('sandbox_completions_total', 'Tasks of the sandbox that completed.', SB, (emit, s) =>
    each(s, (labels, id) => emit(labels, s.sandboxStats.get(id)?.counters.completions ?? 0)),
  );
  m.counter(
    'sandbox_failures_total',
    'Tasks of the sandbox that failed (engine errors, lost workers).',
    SB,
    (emit, s) => each(s, (labels, id) => emit(labels, s.sandboxStats.get(id)?.counters.failures ?? 0)),
  );
  m.counter(
    'sandbox_rejections_total',
    'Requests refused before running (HTTP 429), by reason: a low limit (cpu, memory) or a full queue.',
    [...SB, 'reason'],
    (emit, s) =>
      each(s, (labels, id) => {
        const c = s.sandboxStats.get(id)?.counters;
        if (c === undefined) return;
        emit({ ...labels, reason: 'cpu' }, c.cpu.rejections);
        emit({ ...labels, reason: 'memory' }, c.memory.rejections);
        emit({ ...labels, reason: 'queue' }, c.rejections - c.cpu.rejections - c.memory.rejections);
      }),
  );
  m.counter(
    'sandbox_cancellations_total',
    'Running tasks cancelled, by resource (a high limit, or shutdown) and kind (soft: its signal; hard: its worker terminated).',
    [...SB, 'resource', 'kind'],
    (emit, s) =>
      each(s, (labels, id) => {
        const c = s.sandboxStats.get(id)?.counters;
        if (c === undefined) return;
        let hard = 0;
        let all = 0;
        for (const resource of RESOURCES) {
          const r = c[resource];
          emit({ ...labels, resource, kind: 'soft' }, r.cancellations - r.hardCancellations);
          emit({ ...labels, resource, kind: 'hard' }, r.hardCancellations);
          hard += r.hardCancellations;
          all += r.cancellations;
        }
        const shutdownHard = c.hardCancellations - hard;
        emit({ ...labels, resource: 'shutdown', kind: 'soft' }, c.cancellations - all - shutdownHard);
        emit({ ...labels, resource: 'shutdown', kind: 'hard' }, shutdownHard);
      }),
  );
  m.counter(
    'sandbox_would_rejections_total',
    'Requests a sandbox not acting on its limits (monitor mode, enforcement off) would have rejected.',
    [...SB, 'resource'],
    (emit, s) =>
      each(s, (labels, id) => {
        const c = s.sandboxStats.get(id)?.counters;
        for (const resource of RESOURCES) emit({ ...labels, resource }, c?.[resource].wouldReject ?? 0);
      }),
  );
  m.counter(
    'sandbox_would_cancel_intervals_total',
    'Governor intervals in which a sandbox not acting on its limits was above its high limit.',
    [...SB, 'resource'],
    (emit, s) =>
      each(s, (labels, id) => {
        const c = s.sandboxStats.get(id)?.counters;
        for (const resource of RESOURCES) emit({ ...labels, resource }, c?.[resource].wouldCancel ?? 0);
      }),
  );
}

/** The worker pool as a whole, from `nodeStats()`. */
function poolSeries(m: SnapshotMetrics<RuntimeSnapshot>): void {
  m.gauge('pool_workers', 'Workers alive (loaded, loading, spare).', [], (emit, s) =>
    emit({}, s.node.liveWorkers),
  );
  m.gauge(
    'pool_busy_workers',
    "Tasks handed to workers: running, or prefetched to a busy worker (up to threads plus the lanes' prefetch).",
    [],
    (emit, s) => emit({}, s.node.running),
  );
  m.gauge('pool_loading_workers', 'Workers still loading the engine (replacements).', [], (emit, s) =>
    emit({}, s.node.loadingWorkers),
  );
  m.gauge('pool_threads', 'Tasks that run at once.', [], (emit, s) => emit({}, s.node.threads));
  m.gauge('pool_spare_workers', 'Loaded workers kept beyond the threads, for replacements.', [], (emit, s) =>
    emit({}, s.node.spareWorkers),
  );
  m.counter(
    'pool_worker_starts_total',
    'Workers that finished starting (initial ones and replacements).',
    [],
    (emit, s) => emit({}, s.node.workersStarted),
  );
  m.counter(
    'pool_workers_replaced_total',
    'Replacement workers started after a worker was terminated (hard cancellation, out of memory, crash).',
    [],
    (emit, s) =>
      emit(
        {},
        s.node.lanes.reduce((sum, l) => sum + l.replacedWorkers, 0),
      ),
  );
  m.gauge(
    'pool_last_replacement_startup_seconds',
    'Start-up of the most recent replacement worker (engine loaded); absent before the first.',
    [],
    (emit, s) => {
      if (s.node.lastReplacementStartupMs !== undefined) emit({}, s.node.lastReplacementStartupMs / 1000);
    },
  );
}

/** The pool's lanes (see docs/lanes.md), from `nodeStats().lanes`: one series per lane. */
function laneSeries(m: SnapshotMetrics<RuntimeSnapshot>): void {
  const weightOf = (w: number | 'idle') => (w === 'idle' ? 'idle' : String(w));
  m.gauge(
    'lane_info',
    'One series per lane: its OS weight (nice or idle), whether the weight took (weighted), and its band.',
    ['lane', 'weight', 'weighted', 'min_priority'],
    (emit, s) => {
      for (const l of s.node.lanes) {
        emit(
          {
            lane: l.name,
            weight: weightOf(l.weight),
            weighted: l.weighted ? 'true' : 'false',
            min_priority: l.minPriority === null ? 'none' : String(l.minPriority),
          },
          1,
        );
      }
    },
  );
  // One series per lane, each read from the lane's stats: [kind, name, help, value].
  const perLane: readonly [
    'gauge' | 'counter',
    string,
    string,
    (lane: RuntimeSnapshot['node']['lanes'][number]) => number,
  ][] = [
    [
      'gauge',
      'lane_workers',
      'Tasks the lane runs at once (its workers, spares excluded).',
      (l) => l.workers,
    ],
    [
      'gauge',
      'lane_busy_workers',
      "Tasks handed to the lane's workers, running or prefetched (up to lane_workers plus its prefetch).",
      (l) => l.busy,
    ],
    ['gauge', 'lane_queued_tasks', 'Tasks waiting for a worker of the lane.', (l) => l.queued],
    [
      'gauge',
      'lane_live_workers',
      'Workers of the lane alive (loaded, loading, spare).',
      (l) => l.liveWorkers,
    ],
    [
      'gauge',
      'lane_loading_workers',
      'Workers of the lane still loading the engine (replacements).',
      (l) => l.loadingWorkers,
    ],
    [
      'counter',
      'lane_pipelined_tasks_total',
      'Tasks pipelined to a busy worker of the lane (prefetch), to start as its current one ends.',
      (l) => l.pipelinedTasks,
    ],
    [
      'counter',
      'lane_stolen_tasks_total',
      'Pipelined tasks taken back before they began and handed to another worker of the lane.',
      (l) => l.stolenTasks,
    ],
    [
      'counter',
      'lane_workers_replaced_total',
      'Replacement workers the lane started (hard cancellation, out of memory, crash).',
      (l) => l.replacedWorkers,
    ],
  ];
  for (const [kind, name, help, value] of perLane) {
    m[kind](name, help, ['lane'], (emit, s) => {
      for (const l of s.node.lanes) emit({ lane: l.name }, value(l));
    });
  }
  m.gauge(
    'lane_isolation',
    'What the lanes give (1 for the current one): weighted, unweighted or single_lane.',
    ['isolation'],
    (emit, s) => emit({ isolation: s.node.isolation }, 1),
  );
  m.gauge(
    'gc_threads',
    'Where the isolates collect garbage (1 for the current one): per_isolate (node --single-threaded-gc) or shared.',
    ['mode'],
    (emit, s) => emit({ mode: s.node.gcThreads }, 1),
  );
}

/** Reserved workers inside each lane (`schedulerStats().lanes[i].reservations`: the query-priority reservations). */
function reservationSeries(m: SnapshotMetrics<RuntimeSnapshot>): void {
  const minPriority = (p: number | null) => (p === null ? 'none' : String(p));
  m.gauge(
    'reservation_workers',
    'Workers of the lane reserved for tasks at or above min_priority (none: the unreserved rest).',
    ['lane', 'min_priority'],
    (emit, s) => {
      for (const lane of s.scheduler.lanes)
        for (const r of lane.reservations)
          emit({ lane: lane.name, min_priority: minPriority(r.minPriority) }, r.workers);
    },
  );
  m.gauge(
    'reservation_busy_workers',
    'Of reservation_workers, those running a task.',
    ['lane', 'min_priority'],
    (emit, s) => {
      for (const lane of s.scheduler.lanes)
        for (const r of lane.reservations)
          emit({ lane: lane.name, min_priority: minPriority(r.minPriority) }, r.busy);
    },
  );
}

/** Queue depth and flow per priority, from `schedulerStats().priorities`. */
function schedulerSeries(m: SnapshotMetrics<RuntimeSnapshot>): void {
  m.gauge('scheduler_queued_tasks', 'Tasks waiting for a worker, by priority.', ['priority'], (emit, s) => {
    for (const p of s.scheduler.priorities) emit({ priority: p.priority }, p.queued);
  });
  m.counter('scheduler_dequeued_total', 'Tasks handed to a worker, by priority.', ['priority'], (emit, s) => {
    for (const p of s.scheduler.priorities) emit({ priority: p.priority }, p.dequeued);
  });
  m.counter(
    'scheduler_evicted_total',
    'Waiting tasks shed by a full queue bound, by priority.',
    ['priority'],
    (emit, s) => {
      for (const p of s.scheduler.priorities) emit({ priority: p.priority }, p.evicted);
    },
  );
}

/** The node: usage, duress, enforcement. */
function nodeSeries(m: SnapshotMetrics<RuntimeSnapshot>): void {
  m.gauge('node_cores', 'Cores the node counts as its CPU capacity.', [], (emit, s) =>
    emit({}, s.node.cores),
  );
  m.gauge(
    'node_usage_ratio',
    "The node's usage over the last governor interval (process CPU / cores; workers' heap / their limits), ratio 0..1.",
    ['resource'],
    (emit, s) => {
      for (const resource of RESOURCES) emit({ resource }, s.node.usage[resource]);
    },
  );
  m.gauge(
    'node_resource_usage_ratio',
    'Moving averages sent to a coordinator in Resource_Usage_Stats (cpu, heap, io), ratio 0..1; io absent where not measured.',
    ['resource'],
    (emit, s) => {
      const u = s.resourceUsage;
      emit({ resource: 'cpu' }, u.cpu);
      emit({ resource: 'heap' }, u.heap);
      if (u.ioSource !== 'none') emit({ resource: 'io' }, u.io);
    },
  );
  m.gauge('node_duress', 'The node is in duress (1) or not (0).', [], (emit, s) =>
    emit({}, s.node.duress ? 1 : 0),
  );
  m.gauge('node_duress_level', 'Duress level: 1 for the current one.', ['level'], (emit, s) => {
    for (const level of DURESS_LEVELS) emit({ level }, s.governorSnapshot.duressLevel === level ? 1 : 0);
  });
  m.gauge(
    'node_enforcement',
    'Enforcement mode of the governor: 1 for the current one.',
    ['mode'],
    (emit, s) => {
      for (const mode of ENFORCEMENT_MODES) emit({ mode }, s.node.enforcement === mode ? 1 : 0);
    },
  );
  m.gauge('node_running_tasks', 'Tasks running on the node.', [], (emit, s) => emit({}, s.node.running));
  m.gauge('node_queued_tasks', 'Tasks waiting for a worker on the node.', [], (emit, s) =>
    emit({}, s.node.queued),
  );
}

/** The governor's counters and tick cost, from `governorStats()`. */
function governorSeries(m: SnapshotMetrics<RuntimeSnapshot>): void {
  m.counter('governor_ticks_total', 'Governor intervals run.', [], (emit, s) => emit({}, s.governor.ticks));
  m.gauge(
    'governor_tick_seconds',
    'Cost of one governor tick (sample, decide, publish, act), quantile over the runtime so far.',
    ['quantile'],
    (emit, s) => {
      if (s.governor.tickCostSamples === 0) return;
      emit({ quantile: '0.5' }, s.governor.tickMedianUs / 1e6);
      emit({ quantile: '0.99' }, s.governor.tickP99Us / 1e6);
    },
  );
  m.gauge('governor_interval_seconds', 'Governor interval.', [], (emit, s) => emit({}, s.intervalMs / 1000));
  m.counter('governor_soft_cancellations_total', 'Soft cancellations started.', [], (emit, s) =>
    emit({}, s.governor.softCancellations),
  );
  m.counter('governor_hard_cancellations_total', 'Workers terminated by hard cancellation.', [], (emit, s) =>
    emit({}, s.governor.hardCancellations),
  );
  m.counter(
    'governor_rate_limited_total',
    'Tasks whose cancellation the token buckets held back at least once.',
    [],
    (emit, s) => emit({}, s.governor.rateLimited),
  );
  m.gauge(
    'governor_cancellation_tokens',
    'Tokens left in the cancellation buckets.',
    ['bucket'],
    (emit, s) => {
      emit({ bucket: 'time' }, s.governor.tokens.time);
      emit({ bucket: 'completions' }, s.governor.tokens.completions);
    },
  );
}

/** Per-sandbox task histograms and CPU time, fed by task ends (never by scrapes). */
function taskSeries(registry: Registry, prefix: string, feed: RuntimeFeed): void {
  // Series of deleted sandboxes go at the next scrape: the labels stay bounded by the sandbox count.
  const prune = () => {
    const present = new Set(feed.snapshot().sandboxes.map((x) => x.id));
    for (const id of children.keys()) if (!present.has(id)) children.delete(id);
    const keep = (labels: Readonly<Record<string, string>>) => present.has(labels['sandbox_id']!);
    wait.retain(keep);
    run.retain(keep);
    cpu.retain(keep);
  };
  const wait = new TypedHistogram(
    registry,
    `${prefix}task_queue_wait_seconds`,
    'Time a task waited for a worker.',
    TASK_SECONDS_BUCKETS,
    prune,
  );
  const run = new TypedHistogram(
    registry,
    `${prefix}task_run_seconds`,
    'Time from a task being handed to a worker to its end, by outcome (completed, cancelled, failed).',
    TASK_SECONDS_BUCKETS,
    prune,
  );
  const cpu = new TypedCounter(
    registry,
    `${prefix}task_cpu_seconds_total`,
    "CPU time of the tasks' worker threads while they ran.",
    prune,
  );
  interface Children {
    readonly name: string;
    readonly wait: HistogramChild;
    readonly cpu: CounterChild;
    readonly run: Map<TaskEndEvent['outcome'], HistogramChild>;
  }
  // Resolved once per sandbox (and outcome), rebuilt when its name changes.
  const children = new Map<string, Children>();
  feed.onTask((event, name) => {
    let c = children.get(event.sandboxId);
    if (c === undefined || c.name !== name) {
      const labels = { sandbox_id: event.sandboxId, sandbox_name: name };
      c = { name, wait: wait.child(labels), cpu: cpu.child(labels), run: new Map() };
      children.set(event.sandboxId, c);
    }
    c.wait.observe(event.waitMs / 1000);
    c.cpu.inc(event.cpuTimeNs / 1e9);
    let r = c.run.get(event.outcome);
    if (r === undefined) {
      r = run.child({ sandbox_id: event.sandboxId, sandbox_name: name, outcome: event.outcome });
      c.run.set(event.outcome, r);
    }
    r.observe(event.runMs / 1000);
  });
}
