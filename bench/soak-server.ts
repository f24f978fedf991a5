/**
 * The server of the soak benchmark (`bench/soak.ts` starts it as a child process with an IPC
 * channel): the default runtime (`createRuntime` defaults, the bundled `config/sandboxes.json`, the
 * built-in engine with writable indices) behind the default HTTP server, as `query-sandbox serve`
 * builds them, plus an `onTaskEnd` hook that keeps per-sandbox histograms of queue wait and run time,
 * and the main thread's event-loop delay (p99, max), the tasks that ended more than 5 s after they were
 * queued (wait, run, CPU, lane; 20 at most) and the worker replacements (when, lane, start-up ms), which
 * the parent collects once a minute (`{type: 'minute'}` -> `{type: 'minute', ...}`, then reset).
 * Differences from `serve`: sandbox and query-priority stores in memory (nothing persists between
 * runs), no start-up log. Argument: the data directory; `--cache-dir DIR`.
 */
import diagnostics_channel from 'node:diagnostics_channel';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import * as hdr from 'hdr-histogram-js';
import { ChannelName, type WorkerReplacedEvent } from '../src/diagnostics.js';
import { createRuntime, type TaskEndEvent } from '../src/runtime.js';
import { buildHttpServer } from '../src/server/http-server.js';

const dataDir = process.argv[2] ?? path.resolve('.query-sandbox/bench-soak');
const cacheAt = process.argv.indexOf('--cache-dir');
const cacheDir = cacheAt < 0 ? undefined : process.argv[cacheAt + 1];
const sandboxFile = fileURLToPath(new URL('../../config/sandboxes.json', import.meta.url));
const token = process.env['QUERY_SANDBOX_ADMIN_TOKEN'];

const histogram = () =>
  hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 2,
  });

class Window {
  wait = histogram();
  run = histogram();
  outcomes = { completed: 0, cancelled: 0, failed: 0 };

  record(e: TaskEndEvent): void {
    this.wait.recordValue(Math.max(1, Math.round(e.waitMs * 1000)));
    this.run.recordValue(Math.max(1, Math.round(e.runMs * 1000)));
    this.outcomes[e.outcome]++;
  }

  summary() {
    const ms = (h: hdr.Histogram, p: number) =>
      h.totalCount === 0 ? 0 : Math.min(h.maxValue, h.getValueAtPercentile(p)) / 1000;
    return {
      tasks: this.wait.totalCount,
      outcomes: this.outcomes,
      waitP50Ms: ms(this.wait, 50),
      waitP99Ms: ms(this.wait, 99),
      waitMaxMs: this.wait.totalCount === 0 ? 0 : this.wait.maxValue / 1000,
      runP50Ms: ms(this.run, 50),
      runP99Ms: ms(this.run, 99),
      runMaxMs: this.run.totalCount === 0 ? 0 : this.run.maxValue / 1000,
    };
  }
}

let windows = new Map<string, Window>();
/** A task that ended this minute more than LATE_TASK_MS after it was queued (wait + run); the 20 latest are kept. */
interface LateTask {
  readonly sandboxId: string;
  readonly lane: string;
  readonly outcome: string;
  readonly waitMs: number;
  readonly runMs: number;
  readonly cpuMs: number;
  /** When it ended, epoch ms (the driver's clock too). */
  readonly endedAt: number;
}
const LATE_TASK_MS = 5000;
let lateTasks: LateTask[] = [];
/** Worker replacements of the minute: when loaded (epoch ms), lane, start-up ms. */
let replacements: Array<{ readonly at: number; readonly lane: string; readonly startupMs: number }> = [];
const replacedChannel = diagnostics_channel.channel(ChannelName.WORKER_REPLACED);
const onReplaced = (message: unknown) => {
  const e = message as WorkerReplacedEvent;
  replacements.push({ at: Date.now(), lane: e.lane, startupMs: e.startupMs });
};
replacedChannel.subscribe(onReplaced);
// The main thread's event-loop delay: the HTTP edge, bulk parsing and refreshes share it with every
// task's dispatch and end, so a stall there lengthens every sandbox's latency, whatever its lane.
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();
const onTaskEnd = (e: TaskEndEvent) => {
  let w = windows.get(e.sandboxId);
  if (w === undefined) {
    w = new Window();
    windows.set(e.sandboxId, w);
  }
  w.record(e);
  // The 20 latest of the minute.
  if (e.waitMs + e.runMs > LATE_TASK_MS) {
    lateTasks.push({
      sandboxId: e.sandboxId,
      lane: e.lane,
      outcome: e.outcome,
      waitMs: e.waitMs,
      runMs: e.runMs,
      cpuMs: e.cpuTimeNs / 1e6,
      endedAt: Date.now(),
    });
    lateTasks.sort((a, b) => b.waitMs + b.runMs - (a.waitMs + a.runMs));
    if (lateTasks.length > 20) lateTasks.pop();
  }
};

const runtime = await createRuntime({
  sandboxes: sandboxFile,
  dataDir,
  ...(cacheDir !== undefined ? { cacheDir } : {}),
  nodeId: 'soak',
  onTaskEnd,
});
const app = buildHttpServer(runtime, { adminToken: token });
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
const port = typeof address === 'object' && address !== null ? address.port : 0;
process.send?.({ type: 'query-sandbox:listening', nodeId: 'soak', port });

process.on('message', async (message: { type?: string }) => {
  if (message?.type === 'minute') {
    const done = windows;
    windows = new Map();
    const late = lateTasks;
    lateTasks = [];
    const replaced = replacements;
    replacements = [];
    const mem = process.memoryUsage();
    const loop = { p99Ms: loopDelay.percentile(99) / 1e6, maxMs: loopDelay.max / 1e6 };
    loopDelay.reset();
    const counters = Object.fromEntries(
      [...runtime.sandboxStats()].map(([id, s]) => [
        id,
        { ...s.counters, queued: s.queued, running: s.running },
      ]),
    );
    process.send?.({
      type: 'minute',
      sandboxes: Object.fromEntries([...done].map(([id, w]) => [id, w.summary()])),
      counters,
      loop,
      memory: {
        rss: mem.rss,
        heapUsed: mem.heapUsed,
        external: mem.external,
        arrayBuffers: mem.arrayBuffers,
      },
      workers: {
        live: runtime.nodeStats().liveWorkers,
        started: runtime.nodeStats().workersStarted,
        lanes: runtime
          .nodeStats()
          .lanes.map((l) => ({
            name: l.name,
            workers: l.workers,
            spare: l.spareWorkers,
            live: l.liveWorkers,
          })),
      },
      governor: runtime.governorStats(),
      lateTasks: late,
      replacements: replaced,
    });
  } else if (message?.type === 'stop') {
    await app.close();
    await runtime.close();
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
