import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { EngineFailureError, InvalidArgumentError } from '../../src/errors.js';
import {
  type LoggedOperation,
  ShardLog,
  ShardLogCorruptedError,
  type ShardOperation,
} from '../../src/indices/shard-log.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const WRITER = fileURLToPath(new URL('./fixtures/shard-log-writer.mjs', import.meta.url));

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function freshPath(name = 'shard-0.log'): string {
  const directory = mkdtempSync(join(tmpdir(), 'shard-log-'));
  directories.push(directory);
  return join(directory, 'nested', name);
}

function batch(tag: string, n: number, padBytes = 10): ShardOperation[] {
  return Array.from({ length: n }, (_, i) => ({
    op: 'index' as const,
    id: `${tag}-${i}`,
    routing: i % 2 === 0 ? 'r' : undefined,
    source: { tag, i, pad: 'p'.repeat(padBytes) },
  }));
}

/** Start offsets of the records in a log file (each starts with `QSRC` and a u32 length). */
function recordOffsets(data: Buffer): number[] {
  const offsets: number[] = [];
  let offset = 8;
  while (offset + 12 <= data.length && data.toString('latin1', offset, offset + 4) === 'QSRC') {
    offsets.push(offset);
    offset += 12 + data.readUInt32LE(offset + 4);
  }
  return offsets;
}

function ids(operations: readonly LoggedOperation[]): string[] {
  return operations.map((o) => o.id);
}

/** The ids a fresh open of the log at `path` replays; the log is closed again. */
async function operationsOf(path: string): Promise<string[]> {
  const opened = await ShardLog.open({ path });
  await opened.log.close();
  return ids(opened.operations);
}

describe('ShardLog: append and replay', () => {
  it('creates the log, appends batches with contiguous sequence numbers and replays them on open', async () => {
    const path = freshPath();
    const first = await ShardLog.open({ path });
    expect(first.operations).toEqual([]);
    expect(first.truncatedBytes).toBe(0);
    expect(await first.log.append(batch('a', 3))).toEqual({ firstSeqNo: 0, lastSeqNo: 2 });
    expect(await first.log.append([{ op: 'delete', id: 'a-1' }])).toEqual({ firstSeqNo: 3, lastSeqNo: 3 });
    expect(await first.log.append([{ op: 'update', id: 'a-0', source: { x: 1 } }])).toEqual({
      firstSeqNo: 4,
      lastSeqNo: 4,
    });
    expect(first.log.syncedSeqNo).toBe(4);
    expect(first.log.sizeBytes).toBe(statSync(path).size);
    await first.log.close();

    const second = await ShardLog.open({ path });
    expect(second.operations).toEqual([
      { op: 'index', id: 'a-0', routing: 'r', source: { tag: 'a', i: 0, pad: 'pppppppppp' }, seqNo: 0 },
      { op: 'index', id: 'a-1', source: { tag: 'a', i: 1, pad: 'pppppppppp' }, seqNo: 1 },
      { op: 'index', id: 'a-2', routing: 'r', source: { tag: 'a', i: 2, pad: 'pppppppppp' }, seqNo: 2 },
      { op: 'delete', id: 'a-1', seqNo: 3 },
      { op: 'update', id: 'a-0', source: { x: 1 }, seqNo: 4 },
    ]);
    expect(second.log.nextSeqNo).toBe(5);
    expect(await second.log.append(batch('b', 1))).toEqual({ firstSeqNo: 5, lastSeqNo: 5 });
    await second.log.close();
  });

  it('gives concurrent appends sequence numbers in call order and shares writes between them', async () => {
    const path = freshPath();
    const { log } = await ShardLog.open({ path });
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => log.append(batch(`c${i}`, 2))));
    expect(results).toEqual(
      Array.from({ length: 50 }, (_, i) => ({ firstSeqNo: 2 * i, lastSeqNo: 2 * i + 1 })),
    );
    await log.close();
    const reopened = await ShardLog.open({ path });
    expect(reopened.operations.map((o) => o.seqNo)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(ids(reopened.operations).slice(0, 4)).toEqual(['c0-0', 'c0-1', 'c1-0', 'c1-1']);
    await reopened.log.close();
  });

  it('in async mode resolves after the write and fsyncs on sync() (or on its interval)', async () => {
    const path = freshPath();
    const { log } = await ShardLog.open({ path, durability: 'async', syncIntervalMs: 60_000 });
    await log.append(batch('a', 2));
    await log.append(batch('b', 2));
    expect(log.syncedSeqNo).toBe(-1);
    await log.sync();
    expect(log.syncedSeqNo).toBe(3);
    await log.close();
    expect(await operationsOf(path)).toEqual(['a-0', 'a-1', 'b-0', 'b-1']);

    const timed = await ShardLog.open({ path: freshPath(), durability: 'async', syncIntervalMs: 10 });
    await timed.log.append(batch('t', 1));
    expect(timed.log.syncedSeqNo).toBe(-1);
    await vi.waitFor(() => expect(timed.log.syncedSeqNo).toBe(0), { timeout: 5000, interval: 5 });
    await timed.log.close();
  });

  it('refuses malformed batches, oversized batches and appends after close', async () => {
    const path = freshPath();
    const { log } = await ShardLog.open({ path, maxRecordBytes: 200 });
    await expect(log.append([])).rejects.toThrow('operations must be a non-empty array; received []');
    await expect(log.append([{ op: 'upsert' as 'index', id: 'x', source: {} }])).rejects.toThrow(
      'operations[0].op must be index, create, update or delete; received "upsert"',
    );
    await expect(log.append([{ op: 'index', id: '', source: {} }])).rejects.toThrow(InvalidArgumentError);
    await expect(log.append([{ op: 'index', id: 'x' }])).rejects.toThrow(
      'operations[0].source must be an object for index',
    );
    await expect(log.append(batch('big', 1, 500))).rejects.toThrow(
      'must encode to at most 200 bytes (maxRecordBytes)',
    );
    expect(log.nextSeqNo).toBe(0); // refused batches take no sequence numbers
    await log.close();
    await expect(log.append(batch('late', 1))).rejects.toThrow('log must be open');
    await expect(ShardLog.open({ path, durability: 'sometimes' as 'async' })).rejects.toThrow(
      InvalidArgumentError,
    );
  });
});

describe('ShardLog: recovery from a torn or damaged file', () => {
  /** A log with three batches (each appended and fsynced on its own); returns the file's bytes. */
  async function threeBatches(path: string): Promise<Buffer> {
    const { log } = await ShardLog.open({ path });
    for (const tag of ['a', 'b', 'c']) await log.append(batch(tag, 3, 100));
    await log.close();
    return readFileSync(path);
  }

  it('cuts a partly written last record and keeps every complete batch', async () => {
    const path = freshPath();
    const clean = await threeBatches(path);
    const [, , third] = recordOffsets(clean);
    // The file as a crash in the middle of the third batch's write leaves it.
    for (const cut of [third! + 3, third! + 11, third! + 40, clean.length - 1]) {
      writeFileSync(path, clean.subarray(0, cut));
      const { log, operations, truncatedBytes } = await ShardLog.open({ path });
      expect(ids(operations)).toEqual(['a-0', 'a-1', 'a-2', 'b-0', 'b-1', 'b-2']);
      expect(truncatedBytes).toBe(cut - third!);
      expect(statSync(path).size).toBe(third);
      // The log continues after the cut: the lost batch's sequence numbers are given again.
      expect(await log.append(batch('d', 1))).toEqual({ firstSeqNo: 6, lastSeqNo: 6 });
      await log.close();
      expect((await operationsOf(path)).at(-1)).toBe('d-0');
    }
  });

  it('cuts garbage, zeros and a bad checksum at the end', async () => {
    const path = freshPath();
    const clean = await threeBatches(path);
    const [, , third] = recordOffsets(clean);
    const flippedLast = Buffer.from(clean);
    flippedLast[clean.length - 5]! ^= 0xff;
    const cases: [string, Buffer, number, string[]][] = [
      [
        'random garbage',
        Buffer.concat([clean, Buffer.from('\x01garbage that is no record at all')]),
        clean.length,
        ['c-2'],
      ],
      [
        'zeros (a file extended but not written)',
        Buffer.concat([clean, Buffer.alloc(4096)]),
        clean.length,
        ['c-2'],
      ],
      [
        'a magic and a length pointing past the end',
        Buffer.concat([clean, Buffer.from('QSRC\xff\x00\x00\x00', 'latin1')]),
        clean.length,
        ['c-2'],
      ],
      ['a flipped byte in the last record', flippedLast, third!, ['b-2']],
    ];
    for (const [, bytes, keep, last] of cases) {
      writeFileSync(path, bytes);
      const { log, operations, truncatedBytes } = await ShardLog.open({ path });
      expect(ids(operations).slice(-1)).toEqual(last);
      expect(truncatedBytes).toBe(bytes.length - keep);
      expect(statSync(path).size).toBe(keep);
      await log.close();
    }
  });

  it('drops a later record that was not written after an fsync, with the damaged one before it', async () => {
    // Power loss can keep a later page of one unsynced write and lose an earlier one.
    const path = freshPath();
    const { log } = await ShardLog.open({ path });
    await log.append(batch('a', 1));
    // b goes alone into one write; c and d share the next write (one fsync for both).
    await Promise.all([log.append(batch('b', 1)), log.append(batch('c', 1)), log.append(batch('d', 1))]);
    await log.close();
    const data = readFileSync(path);
    const offsets = recordOffsets(data);
    expect(offsets).toHaveLength(4);
    data[offsets[2]! + 20]! ^= 0xff; // damage c; d is intact but was written in the same unsynced write
    writeFileSync(path, data);
    const reopened = await ShardLog.open({ path });
    expect(ids(reopened.operations)).toEqual(['a-0', 'b-0']);
    expect(reopened.truncatedBytes).toBe(data.length - offsets[2]!);
    await reopened.log.close();
  });

  it('refuses damage before records that were written after an fsync: corruption, not a torn tail', async () => {
    const path = freshPath();
    const clean = await threeBatches(path);
    const [, second] = recordOffsets(clean);
    const damaged = Buffer.from(clean);
    damaged[second! + 30]! ^= 0x01;
    writeFileSync(path, damaged);
    const error = await ShardLog.open({ path }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ShardLogCorruptedError);
    expect(error).toBeInstanceOf(EngineFailureError);
    expect((error as ShardLogCorruptedError).offsetBytes).toBe(second);
    expect(readFileSync(path).equals(damaged)).toBe(true); // nothing was cut
  });

  it('starts afresh from a torn header and refuses a file that is not a shard log', async () => {
    const path = freshPath();
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, 'QSSL');
    const torn = await ShardLog.open({ path });
    expect(torn).toMatchObject({ operations: [], truncatedBytes: 4 });
    await torn.log.append(batch('a', 1));
    await torn.log.close();
    expect(await operationsOf(path)).toEqual(['a-0']);

    const other = freshPath('other.log');
    mkdirSync(dirname(other), { recursive: true });
    writeFileSync(other, '{"not":"a log"}\n');
    await expect(ShardLog.open({ path: other })).rejects.toThrow(ShardLogCorruptedError);
  });

  it('refuses a good record whose sequence numbers do not continue the log', async () => {
    const path = freshPath();
    const clean = await threeBatches(path);
    const [, second, third] = recordOffsets(clean);
    // Drop the second record: the third (seqNo 6..8) then follows the first (0..2).
    writeFileSync(path, Buffer.concat([clean.subarray(0, second), clean.subarray(third)]));
    await expect(ShardLog.open({ path })).rejects.toThrow('sequence number 6 where 3 was expected');
  });
});

describe('ShardLog: crash test', () => {
  let compiledDir: string;
  let compiledModule: string;

  beforeAll(() => {
    // The writer runs in a plain Node process: transpile the log and its imports to JavaScript.
    compiledDir = mkdtempSync(join(tmpdir(), 'shard-log-compiled-'));
    for (const file of ['src/indices/shard-log.ts', 'src/errors.ts', 'src/common/durable-file.ts']) {
      const source = readFileSync(join(REPO, file), 'utf8');
      const { outputText } = ts.transpileModule(source, {
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
        fileName: file,
      });
      const out = join(compiledDir, file.replace(/\.ts$/, '.js'));
      mkdirSync(dirname(out), { recursive: true });
      writeFileSync(out, outputText);
    }
    writeFileSync(join(compiledDir, 'package.json'), '{"type":"module"}\n');
    compiledModule = join(compiledDir, 'src/indices/shard-log.js');
  });

  afterAll(() => {
    rmSync(compiledDir, { recursive: true, force: true });
  });

  /** Runs the writer until it has acknowledged `minBatches` batches, SIGKILLs it, returns its acknowledgements. */
  async function runAndKill(path: string, minBatches: number): Promise<[number, number, number][]> {
    const child = spawn(process.execPath, [WRITER, compiledModule, path, '20', '3000'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const closed = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once('close', (_code, signal) => resolve(signal)),
    );
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`writer acknowledged too little within 20 s: ${stderr}`)),
        20_000,
      );
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
        if (stdout.split('\n').length - 1 >= minBatches && child.exitCode === null && !child.killed) {
          clearTimeout(timer);
          child.kill('SIGKILL'); // mid-way: the writer is always inside an append
          resolve();
        }
      });
      void closed.then(() => {
        clearTimeout(timer);
        if (!child.killed) reject(new Error(`writer exited on its own: ${stderr}`));
      });
    });
    expect(await closed).toBe('SIGKILL'); // 'close' waits for the pipes: every printed line is in stdout
    return stdout
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => line.split(' ').map(Number) as [number, number, number]);
  }

  function expectAcknowledged(
    operations: readonly LoggedOperation[],
    acks: readonly [number, number, number][],
  ): void {
    expect(operations.map((o) => o.seqNo)).toEqual(operations.map((_, i) => i));
    for (const [batchNo, first, last] of acks) {
      expect(last - first).toBe(19);
      for (let seqNo = first; seqNo <= last; seqNo++) {
        expect(operations[seqNo]?.id).toBe(`b${batchNo}-${seqNo - first}`);
      }
    }
  }

  it('recovers every batch a SIGKILLed writer acknowledged, across two crashes', async () => {
    const path = freshPath();
    const firstRun = await runAndKill(path, 30);
    expect(firstRun.length).toBeGreaterThanOrEqual(30);
    const afterFirst = await ShardLog.open({ path });
    expectAcknowledged(afterFirst.operations, firstRun);
    await afterFirst.log.close();

    const secondRun = await runAndKill(path, 30);
    // The second writer continued the first one's batches and sequence numbers.
    expect(secondRun[0]![1]).toBe(afterFirst.operations.length);
    const afterSecond = await ShardLog.open({ path });
    expectAcknowledged(afterSecond.operations, [...firstRun, ...secondRun]);
    await afterSecond.log.close();
    // Nothing lost that was acknowledged, and at most the one batch in flight beyond that.
    const acknowledged = (secondRun.at(-1)![2] as number) + 1;
    expect(afterSecond.operations.length - acknowledged).toBeLessThanOrEqual(20);
  }, 60_000);
});

describe('ShardLog fsync ordering', () => {
  it("with durability 'request', an append resolves only after an fsync that follows its write", async () => {
    const path = freshPath();
    const { log } = await ShardLog.open({ path, durability: 'request' });
    // Every FileHandle shares one prototype: watch its sync and write calls in order.
    const { open } = await import('node:fs/promises');
    const probe = await open(join(dirname(path), 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
    await probe.close();
    const events: string[] = [];
    const originalSync = proto.sync;
    const sync = vi.spyOn(proto, 'sync').mockImplementation(async function (this: unknown) {
      events.push('sync');
      await Reflect.apply(originalSync, this, []);
    });
    try {
      for (let i = 0; i < 3; i++) {
        await log.append(batch(`b${i}`, 2));
        events.push(`acked ${i}`);
      }
    } finally {
      sync.mockRestore();
      await log.close();
    }
    // Each acknowledgement comes after at least one more fsync than the previous one.
    let syncs = 0;
    const syncsBeforeAck: number[] = [];
    for (const e of events) {
      if (e === 'sync') syncs++;
      else syncsBeforeAck.push(syncs);
    }
    expect(syncsBeforeAck[0]).toBeGreaterThanOrEqual(1);
    expect(syncsBeforeAck[1]).toBeGreaterThan(syncsBeforeAck[0]!);
    expect(syncsBeforeAck[2]).toBeGreaterThan(syncsBeforeAck[1]!);
  });
});
