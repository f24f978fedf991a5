import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseEngineOptions } from '../../src/engine/engine-options.js';
import { INDEX_FORMAT_VERSION } from '../../src/engine/index-cache.js';
import * as engine from '../../src/engine/minisearch-engine.js';
import { shardOf } from '../../src/engine/shard-of.js';
import { readCorpus } from '../../src/engine/spam-assassin-corpus.js';
import type { TaskContext } from '../../src/pool/engine-module.js';
import { resolveShardRouting, shardId } from '../../src/routing/shard-routing.js';

const cacheDir = mkdtempSync(join(tmpdir(), 'qs-held-'));
afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));
const context: TaskContext = {
  signal: new AbortController().signal,
  cancelled: false,
  throwIfCancelled: () => {},
  checkpoint: () => {},
  taskId: 1,
};
const MAX_DOCS = 40;
const ids = readCorpus(['spam-1'], MAX_DOCS)
  .get('spam-1')!
  .map((d) => d.id);

describe('shards by the Elasticsearch routing hash', () => {
  it('puts a mail on the shard Elasticsearch routes its _id to (format version 2)', () => {
    expect(INDEX_FORMAT_VERSION).toBe(2);
    for (const shards of [1, 2, 3, 5, 8]) {
      const routing = resolveShardRouting({ numberOfShards: shards });
      for (const id of ids) expect(shardOf(id, shards)).toBe(shardId(routing, id));
    }
    const counts = [0, 0, 0];
    for (const id of ids) counts[shardOf(id, 3)]!++;
    for (const count of counts) expect(count).toBeGreaterThan(5);
  });
});

describe('held shards and requested shards', () => {
  const options = { maxDocumentsPerIndex: MAX_DOCS, shardsPerIndex: 3, heldShards: { 'spam-1': [2, 0] } };

  it('loads only the held shards and searches them, all or the ones asked for', async () => {
    await engine.prepare({ cacheDir, options, log: () => {} });
    await engine.init({ cacheDir, options });
    const held = ids.filter((id) => shardOf(id, 3) !== 1).sort();
    const all = engine.handle({ indices: ['spam-1'], body: { size: 100 } }, context);
    expect(all._shards.total).toBe(2);
    expect(all.hits.hits.map((h) => h._id).sort()).toEqual(held);
    const one = engine.handle(
      { indices: ['spam-1'], body: { size: 100 }, shards: { 'spam-1': [2] } },
      context,
    );
    expect(one._shards.total).toBe(1);
    expect(one.hits.hits.map((h) => h._id).sort()).toEqual(ids.filter((id) => shardOf(id, 3) === 2).sort());
    // An index served but not held: no shard, no hits.
    const none = engine.handle({ indices: ['spam-2'], body: {} }, context);
    expect(none._shards.total).toBe(0);
    expect(none.hits.total!.value).toBe(0);
  });

  it('answers 404 shard_not_found_exception for a shard it does not hold', () => {
    expect(() =>
      engine.handle({ indices: ['spam-1'], body: {}, shards: { 'spam-1': [1] } }, context),
    ).toThrow('no such shard [spam-1][1] on this node (it holds shards [0, 2])');
    try {
      engine.handle({ indices: ['spam-2'], body: {}, shards: { 'spam-2': [0] } }, context);
    } catch (error) {
      expect(error).toMatchObject({ statusCode: 404, type: 'shard_not_found_exception' });
      expect((error as Error).message).toMatch(/holds no shard of it/);
    }
  });

  it.each([
    [
      { heldShards: [] },
      'engineOptions.heldShards must be an object of index name to shard numbers; received []',
    ],
    [{ heldShards: { 'spam-9': [0] } }, 'engineOptions.heldShards.spam-9 must name a served index'],
    [
      { heldShards: { 'spam-1': 0 } },
      'engineOptions.heldShards.spam-1 must be an array of shard numbers; received 0',
    ],
    [
      { heldShards: { 'spam-1': [2] } },
      'engineOptions.heldShards.spam-1[0] must be an integer in 0..1; received 2',
    ],
    [
      { heldShards: { 'spam-1': [1, 1] } },
      'engineOptions.heldShards.spam-1[1] must not repeat a shard; received 1',
    ],
  ])('refuses engine option %j naming it', (extra, message) => {
    expect(() => parseEngineOptions({ shardsPerIndex: 2, ...extra })).toThrow(message);
  });
});
