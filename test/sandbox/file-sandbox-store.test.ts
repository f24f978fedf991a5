import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { FileSandboxStore } from '../../src/sandbox/file-sandbox-store.js';

const WRITER = fileURLToPath(new URL('../fixtures/store-writer.mjs', import.meta.url));
const COMPILED_STORE = join(process.cwd(), 'dist/src/sandbox/file-sandbox-store.js');

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** A store file path in a fresh directory of its own (removed after the test). */
function freshFile(name = 'sandboxes.json'): string {
  const directory = mkdtempSync(join(tmpdir(), 'file-sandbox-store-'));
  directories.push(directory);
  return join(directory, name);
}

describe('FileSandboxStore', () => {
  it('loads undefined when no file exists, then stores only on the expected version', async () => {
    const file = freshFile();
    const store = new FileSandboxStore(file);
    expect(await store.load()).toBeUndefined();

    expect(await store.compareAndSet(0, { version: 1, sandboxes: [{ name: 'a' }] })).toBe(true);
    expect(await store.load()).toEqual({ version: 1, sandboxes: [{ name: 'a' }] });
    expect(readFileSync(file, 'utf8')).toBe(
      `${JSON.stringify({ version: 1, sandboxes: [{ name: 'a' }] }, null, 2)}\n`,
    );

    expect(await store.compareAndSet(0, { version: 1, sandboxes: [{ name: 'b' }] })).toBe(false);
    expect(await store.compareAndSet(1, { version: 2, sandboxes: [{ name: 'c' }] })).toBe(true);
    // A second instance sees what the first wrote: the version comes from the file, not memory.
    expect(await new FileSandboxStore(file).load()).toEqual({ version: 2, sandboxes: [{ name: 'c' }] });
  });

  it('creates a missing parent directory on the first write', async () => {
    const file = join(freshFile(), 'nested', 'deeper', 'sandboxes.json');
    const store = new FileSandboxStore(file);
    expect(await store.compareAndSet(0, { version: 1, sandboxes: [] })).toBe(true);
    expect(await store.load()).toEqual({ version: 1, sandboxes: [] });
  });

  it('rejects a next.version other than expectedVersion + 1 with a RangeError, writing nothing', async () => {
    const file = freshFile();
    const store = new FileSandboxStore(file);
    await expect(store.compareAndSet(0, { version: 2, sandboxes: [] })).rejects.toThrow(RangeError);
    await expect(store.compareAndSet(0, { version: 2, sandboxes: [] })).rejects.toThrow(
      /next\.version must be expectedVersion \+ 1 = 1; received 2/,
    );
    await expect(store.compareAndSet(-1, { version: 0, sandboxes: [] })).rejects.toThrow(RangeError);
    await expect(store.compareAndSet(0.5, { version: 1.5, sandboxes: [] })).rejects.toThrow(RangeError);
    expect(existsSync(file)).toBe(false);
  });

  it('lets exactly one of 50 concurrent compareAndSet(0, v1) calls win, across instances', async () => {
    const file = freshFile();
    const stores = Array.from({ length: 5 }, () => new FileSandboxStore(file));
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        stores[i % stores.length]!.compareAndSet(0, { version: 1, sandboxes: [{ name: `w${i}` }] }),
      ),
    );
    expect(results.filter((won) => won)).toHaveLength(1);
    const winner = results.indexOf(true);
    expect(await stores[0]!.load()).toEqual({ version: 1, sandboxes: [{ name: `w${winner}` }] });
    expect(readdirSync(join(file, '..'))).toEqual(['sandboxes.json']);
  });

  it('throws naming the file when it holds invalid JSON, and never overwrites it', async () => {
    const file = freshFile();
    writeFileSync(file, '{"version": 1, "sandboxes": [');
    const store = new FileSandboxStore(file);
    await expect(store.load()).rejects.toThrow(`sandbox store ${file} is not valid JSON: `);
    await expect(store.compareAndSet(0, { version: 1, sandboxes: [] })).rejects.toThrow(file);
    expect(readFileSync(file, 'utf8')).toBe('{"version": 1, "sandboxes": [');
  });

  it.each([
    ['an array', '[]', 'must hold an object'],
    ['a missing version', '{"sandboxes": []}', '"version" must be an integer >= 1; found undefined'],
    ['version 0', '{"version": 0, "sandboxes": []}', '"version" must be an integer >= 1; found 0'],
    ['a fractional version', '{"version": 1.5, "sandboxes": []}', 'found 1.5'],
    ['a string version', '{"version": "1", "sandboxes": []}', 'found "1"'],
    ['sandboxes not an array', '{"version": 1, "sandboxes": {}}', '"sandboxes" must be an array'],
  ])('throws naming the file when it holds the wrong shape: %s', async (_, text, message) => {
    const file = freshFile();
    writeFileSync(file, text);
    const error = await new FileSandboxStore(file).load().catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toContain(message);
  });

  it('removes stale <file>.tmp-* files on load, only those, and writes the file with mode 0o600', async () => {
    const file = freshFile('store.json');
    const directory = join(file, '..');
    const stale = ['store.json.tmp-123-abc', 'store.json.tmp-'];
    const kept = ['store.json.tmp', 'store.jsonx.tmp-1', 'other.json.tmp-1', 'xstore.json.tmp-1'];
    for (const name of [...stale, ...kept]) writeFileSync(join(directory, name), 'partial');

    const store = new FileSandboxStore(file);
    expect(await store.load()).toBeUndefined();
    expect(readdirSync(directory).sort()).toEqual([...kept].sort());

    expect(await store.compareAndSet(0, { version: 1, sandboxes: [] })).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('leaves a whole, self-consistent file whenever a writer process is SIGKILLed (20 kills)', async () => {
    expect(existsSync(COMPILED_STORE), `${COMPILED_STORE} is missing: run npm run build first`).toBe(true);
    const file = freshFile();
    const versions: number[] = [];
    for (let run = 0; run < 20; run++) {
      const writer = startWriter(file);
      try {
        await writer.firstWrite;
        await sleep(30 + Math.random() * 220);
        writer.child.kill('SIGKILL');
        expect(await writer.exited).toBe('SIGKILL');
      } finally {
        if (writer.child.exitCode === null && writer.child.signalCode === null) writer.child.kill('SIGKILL');
      }

      const stored = JSON.parse(readFileSync(file, 'utf8')) as {
        version: number;
        sandboxes: { name: string; priority: number; tags: string[] }[];
      };
      expect(stored.sandboxes).toHaveLength(200);
      for (const [i, entry] of stored.sandboxes.entries()) {
        expect(entry).toEqual({ name: `sb-${i}`, priority: i, tags: [`v${stored.version}`] });
      }
      // Every write the writer reported as done is in the file; versions never go backwards.
      expect(stored.version).toBeGreaterThanOrEqual(writer.lastReported());
      expect(stored.version).toBeGreaterThanOrEqual(versions.at(-1) ?? 0);
      versions.push(stored.version);
    }
    console.log(`versions after each of 20 kills: ${versions.join(' ')}`);
    // The next load sweeps any temp file the last kill left.
    expect((await new FileSandboxStore(file).load())?.version).toBe(versions.at(-1));
    expect(readdirSync(join(file, '..'))).toEqual(['sandboxes.json']);
  }, 25_000);
});

interface Writer {
  readonly child: ChildProcess;
  /** Resolves at the writer's first reported write; rejects if it exits or stays silent for 10 s. */
  readonly firstWrite: Promise<void>;
  /** Resolves with the signal that ended the writer (null when it exited on its own). */
  readonly exited: Promise<NodeJS.Signals | null>;
  /** Highest version the writer has reported writing so far (0: none yet). */
  lastReported(): number;
}

/** Starts test/fixtures/store-writer.mjs on `file`, from the repository root so it finds dist/. */
function startWriter(file: string): Writer {
  const child = spawn(process.execPath, [WRITER, file], {
    cwd: process.cwd(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let reported = 0;
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => {
    child.once('exit', (_code, signal) => resolve(signal));
  });
  const firstWrite = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('store writer wrote nothing within 10 s')), 10_000);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const lines = stdout.split('\n');
      stdout = lines.pop() ?? '';
      for (const line of lines) reported = Math.max(reported, Number(line));
      if (reported > 0) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then((signal) => {
      clearTimeout(timer);
      reject(new Error(`store writer ended (${signal ?? child.exitCode}) before writing: ${stderr}`));
    });
  });
  return { child, firstWrite, exited, lastReported: () => reported };
}
