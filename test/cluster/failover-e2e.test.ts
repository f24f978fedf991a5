/**
 * A real loopback cluster (three data nodes, a coordinator, a test etcd) through outage and failover,
 * in short: the long forms with figures are `bench/cluster-state.ts`.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RunningCluster, startCluster } from '../../src/cli/cluster.js';
import { portsFree } from '../../src/cli/port-probe.js';
import { describeEtcd, startTestEtcd, type TestEtcd } from './etcd-server.js';

async function freeBase(): Promise<number> {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 4000) * 10;
    if (await portsFree(base, 4)) return base;
  }
}

describeEtcd('a cluster with its state in etcd', () => {
  let etcd: TestEtcd;
  let cluster: RunningCluster;
  let token: string;

  beforeAll(async () => {
    etcd = await startTestEtcd();
    const dataDir = mkdtempSync(path.join(tmpdir(), 'qs-failover-'));
    cluster = await startCluster({
      host: '127.0.0.1',
      basePort: await freeBase(),
      dataNodes: 3,
      shardsPerIndex: 2,
      replicas: 1,
      nodeCores: 1,
      threads: 1,
      dataDir,
      maxDocs: 20,
      engine: undefined,
      logLevel: 'warn',
      dataNodeArgs: [],
      coordinatorArgs: [],
      etcd: etcd.endpoints,
      output: 'silent',
    });
    token = readFileSync(path.join(dataDir, 'cluster', 'admin-token'), 'utf8').trim();
  }, 180_000);
  afterAll(async () => {
    await cluster?.stop();
    await etcd?.destroy();
  });

  const call = async (url: string, method: string, urlPath: string, body?: unknown) => {
    const response = await fetch(`${url}${urlPath}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: JSON answers, read field by field
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  const names = async (url: string) =>
    Object.values((await call(url, 'GET', '/_sandbox')).body)
      .map((s) => String((s as { name?: string; _id?: string }).name ?? (s as { _id?: string })._id))
      .sort();

  it('shares sandboxes: a create on one data node is seen by the others', async () => {
    const [a, b, c] = cluster.dataNodes;
    const created = await call(a!.url, 'PUT', '/_sandbox', { name: 'shared', priority: 7 });
    expect(created.status).toBe(201);
    for (const n of [b!, c!]) await expect.poll(() => names(n.url), { timeout: 5000 }).toContain('shared');
  });

  it('while etcd is stopped: searches go on, changes answer 503, the stats say so; then every node converges', async () => {
    const [a, b, c] = cluster.dataNodes;
    await etcd.stop();
    try {
      for (let i = 0; i < 5; i++) {
        const search = await call(cluster.coordinator.url, 'POST', '/_search', { size: 1 });
        expect(search.status).toBe(200);
        expect(search.body['_shards'].failed).toBe(0);
      }
      const refused = await call(b!.url, 'PUT', '/_sandbox', { name: 'during', priority: 8 });
      expect(refused.status).toBe(503);
      expect(refused.body['error']).toMatchObject({
        code: 'QS_CLUSTER_STATE_UNAVAILABLE',
        type: 'master_not_discovered_exception',
      });
      const stats = (await call(b!.url, 'GET', '/_nodes/stats')).body;
      expect(stats['nodes'][b!.id]['cluster_state']).toMatchObject({ store: 'etcd', available: false });
    } finally {
      await etcd.start();
    }
    await expect
      .poll(async () => (await call(b!.url, 'PUT', '/_sandbox', { name: 'after', priority: 9 })).status, {
        timeout: 15_000,
        interval: 500,
      })
      .toBe(201);
    const expected = await names(b!.url);
    expect(expected).toEqual(expect.arrayContaining(['after', 'shared']));
    expect(expected).not.toContain('during');
    for (const n of [a!, b!, c!]) {
      await expect.poll(() => names(n.url), { timeout: 5000 }).toEqual(expected);
      expect((await call(n.url, 'GET', '/_nodes/stats')).body['nodes'][n.id]['cluster_state'].available).toBe(
        true,
      );
    }
  });

  it('fails a killed primary over to its in-sync replica without losing an acknowledged write; the node rejoins as a replica', async () => {
    const coordinator = cluster.coordinator.url;
    expect(
      (await call(coordinator, 'PUT', '/keyed', { settings: { index: { number_of_shards: 3 } } })).status,
    ).toBe(200);
    const acknowledged = new Set<string>();
    let next = 0;
    const bulk = async (count: number) => {
      let lines = '';
      for (let i = 0; i < count; i++, next++) {
        lines += `${JSON.stringify({ index: { _index: 'keyed', _id: `k${next}` } })}\n${JSON.stringify({ body: `doc ${next}` })}\n`;
      }
      const { body } = await call(coordinator, 'POST', '/_bulk', lines);
      let ok = 0;
      for (const item of body['items'] ?? []) {
        if (item.index.status < 300) {
          acknowledged.add(item.index._id);
          ok++;
        }
      }
      return ok;
    };
    for (let i = 0; i < 5; i++) expect(await bulk(20)).toBe(20);
    const rows = (await call(coordinator, 'GET', '/_cat/shards/keyed?format=json')).body as unknown as {
      prirep: string;
      node: string;
    }[];
    const victim = cluster.dataNodes.find((n) => rows.some((r) => r.prirep === 'p' && r.node === n.id))!;
    const primariesBefore = rows.filter((r) => r.prirep === 'p' && r.node === victim.id).length;
    expect(primariesBefore).toBeGreaterThan(0);
    process.kill(victim.pid, 'SIGKILL');
    const killed = performance.now();
    let recoveredMs: number | undefined;
    while (performance.now() - killed < 30_000) {
      if ((await bulk(20)) === 20) {
        recoveredMs = performance.now() - killed;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    process.stdout.write(
      `failover: writes succeed again ${Math.round(recoveredMs ?? -1)} ms after SIGKILL of ${victim.id}\n`,
    );
    expect(recoveredMs).toBeDefined();
    for (let i = 0; i < 3; i++) expect(await bulk(20)).toBe(20);
    const missing = async () => {
      let count = 0;
      for (const id of acknowledged) {
        const { body } = await call(coordinator, 'GET', `/keyed/_doc/${id}`);
        if (body['found'] !== true) count++;
      }
      return count;
    };
    expect(await missing()).toBe(0);
    await cluster.restartNode(victim.id);
    await expect
      .poll(
        async () => {
          const now = (await call(coordinator, 'GET', '/_cat/shards/keyed?format=json')).body as unknown as {
            prirep: string;
            node: string;
            state: string;
          }[];
          return now.filter((r) => r.node === victim.id).map((r) => `${r.prirep}:${r.state}`);
        },
        { timeout: 30_000, interval: 500 },
      )
      .toEqual(expect.arrayContaining(Array.from({ length: primariesBefore }, () => 'r:STARTED')));
    const back = (await call(coordinator, 'GET', '/_cat/shards/keyed?format=json')).body as unknown as {
      prirep: string;
      node: string;
    }[];
    expect(back.filter((r) => r.node === victim.id && r.prirep === 'p')).toHaveLength(0);
    expect(await missing()).toBe(0);
    const stats = (await call(coordinator, 'GET', '/_nodes/stats')).body;
    expect(stats['nodes']['coordinator']['membership']['promotions']).toBeGreaterThanOrEqual(primariesBefore);
  }, 120_000);
});
