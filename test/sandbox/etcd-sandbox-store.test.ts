import { afterAll, beforeAll, expect, it } from 'vitest';
import { EtcdConnection } from '../../src/etcd/etcd-connection.js';
import { ClusterStateUnavailableError, isQuerySandboxError, SandboxLimitError } from '../../src/errors.js';
import { EtcdSandboxStore } from '../../src/sandbox/etcd-sandbox-store.js';
import { SandboxRegistry } from '../../src/sandbox/sandbox-registry.js';
import { describeEtcd, startTestEtcd, type TestEtcd } from '../cluster/etcd-server.js';

interface Node {
  readonly connection: EtcdConnection;
  readonly store: EtcdSandboxStore;
  readonly registry: SandboxRegistry;
}

describeEtcd('EtcdSandboxStore: one sandbox set for every node', () => {
  let etcd: TestEtcd;
  const nodes: Node[] = [];
  let prefixCount = 0;

  const openNodes = async (count: number, maxSandboxes: number): Promise<Node[]> => {
    const prefix = `/qs-test-${process.pid}-${prefixCount++}`;
    const opened: Node[] = [];
    for (let i = 0; i < count; i++) {
      const connection = new EtcdConnection({ endpoints: etcd.endpoints, prefix, probeIntervalMs: 100 });
      const store = new EtcdSandboxStore(connection);
      const registry = await SandboxRegistry.open({ store, maxSandboxes });
      opened.push({ connection, store, registry });
    }
    nodes.push(...opened);
    return opened;
  };

  beforeAll(async () => {
    etcd = await startTestEtcd();
  });
  afterAll(async () => {
    for (const n of nodes) {
      n.registry.close();
      await n.store.close();
      n.connection.close();
    }
    await etcd?.destroy();
  });

  it('carries search settings and concurrency caps to every node, and a change of them too', async () => {
    const [a, b] = await openNodes(2, 10);
    const created = await a!.registry.create({
      name: 'capped',
      priority: 1,
      search_settings: { timeout: '750ms', cancel_after_time_interval: '1m', override_request_values: true },
      max_concurrent_tasks: 3,
      max_concurrent_tasks_per_user: 1,
    });
    const seen = async (check: () => boolean) => {
      for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
      return check();
    };
    expect(await seen(() => b!.registry.get(created.id) !== undefined)).toBe(true);
    expect(b!.registry.get(created.id)).toMatchObject({
      searchSettings: {
        timeout: { text: '750ms', ms: 750 },
        cancelAfterTimeInterval: { text: '1m', ms: 60_000 },
        overrideRequestValues: true,
      },
      maxConcurrentTasks: 3,
      maxConcurrentTasksPerUser: 1,
    });
    await b!.registry.update(created.id, { search_settings: { timeout: null }, max_concurrent_tasks: 2 });
    expect(await seen(() => a!.registry.get(created.id)?.maxConcurrentTasks === 2)).toBe(true);
    expect(a!.registry.get(created.id)!.searchSettings.timeout).toBeUndefined();
    // A fresh node loads the same from etcd.
    const fresh = await SandboxRegistry.open({ store: a!.store });
    expect(fresh.get(created.id)).toMatchObject({ maxConcurrentTasks: 2, maxConcurrentTasksPerUser: 1 });
    fresh.close();
  });

  it('acknowledges exactly 10 of 50 concurrent creates spread over 3 nodes against a limit of 10', async () => {
    const three = await openNodes(3, 10);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) =>
        three[i % 3]!.registry.create({ name: `tenant-${i}`, priority: i + 1 }),
      ),
    );
    const acknowledged = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.filter((o) => o.status === 'rejected');
    process.stdout.write(
      `concurrent creates: ${acknowledged.length} acknowledged, ${refused.length} refused (limit 10)\n`,
    );
    expect(acknowledged).toHaveLength(10);
    for (const r of refused) expect((r as PromiseRejectedResult).reason).toBeInstanceOf(SandboxLimitError);
    // Every node converges on the same 10 (plus the root), in the same order.
    await expect
      .poll(() => three.map((n) => n.registry.list().length), { timeout: 5000 })
      .toEqual([11, 11, 11]);
    const ids = three.map((n) =>
      n.registry
        .list()
        .map((s) => s.id)
        .join(','),
    );
    expect(new Set(ids).size).toBe(1);
    expect(three.map((n) => n.registry.version)).toEqual([11, 11, 11]);
  });

  it('applies a change made on one node on every other node within a second (p50, p99 over 100 changes)', async () => {
    const [a, b, c] = await openNodes(3, 100);
    const sandbox = await a!.registry.create({ name: 'moving', priority: 5 });
    await expect
      .poll(() => [b!.registry.get(sandbox.id)?.priority, c!.registry.get(sandbox.id)?.priority])
      .toEqual([5, 5]);
    const lags: number[] = [];
    for (let i = 0; i < 100; i++) {
      const priority = 100 + i;
      const seen = [b!, c!].map(
        (n) =>
          new Promise<number>((resolve) => {
            const off = n.registry.onChange((list) => {
              if (list.find((s) => s.id === sandbox.id)?.priority === priority) {
                off();
                resolve(performance.now());
              }
            });
          }),
      );
      const started = performance.now();
      await a!.registry.update(sandbox.id, { priority });
      const times = await Promise.all(seen);
      lags.push(Math.max(...times) - started);
    }
    lags.sort((x, y) => x - y);
    const p50 = lags[49]!;
    const p99 = lags[98]!;
    process.stdout.write(
      `propagation to every node over 100 changes: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${lags[99]!.toFixed(1)} ms\n`,
    );
    expect(p99).toBeLessThan(1000);
  });

  it('while etcd is down: serves the last set, refuses changes with a 503 error, then converges', async () => {
    const [a, b] = await openNodes(2, 100);
    await a!.registry.create({ name: 'before', priority: 1 });
    await expect.poll(() => b!.registry.list().length).toBe(2);
    await etcd.stop();
    try {
      const refused = await a!.registry.create({ name: 'during', priority: 2 }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ClusterStateUnavailableError);
      expect(isQuerySandboxError(refused) && refused.code).toBe('QS_CLUSTER_STATE_UNAVAILABLE');
      expect((refused as Error).message).toMatch(
        /cannot change the sandboxes: the cluster state store \(etcd at .*\) is unavailable/,
      );
      expect(a!.connection.available).toBe(false);
      expect(a!.connection.stats()).toMatchObject({ available: false, outages: 1 });
      // The last set seen still classifies.
      expect(a!.registry.list().map((s) => s.name)).toEqual(['_root', 'before']);
      expect(b!.registry.list().map((s) => s.name)).toEqual(['_root', 'before']);
    } finally {
      await etcd.start();
    }
    await expect.poll(() => a!.connection.available, { timeout: 10_000 }).toBe(true);
    await a!.registry.create({ name: 'after', priority: 3 });
    await expect
      .poll(() => b!.registry.list().map((s) => s.name), { timeout: 10_000 })
      .toEqual(['_root', 'before', 'after']);
  });
});
