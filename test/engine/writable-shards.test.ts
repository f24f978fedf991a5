import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import MiniSearch from 'minisearch';
import { afterEach, describe, expect, it } from 'vitest';
import { WritableShards } from '../../src/engine/writable-shards.js';
import { IndexBoard } from '../../src/indices/index-board.js';
import { ShardCopy } from '../../src/indices/shard-copy.js';
import { SHARD_LOG_HEADER_BYTES } from '../../src/indices/shard-log.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function copyAt(name: string) {
  const d = mkdtempSync(join(tmpdir(), 'writable-shards-'));
  dirs.push(d);
  const logPath = join(d, name, 'translog.qslog');
  return { copy: (await ShardCopy.open({ index: 'logs', shard: 0, logPath })).copy, logPath };
}

const ids = (search: MiniSearch | undefined) =>
  search === undefined
    ? []
    : search
        .search(MiniSearch.wildcard)
        .map((r) => String(r.id))
        .sort();

describe('refresh board', () => {
  it('hands a catalog and published offsets to a reader of the same buffer', () => {
    const board = new IndexBoard();
    const reader = new IndexBoard(board.buffer);
    expect(reader.readCatalog().entries).toEqual([]);
    board.writeCatalog([{ slot: 3, index: 'a', uuid: 'u', shard: 1, numberOfShards: 2, logPath: '/x' }]);
    const catalog = reader.readCatalog();
    expect(catalog.entries).toEqual([
      { slot: 3, index: 'a', uuid: 'u', shard: 1, numberOfShards: 2, logPath: '/x' },
    ]);
    expect(catalog.sequence % 2).toBe(0);
    board.publish(3, 12_345);
    board.bumpRefreshes();
    expect(reader.published(3)).toBe(12_345);
    expect(reader.refreshes()).toBe(1);
  });

  it('refuses a buffer that is not a board', () => {
    expect(() => new IndexBoard(new SharedArrayBuffer(16))).toThrow(/buffer must be a SharedArrayBuffer of/);
  });
});

describe('WritableShards (a worker pulling from the board)', () => {
  it('sees nothing until a refresh publishes it, then exactly what was published', async () => {
    const { copy, logPath } = await copyAt('s0');
    const board = new IndexBoard();
    board.writeCatalog([{ slot: 0, index: 'logs', uuid: 'u1', shard: 0, numberOfShards: 2, logPath }]);
    board.publish(0, SHARD_LOG_HEADER_BYTES);
    const worker = new WritableShards(board.buffer);
    expect(worker.sync().catalogReloaded).toBe(true);
    expect(worker.indices.get('logs')?.length).toBe(2);
    expect(worker.indices.get('logs')?.[1]).toBeUndefined();

    await copy.write([
      { position: 0, action: 'index', id: 'a', source: { body: 'money money' } },
      { position: 1, action: 'index', id: 'b', source: { subject: 'linux', date: '2002-08-01' } },
    ]).durable;
    expect(worker.sync()).toEqual({ catalogReloaded: false, operationsApplied: 0 });
    expect(ids(worker.indices.get('logs')?.[0])).toEqual([]);

    const firstRefresh = copy.log.sizeBytes;
    board.publish(0, firstRefresh);
    board.bumpRefreshes();
    await copy.write([{ position: 2, action: 'delete', id: 'a' }]).durable; // written, not refreshed
    expect(worker.sync().operationsApplied).toBe(2);
    const shard = worker.indices.get('logs')![0]!;
    expect(ids(shard)).toEqual(['a', 'b']);
    expect(shard.search('money').map((r) => r.id)).toEqual(['a']);
    expect(shard.search('linux')[0]).toMatchObject({
      id: 'b',
      date: Date.parse('2002-08-01'),
      _source: { subject: 'linux', date: '2002-08-01' },
    });

    board.publish(0, copy.log.sizeBytes);
    board.bumpRefreshes();
    expect(worker.sync().operationsApplied).toBe(1);
    expect(ids(shard)).toEqual(['b']);
    await copy.close();
  });

  it('drops a copy removed from the catalog and starts afresh when a slot is reused', async () => {
    const first = await copyAt('first');
    const second = await copyAt('second');
    await first.copy.write([{ position: 0, action: 'index', id: 'old', source: {} }]).durable;
    await second.copy.write([{ position: 0, action: 'index', id: 'new', source: {} }]).durable;
    const board = new IndexBoard();
    board.writeCatalog([
      { slot: 0, index: 'a', uuid: 'u1', shard: 0, numberOfShards: 1, logPath: first.logPath },
    ]);
    board.publish(0, first.copy.log.sizeBytes);
    board.bumpRefreshes();
    const worker = new WritableShards(board.buffer);
    worker.sync();
    expect(ids(worker.indices.get('a')?.[0])).toEqual(['old']);

    board.writeCatalog([
      { slot: 0, index: 'b', uuid: 'u2', shard: 0, numberOfShards: 1, logPath: second.logPath },
    ]);
    board.publish(0, second.copy.log.sizeBytes);
    board.bumpRefreshes();
    worker.sync();
    expect(worker.indices.has('a')).toBe(false);
    expect(ids(worker.indices.get('b')?.[0])).toEqual(['new']);
    await first.copy.close();
    await second.copy.close();
  });

  it('costs no file read when nothing moved', async () => {
    const { copy, logPath } = await copyAt('idle');
    const board = new IndexBoard();
    board.writeCatalog([{ slot: 0, index: 'logs', uuid: 'u', shard: 0, numberOfShards: 1, logPath }]);
    const worker = new WritableShards(board.buffer);
    worker.sync();
    rmSync(logPath); // a read would fail now; an idle sync must not read
    expect(worker.sync()).toEqual({ catalogReloaded: false, operationsApplied: 0 });
    await copy.close();
  });
});
