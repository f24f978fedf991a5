/**
 * The coordinator's remote placement without data nodes: where copies go, which settings it refuses,
 * the single-shard choice around a node that is down, and the write-side counters. The calls over
 * the internal protocol are covered by cluster-writes.test.ts against real data nodes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ReplicaRanking } from '../../src/admission/replica-ranking.js';
import { StatsCollector } from '../../src/admission/stats-collector.js';
import {
  clusterWriteStats,
  openClusterIndices,
  RemotePlacement,
} from '../../src/cluster/remote-placement.js';
import { IndexMetadataStore } from '../../src/indices/index-metadata-store.js';
import { resolveIndexSettings } from '../../src/indices/index-settings.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function metadataPath(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'qs-remote-placement-'));
  dirs.push(d);
  return path.join(d, 'indices', 'metadata.json');
}

const nodes = new Map([
  ['d1', 'http://127.0.0.1:1'],
  ['d2', 'http://127.0.0.1:2'],
  ['d3', 'http://127.0.0.1:3'],
]);

function lent(down: ReadonlySet<string> = new Set()) {
  return {
    nodes,
    collector: new StatsCollector(),
    ranking: new ReplicaRanking(),
    isDown: (id: string) => down.has(id),
    markDown: () => undefined,
    timeoutMs: 1000,
    clusterSecret: undefined,
    signal: new AbortController().signal,
    log: pino({ level: 'silent' }),
  };
}

describe('RemotePlacement', () => {
  it('places shards round-robin over the data nodes, continuing from the shards already placed', async () => {
    const indices = await openClusterIndices({
      ...lent(),
      readOnlyIndices: [],
      metadataPath: metadataPath(),
    });
    // No data node answers: the creation is undone, so place with the store directly.
    const placement = indices.placement;
    await indices.metadata.createIndex(
      'a',
      { settings: { numberOfShards: 2, numberOfReplicas: 1 }, mappings: undefined },
      (s) => placement.place(s),
    );
    await indices.metadata.createIndex(
      'b',
      { settings: { numberOfShards: 2, numberOfReplicas: 5 }, mappings: undefined },
      (s) => placement.place(s),
    );
    expect(indices.metadata.get('a')!.layout).toEqual([
      { primary: 'd1', replicas: ['d2'] },
      { primary: 'd2', replicas: ['d3'] },
    ]);
    // Replicas are capped at data nodes − 1; the next index starts where the last one ended.
    expect(indices.metadata.get('b')!.layout).toEqual([
      { primary: 'd3', replicas: ['d1', 'd2'] },
      { primary: 'd1', replicas: ['d2', 'd3'] },
    ]);
    expect(indices.metadata.get('b')!.nodes).toEqual(Object.fromEntries(nodes));
    expect(placement.copiesOf('a', 1)).toEqual(['d2', 'd3']);
    expect(placement.shardsOf('b')).toBe(2);
    expect(placement.shardsOf('corpus')).toBeUndefined();
  });

  it('starts every copy in sync at term 1 when the metadata is cluster state', async () => {
    const metadata = await IndexMetadataStore.open({ path: metadataPath() });
    const placement = new RemotePlacement({ ...lent(), metadata, tracked: true });
    const { layout } = placement.place(resolveIndexSettings({ numberOfShards: 1, numberOfReplicas: 1 }));
    expect(layout).toEqual([{ primary: 'd1', replicas: ['d2'], inSync: ['d1', 'd2'], primaryTerm: 1 }]);
  });

  it('refuses a number_of_replicas change (copies are placed once) but not another setting', async () => {
    const metadata = await IndexMetadataStore.open({ path: metadataPath() });
    const placement = new RemotePlacement({ ...lent(), metadata, tracked: false });
    const before = resolveIndexSettings({ numberOfReplicas: 1 });
    expect(() => placement.checkSettings(before, resolveIndexSettings({ numberOfReplicas: 2 }))).toThrow(
      /number_of_replicas cannot change/,
    );
    expect(() =>
      placement.checkSettings(before, resolveIndexSettings({ numberOfReplicas: 1, refreshInterval: '5s' })),
    ).not.toThrow();
  });

  it('draws single-shard bulks away from a node that is down, and counts the choices per primary', async () => {
    const indices = await openClusterIndices({
      ...lent(new Set(['d2'])),
      readOnlyIndices: [],
      metadataPath: metadataPath(),
    });
    const placement = indices.placement;
    await indices.metadata.createIndex(
      'a',
      { settings: { numberOfShards: 3, numberOfReplicas: 0 }, mappings: undefined },
      (s) => placement.place(s),
    );
    const chosen = Array.from({ length: 30 }, () => placement.chooseShard('a', [0, 1, 2]));
    expect(chosen.every((s) => s !== 1)).toBe(true);
    expect(new Set(chosen)).toEqual(new Set([0, 2]));
    expect(clusterWriteStats(indices)).toMatchObject({
      bulks: 0,
      chosenShards: { d1: expect.any(Number), d3: expect.any(Number) },
    });
    expect(clusterWriteStats(indices).chosenShards['d2']).toBeUndefined();
  });

  it('checks its options', async () => {
    const metadata = await IndexMetadataStore.open({ path: metadataPath() });
    expect(() => new RemotePlacement({ ...lent(), metadata, tracked: false, slowNodeFactor: 1 })).toThrow(
      /options.slowNodeFactor must be a number > 1/,
    );
    expect(() => new RemotePlacement({ ...lent(), metadata, tracked: false, slowNodeRetryMs: -1 })).toThrow(
      /options.slowNodeRetryMs/,
    );
  });
});
