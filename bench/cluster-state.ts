/**
 * Cluster state in etcd on a real loopback cluster (3 data nodes, a coordinator, an etcd of the
 * bench's own so that it can be stopped): `npm run bench:cluster-state`.
 *
 * 1. 50 concurrent `PUT /_sandbox` spread over the 3 data nodes against `--max-sandboxes 10` (no
 *    seeded sandboxes): how many were acknowledged (must be exactly 10).
 * 2. Propagation: 100 updates of one sandbox on data-1, each timed until data-2 and data-3 answer the
 *    new priority (polled every 2 ms): p50, p99, max.
 * 3. etcd stopped for `--outage-s` (30) under a search load (4 clients, closed loop, through the
 *    coordinator): searches before / during (count, failures, p50; the ratio of p50s is the baseline
 *    comparison), a sandbox create tried every second during the outage (all must answer 503
 *    `QS_CLUSTER_STATE_UNAVAILABLE`), then after the restart the time until a create succeeds and every
 *    node lists the same sandboxes.
 * 4. Failover: a keyed bulk load (2 clients, bulks of 50 new ids) through the coordinator; SIGKILL of a
 *    data node holding primaries; time until a bulk succeeds whole again (against the membership lease
 *    of 3 s, the fault detector); the node restarted 5 s later; time until every copy it holds is a
 *    `STARTED` replica; then every acknowledged id read back by GET (missing must be 0).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type RunningCluster, startCluster } from '../src/cli/cluster.js';
import { portsFree } from '../src/cli/port-probe.js';
import { startLocalEtcd } from '../src/cluster/local-etcd.js';

const args = process.argv.slice(2);
const outageS = Number(args[args.indexOf('--outage-s') + 1] ?? 30) || 30;

async function freeBase(count: number): Promise<number> {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 4000) * 10;
    if (await portsFree(base, count)) return base;
  }
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const pct = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

let token = '';
async function call(url: string, method: string, p: string, body?: unknown) {
  const response = await fetch(`${url}${p}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: JSON answers, read field by field
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'qs-bench-state-'));
  const etcdBase = await freeBase(2);
  const etcdOptions = { dataDir: path.join(dir, 'etcd'), clientPort: etcdBase, peerPort: etcdBase + 1 };
  let etcd = await startLocalEtcd(etcdOptions);
  const sandboxes = path.join(dir, 'no-sandboxes.json');
  writeFileSync(sandboxes, '{"sandboxes": []}\n');
  const cluster: RunningCluster = await startCluster({
    host: '127.0.0.1',
    basePort: await freeBase(4),
    dataNodes: 3,
    shardsPerIndex: 3,
    replicas: 1,
    nodeCores: 1,
    threads: 1,
    dataDir: path.join(dir, 'cluster'),
    maxDocs: 200,
    engine: undefined,
    logLevel: 'error',
    dataNodeArgs: ['--sandboxes', sandboxes, '--max-sandboxes', '10'],
    coordinatorArgs: [],
    etcd: etcd.endpoints,
    output: 'silent',
  });
  token = readFileSync(path.join(dir, 'cluster', 'cluster', 'admin-token'), 'utf8').trim();
  const [d1, d2, d3] = cluster.dataNodes as [
    RunningCluster['dataNodes'][0],
    RunningCluster['dataNodes'][0],
    RunningCluster['dataNodes'][0],
  ];
  const coordinator = cluster.coordinator.url;
  try {
    // 1. concurrent creates
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        call([d1, d2, d3][i % 3]!.url, 'PUT', '/_sandbox', { name: `t${i}`, priority: i + 1 }),
      ),
    );
    const acknowledged = outcomes.filter((o) => o.status === 201).length;
    const limited = outcomes.filter((o) => o.status === 429).length;
    console.log(
      `1. concurrent creates: 50 over 3 nodes, limit 10: ${acknowledged} acknowledged (201), ${limited} refused (429 QS_SANDBOX_LIMIT), ${50 - acknowledged - limited} other`,
    );

    // 2. propagation
    const id = Object.keys((await call(d1.url, 'GET', '/_sandbox')).body).find((k) => k !== '_root')!;
    const lags: number[] = [];
    for (let i = 0; i < 100; i++) {
      const priority = 1000 + i;
      const started = performance.now();
      const update = await call(d1.url, 'PUT', `/_sandbox/${id}`, { priority });
      if (update.status !== 200)
        throw new Error(`update answered ${update.status}: ${JSON.stringify(update.body)}`);
      await Promise.all(
        [d2, d3].map(async (n) => {
          for (;;) {
            const seen = (await call(n.url, 'GET', `/_sandbox/${id}`)).body[id]?.priority;
            if (seen === priority) return;
            await sleep(2);
          }
        }),
      );
      lags.push(performance.now() - started);
    }
    lags.sort((a, b) => a - b);
    console.log(
      `2. propagation of a change on data-1 to data-2 and data-3, 100 changes: p50 ${pct(lags, 0.5).toFixed(1)} ms, p99 ${pct(lags, 0.99).toFixed(1)} ms, max ${lags[99]!.toFixed(1)} ms (includes the update's own answer)`,
    );

    // 3. etcd outage under search load
    const searches = { ok: [] as number[], failed: 0 };
    let loading = true;
    const searchLoad = Array.from({ length: 4 }, async () => {
      while (loading) {
        const t = performance.now();
        try {
          const r = await call(coordinator, 'POST', '/_search', {
            query: { match: { body: 'money' } },
            size: 3,
          });
          if (r.status === 200 && r.body['_shards'].failed === 0) searches.ok.push(performance.now() - t);
          else searches.failed++;
        } catch {
          searches.failed++;
        }
      }
    });
    const phase = async (ms: number) => {
      searches.ok = [];
      searches.failed = 0;
      await sleep(ms);
      const sorted = [...searches.ok].sort((a, b) => a - b);
      return { count: sorted.length, failed: searches.failed, p50: pct(sorted, 0.5) };
    };
    const before = await phase(5000);
    await etcd.stop();
    const stoppedAt = performance.now();
    const refusals: number[] = [];
    const during = await (async () => {
      searches.ok = [];
      searches.failed = 0;
      while (performance.now() - stoppedAt < outageS * 1000) {
        // An update (the set is at its limit of 10, so a create would be refused for that first).
        const r = await call([d1, d2, d3][refusals.length % 3]!.url, 'PUT', `/_sandbox/${id}`, {
          priority: 5000 + refusals.length,
        });
        refusals.push(
          r.status === 503 && r.body['error']?.code === 'QS_CLUSTER_STATE_UNAVAILABLE' ? 503 : r.status,
        );
        await sleep(1000);
      }
      const sorted = [...searches.ok].sort((a, b) => a - b);
      return { count: sorted.length, failed: searches.failed, p50: pct(sorted, 0.5) };
    })();
    const stats = (await call(d2.url, 'GET', '/_nodes/stats')).body['nodes'][d2.id]['cluster_state'];
    etcd = await startLocalEtcd(etcdOptions);
    const restarted = performance.now();
    let createdMs = Number.NaN;
    for (;;) {
      const r = await call(d3.url, 'DELETE', `/_sandbox/${id}`);
      if (r.status === 200) {
        createdMs = performance.now() - restarted;
        break;
      }
      await sleep(50);
    }
    let convergedMs = Number.NaN;
    for (;;) {
      const lists = await Promise.all(
        [d1, d2, d3].map(async (n) =>
          Object.keys((await call(n.url, 'GET', '/_sandbox')).body)
            .sort()
            .join(','),
        ),
      );
      if (new Set(lists).size === 1 && !lists[0]!.includes(id)) {
        convergedMs = performance.now() - restarted;
        break;
      }
      await sleep(20);
    }
    loading = false;
    await Promise.all(searchLoad);
    const all503 = refusals.every((s) => s === 503);
    console.log(
      `3. etcd stopped ${outageS} s under search load: searches before ${before.count} ok / ${before.failed} failed (p50 ${before.p50.toFixed(1)} ms), ` +
        `during ${during.count} ok / ${during.failed} failed (p50 ${during.p50.toFixed(1)} ms, ${(during.p50 / before.p50).toFixed(2)}x before); ` +
        `${refusals.length} sandbox updates during the outage: ${all503 ? 'all' : 'NOT all'} 503 QS_CLUSTER_STATE_UNAVAILABLE; data-2 stats said available=${stats.available}; ` +
        `after restart: first change committed ${createdMs.toFixed(0)} ms, every node on the same set ${convergedMs.toFixed(0)} ms`,
    );

    // 4. failover under a keyed bulk load
    await call(coordinator, 'PUT', '/keyed', {
      settings: { index: { number_of_shards: 3, number_of_replicas: 1 } },
    });
    const acked = new Set<string>();
    let next = 0;
    let writing = true;
    let failedItems = 0;
    let killedAt = Number.POSITIVE_INFINITY;
    let firstFailureMs = Number.POSITIVE_INFINITY;
    let recoveredAt = Number.NaN;
    const bulkLoad = Array.from({ length: 2 }, async () => {
      while (writing) {
        const sentAt = performance.now();
        let lines = '';
        for (let i = 0; i < 50; i++, next++)
          lines += `${JSON.stringify({ index: { _index: 'keyed', _id: `k${next}` } })}\n{"body":"doc ${next}"}\n`;
        try {
          const { body } = await call(coordinator, 'POST', '/_bulk', lines);
          let ok = 0;
          for (const item of body['items'] ?? []) {
            if (item.index.status < 300) {
              acked.add(item.index._id);
              ok++;
            } else failedItems++;
          }
          if (ok < 50 && sentAt >= killedAt) firstFailureMs = Math.min(firstFailureMs, sentAt);
          // Recovered: a bulk sent after the first failed one succeeded whole.
          if (ok === 50 && sentAt > firstFailureMs && Number.isNaN(recoveredAt))
            recoveredAt = performance.now();
        } catch {
          failedItems += 50;
        }
      }
    });
    await sleep(3000);
    const rows = (await call(coordinator, 'GET', '/_cat/shards/keyed?format=json')).body as unknown as {
      prirep: string;
      node: string;
    }[];
    const victim = cluster.dataNodes.find((n) => rows.some((r) => r.prirep === 'p' && r.node === n.id))!;
    const primaries = rows.filter((r) => r.prirep === 'p' && r.node === victim.id).length;
    const ackedBefore = acked.size;
    process.kill(victim.pid, 'SIGKILL');
    killedAt = performance.now();
    while (Number.isNaN(recoveredAt) && performance.now() - killedAt < 60_000) await sleep(20);
    const recoveredMs = recoveredAt - killedAt;
    await sleep(Math.max(0, 5000 - (performance.now() - killedAt)));
    await cluster.restartNode(victim.id);
    const rejoinStarted = performance.now();
    let rejoinMs = Number.NaN;
    let copies: string[] = [];
    while (performance.now() - rejoinStarted < 120_000) {
      const now = (await call(coordinator, 'GET', '/_cat/shards/keyed?format=json')).body as unknown as {
        prirep: string;
        node: string;
        state: string;
      }[];
      copies = now.filter((r) => r.node === victim.id).map((r) => `${r.prirep}:${r.state}`);
      if (copies.length > 0 && copies.every((c) => c === 'r:STARTED')) {
        rejoinMs = performance.now() - rejoinStarted;
        break;
      }
      await sleep(100);
    }
    writing = false;
    await Promise.all(bulkLoad);
    let missing = 0;
    for (const docId of acked)
      if ((await call(coordinator, 'GET', `/keyed/_doc/${docId}`)).body['found'] !== true) missing++;
    console.log(
      `4. failover: SIGKILL of ${victim.id} (${primaries} primaries of [keyed]) under 2 bulk clients: first failed item in a bulk sent ${(firstFailureMs - killedAt).toFixed(0)} ms after the kill, a bulk sent after it succeeded whole ${recoveredMs.toFixed(0)} ms after the kill ` +
        `(${(recoveredMs / 3000).toFixed(2)}x the 3 s membership lease); ${acked.size} documents acknowledged (${ackedBefore} before the kill), ${failedItems} items refused meanwhile; ` +
        `restarted 5 s after the kill, its copies [${copies.join(', ')}] ${Number.isNaN(rejoinMs) ? 'did NOT become' : `became`} in-sync replicas ${rejoinMs.toFixed(0)} ms after its restart; ` +
        `missing by GET: ${missing} of ${acked.size}`,
    );
  } finally {
    await cluster.stop();
    await etcd.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
