import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveRuntimeOptions, userCacheDir } from '../src/runtime-options.js';

describe('runtime options for cluster nodes', () => {
  it('defaults the cache under the data dir, the tracker to OpenSearch values, and threads to the cores', () => {
    const o = resolveRuntimeOptions({ dataDir: '/tmp/qs-a', cores: 3 });
    expect(o.cacheDir).toBe(path.join('/tmp/qs-a', 'cache'));
    expect(o.resourceUsage).toEqual({
      intervalMs: 500,
      windowMs: 30_000,
      ioIntervalMs: 5000,
      ioWindowMs: 120_000,
    });
    expect(o.cores).toBe(3);
    expect(o.threads).toBe(3);
    expect(resolveRuntimeOptions({ cores: 0.5 }).threads).toBe(1);
  });

  it('prefetches one task per lane while its tasks end under 5 ms apart, by default', () => {
    const o = resolveRuntimeOptions({ cores: 2 });
    expect([o.prefetchTasks, o.prefetchBelowMs]).toEqual([1, 5]);
    expect(resolveRuntimeOptions({ cores: 2, prefetchTasks: 0 }).prefetchTasks).toBe(0);
  });

  it('asks for no directory in the working directory: no dataDir, the cache in the user cache dir', () => {
    const o = resolveRuntimeOptions({});
    expect(o.dataDir).toBeUndefined();
    expect(o.cacheDir).toBe(userCacheDir(process.env));
    expect(userCacheDir({ XDG_CACHE_HOME: '/var/cache/me' })).toBe('/var/cache/me/query-sandbox');
    expect(userCacheDir({ XDG_CACHE_HOME: 'relative' })).toBe(
      path.join(os.homedir(), '.cache', 'query-sandbox'),
    );
  });

  it('takes the engine as a path, a file: URL string or a URL', () => {
    const url = new URL('file:///opt/engine.mjs');
    expect(resolveRuntimeOptions({ engine: url }).engineUrl).toBe('file:///opt/engine.mjs');
    expect(resolveRuntimeOptions({ engine: '/opt/engine.mjs' }).engineUrl).toBe('file:///opt/engine.mjs');
    expect(() => resolveRuntimeOptions({ engine: new URL('https://example.org/e.mjs') })).toThrow(
      'options.engine must be a module path or file: URL; received "https://example.org/e.mjs"',
    );
  });

  it('takes a shared cache dir and tracker windows', () => {
    const o = resolveRuntimeOptions({
      cacheDir: 'shared/cache',
      resourceUsage: { intervalMs: 200, windowMs: 2000 },
    });
    expect(o.cacheDir).toBe(path.resolve('shared/cache'));
    expect(o.resourceUsage).toMatchObject({ intervalMs: 200, windowMs: 2000 });
  });

  it.each([
    [{ cores: 0 }, 'options.cores must be a number in (0, 4096]; received 0'],
    [{ cores: '2' }, 'options.cores must be a number in (0, 4096]; received "2"'],
    [{ cacheDir: '' }, 'options.cacheDir must be a directory path; received ""'],
    [{ resourceUsage: 5 }, 'options.resourceUsage must be an object; received 5'],
    [
      { resourceUsage: { intervalMs: 0 } },
      'options.resourceUsage.intervalMs must be an integer in 1..60000; received 0',
    ],
    [
      { resourceUsage: { intervalMs: 1000, windowMs: 500 } },
      'options.resourceUsage.windowMs must be an integer in 1000..3600000; received 500',
    ],
    [{ prefetchTasks: -1 }, 'options.prefetchTasks must be an integer in 0..64; received -1'],
    [{ prefetchTasks: 1.5 }, 'options.prefetchTasks must be an integer in 0..64; received 1.5'],
    [{ prefetchBelowMs: 0 }, 'options.prefetchBelowMs must be a number in'],
  ])('refuses %j naming the option and the value', (options, message) => {
    expect(() => resolveRuntimeOptions(options as never)).toThrow(message);
  });
});

describe('worker heap cap and memory budget', () => {
  it('caps each worker at 2,048 MiB by default while the budget stays 1,024 MiB per worker', () => {
    const o = resolveRuntimeOptions({ cores: 2 });
    expect(o.workerHeapMb).toBe(2048);
    const workers = o.lanes.reduce((sum, lane) => sum + lane.workers, 0);
    expect(workers).toBe(4);
    expect(o.memoryBudgetBytes).toBe(workers * 1024 * 1024 * 1024);
  });

  it('takes a smaller workerHeapMb as the budget per worker, a larger one not, and a given budget wins', () => {
    const o = resolveRuntimeOptions({ cores: 2, workerHeapMb: 512 });
    expect(o.workerHeapMb).toBe(512);
    expect(o.memoryBudgetBytes).toBe(4 * 512 * 1024 * 1024);
    // Naming the default cap changes nothing; a larger cap lets a worker grow, not the budget.
    expect(resolveRuntimeOptions({ cores: 2, workerHeapMb: 2048 }).memoryBudgetBytes).toBe(4 * 1024 ** 3);
    expect(resolveRuntimeOptions({ cores: 2, workerHeapMb: 4096 }).memoryBudgetBytes).toBe(4 * 1024 ** 3);
    expect(
      resolveRuntimeOptions({ cores: 2, workerHeapMb: 4096, memoryBudgetBytes: 1000 }).memoryBudgetBytes,
    ).toBe(1000);
  });
});

describe('option keys', () => {
  it('refuses a key that is not an option, naming it and the option it is likely a typo of', () => {
    const resolve = (o: Record<string, unknown>) => () => resolveRuntimeOptions(o as never);
    expect(resolve({ workerHeapMB: 512 })).toThrow(
      'options.workerHeapMB is not an option of createRuntime; did you mean workerHeapMb?; received 512',
    );
    expect(resolve({ thread: 2 })).toThrow('did you mean threads?');
    expect(resolve({ colour: 'blue' })).toThrow(
      /^options\.colour is not an option of createRuntime; received "blue"$/,
    );
    expect(() => resolveRuntimeOptions({ threads: 2, workerHeapMb: 512, lanes: false })).not.toThrow();
  });
});
