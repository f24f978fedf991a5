import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { IndexMetadataStore, type PlaceIndex } from '../../src/indices/index-metadata-store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) {
    chmodSync(d, 0o700);
    rmSync(d, { recursive: true, force: true });
  }
});

function file(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'qs-metadata-'));
  dirs.push(d);
  return path.join(d, 'indices', 'metadata.json');
}

const local: PlaceIndex = (settings) => ({
  layout: Array.from({ length: settings.numberOfShards }, () => ({ primary: 'n1', replicas: [] })),
});

describe('IndexMetadataStore', () => {
  it('saves indices and templates durably and reads them back checked', async () => {
    const p = file();
    const store = await IndexMetadataStore.open({ path: p, reservedNames: ['spam-1'] });
    await store.putTemplate('logs', {
      index_patterns: ['logs-*'],
      priority: 2,
      template: { settings: { number_of_shards: 4 } },
    });
    const created = await store.createIndex(
      'logs-1',
      { settings: { refreshInterval: '5s' }, mappings: { a: 1 } },
      local,
    );
    expect(created.settings).toMatchObject({ numberOfShards: 4, refreshInterval: '5s' });
    expect(created.layout).toHaveLength(4);
    await store.updateSettings('logs-1', { bulkRoutingEnabled: true });
    const again = await IndexMetadataStore.open({ path: p, reservedNames: ['spam-1'] });
    expect(again.names()).toEqual(['logs-1']);
    expect(again.get('logs-1')).toMatchObject({
      uuid: created.uuid,
      mappings: { a: 1 },
      settings: { numberOfShards: 4, refreshIntervalMs: 5000, bulkRoutingEnabled: true },
    });
    expect(again.template('logs')?.priority).toBe(2);
    expect(JSON.parse(readFileSync(p, 'utf8')).indices[0].settings).toEqual({
      'index.number_of_shards': 4,
      'index.refresh_interval': '5s',
      'index.bulk_routing.enabled': true,
    });
  });

  it('refuses a taken name, a corpus name and too many shard copies, changing nothing', async () => {
    const store = await IndexMetadataStore.open({
      path: file(),
      reservedNames: ['spam-1'],
      maxShardCopies: 5,
    });
    await store.createIndex('a', { settings: { numberOfShards: 3 }, mappings: undefined }, local);
    await expect(store.createIndex('a', { settings: {}, mappings: undefined }, local)).rejects.toThrow(
      /^index \[a\/.{22}\] already exists$/,
    );
    await expect(store.createIndex('spam-1', { settings: {}, mappings: undefined }, local)).rejects.toThrow(
      /^index \[spam-1\] already exists$/,
    );
    await expect(
      store.createIndex('b', { settings: { numberOfShards: 3 }, mappings: undefined }, local),
    ).rejects.toThrow(
      /^settings\.index\.number_of_shards must keep the shard copies at most 5 \(this index would bring them to 6; cluster\.max_shards_per_node\); received 3$/,
    );
    expect(store.names()).toEqual(['a']);
  });

  it('leaves memory unchanged when the save fails', async () => {
    const p = file();
    const store = await IndexMetadataStore.open({ path: p });
    await store.createIndex('kept', { settings: {}, mappings: undefined }, local);
    // A directory where the file is: the atomic rename over it fails (also for root).
    rmSync(p);
    mkdirSync(path.join(p, 'blocker'), { recursive: true });
    await expect(store.createIndex('lost', { settings: {}, mappings: undefined }, local)).rejects.toThrow();
    expect(store.names()).toEqual(['kept']);
    expect(store.get('lost')).toBeUndefined();
    // The next change saves again once the path is free.
    rmSync(p, { recursive: true });
    await store.createIndex('later', { settings: {}, mappings: undefined }, local);
    expect((await IndexMetadataStore.open({ path: p })).names()).toEqual(['kept', 'later']);
  });

  it('refuses a damaged file naming the entry', async () => {
    const p = file();
    const store = await IndexMetadataStore.open({ path: p });
    await store.createIndex('x', { settings: {}, mappings: undefined }, local);
    const doc = JSON.parse(readFileSync(p, 'utf8'));
    doc.indices[0].settings['index.number_of_shards'] = 'many';
    writeFileSync(p, JSON.stringify(doc));
    await expect(IndexMetadataStore.open({ path: p })).rejects.toThrow(
      /indices\[0\]\.settings\.index\.number_of_shards must be an integer in 1\.\.1024; received "many"/,
    );
  });
});
