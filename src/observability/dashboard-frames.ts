/**
 * Frames of the live dashboard (`GET /_dashboard`): one plain JSON object per second, built once and
 * sent to every connected page (`FrameBroadcaster`), so a page costs a write, not a reading.
 *
 * A node's frame (`kind: 'node'`), from its `RuntimeFeed`: per sandbox its usage and limits (ratios
 * 0..1), state, running and queued tasks, rejections, cancellations and completions per second since
 * the previous frame, and the p50/p99 latency (wait + run, ms) of the tasks that completed since the
 * previous frame (`null` when none did, or when the runtime does not feed task ends); the node's
 * usage, duress and enforcement; the workers (live, busy, loading, replaced); reserved workers; the
 * queue depth per priority.
 *
 * A coordinator's frame (`kind: 'coordinator'`), from its `CoordinatorFeed`: searches, admission
 * rejections and failures per second, and per data node its last stats (state, age, usage, duress),
 * requests, failures and admission rejections per second, shards in flight, rank, and the address of
 * its own dashboard.
 */
import * as hdr from 'hdr-histogram-js';
import type { CoordinatorStats } from '../cluster/coordinator.js';
import type { Resource } from '../sandbox/sandbox.js';
import { type CoordinatorFeed, ranksOf } from './coordinator-metrics.js';
import type { RuntimeFeed, RuntimeSnapshot } from './runtime-feed.js';

export interface SandboxFrame {
  readonly id: string;
  readonly name: string;
  readonly mode: string;
  readonly priority: number;
  readonly state: 'ok' | 'rejecting' | 'cancelling';
  readonly usage: { readonly cpu: number; readonly memory: number };
  readonly limits: {
    readonly cpu: { readonly low: number; readonly high: number } | null;
    readonly memory: { readonly low: number; readonly high: number } | null;
  };
  readonly running: number;
  readonly queued: number;
  readonly rejectionsPerSecond: number;
  readonly cancellationsPerSecond: number;
  readonly completionsPerSecond: number;
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly count: number } | null;
}

export interface NodeFrame {
  readonly kind: 'node';
  readonly nodeId: string;
  /** Wall clock, ms since the epoch. */
  readonly timeMs: number;
  readonly taskLatencies: boolean;
  readonly node: {
    readonly cpu: number;
    readonly memory: number;
    readonly duress: boolean;
    readonly duressLevel: string;
    readonly enforcement: string;
    readonly cores: number;
    readonly running: number;
    readonly queued: number;
  };
  readonly workers: {
    readonly live: number;
    readonly busy: number;
    readonly loading: number;
    readonly threads: number;
    readonly spare: number;
    readonly replaced: number;
  };
  /** What the lanes give (`weighted`, `unweighted`, `single_lane`; see docs/lanes.md). */
  readonly isolation: string;
  readonly lanes: readonly {
    readonly name: string;
    readonly weight: number | 'idle';
    readonly weighted: boolean;
    readonly workers: number;
    readonly busy: number;
    readonly queued: number;
    readonly loading: number;
  }[];
  readonly reservations: readonly {
    readonly lane: string;
    readonly minPriority: number | null;
    readonly workers: number;
    readonly busy: number;
  }[];
  readonly priorities: readonly { readonly priority: number; readonly queued: number }[];
  readonly governor: { readonly tickMedianUs: number; readonly tickP99Us: number };
  readonly sandboxes: readonly SandboxFrame[];
}

export interface DataNodeFrame {
  readonly id: string;
  readonly url: string;
  readonly dashboardUrl: string;
  readonly state: 'fresh' | 'stale' | 'unknown';
  readonly ageMs: number | null;
  readonly cpu: number | null;
  readonly heap: number | null;
  readonly io: number | null;
  readonly duress: boolean;
  readonly requestsPerSecond: number;
  readonly failuresPerSecond: number;
  readonly admissionRejectionsPerSecond: number;
  readonly outstandingShards: number;
  readonly rank: number | null;
}

export interface CoordinatorFrame {
  readonly kind: 'coordinator';
  readonly nodeId: string;
  readonly timeMs: number;
  readonly searchesPerSecond: number;
  readonly rejectionsPerSecond: number;
  readonly failuresPerSecond: number;
  readonly dataNodes: readonly DataNodeFrame[];
}

export type DashboardFrame = NodeFrame | CoordinatorFrame;

/** Something that makes a frame on demand. */
export interface FrameSource {
  /** Starts or stops what only the dashboard needs (latency windows) while pages are connected. */
  setActive(active: boolean): void;
  frame(): DashboardFrame;
}

const round = (value: number, digits = 4) => Math.round(value * 10 ** digits) / 10 ** digits;

/** A per-second rate from two running totals (0 on the first frame or after a reset). */
function rate(now: number, before: number | undefined, seconds: number): number {
  if (before === undefined || seconds <= 0 || now < before) return 0;
  return round((now - before) / seconds, 3);
}

function latencyHistogram(): hdr.Histogram {
  return hdr.build({
    bitBucketSize: 64,
    autoResize: true,
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 2,
  });
}

/** Frames of a single node or data node. */
export class NodeFrameSource implements FrameSource {
  readonly #feed: RuntimeFeed;
  #active = false;
  /** Latencies (µs) of tasks completed since the last frame, per sandbox id. */
  readonly #latency = new Map<string, hdr.Histogram>();
  #previous:
    | { readonly atMs: number; readonly totals: Map<string, readonly [number, number, number]> }
    | undefined;

  constructor(feed: RuntimeFeed) {
    this.#feed = feed;
    feed.onTask((event) => {
      if (!this.#active || event.outcome !== 'completed') return;
      let h = this.#latency.get(event.sandboxId);
      if (h === undefined) {
        h = latencyHistogram();
        this.#latency.set(event.sandboxId, h);
      }
      h.recordValue(Math.max(1, Math.round((event.waitMs + event.runMs) * 1000)));
    });
  }

  setActive(active: boolean): void {
    this.#active = active;
    if (!active) {
      this.#latency.clear();
      this.#previous = undefined;
    }
  }

  frame(): NodeFrame {
    return this.#frameOf(this.#feed.snapshot());
  }

  #frameOf(s: RuntimeSnapshot): NodeFrame {
    const seconds = this.#previous === undefined ? 0 : (s.atMs - this.#previous.atMs) / 1000;
    const totals = new Map<string, readonly [number, number, number]>();
    const sandboxes: SandboxFrame[] = [];
    for (const sandbox of s.sandboxes) {
      const stats = s.sandboxStats.get(sandbox.id);
      const c = stats?.counters;
      const now = [c?.rejections ?? 0, c?.cancellations ?? 0, c?.completions ?? 0] as const;
      totals.set(sandbox.id, now);
      const before = this.#previous?.totals.get(sandbox.id);
      const h = this.#latency.get(sandbox.id);
      const count = h?.totalCount ?? 0;
      const limitOf = (resource: Resource) => {
        const l = sandbox.limits[resource];
        return l === undefined ? null : { low: l.low, high: l.high };
      };
      sandboxes.push({
        id: sandbox.id,
        name: sandbox.name,
        mode: sandbox.mode,
        priority: sandbox.priority,
        state: stats?.state ?? 'ok',
        usage: { cpu: round(stats?.usage.cpu ?? 0), memory: round(stats?.usage.memory ?? 0) },
        limits: { cpu: limitOf('cpu'), memory: limitOf('memory') },
        running: stats?.running ?? 0,
        queued: stats?.queued ?? 0,
        rejectionsPerSecond: rate(now[0], before?.[0], seconds),
        cancellationsPerSecond: rate(now[1], before?.[1], seconds),
        completionsPerSecond: rate(now[2], before?.[2], seconds),
        latencyMs:
          count === 0
            ? null
            : {
                p50: round(Math.min(h!.maxValue, h!.getValueAtPercentile(50)) / 1000, 3),
                p99: round(Math.min(h!.maxValue, h!.getValueAtPercentile(99)) / 1000, 3),
                count,
              },
      });
      h?.reset();
    }
    this.#previous = { atMs: s.atMs, totals };
    const n = s.node;
    return {
      kind: 'node',
      nodeId: n.nodeId,
      timeMs: s.timeMs,
      taskLatencies: this.#feed.receivesTaskEnds,
      node: {
        cpu: round(n.usage.cpu),
        memory: round(n.usage.memory),
        duress: n.duress,
        duressLevel: s.governorSnapshot.duressLevel,
        enforcement: n.enforcement,
        cores: n.cores,
        running: n.running,
        queued: n.queued,
      },
      workers: {
        live: n.liveWorkers,
        busy: n.running,
        loading: n.loadingWorkers,
        threads: n.threads,
        spare: n.spareWorkers,
        replaced: n.lanes.reduce((sum, l) => sum + l.replacedWorkers, 0),
      },
      isolation: n.isolation,
      lanes: n.lanes.map((l) => ({
        name: l.name,
        weight: l.weight,
        weighted: l.weighted,
        workers: l.workers,
        busy: l.busy,
        queued: l.queued,
        loading: l.loadingWorkers,
      })),
      reservations: s.scheduler.lanes.flatMap((l) =>
        l.reservations.map((r) => ({
          lane: l.name,
          minPriority: r.minPriority,
          workers: r.workers,
          busy: r.busy,
        })),
      ),
      priorities: s.scheduler.priorities.map((p) => ({ priority: p.priority, queued: p.queued })),
      governor: {
        tickMedianUs: round(s.governor.tickMedianUs, 1),
        tickP99Us: round(s.governor.tickP99Us, 1),
      },
      sandboxes,
    };
  }
}

/** Frames of a coordinator and its data nodes. */
export class CoordinatorFrameSource implements FrameSource {
  readonly #feed: CoordinatorFeed;
  #previous: { readonly atMs: number; readonly stats: CoordinatorStats } | undefined;

  constructor(feed: CoordinatorFeed) {
    this.#feed = feed;
  }

  setActive(active: boolean): void {
    if (!active) this.#previous = undefined;
  }

  frame(): CoordinatorFrame {
    const atMs = performance.now();
    const s = this.#feed.snapshot();
    const p = this.#previous;
    const seconds = p === undefined ? 0 : (atMs - p.atMs) / 1000;
    const ranks = ranksOf(s);
    const before = new Map(p?.stats.dataNodes.map((n) => [n.nodeId, n]));
    const frame: CoordinatorFrame = {
      kind: 'coordinator',
      nodeId: s.nodeId,
      timeMs: Date.now(),
      searchesPerSecond: rate(s.searches.total, p?.stats.searches.total, seconds),
      rejectionsPerSecond: rate(s.searches.rejected, p?.stats.searches.rejected, seconds),
      failuresPerSecond: rate(s.searches.failed, p?.stats.searches.failed, seconds),
      dataNodes: s.dataNodes.map((n) => {
        const b = before.get(n.nodeId);
        const known = n.usage.state !== 'unknown' ? n.usage : undefined;
        const rejections = n.admissionRejections.cpu + n.admissionRejections.heap;
        return {
          id: n.nodeId,
          url: n.url,
          dashboardUrl: `${n.url.replace(/\/$/, '')}/_dashboard`,
          state: n.usage.state,
          ageMs: known === undefined ? null : known.ageMs,
          cpu: known === undefined ? null : round(known.stats.cpu),
          heap: known === undefined ? null : round(known.stats.heap),
          io: known?.stats.io === undefined ? null : round(known.stats.io),
          duress: known !== undefined && known.state === 'fresh' && known.duress,
          requestsPerSecond: rate(n.requests, b?.requests, seconds),
          failuresPerSecond: rate(n.failures, b?.failures, seconds),
          admissionRejectionsPerSecond: rate(
            rejections,
            b === undefined ? undefined : b.admissionRejections.cpu + b.admissionRejections.heap,
            seconds,
          ),
          outstandingShards: n.outstandingShards,
          rank: ranks.has(n.nodeId) ? round(ranks.get(n.nodeId)!, 3) : null,
        };
      }),
    };
    this.#previous = { atMs, stats: s };
    return frame;
  }
}

/** A connected page: something a serialised frame can be written to. */
export interface FrameClient {
  write(chunk: string): void;
}

/**
 * Sends one frame every `intervalMs` to every client, only while at least one is connected: the
 * frame is built and serialised once per tick whatever the number of pages.
 */
export class FrameBroadcaster {
  readonly #source: FrameSource;
  readonly #intervalMs: number;
  readonly #clients = new Set<FrameClient>();
  #timer: NodeJS.Timeout | undefined;
  #frames = 0;
  /** The last frame sent, for a page that connects between ticks. */
  #last = '';

  /** @throws RangeError for an interval outside 50..60000 ms. */
  constructor(source: FrameSource, intervalMs = 1000) {
    if (!(intervalMs >= 50 && intervalMs <= 60_000)) {
      throw new RangeError(`intervalMs must be in 50..60000; received ${intervalMs}`);
    }
    this.#source = source;
    this.#intervalMs = intervalMs;
  }

  get clients(): number {
    return this.#clients.size;
  }

  /** Frames built so far (one when the first page connects, then one per tick while any is). */
  get frames(): number {
    return this.#frames;
  }

  /** Adds a page: it gets a frame at once (the last one sent, if any), then one per tick. */
  add(client: FrameClient): void {
    const first = this.#clients.size === 0;
    this.#clients.add(client);
    if (first) {
      this.#source.setActive(true);
      this.#timer = setInterval(() => this.#tick(), this.#intervalMs);
      this.#timer.unref();
      this.#last = this.#serialise();
    }
    client.write(this.#last);
  }

  remove(client: FrameClient): void {
    if (!this.#clients.delete(client) || this.#clients.size > 0) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#source.setActive(false);
  }

  /** Stops the timer and forgets every client. */
  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#clients.clear();
    this.#source.setActive(false);
  }

  #serialise(): string {
    this.#frames++;
    return `data: ${JSON.stringify(this.#source.frame())}\n\n`;
  }

  #tick(): void {
    const chunk = this.#serialise();
    this.#last = chunk;
    for (const client of this.#clients) client.write(chunk);
  }
}
