import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ShardWriteItem } from '../../src/bulk/shard-write-item.js';
import { mergeDocument, ShardCopy } from '../../src/indices/shard-copy.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function logPath(): string {
  const d = mkdtempSync(join(tmpdir(), 'shard-copy-'));
  dirs.push(d);
  return join(d, '0', 'translog.qslog');
}

async function open(path: string) {
  return (await ShardCopy.open({ index: 'logs', shard: 0, logPath: path })).copy;
}

let position = 0;
const item = (fields: Omit<ShardWriteItem, 'position'>): ShardWriteItem => ({
  position: position++,
  ...fields,
});

describe('ShardCopy', () => {
  it('creates, replaces, conflicts on create, and deletes with Elasticsearch results and versions', async () => {
    const copy = await open(logPath());
    const { results, durable } = copy.write([
      item({ action: 'index', id: 'a', source: { n: 1 } }),
      item({ action: 'index', id: 'a', source: { n: 2 } }),
      item({ action: 'create', id: 'a', source: { n: 3 } }),
      item({ action: 'create', id: 'b', source: { n: 1 } }),
      item({ action: 'delete', id: 'b' }),
      item({ action: 'delete', id: 'nope' }),
    ]);
    await durable;
    expect(results.map((r) => [r.status, r.result ?? r.error?.type, r.version])).toEqual([
      [201, 'created', 1],
      [200, 'updated', 2],
      [409, 'version_conflict_engine_exception', undefined],
      [201, 'created', 1],
      [200, 'deleted', 2],
      [404, 'not_found', 1],
    ]);
    expect(results.map((r) => r.seqNo)).toEqual([0, 1, undefined, 2, 3, 4]);
    expect(copy.get('a')).toMatchObject({ source: { n: 2 }, version: 2, seqNo: 1 });
    expect(copy.get('b')).toBeUndefined();
    expect(copy.docCount).toBe(1);
    await copy.close();
  });

  it('merges updates key by key, detects no-ops, and upserts', async () => {
    const copy = await open(logPath());
    const first = copy.write([
      item({ action: 'index', id: 'a', source: { tags: { x: 1 }, name: 'n' } }),
      item({ action: 'update', id: 'a', doc: { tags: { y: 2 } } }),
      item({ action: 'update', id: 'a', doc: { name: 'n' } }),
      item({ action: 'update', id: 'missing', doc: { z: 1 } }),
      item({ action: 'update', id: 'u1', doc: { z: 1 }, upsert: { z: 0 } }),
      item({ action: 'update', id: 'u2', doc: { z: 2 }, docAsUpsert: true }),
    ]);
    await first.durable;
    expect(first.results.map((r) => r.result ?? r.error?.type)).toEqual([
      'created',
      'updated',
      'noop',
      'document_missing_exception',
      'created',
      'created',
    ]);
    expect(copy.get('a')?.source).toEqual({ tags: { x: 1, y: 2 }, name: 'n' });
    expect(copy.get('u1')?.source).toEqual({ z: 0 });
    expect(copy.get('u2')?.source).toEqual({ z: 2 });
    // The noop wrote nothing: four operations logged.
    expect(first.operations).toHaveLength(4);
    await copy.close();
  });

  it('replays its log after a restart: every acknowledged write comes back with its version', async () => {
    const path = logPath();
    const copy = await open(path);
    await copy.write([item({ action: 'index', id: 'a', source: { v: 1 } })]).durable;
    await copy.write([
      item({ action: 'index', id: 'a', source: { v: 2 } }),
      item({ action: 'update', id: 'a', doc: { w: 1 } }),
      item({ action: 'index', id: 'gone', source: {} }),
      item({ action: 'delete', id: 'gone' }),
    ]).durable;
    await copy.close();
    const again = await open(path);
    expect(again.get('a')).toMatchObject({ source: { v: 2, w: 1 }, version: 3, seqNo: 2 });
    expect(again.get('gone')).toBeUndefined();
    expect(again.log.nextSeqNo).toBe(5);
    await again.close();
  });

  it('applies a primary batch on a replica in order, skips what it has, and reports a gap', async () => {
    const primary = await open(logPath());
    const replica = await open(logPath());
    const one = primary.write([
      item({ action: 'index', id: 'a', source: {} }),
      item({ action: 'index', id: 'b', source: {} }),
    ]);
    await one.durable;
    const two = primary.write([item({ action: 'delete', id: 'a' })]);
    await two.durable;
    expect(await replica.applyReplica(two.operations)).toEqual({ ok: false, nextSeqNo: 0 });
    expect(await replica.applyReplica(one.operations)).toEqual({ ok: true });
    expect(await replica.applyReplica([...one.operations, ...two.operations])).toEqual({ ok: true });
    expect([...replica.ids()]).toEqual(['b']);
    expect(replica.log.nextSeqNo).toBe(3);
    await primary.close();
    await replica.close();
  });

  it('mergeDocument reports whether anything changed', () => {
    expect(mergeDocument({ a: 1, o: { x: 1 } }, { o: { x: 1 } })).toEqual({
      merged: { a: 1, o: { x: 1 } },
      changed: false,
    });
    expect(mergeDocument({ a: 1 }, { a: [1] })).toEqual({ merged: { a: [1] }, changed: true });
    expect(mergeDocument({}, { n: null })).toEqual({ merged: { n: null }, changed: true });
  });
});
