import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CancelledError, InvalidArgumentError, NotRunningError } from '../src/errors.js';
import { createRuntime } from '../src/runtime.js';
import { FileSandboxStore } from '../src/sandbox/file-sandbox-store.js';

const echoEngine = fileURLToPath(new URL('./fixtures/echo-engine.mjs', import.meta.url));
const forgetsClose = fileURLToPath(new URL('./fixtures/forgets-close.mjs', import.meta.url));
const dataDir = () => mkdtempSync(path.join(tmpdir(), 'qs-lifecycle-'));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const settle = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ value, error: undefined }),
    (error: unknown) => ({ value: undefined, error }),
  );

/** Runs the fixture in a child process; resolves with its exit code, output and wall time. */
function runChild(
  mode: string,
  timeoutMs: number,
  more: { readonly args?: readonly string[]; readonly cwd?: string; readonly env?: NodeJS.ProcessEnv } = {},
) {
  const started = performance.now();
  return new Promise<{
    code: number | null;
    signal: string | null;
    stdout: string;
    stderr: string;
    ms: number;
  }>((resolve) => {
    execFile(
      process.execPath,
      [forgetsClose, mode, ...(more.args ?? [dataDir()])],
      {
        timeout: timeoutMs,
        killSignal: 'SIGKILL',
        ...(more.cwd !== undefined ? { cwd: more.cwd } : {}),
        ...(more.env !== undefined ? { env: more.env } : {}),
      },
      (error, stdout, stderr) => {
        const e = error as (Error & { code?: number; signal?: string }) | null;
        resolve({
          code: e === null ? 0 : typeof e.code === 'number' ? e.code : null,
          signal: e?.signal ?? null,
          stdout,
          stderr,
          ms: performance.now() - started,
        });
      },
    );
  });
}

describe('runtime lifecycle', () => {
  it('lets a process that forgets close() exit on its own, a replaced worker included', async () => {
    const child = await runChild('echo', 60_000);
    expect(child.stderr).toBe('');
    expect(child.signal).toBeNull(); // not killed by the time-out: it exited
    expect(child.code).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual({
      echo: { echo: 'hi', indices: ['alpha'] },
      hard: true,
      replaced: 1,
    });
  });

  it('lets a process that forgets close() exit with the built-in engine and a written writable index', async () => {
    const child = await runChild('builtin', 120_000);
    expect(child.stderr).toBe('');
    expect(child.signal).toBeNull();
    expect(child.code).toBe(0);
    expect(JSON.parse(child.stdout)).toMatchObject({ bulkErrors: false });
    expect(JSON.parse(child.stdout).hits).toBeGreaterThanOrEqual(1);
  });

  it('creates nothing in the working directory without a dataDir: the cache goes to the user cache dir', async () => {
    const cwd = dataDir();
    const cache = dataDir();
    const tmp = dataDir();
    const child = await runChild('builtin', 120_000, {
      args: ['-', 'close'],
      cwd,
      env: { ...process.env, XDG_CACHE_HOME: cache, TMPDIR: tmp },
    });
    expect(child.stderr).toBe('');
    expect(child.code).toBe(0);
    expect(JSON.parse(child.stdout)).toMatchObject({ bulkErrors: false });
    expect(readdirSync(cwd)).toEqual([]);
    expect(readdirSync(path.join(cache, 'query-sandbox')).length).toBeGreaterThan(0);
    // The writable index's temporary directory went with close().
    expect(readdirSync(tmp)).toEqual([]);
  });

  it('completes queued and running work with close({ drain: true }) and refuses new searches at once', async () => {
    const runtime = await createRuntime({ engine: echoEngine, threads: 1, lanes: false, dataDir: dataDir() });
    const tasks = [1, 2, 3].map((i) =>
      settle(runtime.search({ index: 'alpha', body: { sleepMs: 150, echo: i } })),
    );
    await sleep(20);
    expect(runtime.nodeStats()).toMatchObject({ running: 1, queued: 2 });
    const closing = runtime.close({ drain: true, timeoutMs: 30_000 });
    const late = await settle(runtime.search({ index: 'alpha', body: { echo: 4 } }));
    expect(late.error).toBeInstanceOf(NotRunningError);
    await closing;
    const outcomes = await Promise.all(tasks);
    expect(outcomes.map((o) => o.error)).toEqual([undefined, undefined, undefined]);
    expect(outcomes.map((o) => (o.value as { slept: number }).slept)).toEqual([150, 150, 150]);
    expect(runtime.close()).toBe(closing); // idempotent: the same promise
  });

  it('cancels what is left when the drain times out, and a close at once cuts a drain short', async () => {
    const runtime = await createRuntime({ engine: echoEngine, threads: 1, lanes: false, dataDir: dataDir() });
    const running = settle(runtime.search({ index: 'alpha', body: { sleepMs: 10_000 } }));
    const queued = settle(runtime.search({ index: 'alpha', body: { echo: 2 } }));
    await sleep(20);
    const started = performance.now();
    await runtime.close({ drain: true, timeoutMs: 200 });
    expect(performance.now() - started).toBeLessThan(5000);
    const [r, q] = await Promise.all([running, queued]);
    expect(r.error).toBeInstanceOf(CancelledError);
    expect((r.error as CancelledError).resource).toBe('shutdown');
    expect(q.error).toBeInstanceOf(CancelledError);
    expect((q.error as CancelledError).hard).toBe(false);

    const other = await createRuntime({ engine: echoEngine, threads: 1, lanes: false, dataDir: dataDir() });
    const long = settle(other.search({ index: 'alpha', body: { sleepMs: 10_000 } }));
    await sleep(20);
    const t0 = performance.now();
    const draining = other.close({ drain: true, timeoutMs: 60_000 });
    await sleep(100);
    await other.close();
    await draining;
    expect(performance.now() - t0).toBeLessThan(5000);
    expect((await long).error).toBeInstanceOf(CancelledError);
  });

  it('refuses bad close options, naming the option and the value', async () => {
    const runtime = await createRuntime({ engine: echoEngine, threads: 1, lanes: false, dataDir: dataDir() });
    try {
      await expect(runtime.close({ drain: 'yes' as never })).rejects.toThrow(
        'options.drain must be a boolean; received "yes"',
      );
      await expect(runtime.close({ drain: true, timeoutMs: -1 })).rejects.toBeInstanceOf(
        InvalidArgumentError,
      );
      await expect(runtime.search({ index: 'alpha', body: { echo: 1 } })).resolves.toMatchObject({ echo: 1 });
    } finally {
      await runtime.close();
    }
  });

  it('counts a replacement that is still loading in loadingWorkers, not in liveWorkers', async () => {
    const runtime = await createRuntime({
      engine: echoEngine,
      threads: 1,
      lanes: false,
      graceIntervals: 1,
      engineOptions: { initDelayMs: 1500 },
      sandboxes: {
        sandboxes: [
          {
            name: 'tight',
            priority: 1,
            resourceConsumptionLimits: { cpu: { low: 0.01, high: 0.02 } },
            selectionAttributes: [{ name: 'userPattern', value: 'tight_*' }],
          },
        ],
      },
      dataDir: dataDir(),
    });
    try {
      expect(runtime.nodeStats()).toMatchObject({ liveWorkers: 2, loadingWorkers: 0 });
      const spin = await settle(
        runtime.search({ index: 'alpha', body: { spinWallMs: 3000 }, user: 'tight_1' }),
      );
      expect((spin.error as CancelledError).hard).toBe(true);
      for (let i = 0; i < 40 && runtime.nodeStats().loadingWorkers === 0; i++) await sleep(10);
      const loading = runtime.nodeStats();
      expect([loading.liveWorkers, loading.loadingWorkers]).toEqual([1, 1]);
      expect(loading.lanes.map((l) => [l.liveWorkers, l.loadingWorkers])).toEqual([[1, 1]]);
      for (let i = 0; i < 200 && runtime.nodeStats().loadingWorkers > 0; i++) await sleep(25);
      const loaded = runtime.nodeStats();
      expect([loaded.liveWorkers, loaded.loadingWorkers]).toEqual([2, 0]);
      expect(loaded.lanes.map((l) => [l.liveWorkers, l.loadingWorkers, l.replacedWorkers])).toEqual([
        [2, 0, 1],
      ]);
    } finally {
      await runtime.close();
    }
  });

  it('warns when the sandbox file named would be refused (missing, not JSON) while the store already holds the sandboxes', async () => {
    const dir = dataDir();
    const file = path.join(dir, 'seed.json');
    writeFileSync(file, JSON.stringify({ sandboxes: [{ name: 'batch', priority: 1 }] }));
    const store = () => new FileSandboxStore(path.join(dir, 'sandboxes.json'));
    const warnings: string[] = [];
    const logger = {
      info: () => {},
      error: () => {},
      warn: (_f: unknown, m?: string) => warnings.push(m ?? ''),
    };
    // First start seeds the store from the file; the second names a file that does not exist.
    const first = await createRuntime({
      engine: echoEngine,
      threads: 1,
      lanes: false,
      dataDir: dir,
      sandboxes: file,
      sandboxStore: store(),
    });
    await first.close();
    const missing = path.join(dir, 'typo.json');
    const broken = path.join(dir, 'broken.json');
    writeFileSync(broken, '{bad');
    for (const file of [missing, broken]) {
      warnings.length = 0;
      const again = await createRuntime({
        engine: echoEngine,
        threads: 1,
        lanes: false,
        dataDir: dir,
        sandboxes: file,
        sandboxStore: store(),
        logger,
      });
      try {
        expect(again.sandboxRegistry.list().map((s) => s.name)).toContain('batch');
        expect(warnings).toHaveLength(1);
        expect(warnings[0]).toMatch(
          new RegExp(
            `^the sandbox file ${file} would be refused \\(.*${file === missing ? 'ENOENT' : 'valid JSON'}.*\\); the sandboxes come from the store$`,
          ),
        );
      } finally {
        await again.close();
      }
    }
  });
});
