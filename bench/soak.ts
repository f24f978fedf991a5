/**
 * Soak: the default server under a moderate mixed load for `--minutes` (default 20), one index
 * growing by bulk all along, as in the issue that asked for graceful overload:
 * - four users in three sandboxes, about 20 searches a second, open-loop (latency from each request's
 *   intended send time; client time-out 30 s, which aborts the request):
 *   `dash_ops` (sandbox `dashboards`, priority 20, foreground lane) 8/s cheap `match` queries on the
 *   corpus; `analyst_ann` (`analysts`, 5) 3/s fuzzy queries on the growing index and the corpus;
 *   `alice` (no sandbox: the root, 10) 5/s `match` on the growing index; `bob` (root) 4/s fuzzy and
 *   prefix queries on the growing index;
 * - 2 bulks a second of 100 documents into `soak-docs` (auto ids, refreshed every second), sent with
 *   the admin token;
 * - stats polling: `GET /_nodes/stats` and `GET /_sandbox/_stats` every 2 s.
 * The growing index makes its searches slower minute by minute, so the offered load passes capacity
 * somewhere along the way (on 2 cores here). A first `--warmup-seconds` (default 30) of the same load
 * is not counted.
 *
 * Per minute: p50/p99 of answered searches per sandbox, queue wait p50/p99/max per sandbox (the
 * server's own figures, from `onTaskEnd`), 429s by reason, client time-outs, bulk latency and
 * refusals, node CPU usage (the server process's CPU / cores, pidusage), the main thread's event-loop
 * delay (p99, max), RSS and the main thread's heap. Checks at the end: the dashboards p99 of every minute within 2x of its first minute's, and no
 * answer later than the queue-wait bound plus one task (per minute: the longest answered latency
 * against the bound plus the longest task run that minute; and the longest server-side queue wait
 * against the bound).
 *
 * The server is `bench/soak-server.ts` in a child process: the default runtime and HTTP server, with
 * an `onTaskEnd` hook for the queue-wait figures.
 *
 * Prints a line per minute, then the table, `check 1 PASS|FAIL`, `check 2 PASS|FAIL` and
 * `soak N min: PASS|FAIL` (exit code 1 on FAIL), the machine's load average before and after.
 *
 * Per minute it also lists the answers later than the queue-wait bound (sent when, status, latency,
 * the answer's `took`), the server's tasks that ended more than 5 s after they were queued (wait, run
 * and CPU: a run far above its CPU waited somewhere after dispatch) and the worker replacements (when,
 * lane, load time), to tell where a late answer's time went.
 *
 * Usage: `npm run bench:soak` (20 minutes), `npm run bench:soak -- --minutes 4` (`--warmup-seconds N`;
 * `--prefill-docs N`: index N documents first, in bulks of 1,000, so a large index is there from the
 * start; each worker's first task then replays them all (tens of seconds on a busy machine), so give it
 * a longer `--warmup-seconds`; `--bulks-per-second N`, default 2).
 * Run it through `/work/tools/bench` on a shared machine. Writes `bench/results/soak.json`.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import * as hdr from 'hdr-histogram-js';
import pidusage from 'pidusage';
import { printTable, writeResult } from './harness.js';
import { BENCH_ADMIN_TOKEN, benchDataDir } from './server-process.js';

const SERVER = fileURLToPath(new URL('./soak-server.js', import.meta.url));
const CLIENT_TIMEOUT_MS = 30_000;
/** The default queue-wait bound of every bundled sandbox (none sets its own): `maxQueueWaitMs`. */
const QUEUE_WAIT_BOUND_MS = 5000;
/** Timer and event-loop slack allowed on top of the bound in check 2, ms. */
const SLACK_MS = 250;
const INDEX = 'soak-docs';
const DOCS_PER_BULK = 100;
/** Bulks a second into INDEX (`--bulks-per-second`, default 2). */
let bulksPerSecond = 2;
/** Answers later than this are listed one by one per minute (20 at most), ms. */
const LATE_ANSWER_MS = QUEUE_WAIT_BOUND_MS;

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]);
  if (!(n > 0)) throw new Error(`${name} must be a positive number; received ${process.argv[i + 1]}`);
  return n;
}

// Words of the generated documents: the queries' words among a fixed vocabulary, so that matches grow with the index.
const QUERY_WORDS = [
  'money',
  'offer',
  'free',
  'meeting',
  'report',
  'linux',
  'update',
  'click',
  'business',
  'opportunity',
  'investment',
  'lottery',
  'winner',
  'claim',
  'prize',
  'mortgage',
  'rate',
  'approved',
  'account',
  'server',
];
const VOCABULARY = [
  ...QUERY_WORDS,
  ...Array.from({ length: 1480 }, (_, i) => {
    const syllables = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'pe', 'da', 'go', 'fi'];
    let w = '';
    for (let n = i + 7; n > 0; n = Math.floor(n / 12)) w += syllables[n % 12];
    return w;
  }),
];
let seed = 12345;
const random = () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x80000000;
};
const words = (n: number) =>
  Array.from({ length: n }, () => VOCABULARY[Math.floor(random() ** 2 * VOCABULARY.length)]).join(' ');

function bulkBody(): string {
  let out = '';
  for (let i = 0; i < DOCS_PER_BULK; i++) {
    out += '{"index":{}}\n';
    out += `${JSON.stringify({ subject: words(5), from: `user${Math.floor(random() * 500)}@example.com`, body: words(14), date: Date.now() })}\n`;
  }
  return out;
}

interface User {
  readonly user: string;
  readonly sandbox: string;
  readonly perSecond: number;
  readonly index: string;
  readonly body: (i: number) => unknown;
}

const USERS: readonly User[] = [
  {
    user: 'dash_ops',
    sandbox: 'dashboards',
    perSecond: 8,
    index: 'spam-*,easy-ham-*',
    body: (i) => ({ query: { match: { subject: QUERY_WORDS[i % 8] } }, size: 5 }),
  },
  {
    user: 'analyst_ann',
    sandbox: 'analysts',
    perSecond: 3,
    index: `${INDEX},spam-*`,
    body: (i) => ({
      query: {
        match: { body: { query: ['mony ofer', 'bussines oportunity', 'lotery winnr'][i % 3], fuzziness: 2 } },
      },
      size: 5,
    }),
  },
  {
    user: 'alice',
    sandbox: '_root',
    perSecond: 5,
    index: INDEX,
    body: (i) => ({ query: { match: { body: QUERY_WORDS[i % QUERY_WORDS.length] } }, size: 10 }),
  },
  {
    user: 'bob',
    sandbox: '_root',
    perSecond: 4,
    index: INDEX,
    body: (i) =>
      i % 2 === 0
        ? { query: { match: { subject: { query: 'mortgaeg aproved', fuzziness: 1 } } }, size: 10 }
        : { query: { prefix: { body: ['mo', 'cl', 'ra'][i % 3] } }, size: 10 },
  },
];
const SANDBOXES = ['dashboards', 'analysts', '_root'];

const histogram = () =>
  hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 2,
  });

/** One minute of client-side figures. */
class Minute {
  readonly ok = new Map(SANDBOXES.map((s) => [s, histogram()]));
  readonly refused = new Map<string, number>();
  readonly refusedBySandbox = new Map(SANDBOXES.map((s) => [s, 0]));
  readonly answered = histogram();
  timeouts = 0;
  errors = 0;
  sent = 0;
  bulks = 0;
  bulkRefused = 0;
  bulkErrors = 0;
  readonly bulkLatency = histogram();
  /** Answers later than LATE_ANSWER_MS: when sent (epoch ms), who, status, latency and the answer's `took`. */
  readonly late: Array<{
    sentAt: number;
    user: string;
    sandbox: string;
    status: number;
    latencyMs: number;
    tookMs: number | undefined;
    reason: string | undefined;
  }> = [];
  readonly governorCpu: number[] = [];
  readonly processCpu: number[] = [];
  duressPolls = 0;
  polls = 0;
  maxQueued = 0;
  rssMax = 0;
  /** Requests sent in this minute and not answered yet: the minute is summed up once they are. */
  readonly inFlight = new Set<Promise<void>>();
}

interface ServerMinute {
  sandboxes: Record<
    string,
    {
      tasks: number;
      waitP50Ms: number;
      waitP99Ms: number;
      waitMaxMs: number;
      runP50Ms: number;
      runP99Ms: number;
      runMaxMs: number;
    }
  >;
  counters: Record<string, Record<string, unknown>>;
  memory: { rss: number; heapUsed: number; external: number; arrayBuffers: number };
  loop: { p99Ms: number; maxMs: number };
  workers: unknown;
  lateTasks: Array<{
    sandboxId: string;
    lane: string;
    outcome: string;
    waitMs: number;
    runMs: number;
    cpuMs: number;
    endedAt: number;
  }>;
  replacements: Array<{ at: number; lane: string; startupMs: number }>;
}

async function startServer(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  const child = fork(SERVER, [dataDir, '--cache-dir', benchDataDir('cache')], {
    env: { ...process.env, QUERY_SANDBOX_ADMIN_TOKEN: BENCH_ADMIN_TOKEN },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the soak server did not listen within 180 s')), 180_000);
    child.on('message', (m: { type?: string; port?: number }) => {
      if (m?.type === 'query-sandbox:listening' && typeof m.port === 'number') {
        clearTimeout(timer);
        resolve(m.port);
      }
    });
    child.once('exit', (code) => reject(new Error(`the soak server exited during start-up (code ${code})`)));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

function askMinute(child: ChildProcess): Promise<ServerMinute> {
  return new Promise((resolve) => {
    const onMessage = (m: { type?: string } & ServerMinute) => {
      if (m?.type !== 'minute') return;
      child.off('message', onMessage);
      resolve(m);
    };
    child.on('message', onMessage);
    child.send({ type: 'minute' });
  });
}

const ms = (h: hdr.Histogram, p: number) =>
  h.totalCount === 0 ? null : Math.min(h.maxValue, h.getValueAtPercentile(p)) / 1000;
const avg = (v: readonly number[]) => (v.length === 0 ? 0 : v.reduce((a, b) => a + b, 0) / v.length);

async function main(): Promise<void> {
  const minutes = arg('--minutes', 20);
  const warmupMs = arg('--warmup-seconds', 30) * 1000;
  bulksPerSecond = arg('--bulks-per-second', 2);
  const prefillDocs = process.argv.includes('--prefill-docs') ? arg('--prefill-docs', 1) : 0;
  const cores = os.availableParallelism();
  // The machine's load before and after: figures taken on a busy machine must say so.
  const loadBefore = os.loadavg().map((l) => Number(l.toFixed(2)));
  const { child, url } = await startServer(benchDataDir('bench-soak'));
  const auth = { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` };
  const created = await fetch(`${url}/${INDEX}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...auth },
    body: JSON.stringify({ settings: { index: { refresh_interval: '1s' } } }),
  });
  if (created.status !== 200)
    throw new Error(`PUT /${INDEX} answered ${created.status}: ${await created.text()}`);
  let docs = 0;
  if (prefillDocs > 0) {
    // A large index from the start, so that what happens at 200,000 documents shows in minutes, not
    // after 18 of them: bulks of 1,000 documents, one at a time.
    const prefillStarted = performance.now();
    while (docs < prefillDocs) {
      let body = '';
      for (let i = 0; i < 10; i++) body += bulkBody();
      const r = await fetch(`${url}/${INDEX}/_bulk`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-ndjson', ...auth },
        body,
      });
      const answer = (await r.json()) as { errors?: boolean };
      if (r.status !== 200 || answer.errors === true) throw new Error(`prefill bulk answered ${r.status}`);
      docs += 10 * DOCS_PER_BULK;
    }
    await (await fetch(`${url}/${INDEX}/_refresh`, { method: 'POST', headers: auth })).arrayBuffer();
    console.log(
      `prefilled ${INDEX} with ${docs} documents in ${((performance.now() - prefillStarted) / 1000).toFixed(1)} s`,
    );
  }
  console.log(
    `\nsoak: ${minutes} min after ${warmupMs / 1000} s of warm-up; ${USERS.map((u) => `${u.user} (${u.sandbox}) ${u.perSecond}/s`).join(', ')}; ` +
      `${bulksPerSecond} bulks/s of ${DOCS_PER_BULK} docs into ${INDEX}; stats every 2 s; server pid ${child.pid}, ${cores} cores; load before ${loadBefore.join(' ')}`,
  );

  let current = new Minute();
  let counting = false;
  const pending = new Set<Promise<void>>();
  const track = (p: Promise<void>, m: Minute) => {
    pending.add(p);
    m.inFlight.add(p);
    void p.finally(() => {
      pending.delete(p);
      m.inFlight.delete(p);
    });
  };
  const search = (u: User, i: number, intended: number) => {
    const m = current;
    m.sent++;
    track(
      (async () => {
        try {
          const r = await fetch(`${url}/${u.index}/_search`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-user': u.user },
            body: JSON.stringify(u.body(i)),
            signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
          });
          const text = await r.text();
          const latencyUs = Math.max(1, Math.round((performance.now() - intended) * 1000));
          // The 20 latest of the minute: the first late ones are not the ones that matter.
          if (
            latencyUs > LATE_ANSWER_MS * 1000 &&
            (m.late.length < 20 || latencyUs / 1000 > m.late.at(-1)!.latencyMs)
          ) {
            let tookMs: number | undefined;
            let reason: string | undefined;
            try {
              const parsed = JSON.parse(text) as {
                took?: number;
                error?: { rejection_reason?: string; type?: string };
              };
              tookMs = parsed.took;
              reason = parsed.error?.rejection_reason ?? parsed.error?.type;
            } catch {
              // not JSON: left undefined
            }
            const sentAt = Date.now() - (performance.now() - intended);
            m.late.push({
              sentAt,
              user: u.user,
              sandbox: u.sandbox,
              status: r.status,
              latencyMs: latencyUs / 1000,
              tookMs,
              reason,
            });
            m.late.sort((a, b) => b.latencyMs - a.latencyMs);
            if (m.late.length > 20) m.late.pop();
          }
          if (r.status === 200) {
            m.ok.get(u.sandbox)!.recordValue(latencyUs);
            m.answered.recordValue(latencyUs);
          } else if (r.status === 429) {
            let reason = 'unknown';
            try {
              const e = (
                JSON.parse(text) as {
                  error?: { rejection_reason?: string; cancellation_reason?: string; type?: string };
                }
              ).error;
              reason =
                e?.rejection_reason ??
                (e?.cancellation_reason !== undefined
                  ? `cancelled_${e.cancellation_reason}`
                  : (e?.type ?? 'unknown'));
            } catch {
              // keep unknown
            }
            m.refused.set(reason, (m.refused.get(reason) ?? 0) + 1);
            m.refusedBySandbox.set(u.sandbox, (m.refusedBySandbox.get(u.sandbox) ?? 0) + 1);
            m.answered.recordValue(latencyUs);
          } else m.errors++;
        } catch (error) {
          if ((error as { name?: string }).name === 'TimeoutError') m.timeouts++;
          else m.errors++;
        }
      })(),
      m,
    );
  };
  const bulk = () => {
    const m = current;
    const started = performance.now();
    track(
      (async () => {
        try {
          const r = await fetch(`${url}/${INDEX}/_bulk`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-ndjson', ...auth },
            body: bulkBody(),
            signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
          });
          const answer = (await r.json()) as { errors?: boolean; items?: unknown[] };
          m.bulkLatency.recordValue(Math.max(1, Math.round((performance.now() - started) * 1000)));
          if (r.status === 200 && answer.errors !== true) {
            m.bulks++;
            docs += DOCS_PER_BULK;
          } else if (r.status === 429) m.bulkRefused++;
          else m.bulkErrors++;
        } catch {
          m.bulkErrors++;
        }
      })(),
      m,
    );
  };
  const poll = async () => {
    try {
      const stats = (await (await fetch(`${url}/_nodes/stats`)).json()) as {
        nodes: Record<string, { cpu: { usage: number }; duress: boolean; workers: { queued: number } }>;
      };
      await (await fetch(`${url}/_sandbox/_stats`)).arrayBuffer();
      const node = Object.values(stats.nodes)[0]!;
      current.governorCpu.push(node.cpu.usage);
      current.polls++;
      if (node.duress) current.duressPolls++;
      current.maxQueued = Math.max(current.maxQueued, node.workers.queued);
      const usage = await pidusage(child.pid!);
      current.processCpu.push(usage.cpu / 100 / cores);
      current.rssMax = Math.max(current.rssMax, usage.memory);
    } catch {
      // the next poll
    }
  };

  // Open-loop schedules: each user and the bulks send at their rates from `started`.
  const started = performance.now();
  const totalMs = warmupMs + minutes * 60_000 + 1;
  const sentBy = USERS.map(() => 0);
  let bulksSent = 0;
  let lastPoll = 0;
  const rows: Array<Record<string, unknown>> = [];
  const summaries: Promise<void>[] = [];
  let minuteIndex = 0;
  // Minute k ends at a fixed time, so the last one closes however the ticks fall.
  let minuteEnds = started + warmupMs + 60_000;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      const elapsed = now - started;
      const sendUntil = Math.min(elapsed, totalMs);
      USERS.forEach((u, k) => {
        for (
          let at = (sentBy[k]! * 1000) / u.perSecond;
          at <= sendUntil && at < totalMs;
          at = (sentBy[k]! * 1000) / u.perSecond
        ) {
          search(u, sentBy[k]!, started + at);
          sentBy[k]!++;
        }
      });
      for (
        let at = (bulksSent * 1000) / bulksPerSecond;
        at <= sendUntil && at < totalMs;
        at = (bulksSent * 1000) / bulksPerSecond
      ) {
        bulk();
        bulksSent++;
      }
      if (elapsed - lastPoll >= 2000) {
        lastPoll = elapsed;
        void poll();
      }
      if (!counting && elapsed >= warmupMs) {
        counting = true;
        current = new Minute();
        void askMinute(child); // drop the warm-up's server figures
      } else if (counting && now >= minuteEnds) {
        const done = current;
        current = new Minute();
        minuteEnds += 60_000;
        minuteIndex++;
        const index = minuteIndex;
        const docsNow = docs;
        summaries.push(
          (async () => {
            // The server's figures of the minute (tasks that ended in it), then the answers to the
            // minute's requests, which land in the minute they were sent in (bounded by the time-out).
            const server = await askMinute(child);
            await Promise.all([...done.inFlight]);
            rows.push(summarise(index, done, server, docsNow));
            printMinute(rows.at(-1)!);
          })(),
        );
      }
      if (minuteIndex >= minutes) resolve();
      else setTimeout(tick, 5);
    };
    tick();
  });
  // The last answers (bounded by the client time-out) and the minutes' summaries.
  await Promise.all([...pending]);
  await Promise.all(summaries);
  child.send({ type: 'stop' });
  await new Promise<void>((r) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      r();
    }, 20_000);
    child.once('exit', () => {
      clearTimeout(timer);
      r();
    });
  });
  rows.sort((a, b) => (a['minute'] as number) - (b['minute'] as number));
  report(rows, minutes, { before: loadBefore, after: os.loadavg().map((l) => Number(l.toFixed(2))) });
}

function summarise(minute: number, m: Minute, server: ServerMinute, docs: number): Record<string, unknown> {
  const per = Object.fromEntries(
    SANDBOXES.map((s) => {
      const h = m.ok.get(s)!;
      const sv = server.sandboxes[s];
      return [
        s,
        {
          ok: h.totalCount,
          p50Ms: ms(h, 50),
          p99Ms: ms(h, 99),
          maxMs: h.totalCount === 0 ? null : h.maxValue / 1000,
          refused: m.refusedBySandbox.get(s) ?? 0,
          queueWaitP50Ms: sv?.waitP50Ms ?? 0,
          queueWaitP99Ms: sv?.waitP99Ms ?? 0,
          queueWaitMaxMs: sv?.waitMaxMs ?? 0,
          runP99Ms: sv?.runP99Ms ?? 0,
          runMaxMs: sv?.runMaxMs ?? 0,
        },
      ];
    }),
  );
  const runMaxMs = Math.max(0, ...Object.values(server.sandboxes).map((s) => s.runMaxMs));
  const queueWaitMaxMs = Math.max(0, ...Object.values(server.sandboxes).map((s) => s.waitMaxMs));
  const queueWaitP99Ms = Math.max(0, ...Object.values(server.sandboxes).map((s) => s.waitP99Ms));
  return {
    minute,
    docs,
    sent: m.sent,
    sandboxes: per,
    refusedByReason: Object.fromEntries(m.refused),
    clientTimeouts: m.timeouts,
    errors: m.errors,
    answeredMaxMs: m.answered.totalCount === 0 ? 0 : m.answered.maxValue / 1000,
    queueWaitP99Ms,
    queueWaitMaxMs,
    runMaxMs,
    bulks: {
      ok: m.bulks,
      refused: m.bulkRefused,
      errors: m.bulkErrors,
      p50Ms: ms(m.bulkLatency, 50),
      p99Ms: ms(m.bulkLatency, 99),
    },
    nodeCpu: avg(m.processCpu),
    governorCpu: avg(m.governorCpu),
    duressShare: m.polls === 0 ? 0 : m.duressPolls / m.polls,
    maxQueued: m.maxQueued,
    rssMb: Math.max(m.rssMax, server.memory.rss) / 1048576,
    loopDelayP99Ms: server.loop.p99Ms,
    loopDelayMaxMs: server.loop.maxMs,
    mainHeapMb: server.memory.heapUsed / 1048576,
    mainExternalMb: (server.memory.external + server.memory.arrayBuffers) / 1048576,
    server: { counters: server.counters, workers: server.workers },
    // Where a late answer's time went: the client's view (sent when, latency, took), the server's
    // tasks that ended more than 5 s after they were queued (wait, run, CPU), and the worker replacements.
    lateAnswers: m.late,
    lateTasks: server.lateTasks,
    replacements: server.replacements,
  };
}

const f = (v: unknown) => (typeof v === 'number' ? (v >= 100 ? v.toFixed(0) : v.toFixed(1)) : '-');

function printMinute(r: Record<string, unknown>): void {
  const s = r['sandboxes'] as Record<
    string,
    { p50Ms: number | null; p99Ms: number | null; ok: number; refused: number }
  >;
  console.log(
    `  minute ${r['minute']}: ${r['docs']} docs; ` +
      SANDBOXES.map(
        (id) =>
          `${id} p50 ${f(s[id]!.p50Ms)} p99 ${f(s[id]!.p99Ms)} ms (${s[id]!.ok} ok, ${s[id]!.refused} x 429)`,
      ).join('; ') +
      `; 429 ${JSON.stringify(r['refusedByReason'])}; queue wait p99 ${f(r['queueWaitP99Ms'])} max ${f(r['queueWaitMaxMs'])} ms; ` +
      `cpu ${f(r['nodeCpu'])}; event-loop delay p99 ${f(r['loopDelayP99Ms'])} max ${f(r['loopDelayMaxMs'])} ms; rss ${f(r['rssMb'])} MB; timeouts ${r['clientTimeouts']}`,
  );
  const clock = (at: number) => new Date(at).toISOString().slice(11, 23);
  for (const a of r['lateAnswers'] as Minute['late']) {
    console.log(
      `    late answer: ${a.user} (${a.sandbox}) sent ${clock(a.sentAt)}, ${a.status}${a.reason ? ` ${a.reason}` : ''} after ${f(a.latencyMs)} ms, took ${f(a.tookMs)} ms`,
    );
  }
  for (const t of r['lateTasks'] as ServerMinute['lateTasks']) {
    console.log(
      `    late task: ${t.sandboxId} (${t.lane}) ${t.outcome} at ${clock(t.endedAt)}: waited ${f(t.waitMs)} ms, ran ${f(t.runMs)} ms (cpu ${f(t.cpuMs)} ms)`,
    );
  }
  for (const w of r['replacements'] as ServerMinute['replacements']) {
    console.log(`    worker replaced: ${w.lane} at ${clock(w.at)}, loaded in ${f(w.startupMs)} ms`);
  }
}

function report(
  rows: Array<Record<string, unknown>>,
  minutes: number,
  load: { before: number[]; after: number[] },
): void {
  type S = Record<
    string,
    { p50Ms: number | null; p99Ms: number | null; ok: number; refused: number; queueWaitP99Ms: number }
  >;
  console.log(
    `\nper minute (latency of answered searches from the intended send time, ms; queue wait from the server, ms):`,
  );
  printTable(
    [
      'min',
      'docs',
      'dash p50',
      'dash p99',
      'anl p50',
      'anl p99',
      'root p50',
      'root p99',
      'qwait p99',
      'qwait max',
      '429 by reason',
      't/o',
      'cpu',
      'gov cpu',
      'duress',
      'loop p99',
      'loop max',
      'rss MB',
    ],
    rows.map((r) => {
      const s = r['sandboxes'] as S;
      return [
        r['minute'],
        r['docs'],
        f(s['dashboards']!.p50Ms),
        f(s['dashboards']!.p99Ms),
        f(s['analysts']!.p50Ms),
        f(s['analysts']!.p99Ms),
        f(s['_root']!.p50Ms),
        f(s['_root']!.p99Ms),
        f(r['queueWaitP99Ms']),
        f(r['queueWaitMaxMs']),
        Object.entries(r['refusedByReason'] as Record<string, number>)
          .map(([k, v]) => `${k}:${v}`)
          .join(' ') || '0',
        r['clientTimeouts'],
        (r['nodeCpu'] as number).toFixed(2),
        (r['governorCpu'] as number).toFixed(2),
        (r['duressShare'] as number).toFixed(2),
        f(r['loopDelayP99Ms']),
        f(r['loopDelayMaxMs']),
        f(r['rssMb']),
      ];
    }),
  );
  const first = (rows[0]?.['sandboxes'] as S | undefined)?.['dashboards']?.p99Ms ?? null;
  const worst = Math.max(...rows.map((r) => (r['sandboxes'] as S)['dashboards']!.p99Ms ?? 0));
  const overMinutes = rows.filter(
    (r) => first === null || ((r['sandboxes'] as S)['dashboards']!.p99Ms ?? 0) > 2 * first,
  );
  const dashWithin = first !== null && overMinutes.length === 0;
  // Check 2: an answer (200 or 429) later than the bound + the minute's longest task run (+ 250 ms of
  // timer and event-loop slack), a server-side queue wait past the bound (+ the same slack), or a
  // request that got no answer before the client's 30 s time-out, all fail it.
  const lateMinutes = rows.filter(
    (r) => (r['answeredMaxMs'] as number) > QUEUE_WAIT_BOUND_MS + (r['runMaxMs'] as number) + SLACK_MS,
  );
  const queueWaitMax = Math.max(...rows.map((r) => r['queueWaitMaxMs'] as number));
  const timeouts = rows.reduce((n, r) => n + (r['clientTimeouts'] as number), 0);
  const boundKept =
    lateMinutes.length === 0 && queueWaitMax <= QUEUE_WAIT_BOUND_MS + SLACK_MS && timeouts === 0;
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
  console.log(
    `\ncheck 1 ${verdict(dashWithin)}: dashboards p99 within 2x of minute 1 in every minute: minute 1 ${f(first)} ms, worst ${f(worst)} ms ` +
      `(${first === null ? '-' : (worst / first).toFixed(2)}x)${overMinutes.length === 0 ? '' : `; over 2x in minute ${overMinutes.map((r) => r['minute']).join(', ')}`}`,
  );
  console.log(
    `check 2 ${verdict(boundKept)}: no answer later than the queue-wait bound (${QUEUE_WAIT_BOUND_MS} ms) + one task: longest server-side queue wait ` +
      `${f(queueWaitMax)} ms; minutes with an answer later than the bound + that minute's longest task + ${SLACK_MS} ms: ` +
      `${lateMinutes.length === 0 ? 'none' : lateMinutes.map((r) => `${r['minute']} (${f(r['answeredMaxMs'])} ms > ${f(QUEUE_WAIT_BOUND_MS + (r['runMaxMs'] as number))} ms)`).join(', ')}; ` +
      `client time-outs (${CLIENT_TIMEOUT_MS / 1000} s, no answer) ${timeouts}`,
  );
  console.log(`soak ${minutes} min: ${verdict(dashWithin && boundKept)}`);
  if (!(dashWithin && boundKept)) process.exitCode = 1;
  const totals = new Map<string, number>();
  for (const r of rows)
    for (const [k, v] of Object.entries(r['refusedByReason'] as Record<string, number>))
      totals.set(k, (totals.get(k) ?? 0) + v);
  console.log(
    `429s by reason over ${minutes} min: ${JSON.stringify(Object.fromEntries(totals))}; client time-outs ${timeouts}`,
  );
  console.log(
    `rss: minute 1 ${f(rows[0]?.['rssMb'])} MB (${rows[0]?.['docs']} docs), last minute ${f(rows.at(-1)?.['rssMb'])} MB (${rows.at(-1)?.['docs']} docs); ` +
      `main thread heap ${f(rows.at(-1)?.['mainHeapMb'])} MB`,
  );
  console.log(
    `load average (1, 5, 15 min): before ${load.before.join(' ')}, after ${load.after.join(' ')} on ${os.availableParallelism()} cores`,
  );
  void writeResult('soak', {
    minutes,
    load,
    users: USERS.map((u) => ({ user: u.user, sandbox: u.sandbox, perSecond: u.perSecond, index: u.index })),
    bulksPerSecond,
    docsPerBulk: DOCS_PER_BULK,
    queueWaitBoundMs: QUEUE_WAIT_BOUND_MS,
    checks: {
      dashboardsFirstP99Ms: first,
      dashboardsWorstP99Ms: worst,
      dashboardsWithin2x: dashWithin,
      queueWaitMaxMs: queueWaitMax,
      lateMinutes: lateMinutes.map((r) => r['minute']),
      clientTimeouts: timeouts,
      boundKept,
      pass: dashWithin && boundKept,
    },
    rows,
  });
}

await main();
