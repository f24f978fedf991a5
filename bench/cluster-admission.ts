/**
 * Admission control and replica ranking on a real loopback cluster (issue 6's end-to-end run).
 *
 * Starts `query-sandbox cluster` in-process (a coordinator and three data-node processes, 3 shards
 * per index, 1 replica; each data node serves the debug CPU hog), sends a steady open-loop search load
 * through the coordinator, and prints the shard requests each data node received per phase:
 *
 * 1. baseline: no hog;
 * 2. hog on data-1: two spinning threads in data-1's process. Its piggy-backed CPU rises, the
 *    coordinator ranks it last (duress) and its answers slow down (C3 rank), so its share must drop;
 * 3. duress on data-1 and data-2, which hold both copies of shard 0 of every index: once the
 *    coordinator has their stats, every search is refused with 429 before fan-out (no shard request
 *    reaches any node for it). When the refused nodes' stats age past the TTL they are unknown again,
 *    one search is let through, and its answers bring fresh stats: those few admitted searches are
 *    counted too.
 *
 * Settings, printed with the results, chosen for a small shared machine (2 cores running the load,
 * the coordinator and three data nodes): each data node counts half a core as its capacity
 * (`--node-cores 0.5`), and the coordinator refuses and ranks last at CPU >= 0.8 (`--admission-cpu`,
 * defaults 0.95 and 0.9): a node hogged by two spinning threads then reads about 1.0 even while two
 * nodes share the cores, and an unhogged one 0.1 to 0.4 under the load. The node usage trackers sample
 * every 200 ms over a 2 s window (defaults: 500 ms over 30 s) so that a phase of a few seconds shows
 * the effect; stats TTL 5 s and refresh at most once a second are the defaults.
 *
 * Usage: `npm run bench:cluster [-- --phase-seconds 8 --rate 25 --node-cores 0.5 --admission-cpu 0.8
 * --max-docs 1000 --base-port 19200 --data-dir .query-sandbox/bench-cluster]` (its own data dir, the
 * default: a launcher refuses a directory another live launcher holds).
 * Writes `bench/results/cluster-admission.json`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import * as hdr from 'hdr-histogram-js';
import { type RunningCluster, startCluster } from '../src/cli/cluster.js';
import { encodeCpuHogRequest } from '../src/cluster/internal-codecs.js';
import { portsFree } from '../src/cli/port-probe.js';

const { values } = parseArgs({
  options: {
    'phase-seconds': { type: 'string', default: '8' },
    rate: { type: 'string', default: '25' },
    'node-cores': { type: 'string', default: '0.5' },
    'admission-cpu': { type: 'string', default: '0.8' },
    'max-docs': { type: 'string' },
    'base-port': { type: 'string' },
    // Its own directory: a cluster started with `npm run cluster` (default .query-sandbox) may be running.
    'data-dir': { type: 'string', default: '.query-sandbox/bench-cluster' },
  },
});
const phaseMs = Number(values['phase-seconds']) * 1000;
const rate = Number(values.rate);
const nodeCores = Number(values['node-cores']);
const admissionCpu = values['admission-cpu']!;
const MAX_IN_FLIGHT = 32;
const maxDocs = values['max-docs'] === undefined ? undefined : Number(values['max-docs']);
const TRACKER_WINDOW_MS = 2000;
const WORDS = ['money', 'linux', 'free', 'offer', 'click', 'python', 'list', 'email', 'price', 'server'];

async function basePort(): Promise<number> {
  if (values['base-port'] !== undefined) return Number(values['base-port']);
  for (let base = 19200; base < 60000; base += 10) if (await portsFree(base, 4)) return base;
  throw new Error('no four free ports');
}

interface NodeView {
  requests: number;
  shard_requests: number;
  resource_usage_stats: { state: string; cpu?: number; heap?: number; age_ms?: number; duress?: boolean };
}
interface StatsView {
  nodes: Record<string, NodeView & { admission?: { search: { rejected: { cpu: number; heap: number } } } }>;
}

async function nodesStats(url: string): Promise<StatsView> {
  return (await (await fetch(`${url}/_nodes/stats`)).json()) as StatsView;
}

interface LoadResult {
  ok: number;
  admissionRejected: number;
  otherErrors: number;
  skipped: number;
  latency: hdr.Histogram;
  firstRejection: unknown;
}

/**
 * Open-loop load: a cheap `match` query over every index at `rate` searches a second (at most
 * `MAX_IN_FLIGHT` outstanding; beyond that a send is skipped and counted), until `untilMs`.
 */
async function load(url: string, untilMs: number): Promise<LoadResult> {
  const result: LoadResult = {
    ok: 0,
    admissionRejected: 0,
    otherErrors: 0,
    skipped: 0,
    latency: hdr.build({
      lowestDiscernibleValue: 1,
      highestTrackableValue: 60_000_000,
      numberOfSignificantValueDigits: 3,
    }),
    firstRejection: undefined,
  };
  let n = 0;
  const one = async (): Promise<void> => {
    const word = WORDS[n++ % WORDS.length];
    const started = performance.now();
    try {
      const response = await fetch(`${url}/_search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user': 'bench' },
        body: JSON.stringify({ query: { match: { body: word } }, size: 10 }),
      });
      const body = (await response.json()) as { error?: { code?: string } };
      if (response.status === 200) {
        result.ok++;
        result.latency.recordValue(Math.round((performance.now() - started) * 1000));
      } else if (response.status === 429 && body.error?.code === 'QS_ADMISSION_REJECTED') {
        result.admissionRejected++;
        result.firstRejection ??= body;
      } else {
        result.otherErrors++;
      }
    } catch {
      result.otherErrors++;
    }
  };
  const inFlight = new Set<Promise<void>>();
  const intervalMs = 1000 / rate;
  let next = performance.now();
  while (Date.now() < untilMs) {
    if (inFlight.size < MAX_IN_FLIGHT) {
      const p: Promise<void> = one().finally(() => inFlight.delete(p));
      inFlight.add(p);
    } else {
      result.skipped++;
    }
    next += intervalMs;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
  }
  await Promise.all(inFlight);
  return result;
}

interface PhaseReport {
  phase: string;
  shardRequests: Record<string, number>;
  requests: Record<string, number>;
  cpuAtEnd: Record<string, number | string>;
  searches: { ok: number; admissionRejected: number; otherErrors: number; p50Ms: number; p99Ms: number };
}

async function phase(
  cluster: RunningCluster,
  name: string,
  durationMs: number,
): Promise<PhaseReport & { load: LoadResult }> {
  const url = cluster.coordinator.url;
  const before = await nodesStats(url);
  const result = await load(url, Date.now() + durationMs);
  const after = await nodesStats(url);
  const shardRequests: Record<string, number> = {};
  const requests: Record<string, number> = {};
  const cpuAtEnd: Record<string, number | string> = {};
  for (const node of cluster.dataNodes) {
    shardRequests[node.id] = after.nodes[node.id]!.shard_requests - before.nodes[node.id]!.shard_requests;
    requests[node.id] = after.nodes[node.id]!.requests - before.nodes[node.id]!.requests;
    const usage = after.nodes[node.id]!.resource_usage_stats;
    cpuAtEnd[node.id] = usage.cpu === undefined ? usage.state : Number(usage.cpu.toFixed(3));
  }
  return {
    phase: name,
    shardRequests,
    requests,
    cpuAtEnd,
    searches: {
      ok: result.ok,
      admissionRejected: result.admissionRejected,
      otherErrors: result.otherErrors,
      p50Ms: result.latency.getValueAtPercentile(50) / 1000,
      p99Ms: result.latency.getValueAtPercentile(99) / 1000,
    },
    load: result,
  };
}

async function hog(cluster: RunningCluster, nodeId: string, durationMs: number): Promise<void> {
  const node = cluster.dataNodes.find((n) => n.id === nodeId)!;
  const r = await fetch(`${node.url}/_internal/debug/cpu_hog`, {
    method: 'POST',
    // Debug routes are internal: only the cluster secret opens them.
    headers: { authorization: `Bearer ${cluster.clusterSecret}` },
    body: JSON.stringify(encodeCpuHogRequest({ threads: 2, durationMs })),
  });
  if (r.status !== 200) throw new Error(`cannot start the hog on ${nodeId}: ${await r.text()}`);
}

async function stopHog(cluster: RunningCluster, nodeId: string): Promise<void> {
  const node = cluster.dataNodes.find((n) => n.id === nodeId)!;
  await (
    await fetch(`${node.url}/_internal/debug/cpu_hog`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${cluster.clusterSecret}` },
    })
  ).text();
}

/** Waits until the coordinator holds fresh stats at or above `cpu` for every node of `ids`. */
async function waitForDuress(
  cluster: RunningCluster,
  ids: readonly string[],
  cpu: number,
  timeoutMs: number,
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    // A search brings fresh stats from the nodes it reaches (refused searches reach none).
    await fetch(`${cluster.coordinator.url}/_search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"size": 0}',
    }).then((r) => r.text());
    const stats = await nodesStats(cluster.coordinator.url);
    if (ids.every((id) => (stats.nodes[id]!.resource_usage_stats.cpu ?? 0) >= cpu)) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return false;
}

/** Waits (with a light load) until the coordinator holds fresh stats below `cpu` for every node of `ids`. */
async function waitForCalm(cluster: RunningCluster, ids: readonly string[], cpu: number, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    await fetch(`${cluster.coordinator.url}/_search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"size": 0}',
    }).then((r) => r.text());
    const stats = await nodesStats(cluster.coordinator.url);
    if (ids.every((id) => (stats.nodes[id]!.resource_usage_stats.cpu ?? 1) < cpu)) return true;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

function pct(part: number, total: number): string {
  return total === 0 ? '-' : `${((100 * part) / total).toFixed(1)} %`;
}

function printPhase(report: PhaseReport, ids: readonly string[]): void {
  const total = ids.reduce((sum, id) => sum + report.shardRequests[id]!, 0);
  const cells = ids.map(
    (id) =>
      `${String(report.shardRequests[id]).padStart(6)} (${pct(report.shardRequests[id]!, total).padStart(6)})`,
  );
  const s = report.searches;
  process.stdout.write(
    `${report.phase.padEnd(28)}${cells.join('  ')}   ${String(s.ok).padStart(5)} ok  ${String(s.admissionRejected).padStart(5)} 429  ` +
      `p50 ${s.p50Ms.toFixed(1)} ms  cpu at end ${ids.map((id) => `${id}=${report.cpuAtEnd[id]}`).join(' ')}\n`,
  );
}

async function main(): Promise<void> {
  const base = await basePort();
  process.stdout.write(
    `starting the loopback cluster on ${base}..${base + 3} (${maxDocs === undefined ? 'full corpus' : `${maxDocs} mails per index`})\n`,
  );
  const cluster = await startCluster({
    host: '127.0.0.1',
    basePort: base,
    dataNodes: 3,
    shardsPerIndex: 3,
    replicas: 1,
    nodeCores,
    threads: 1,
    dataDir: values['data-dir']!,
    maxDocs,
    engine: undefined,
    logLevel: 'error',
    dataNodeArgs: [
      '--debug-routes',
      '--usage-interval-ms',
      '200',
      '--usage-window-ms',
      String(TRACKER_WINDOW_MS),
    ],
    coordinatorArgs: ['--admission-cpu', admissionCpu, '--duress-cpu', admissionCpu],
    output: 'silent',
  });
  const ids = cluster.dataNodes.map((n) => n.id);
  const reports: PhaseReport[] = [];
  try {
    process.stdout.write(
      `cluster ready: coordinator ${cluster.coordinator.url}; each data node counts ${nodeCores} core as its capacity; ` +
        `coordinator admission and duress at CPU >= ${admissionCpu}; ${rate} searches/s over all indices, ` +
        `${phaseMs / 1000} s per phase; counts are shard requests the coordinator sent to each data node\n\n`,
    );
    process.stdout.write(`${'phase'.padEnd(28)}${ids.map((id) => id.padEnd(17)).join('   ')}searches\n`);
    // Warm-up: JIT and caches; start-up CPU leaves the trackers' window before the baseline starts.
    await phase(cluster, 'warm-up', 3000);
    await waitForCalm(cluster, ids, Number(admissionCpu) / 2, 20_000);
    const baseline = await phase(cluster, 'baseline', phaseMs);
    printPhase(baseline, ids);
    reports.push(baseline);

    await hog(cluster, 'data-1', phaseMs + TRACKER_WINDOW_MS + 5000);
    await new Promise((resolve) => setTimeout(resolve, TRACKER_WINDOW_MS + 500)); // the tracker's window fills
    const hogged = await phase(cluster, 'CPU hog in data-1', phaseMs);
    printPhase(hogged, ids);
    reports.push(hogged);
    await stopHog(cluster, 'data-1');
    await new Promise((resolve) => setTimeout(resolve, TRACKER_WINDOW_MS + 1000));
    const recovered = await phase(cluster, 'hog stopped', phaseMs / 2);
    printPhase(recovered, ids);
    reports.push(recovered);

    const share = (r: PhaseReport) =>
      r.shardRequests['data-1']! /
      Math.max(
        1,
        ids.reduce((sum, id) => sum + r.shardRequests[id]!, 0),
      );
    process.stdout.write(
      `\ndata-1's share of shard requests: ${pct(share(baseline), 1)} before, ${pct(share(hogged), 1)} during its CPU hog ` +
        `(${(share(hogged) / Math.max(1e-9, share(baseline))).toFixed(2)}x), ${pct(share(recovered), 1)} after\n\n`,
    );

    // Duress on both copies of shard 0 of every index.
    await hog(cluster, 'data-1', 60_000);
    await hog(cluster, 'data-2', 60_000);
    const stats0 = await nodesStats(cluster.coordinator.url);
    const limit = Number(admissionCpu);
    const seen = await waitForDuress(cluster, ['data-1', 'data-2'], limit, 20_000);
    process.stdout.write(
      `CPU hog in data-1 and data-2 (both copies of shard 0 of every index): coordinator saw both at CPU >= ${limit}: ${seen}\n`,
    );
    const duress = await phase(cluster, 'hog in data-1 and data-2', phaseMs);
    printPhase(duress, ids);
    reports.push(duress);
    await stopHog(cluster, 'data-1');
    await stopHog(cluster, 'data-2');
    const s = duress.searches;
    const total = s.ok + s.admissionRejected + s.otherErrors;
    const stats1 = await nodesStats(cluster.coordinator.url);
    const rejected =
      stats1.nodes['coordinator']!.admission!.search.rejected.cpu -
      stats0.nodes['coordinator']!.admission!.search.rejected.cpu;
    const nodeRequests = ids.reduce((sum, id) => sum + duress.requests[id]!, 0);
    process.stdout.write(
      `${total} searches: ${s.admissionRejected} answered 429 before fan-out (${pct(s.admissionRejected, total)}), ${s.ok} admitted ` +
        `(after the refused nodes' stats aged past the TTL), ${s.otherErrors} other errors; ` +
        `coordinator counted ${rejected} admission rejections (cpu) since the hogs started\n` +
        `HTTP requests to data nodes in that phase: ${nodeRequests} (${ids.map((id) => `${id} ${duress.requests[id]}`).join(', ')}), ` +
        `i.e. ${(nodeRequests / Math.max(1, s.ok)).toFixed(2)} per admitted search and none for a refused one\n`,
    );
    process.stdout.write(`example 429: ${JSON.stringify(duress.load.firstRejection)}\n`);
    mkdirSync('bench/results', { recursive: true });
    writeFileSync(
      'bench/results/cluster-admission.json',
      `${JSON.stringify(
        {
          date: new Date().toISOString(),
          rate,
          nodeCores,
          admissionCpu: Number(admissionCpu),
          phaseMs,
          maxDocs: maxDocs ?? null,
          reports: reports.map((r) => ({ ...r, load: undefined })),
          example429: duress.load.firstRejection,
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await cluster.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(
      `cluster-admission: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
