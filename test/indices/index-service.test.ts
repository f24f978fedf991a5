/**
 * The index service's rules, once against the single node's local placement (real shard copies in a
 * temporary directory) and once against a recording fake of a remote placement (what the coordinator
 * sends to its data nodes; the cluster tests run the real one over HTTP).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ShardBatch } from '../../src/bulk/bulk-planner.js';
import type { RefreshPolicy } from '../../src/bulk/bulk-response.js';
import type { CatShardRow, GetResponse } from '../../src/indices/index-api.js';
import { type IndexMetadata, IndexMetadataStore } from '../../src/indices/index-metadata-store.js';
import { type IndexPlacement, IndexService } from '../../src/indices/index-service.js';
import type { IndexSettings } from '../../src/indices/index-settings.js';
import { IndexingPressure } from '../../src/indices/indexing-pressure.js';
import { httpStatusOf } from '../../src/errors.js';
import { WritableIndices } from '../../src/indices/writable-indices.js';
import { SILENT_LOGGER } from '../../src/runtime-logger.js';

const dirs: string[] = [];
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of open.splice(0)) await o.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'qs-index-service-'));
  dirs.push(d);
  return d;
}

/** The HTTP status and message of what `run` throws or rejects with (sync or async). */
async function refusal(run: () => unknown): Promise<{ status: number; message: string }> {
  try {
    await run();
  } catch (error) {
    return { status: httpStatusOf(error as Error), message: (error as Error).message };
  }
  throw new Error('expected a refusal');
}

const ndjson = (...lines: unknown[]) => `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;

async function singleNode(role: 'single' | 'data' = 'single'): Promise<WritableIndices> {
  const indices = await WritableIndices.open({
    dir: path.join(tempDir(), 'indices'),
    nodeId: 'n1',
    role,
    readOnlyIndices: ['corpus'],
    log: SILENT_LOGGER,
  });
  open.push(indices);
  return indices;
}

/** A remote placement's stand-in: records every call, answers every item 201, can refuse to open. */
class FakeRemotePlacement implements IndexPlacement {
  readonly calls: string[] = [];
  refuseOpen = false;
  /** When set, executeBatches waits for it (a bulk held in flight). */
  hold: Promise<void> | undefined;

  place(settings: IndexSettings) {
    const nodes = ['d1', 'd2'];
    return {
      layout: Array.from({ length: settings.numberOfShards }, (_, s) => ({
        primary: nodes[s % 2]!,
        replicas: settings.numberOfReplicas > 0 ? [nodes[(s + 1) % 2]!] : [],
      })),
    };
  }
  async openIndex(meta: IndexMetadata): Promise<void> {
    this.calls.push(`open ${meta.name}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (this.refuseOpen) throw new Error('[d2] 500: disk full');
  }
  async abandonIndex(meta: IndexMetadata): Promise<void> {
    this.calls.push(`abandon ${meta.name}`);
  }
  async removeIndex(meta: IndexMetadata): Promise<void> {
    this.calls.push(`remove ${meta.name}`);
  }
  checkSettings(before: IndexSettings, after: IndexSettings): void {
    if (before.numberOfReplicas !== after.numberOfReplicas) throw new Error('replicas are placed once');
  }
  async applySettings(meta: IndexMetadata): Promise<void> {
    this.calls.push(`settings ${meta.name} ${meta.settings.refreshIntervalMs}`);
  }
  getDocument(meta: IndexMetadata, shard: number, id: string): GetResponse {
    this.calls.push(`get ${meta.name}/${shard}/${id}`);
    return { _index: meta.name, _id: id, found: false };
  }
  catShards(metas: readonly IndexMetadata[]): CatShardRow[] {
    return metas.map((m) => ({
      index: m.name,
      shard: '0',
      prirep: 'p',
      state: 'STARTED',
      docs: '0',
      node: 'd1',
    }));
  }
  async refresh(metas: readonly IndexMetadata[]) {
    const total = metas.reduce((n, m) => n + m.layout.length * 2, 0);
    return { total, successful: total - 1 };
  }
  async executeBatches(
    batches: readonly ShardBatch[],
    refresh: RefreshPolicy,
    responses: (Record<string, unknown> | undefined)[],
  ): Promise<unknown> {
    await this.hold;
    for (const batch of batches) {
      this.calls.push(`bulk ${batch.index}/${batch.shard} ${batch.items.length} refresh=${refresh}`);
      for (const planned of batch.items) {
        responses[planned.position] = { index: { _index: batch.index, _id: planned.id, status: 201 } };
      }
    }
    return undefined;
  }
}

async function coordinator(pressure?: IndexingPressure) {
  const metadata = await IndexMetadataStore.open({
    path: path.join(tempDir(), 'indices', 'metadata.json'),
    reservedNames: ['corpus'],
  });
  const placement = new FakeRemotePlacement();
  return { service: new IndexService(metadata, placement, { pressure }), placement };
}

describe('IndexService over the local placement (single node)', () => {
  it('creates, writes, reads, refreshes and deletes an index on this node', async () => {
    const indices = await singleNode();
    expect(await indices.createIndex('logs', { settings: { number_of_shards: 2 } })).toEqual({
      acknowledged: true,
      shards_acknowledged: true,
      index: 'logs',
    });
    expect(indices.shards.copiesOf('logs')).toHaveLength(2);
    const bulk = await indices.bulk(ndjson({ index: { _index: 'logs', _id: 'a' } }, { body: 'hello' }), {
      refresh: 'true',
    });
    expect(bulk.errors).toBe(false);
    expect(bulk.items[0]).toMatchObject({ index: { _id: 'a', status: 201, result: 'created' } });
    expect(await indices.getDocument('logs', 'a', undefined)).toMatchObject({
      found: true,
      _source: { body: 'hello' },
    });
    expect(await indices.refresh('logs')).toEqual({ _shards: { total: 2, successful: 2, failed: 0 } });
    const rows = (await indices.catShards('logs')) as CatShardRow[];
    expect(rows.filter((r) => r.prirep === 'p').map((r) => r.node)).toEqual(['n1', 'n1']);
    expect(rows.filter((r) => r.prirep === 'r').every((r) => r.state === 'UNASSIGNED')).toBe(true);
    await indices.deleteIndex('logs');
    expect(indices.names()).toEqual([]);
    expect(indices.shards.copiesOf('logs')).toHaveLength(0);
  });

  it('auto-creates the index a bulk names, and refuses items that write to a corpus index', async () => {
    const indices = await singleNode();
    const bulk = await indices.bulk(
      ndjson(
        { index: { _index: 'fresh', _id: '1' } },
        { a: 1 },
        { index: { _index: 'corpus', _id: '2' } },
        { a: 2 },
      ),
    );
    expect(indices.names()).toEqual(['fresh']);
    expect(bulk.items[0]).toMatchObject({ index: { status: 201 } });
    expect(bulk.items[1]).toMatchObject({
      index: { status: 403, error: { type: 'cluster_block_exception' } },
    });
  });

  it('refuses wildcard deletes (destructive_requires_name) and corpus changes, before touching anything', async () => {
    const indices = await singleNode();
    await indices.createIndex('logs', {});
    expect(await refusal(() => indices.deleteIndex('log*'))).toMatchObject({
      status: 400,
      message: expect.stringContaining('action.destructive_requires_name'),
    });
    expect(await refusal(() => indices.deleteIndex('_all'))).toMatchObject({ status: 400 });
    expect(await refusal(() => indices.deleteIndex('logs,corpus'))).toMatchObject({ status: 403 });
    expect(
      await refusal(() => indices.updateSettings('corpus', { index: { refresh_interval: '5s' } })),
    ).toMatchObject({ status: 403 });
    expect(indices.names()).toEqual(['logs']);
  });

  it('lets a single node change number_of_replicas (its replicas stay unassigned)', async () => {
    const indices = await singleNode();
    await indices.createIndex('logs', {});
    await indices.updateSettings('logs', { index: { number_of_replicas: 3 } });
    expect(indices.getSettings('logs')).toMatchObject({
      logs: { settings: { index: { number_of_replicas: '3' } } },
    });
    const rows = (await indices.catShards('logs')) as CatShardRow[];
    expect(rows.filter((r) => r.prirep === 'r')).toHaveLength(3);
  });

  it('refuses index changes on a cluster data node, but answers the reads', async () => {
    const indices = await singleNode('data');
    expect(await refusal(() => indices.createIndex('logs', {}))).toMatchObject({
      status: 400,
      message: expect.stringContaining("served by the cluster's coordinator"),
    });
    expect(await refusal(() => indices.bulk(ndjson({ index: { _index: 'logs' } }, {})))).toMatchObject({
      status: 400,
    });
    expect(await refusal(() => indices.putTemplate('t', { index_patterns: ['x-*'] }, false))).toMatchObject({
      status: 400,
    });
    expect(indices.getTemplates()).toEqual({ index_templates: [] });
    expect(indices.getSettings('_all')).toEqual({});
  });

  it('keeps one searchable-index array until the writable indices change', async () => {
    const indices = await singleNode();
    const corpus = ['corpus'];
    expect(indices.searchableIndices(corpus)).toBe(corpus);
    await indices.createIndex('logs', {});
    const first = indices.searchableIndices(corpus);
    expect(first).toEqual(['corpus', 'logs']);
    expect(indices.searchableIndices(corpus)).toBe(first);
    await indices.createIndex('more', {});
    expect(indices.searchableIndices(corpus)).toEqual(['corpus', 'logs', 'more']);
    expect(indices.searchableIndices(undefined)).toEqual(['logs', 'more']);
  });
});

describe('IndexService over a remote placement (fake data nodes)', () => {
  it('places a new index with the placement and opens it there', async () => {
    const { service, placement } = await coordinator();
    await service.createIndex('logs', { settings: { number_of_shards: 2, number_of_replicas: 1 } });
    expect(service.metadata.get('logs')!.layout).toEqual([
      { primary: 'd1', replicas: ['d2'] },
      { primary: 'd2', replicas: ['d1'] },
    ]);
    expect(placement.calls).toEqual(['open logs']);
  });

  it('undoes a creation the data nodes refused: no metadata left, the placement told to abandon it', async () => {
    const { service, placement } = await coordinator();
    placement.refuseOpen = true;
    await expect(service.createIndex('logs', {})).rejects.toThrow('disk full');
    expect(service.names()).toEqual([]);
    expect(placement.calls).toEqual(['open logs', 'abandon logs']);
    placement.refuseOpen = false;
    await service.createIndex('logs', {});
    expect(service.names()).toEqual(['logs']);
  });

  it('checks destructive_requires_name once, for the remote placement too', async () => {
    const { service, placement } = await coordinator();
    await service.createIndex('logs', {});
    expect(await refusal(() => service.deleteIndex('*'))).toMatchObject({
      status: 400,
      message: expect.stringContaining('action.destructive_requires_name'),
    });
    expect(placement.calls).toEqual(['open logs']);
    await service.deleteIndex('logs');
    expect(placement.calls).toEqual(['open logs', 'remove logs']);
  });

  it('lets the placement refuse a settings change before anything is saved or sent', async () => {
    const { service, placement } = await coordinator();
    await service.createIndex('logs', {});
    await expect(service.updateSettings('logs', { index: { number_of_replicas: 2 } })).rejects.toThrow(
      'replicas are placed once',
    );
    expect(service.metadata.get('logs')!.settings.numberOfReplicas).toBe(1);
    await service.updateSettings('logs', { index: { refresh_interval: '5s' } });
    expect(placement.calls).toEqual(['open logs', 'settings logs 5000']);
  });

  it('creates an index once when concurrent bulks name it, and hands the batches to the placement', async () => {
    const { service, placement } = await coordinator();
    const body = ndjson({ index: { _index: 'auto', _id: '1' } }, { a: 1 });
    const [one, two] = await Promise.all([service.bulk(body), service.bulk(body, { refresh: 'wait_for' })]);
    expect(one.errors).toBe(false);
    expect(two.items[0]).toMatchObject({ index: { _index: 'auto', status: 201 } });
    expect(placement.calls.filter((c) => c.startsWith('open'))).toEqual(['open auto']);
    expect(placement.calls.filter((c) => c.startsWith('bulk'))).toHaveLength(2);
    expect(placement.calls).toContain('bulk auto/0 1 refresh=wait_for');
  });

  it('counts bulks and the ones refused for indexing pressure, and releases the bytes', async () => {
    const { service, placement } = await coordinator(new IndexingPressure(64));
    let release!: () => void;
    placement.hold = new Promise((resolve) => {
      release = resolve;
    });
    const body = ndjson({ index: { _index: 'auto', _id: '1' } }, { text: 'x'.repeat(40) });
    const first = service.bulk(body);
    expect(await refusal(() => service.bulk(body))).toMatchObject({ status: 429 });
    release();
    await first;
    expect(service.stats()).toMatchObject({ bulks: 1, rejectedBulks: 1, pressure: { inFlightBytes: 0 } });
  });

  it('shapes the answers the placement counts: GET shard by routing, refresh failures', async () => {
    const { service, placement } = await coordinator();
    await service.createIndex('logs', { settings: { number_of_shards: 3 } });
    expect(await service.getDocument('logs', 'x', undefined)).toEqual({
      _index: 'logs',
      _id: 'x',
      found: false,
    });
    expect(placement.calls.at(-1)).toMatch(/^get logs\/[0-2]\/x$/);
    expect(await refusal(() => service.getDocument('nope', 'x', undefined))).toMatchObject({ status: 404 });
    expect(await service.refresh()).toEqual({ _shards: { total: 6, successful: 5, failed: 1 } });
  });
});
