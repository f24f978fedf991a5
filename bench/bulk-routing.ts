/**
 * Bulk routing on a real loopback cluster (issue 7, seed 004): fan-out bulks against single-shard bulks
 * (`index.bulk_routing.enabled` false vs true) in one run, with one data node made sick.
 *
 * Setup: `query-sandbox cluster` in-process: a coordinator and three data-node processes; an index with
 * 8 shards and 1 replica (`PUT /logs`), refresh every 1 s, fsync per bulk. data-3 is sick: 200 ms added
 * on 30 % of its internal requests (shard bulks, replication, searches), injected in its process with
 * `POST /_internal/debug/latency` (`--debug-routes`). Every bulk holds `--docs-per-bulk` auto-id log
 * documents. A light search load (2/s) runs throughout, so that the workers apply what refreshes
 * publish, as a real node indexes what it takes.
 *
 * Phases, each `--phase-seconds`, the index's setting switched between them with `PUT /logs/_settings`:
 * 1. open loop, fan-out: `--rate` bulks a second whatever the answers (a log shipper);
 * 2. open loop, single-shard: the same offered load;
 * 3. closed loop, fan-out: `--concurrency` clients sending back to back (the write speed);
 * 4. closed loop, single-shard.
 * The coordinator's indexing pressure is set to 4.5 bulks' bytes (`--pressure-bulks`): a bulk arriving
 * while that much is in flight is refused with 429, as Elasticsearch refuses bulks over
 * `indexing_pressure.memory.limit`; the closed loops never reach it.
 *
 * Measured per phase: bulk latency p50/p99 (hdr-histogram, acknowledged bulks), documents acknowledged
 * per second, rejections (bulks answered 429, plus items answered 429), other errors, and the data
 * nodes' whole-process CPU time (pidusage `ctime` deltas, summed over the three processes), also per
 * 1,000 acknowledged documents. The verdict compares single-shard with fan-out, against the seed's
 * production result: rejections to zero, CPU −25 %, write speed +10 %.
 *
 * Then a crash: a keyed bulk load (fan-out), data-2 SIGKILLed in the middle, restarted, its replicas
 * recovered from their primaries; every acknowledged document must be found by GET and search through
 * the coordinator. Last, `bench/routing-id-cost` (the cost of `mode: id` ids for 5, 150 and 1,000 shards).
 *
 * Usage: `npm run bench:bulk [-- --phase-seconds 8 --rate 30 --docs-per-bulk 200 --concurrency 4
 * --delay-ms 200 --sick-ratio 0.3 --pressure-bulks 4.5 --max-docs 100 --base-port 19300]`.
 * Writes `bench/results/bulk-routing.json`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as hdr from 'hdr-histogram-js';
import pidusage from 'pidusage';
import { type RunningCluster, startCluster } from '../src/cli/cluster.js';
import { encodeLatencyRequest } from '../src/cluster/internal-codecs.js';

/** The launcher's tokens, set once the cluster runs: writes need the admin token, debug routes the cluster secret. */
let AUTH: Record<string, string> = {};
let INTERNAL: Record<string, string> = {};
import { portsFree } from '../src/cli/port-probe.js';

const { values } = parseArgs({
  options: {
    'phase-seconds': { type: 'string', default: '8' },
    rate: { type: 'string', default: '30' },
    'docs-per-bulk': { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '4' },
    'delay-ms': { type: 'string', default: '200' },
    'sick-ratio': { type: 'string', default: '0.3' },
    'pressure-bulks': { type: 'string', default: '4.5' },
    'max-docs': { type: 'string', default: '100' },
    'base-port': { type: 'string' },
    'data-dir': { type: 'string', default: path.join(os.tmpdir(), `qs-bench-bulk-${process.pid}`) },
    'skip-crash': { type: 'boolean', default: false },
  },
});
const phaseMs = Number(values['phase-seconds']) * 1000;
const rate = Number(values.rate);
const docsPerBulk = Number(values['docs-per-bulk']);
const concurrency = Number(values.concurrency);
const delayMs = Number(values['delay-ms']);
const sickRatio = Number(values['sick-ratio']);
const SICK = 'data-3';
const SHARDS = 8;
const MAX_OUTSTANDING = 64;

async function basePort(): Promise<number> {
  if (values['base-port'] !== undefined) return Number(values['base-port']);
  for (let base = 19300; base < 60000; base += 10) if (await portsFree(base, 4)) return base;
  throw new Error('no four free ports');
}

let docCounter = 0;
function bulkBody(keyed?: string[]): string {
  const lines: string[] = [];
  for (let i = 0; i < docsPerBulk; i++) {
    const n = docCounter++;
    const id = keyed?.[i];
    lines.push(id === undefined ? '{"index":{}}' : JSON.stringify({ index: { _id: id } }));
    lines.push(
      JSON.stringify({
        subject: `service-${n % 17} request ${n % 5 === 0 ? 'failed' : 'served'}`,
        from: `host-${n % 23}.example.org`,
        body: `user ${n % 1000} called endpoint /api/v${n % 3}/items/${n} in ${n % 250} ms status ${n % 7 === 0 ? 500 : 200}`,
        date: 1_700_000_000_000 + n,
      }),
    );
  }
  return `${lines.join('\n')}\n`;
}

interface BulkOutcome {
  readonly status: number;
  readonly latencyMs: number;
  readonly acked: string[];
  readonly rejectedItems: number;
  readonly failedItems: number;
}

async function sendBulk(url: string, body: string): Promise<BulkOutcome> {
  const started = performance.now();
  try {
    const r = await fetch(`${url}/logs/_bulk`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/x-ndjson' },
      body,
    });
    const json = (await r.json()) as { items?: { index: { _id: string; status: number } }[] };
    const latencyMs = performance.now() - started;
    const acked: string[] = [];
    let rejectedItems = 0;
    let failedItems = 0;
    for (const item of json.items ?? []) {
      if (item.index.status === 201 || item.index.status === 200) acked.push(item.index._id);
      else if (item.index.status === 429) rejectedItems++;
      else failedItems++;
    }
    return { status: r.status, latencyMs, acked, rejectedItems, failedItems };
  } catch {
    return {
      status: 0,
      latencyMs: performance.now() - started,
      acked: [],
      rejectedItems: 0,
      failedItems: docsPerBulk,
    };
  }
}

interface PhaseResult {
  phase: string;
  mode: 'fan-out' | 'single-shard';
  loop: 'open' | 'closed';
  seconds: number;
  bulksSent: number;
  bulksAcked: number;
  rejectedBulks: number;
  rejectedItems: number;
  otherErrors: number;
  docsAcked: number;
  docsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  dataNodeCpuMs: number;
  cpuMsPer1000Docs: number;
  cpuByNode: Record<string, number>;
  chosenShardsByPrimaryNode: Record<string, number>;
}

function histogram(): hdr.Histogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 120_000_000,
    numberOfSignificantValueDigits: 3,
  });
}

async function cpuTimes(cluster: RunningCluster): Promise<Record<string, number>> {
  const stats = await pidusage(cluster.dataNodes.map((n) => n.pid));
  const out: Record<string, number> = {};
  for (const n of cluster.dataNodes) out[n.id] = stats[n.pid]?.ctime ?? 0;
  return out;
}

async function coordinatorWrites(
  url: string,
): Promise<{ chosen_shards_by_primary_node: Record<string, number> }> {
  const stats = (await (await fetch(`${url}/_nodes/stats`)).json()) as {
    nodes: { coordinator: { writes: { chosen_shards_by_primary_node: Record<string, number> } } };
  };
  return stats.nodes.coordinator.writes;
}

/** 2 searches a second over the index until `untilMs` (so workers apply refreshes). */
async function searchLoad(url: string, untilMs: number): Promise<void> {
  while (Date.now() < untilMs) {
    await fetch(`${url}/logs/_search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"query":{"match":{"body":"failed"}},"size":1}',
    })
      .then((r) => r.text())
      .catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

async function runPhase(
  cluster: RunningCluster,
  name: string,
  mode: PhaseResult['mode'],
  loop: PhaseResult['loop'],
  durationMs: number,
): Promise<PhaseResult> {
  const url = cluster.coordinator.url;
  const setting = await fetch(`${url}/logs/_settings`, {
    method: 'PUT',
    headers: { ...AUTH, 'content-type': 'application/json' },
    body: JSON.stringify({ 'index.bulk_routing.enabled': mode === 'single-shard' }),
  });
  if (setting.status !== 200) throw new Error(`cannot switch bulk routing: ${await setting.text()}`);
  const chosenBefore = (await coordinatorWrites(url)).chosen_shards_by_primary_node;
  const cpuBefore = await cpuTimes(cluster);
  const started = performance.now();
  const untilMs = Date.now() + durationMs;
  const latency = histogram();
  const result = {
    bulksSent: 0,
    bulksAcked: 0,
    rejectedBulks: 0,
    rejectedItems: 0,
    otherErrors: 0,
    docsAcked: 0,
  };
  const record = (o: BulkOutcome) => {
    result.bulksSent++;
    if (o.status === 429) result.rejectedBulks++;
    else if (o.status !== 200) result.otherErrors += docsPerBulk;
    else {
      result.bulksAcked++;
      latency.recordValue(Math.max(1, Math.round(o.latencyMs * 1000)));
    }
    result.docsAcked += o.acked.length;
    result.rejectedItems += o.rejectedItems;
    result.otherErrors += o.failedItems;
  };
  const searches = searchLoad(url, untilMs);
  if (loop === 'open') {
    const inFlight = new Set<Promise<void>>();
    const intervalMs = 1000 / rate;
    let next = performance.now();
    while (Date.now() < untilMs) {
      if (inFlight.size < MAX_OUTSTANDING) {
        const p: Promise<void> = sendBulk(url, bulkBody())
          .then(record)
          .finally(() => inFlight.delete(p));
        inFlight.add(p);
      }
      next += intervalMs;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
    }
    await Promise.all(inFlight);
  } else {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (Date.now() < untilMs) record(await sendBulk(url, bulkBody()));
      }),
    );
  }
  await searches;
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = await cpuTimes(cluster);
  const cpuByNode: Record<string, number> = {};
  let dataNodeCpuMs = 0;
  for (const id of Object.keys(cpuAfter)) {
    cpuByNode[id] = Math.round(cpuAfter[id]! - cpuBefore[id]!);
    dataNodeCpuMs += cpuByNode[id]!;
  }
  const chosenAfter = (await coordinatorWrites(url)).chosen_shards_by_primary_node;
  const chosen: Record<string, number> = {};
  for (const n of cluster.dataNodes) chosen[n.id] = (chosenAfter[n.id] ?? 0) - (chosenBefore[n.id] ?? 0);
  return {
    phase: name,
    mode,
    loop,
    seconds: Number(seconds.toFixed(2)),
    ...result,
    docsPerSecond: Math.round(result.docsAcked / seconds),
    p50Ms: latency.getValueAtPercentile(50) / 1000,
    p99Ms: latency.getValueAtPercentile(99) / 1000,
    maxMs: latency.maxValue / 1000,
    dataNodeCpuMs,
    cpuMsPer1000Docs: Number(((1000 * dataNodeCpuMs) / Math.max(1, result.docsAcked)).toFixed(1)),
    cpuByNode,
    chosenShardsByPrimaryNode: chosen,
  };
}

function printPhase(r: PhaseResult): void {
  process.stdout.write(
    `${r.phase.padEnd(26)}${String(r.bulksSent).padStart(6)}${String(r.rejectedBulks + r.rejectedItems / docsPerBulk).padStart(9)}` +
      `${String(r.otherErrors).padStart(8)}${r.p50Ms.toFixed(1).padStart(9)}${r.p99Ms.toFixed(1).padStart(9)}` +
      `${String(r.docsPerSecond).padStart(9)}${String(r.dataNodeCpuMs).padStart(9)}${r.cpuMsPer1000Docs.toFixed(1).padStart(10)}` +
      `   ${Object.entries(r.chosenShardsByPrimaryNode)
        .map(([k, v]) => `${k}:${v}`)
        .join(' ')}\n`,
  );
}

const ratio = (a: number, b: number) => (b === 0 ? (a === 0 ? 1 : Number.POSITIVE_INFINITY) : a / b);
const pct = (x: number) => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)} %`;

interface CrashResult {
  acknowledged: number;
  failedWhileDown: number;
  missingByGet: number;
  searchTotal: number;
  restartMs: number;
  recoveryMs: number;
}

async function crashPhase(cluster: RunningCluster): Promise<CrashResult> {
  const url = cluster.coordinator.url;
  await fetch(`${url}/crash`, {
    method: 'PUT',
    headers: { ...AUTH, 'content-type': 'application/json' },
    body: JSON.stringify({ settings: { number_of_shards: SHARDS, number_of_replicas: 1 } }),
  });
  const victim = cluster.dataNodes.find((n) => n.id === 'data-2')!;
  const acknowledged: string[] = [];
  let failed = 0;
  let batch = 0;
  let stop = false;
  const lane = async (laneId: number) => {
    while (!stop) {
      const ids = Array.from({ length: 50 }, (_, i) => `c${laneId}-${batch}-${i}`);
      batch++;
      const body = `${ids.map((id) => `${JSON.stringify({ index: { _id: id } })}\n${JSON.stringify({ body: `crash doc ${id}` })}`).join('\n')}\n`;
      try {
        const r = await fetch(`${url}/crash/_bulk`, {
          method: 'POST',
          headers: { ...AUTH, 'content-type': 'application/x-ndjson' },
          body,
        });
        const json = (await r.json()) as { items?: { index: { _id: string; status: number } }[] };
        for (const item of json.items ?? []) {
          if (item.index.status === 201) acknowledged.push(item.index._id);
          else failed++;
        }
      } catch {
        failed += ids.length;
      }
    }
  };
  const lanes = [lane(1), lane(2), lane(3)];
  await new Promise((resolve) => setTimeout(resolve, 1500));
  process.kill(victim.pid, 'SIGKILL');
  await new Promise((resolve) => setTimeout(resolve, 1500)); // writes go on while the node is down
  stop = true;
  await Promise.all(lanes);
  const restartStarted = performance.now();
  await cluster.restartNode(victim.id);
  const restartMs = performance.now() - restartStarted;
  // Its replicas recover from their primaries: wait until every copy is STARTED with its primary's docs.
  const recoveryStarted = performance.now();
  for (;;) {
    const rows = (await (await fetch(`${url}/_cat/shards/crash?format=json`)).json()) as {
      shard: string;
      prirep: string;
      state: string;
      docs: string | null;
    }[];
    const settled =
      rows.every((r) => r.state === 'STARTED') &&
      Array.from(
        { length: SHARDS },
        (_, s) => new Set(rows.filter((r) => r.shard === String(s)).map((r) => r.docs)).size === 1,
      ).every(Boolean);
    if (settled || performance.now() - recoveryStarted > 60_000) break;
    // A write catches a lagging replica up too; recovery usually has already.
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const recoveryMs = performance.now() - recoveryStarted;
  let missing = 0;
  for (let i = 0; i < acknowledged.length; i += 64) {
    const chunk = acknowledged.slice(i, i + 64);
    const found = await Promise.all(
      chunk.map(
        async (id) =>
          ((await (await fetch(`${url}/crash/_doc/${id}`)).json()) as { found?: boolean }).found === true,
      ),
    );
    missing += found.filter((f) => !f).length;
  }
  await fetch(`${url}/crash/_refresh`, { method: 'POST', headers: AUTH });
  const search = (await (
    await fetch(`${url}/crash/_search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"query":{"match":{"body":"crash"}},"size":0}',
    })
  ).json()) as { hits: { total: { value: number } } };
  return {
    acknowledged: acknowledged.length,
    failedWhileDown: failed,
    missingByGet: missing,
    searchTotal: search.hits.total.value,
    restartMs: Math.round(restartMs),
    recoveryMs: Math.round(recoveryMs),
  };
}

async function main(): Promise<void> {
  const base = await basePort();
  const dataDir = values['data-dir']!;
  rmSync(path.join(dataDir, 'cluster'), { recursive: true, force: true });
  const sample = bulkBody();
  docCounter = 0;
  const bulkBytes = Buffer.byteLength(sample);
  const pressureBytes = Math.round(Number(values['pressure-bulks']) * bulkBytes);
  process.stdout.write(
    `bulk routing on the loopback cluster: Node ${process.version}, ${os.availableParallelism()} cores, ports ${base}..${base + 3}\n` +
      `index logs: ${SHARDS} shards, 1 replica, 3 data nodes, refresh 1 s, fsync per bulk; ${docsPerBulk} auto-id docs per bulk (${bulkBytes} bytes); ` +
      `${SICK} sick: +${delayMs} ms on ${(100 * sickRatio).toFixed(0)} % of its internal requests; coordinator indexing pressure ${pressureBytes} bytes ` +
      `(${values['pressure-bulks']} bulks); open loop ${rate} bulks/s, closed loop ${concurrency} clients; ${phaseMs / 1000} s per phase\n`,
  );
  const cluster = await startCluster({
    host: '127.0.0.1',
    basePort: base,
    dataNodes: 3,
    shardsPerIndex: 1,
    replicas: 1,
    nodeCores: Math.max(0.5, os.availableParallelism() / 3),
    threads: 1,
    dataDir,
    maxDocs: Number(values['max-docs']),
    engine: undefined,
    logLevel: 'error',
    dataNodeArgs: ['--debug-routes', '--usage-interval-ms', '200', '--usage-window-ms', '2000'],
    coordinatorArgs: ['--indexing-pressure-bytes', String(pressureBytes)],
    output: 'silent',
  });
  const url = cluster.coordinator.url;
  AUTH = { authorization: `Bearer ${cluster.adminToken}` };
  INTERNAL = { authorization: `Bearer ${cluster.clusterSecret}` };
  try {
    const created = await fetch(`${url}/logs`, {
      method: 'PUT',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({
        settings: { number_of_shards: SHARDS, number_of_replicas: 1, 'bulk_routing.mode': 'id' },
      }),
    });
    if (created.status !== 200) throw new Error(`cannot create the index: ${await created.text()}`);
    const layout = (await (await fetch(`${url}/_cat/shards/logs?format=json`)).json()) as {
      shard: string;
      prirep: string;
      node: string;
    }[];
    const touching = new Set(layout.filter((r) => r.node === SICK).map((r) => Number(r.shard)));
    process.stdout.write(
      `layout: ${Array.from(
        { length: SHARDS },
        (_, s) =>
          `${s}:${layout
            .filter((r) => r.shard === String(s))
            .map((r) => `${r.node}${r.prirep === 'p' ? '*' : ''}`)
            .join('+')}`,
      ).join(' ')} ` + `(* primary; ${touching.size} of ${SHARDS} shards have a copy on ${SICK})\n`,
    );
    const sick = cluster.dataNodes.find((n) => n.id === SICK)!;
    const latency = await fetch(`${sick.url}/_internal/debug/latency`, {
      method: 'POST',
      headers: INTERNAL,
      body: JSON.stringify(encodeLatencyRequest({ delayMs, ratio: sickRatio, durationMs: 3_600_000 })),
    });
    if (latency.status !== 200) throw new Error(`cannot make ${SICK} sick: ${await latency.text()}`);
    await runPhase(cluster, 'warm-up (fan-out)', 'fan-out', 'closed', 3000);

    process.stdout.write(
      `\n${'phase'.padEnd(26)}${'bulks'.padStart(6)}${'rejected'.padStart(9)}${'errors'.padStart(8)}${'p50 ms'.padStart(9)}` +
        `${'p99 ms'.padStart(9)}${'docs/s'.padStart(9)}${'cpu ms'.padStart(9)}${'cpu/1k doc'.padStart(10)}   single-shard picks by primary node\n`,
    );
    const results: PhaseResult[] = [];
    for (const [name, mode, loop] of [
      ['open loop, fan-out', 'fan-out', 'open'],
      ['open loop, single-shard', 'single-shard', 'open'],
      ['closed loop, fan-out', 'fan-out', 'closed'],
      ['closed loop, single-shard', 'single-shard', 'closed'],
    ] as const) {
      const r = await runPhase(cluster, name, mode, loop, phaseMs);
      printPhase(r);
      results.push(r);
    }
    const [openFan, openSingle, closedFan, closedSingle] = results as [
      PhaseResult,
      PhaseResult,
      PhaseResult,
      PhaseResult,
    ];
    const rejections = (r: PhaseResult) => r.rejectedBulks * docsPerBulk + r.rejectedItems;
    const verdict = {
      rejectedDocs: { fanOut: rejections(openFan), singleShard: rejections(openSingle) },
      cpuPerDocChange: ratio(openSingle.cpuMsPer1000Docs, openFan.cpuMsPer1000Docs) - 1,
      cpuPerDocChangeClosed: ratio(closedSingle.cpuMsPer1000Docs, closedFan.cpuMsPer1000Docs) - 1,
      writeSpeedChange: ratio(closedSingle.docsPerSecond, closedFan.docsPerSecond) - 1,
      p50Ratio: ratio(openSingle.p50Ms, openFan.p50Ms),
      p99Ratio: ratio(openSingle.p99Ms, openFan.p99Ms),
    };
    process.stdout.write(
      `\nsingle-shard vs fan-out (seed 004's production result: rejections to 0, CPU -25 %, write speed +10 %):\n` +
        `  rejections (open loop, docs refused with 429): ${verdict.rejectedDocs.fanOut} -> ${verdict.rejectedDocs.singleShard}` +
        `  (seed: to 0: ${verdict.rejectedDocs.singleShard === 0 ? 'met' : 'not met'})\n` +
        `  data nodes' CPU per acknowledged doc: ${pct(verdict.cpuPerDocChange)} open loop, ${pct(verdict.cpuPerDocChangeClosed)} closed loop` +
        `  (seed -25 %: ${verdict.cpuPerDocChange <= -0.25 ? 'met' : 'not met'} open, ${verdict.cpuPerDocChangeClosed <= -0.25 ? 'met' : 'not met'} closed)\n` +
        `  write speed (closed loop, acknowledged docs/s): ${closedFan.docsPerSecond} -> ${closedSingle.docsPerSecond} = ${pct(verdict.writeSpeedChange)}` +
        `  (seed +10 %: ${verdict.writeSpeedChange >= 0.1 ? 'met' : 'not met'})\n` +
        `  bulk latency (open loop): p50 x${verdict.p50Ratio.toFixed(2)}, p99 x${verdict.p99Ratio.toFixed(2)}\n`,
    );

    let crash: CrashResult | undefined;
    if (values['skip-crash'] !== true) {
      await fetch(`${sick.url}/_internal/debug/latency`, { method: 'DELETE', headers: INTERNAL });
      crash = await crashPhase(cluster);
      process.stdout.write(
        `\ncrash: data-2 SIGKILLed during a keyed bulk load (3 clients, 50 docs per bulk), restarted in ${crash.restartMs} ms, ` +
          `replicas settled ${crash.recoveryMs} ms later; ${crash.acknowledged} docs acknowledged (${crash.failedWhileDown} refused while it was down); ` +
          `missing by GET: ${crash.missingByGet}; search finds ${crash.searchTotal} (>= acknowledged: ${crash.searchTotal >= crash.acknowledged})\n`,
      );
    }

    const here = path.dirname(fileURLToPath(import.meta.url));
    const idCost = execFileSync(process.execPath, [path.join(here, 'routing-id-cost.js')], {
      encoding: 'utf8',
    });
    process.stdout.write(`\nid generation for bulk_routing.mode id (bench/routing-id-cost):\n${idCost}`);

    mkdirSync('bench/results', { recursive: true });
    writeFileSync(
      'bench/results/bulk-routing.json',
      `${JSON.stringify(
        {
          date: new Date().toISOString(),
          node: process.version,
          cores: os.availableParallelism(),
          settings: {
            rate,
            docsPerBulk,
            bulkBytes,
            concurrency,
            delayMs,
            sickRatio,
            pressureBytes,
            phaseMs,
            shards: SHARDS,
          },
          phases: results,
          verdict,
          crash: crash ?? null,
          idCost: idCost.trim().split('\n'),
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await cluster.stop();
    // The default data directory is this run's own: its shard logs are not kept.
    if (dataDir.startsWith(path.join(os.tmpdir(), 'qs-bench-bulk-')))
      rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(
      `bulk-routing: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
