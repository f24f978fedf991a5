/**
 * The scheduler on the real service: `query-sandbox serve` (MiniSearch over the SpamAssassin corpus)
 * in a child process, driven over HTTP from this process.
 *
 * Two classes of request from one user (so sandboxes play no part; the priority rules do):
 * - cheap: `match` on a subject word, sent open-loop at a fixed rate (high priority by rule);
 * - expensive: fuzzy `match` of several misspelt words (fuzziness 2) on the body, low priority by rule, sent open-loop at the
 *   rate that brings the total offered work to 1.2x the measured capacity.
 * The rules (first match wins: the fuzzy rule comes first, since a fuzzy query is a `match` too):
 *   `[{priority 0, regex "fuzziness"}, {priority 100, regex "\"match\""}]`.
 * Policies, switched at runtime with PUT /_query_priority and interleaved: `fifo`
 * (`aging_ms_per_priority: 0`: arrival order), `priority` (aging 100 ms per point) and `reserved`
 * (priority + 1 worker reserved for priority 100). Latency is open-loop: from the intended send time
 * to the response, so a stalled sender does not hide queueing. Each phase waits for the queue to
 * drain. Capacity is measured again before every round (the machine's load changes), and each phase
 * reports the throughput it reached, so an overload other than 1.2x shows.
 *
 * Usage: `npm run bench:priority-service` (3 rounds of 6 s phases) or `-- --full` (5 rounds of 15 s).
 * Writes `bench/results/priority-service.json`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as hdr from 'hdr-histogram-js';
import { median } from './harness.js';

const full = process.argv.includes('--full');
const rounds = full ? 5 : 3;
const phaseMs = full ? 15_000 : 6_000;
const threads = Math.max(1, os.availableParallelism());
const CHEAP_PER_SECOND = 20;
const OVERLOAD = 1.2;
const TOKEN = 'bench-admin-token-0123456789';
const main = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const dataDir = path.resolve('.query-sandbox/bench-priority-service');

const CHEAP_WORDS = ['money', 'meeting', 'free', 'offer', 'report', 'linux', 'update', 'click'];
const FUZZY_QUERIES = [
  'mony fre ofer clik remuve',
  'bussines oportunity investmnt',
  'lotery winnr claim prize',
  'mortgaeg rate aproved',
];
// 100 points apart: with 100 ms of aging per point, a fuzzy query overtakes a cheap one only after
// waiting 10 s, longer than a phase, so within a phase the order is by priority. (With 10 points, a
// backlog older than 1 s would be served before new cheap queries: that is aging's bound at work.)
const RULES = [
  { priority: 0, query_attributes: [{ regex: 'fuzziness' }] },
  { priority: 100, query_attributes: [{ regex: '"match"' }] },
];
const POLICIES = {
  fifo: { aging_ms_per_priority: 0, priorities: RULES },
  priority: { aging_ms_per_priority: 100, priorities: RULES },
  reserved: {
    aging_ms_per_priority: 100,
    priorities: [RULES[0], { ...RULES[1], reserved_workers: 1 }],
  },
} as const;
type Policy = keyof typeof POLICIES;

const cheapBody = (i: number) => ({
  query: { match: { subject: CHEAP_WORDS[i % CHEAP_WORDS.length] } },
  size: 5,
});
const fuzzyBody = (i: number) => ({
  query: { match: { body: { query: FUZZY_QUERIES[i % FUZZY_QUERIES.length], fuzziness: 2 } } },
  size: 5,
});

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

async function startServer(port: number): Promise<ChildProcess> {
  mkdirSync(dataDir, { recursive: true });
  // Only the root sandbox: the rules alone decide the order.
  rmSync(path.join(dataDir, 'sandboxes.json'), { force: true });
  rmSync(path.join(dataDir, 'query-priority.json'), { force: true });
  const sandboxes = path.join(dataDir, 'root-only.json');
  writeFileSync(sandboxes, '{"sandboxes": []}\n');
  const child = spawn(
    process.execPath,
    [
      main,
      'serve',
      '--port',
      String(port),
      '--threads',
      String(threads),
      '--data-dir',
      dataDir,
      '--sandboxes',
      sandboxes,
      '--log-level',
      'warn',
    ],
    { env: { ...process.env, QUERY_SANDBOX_ADMIN_TOKEN: TOKEN }, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`);
    try {
      const r = await fetch(`http://127.0.0.1:${port}/`);
      if (r.ok) return child;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('the server did not start within 120 s');
    await new Promise((r) => setTimeout(r, 200));
  }
}

class Client {
  constructor(readonly base: string) {}

  async search(body: unknown): Promise<number> {
    const r = await fetch(`${this.base}/_all/_search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user': 'bench' },
      body: JSON.stringify(body),
    });
    await r.arrayBuffer();
    return r.status;
  }

  async setPolicy(policy: Policy): Promise<void> {
    const r = await fetch(`${this.base}/_query_priority`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(POLICIES[policy]),
    });
    if (r.status !== 200) throw new Error(`PUT /_query_priority answered ${r.status}: ${await r.text()}`);
  }

  async idle(): Promise<void> {
    for (;;) {
      const stats = (await (await fetch(`${this.base}/_nodes/stats`)).json()) as {
        nodes: Record<string, { workers: { running: number; queued: number } }>;
      };
      const node = Object.values(stats.nodes)[0]!;
      if (node.workers.running === 0 && node.workers.queued === 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * Seconds of one worker per request, from `n` requests with twice `threads` in flight (so a worker
 * never idles while a response travels back).
 */
async function serviceSeconds(client: Client, body: (i: number) => unknown, n: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 2 * threads }, async () => {
      for (let i = next++; i < n; i = next++) await client.search(body(i));
    }),
  );
  return ((performance.now() - started) / 1000 / n) * threads;
}

function histogram() {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 600_000_000,
    numberOfSignificantValueDigits: 3,
  });
}

interface PhaseResult {
  readonly policy: Policy;
  /** Work completed per second, in workers' worth (cheap and fuzzy at their measured cost). */
  readonly achievedLoad: number;
  readonly offeredLoad: number;
  readonly cheap: { sent: number; ok: number; rejected: number; p50Ms: number; p99Ms: number };
  readonly fuzzy: { sent: number; ok: number; rejected: number; p50Ms: number };
}

/** One open-loop phase: both classes at fixed rates for `phaseMs`; waits for every response. */
async function phase(
  client: Client,
  policy: Policy,
  fuzzyPerSecond: number,
  cost: { cheap: number; fuzzy: number },
): Promise<PhaseResult> {
  await client.setPolicy(policy);
  const classes = [
    { name: 'cheap', rate: CHEAP_PER_SECOND, body: cheapBody, h: histogram(), sent: 0, ok: 0, rejected: 0 },
    { name: 'fuzzy', rate: fuzzyPerSecond, body: fuzzyBody, h: histogram(), sent: 0, ok: 0, rejected: 0 },
  ];
  const pending: Promise<void>[] = [];
  const started = performance.now();
  await new Promise<void>((resolve) => {
    const tick = () => {
      const elapsed = performance.now() - started;
      for (const c of classes) {
        // Send every request whose intended time has come; latency counts from that time.
        for (
          let at = (c.sent * 1000) / c.rate;
          at <= elapsed && at < phaseMs;
          at = (c.sent * 1000) / c.rate
        ) {
          const intended = started + at;
          const i = c.sent++;
          pending.push(
            client.search(c.body(i)).then(
              (status) => {
                if (status === 200) {
                  c.ok++;
                  c.h.recordValue(Math.max(1, Math.round((performance.now() - intended) * 1000)));
                } else if (status === 429) c.rejected++;
              },
              () => undefined,
            ),
          );
        }
      }
      if (elapsed >= phaseMs) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
  await Promise.all(pending);
  await client.idle();
  const seconds = (performance.now() - started) / 1000;
  const [cheap, fuzzy] = classes as [(typeof classes)[0], (typeof classes)[0]];
  const ms = (h: ReturnType<typeof histogram>, p: number) =>
    h.totalCount === 0 ? Number.NaN : h.getValueAtPercentile(p) / 1000;
  return {
    policy,
    offeredLoad: (CHEAP_PER_SECOND * cost.cheap + fuzzyPerSecond * cost.fuzzy) / threads,
    // Over the phase and its drain: the workers' busy share, from the work they completed.
    achievedLoad: (cheap.ok * cost.cheap + fuzzy.ok * cost.fuzzy) / seconds / threads,
    cheap: {
      sent: cheap.sent,
      ok: cheap.ok,
      rejected: cheap.rejected,
      p50Ms: ms(cheap.h, 50),
      p99Ms: ms(cheap.h, 99),
    },
    fuzzy: { sent: fuzzy.sent, ok: fuzzy.ok, rejected: fuzzy.rejected, p50Ms: ms(fuzzy.h, 50) },
  };
}

async function run(): Promise<void> {
  const port = await freePort();
  console.log(
    `starting the service on port ${port} with ${threads} workers (first start builds the index cache)...`,
  );
  const child = await startServer(port);
  try {
    const client = new Client(`http://127.0.0.1:${port}`);
    // Warm up.
    await serviceSeconds(client, cheapBody, 40);
    await serviceSeconds(client, fuzzyBody, 8);
    const results: PhaseResult[] = [];
    const calibrations: Array<{ cheapMs: number; fuzzyMs: number; fuzzyPerSecond: number }> = [];
    for (let r = 0; r < rounds; r++) {
      // Each class's cost with the workers saturated, measured again each round.
      const cost = {
        cheap: await serviceSeconds(client, cheapBody, 200),
        fuzzy: await serviceSeconds(client, fuzzyBody, 60),
      };
      const fuzzyPerSecond = (OVERLOAD * threads - CHEAP_PER_SECOND * cost.cheap) / cost.fuzzy;
      calibrations.push({ cheapMs: cost.cheap * 1000, fuzzyMs: cost.fuzzy * 1000, fuzzyPerSecond });
      console.log(
        `round ${r + 1}: service time cheap ${(cost.cheap * 1000).toFixed(1)} ms, fuzzy ${(cost.fuzzy * 1000).toFixed(1)} ms; ` +
          `offered cheap ${CHEAP_PER_SECOND}/s + fuzzy ${fuzzyPerSecond.toFixed(2)}/s = ${OVERLOAD}x the capacity of ${threads} workers`,
      );
      for (const policy of Object.keys(POLICIES) as Policy[]) {
        const result = await phase(client, policy, fuzzyPerSecond, cost);
        results.push(result);
        console.log(
          `  ${policy.padEnd(8)} load reached ${result.achievedLoad.toFixed(2)}x; cheap p50 ${result.cheap.p50Ms.toFixed(1)} ms p99 ${result.cheap.p99Ms.toFixed(1)} ms ` +
            `(${result.cheap.ok}/${result.cheap.sent} ok, ${result.cheap.rejected} rejected); ` +
            `fuzzy p50 ${result.fuzzy.p50Ms.toFixed(0)} ms (${result.fuzzy.ok}/${result.fuzzy.sent} ok, ${result.fuzzy.rejected} rejected)`,
        );
      }
    }
    const summary = (Object.keys(POLICIES) as Policy[]).map((policy) => {
      const mine = results.filter((x) => x.policy === policy);
      return {
        policy,
        cheapP50Ms: median(mine.map((x) => x.cheap.p50Ms)),
        cheapP99Ms: median(mine.map((x) => x.cheap.p99Ms)),
        fuzzyP50Ms: median(mine.map((x) => x.fuzzy.p50Ms)),
        fuzzyOk: median(mine.map((x) => x.fuzzy.ok)),
        fuzzyRejected: median(mine.map((x) => x.fuzzy.rejected)),
        achievedLoad: median(mine.map((x) => x.achievedLoad)),
      };
    });
    const fifo = summary.find((s) => s.policy === 'fifo')!;
    console.log(`medians of ${rounds} rounds:`);
    console.log(
      'policy | cheap p50 ms | cheap p99 ms | p50 / FIFO | p99 / FIFO | fuzzy p50 ms | fuzzy ok | fuzzy 429 | load reached',
    );
    for (const s of summary) {
      console.log(
        [
          s.policy,
          s.cheapP50Ms.toFixed(1),
          s.cheapP99Ms.toFixed(1),
          (s.cheapP50Ms / fifo.cheapP50Ms).toFixed(3),
          (s.cheapP99Ms / fifo.cheapP99Ms).toFixed(3),
          s.fuzzyP50Ms.toFixed(0),
          s.fuzzyOk,
          s.fuzzyRejected,
          `${s.achievedLoad.toFixed(2)}x`,
        ].join(' | '),
      );
    }
    mkdirSync('bench/results', { recursive: true });
    writeFileSync(
      'bench/results/priority-service.json',
      `${JSON.stringify(
        {
          machine: { cores: os.availableParallelism(), node: process.versions.node },
          threads,
          phaseMs,
          rounds,
          cheapPerSecond: CHEAP_PER_SECOND,
          calibrations,
          summary,
          phases: results,
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    child.kill('SIGTERM');
  }
}

await run();
