import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidSandboxError } from '../../src/errors.js';
import { FileSandboxStore } from '../../src/sandbox/file-sandbox-store.js';
import { toSandboxDocument } from '../../src/sandbox/sandbox-document.js';
import { parseSandboxDefinitions } from '../../src/sandbox/sandbox-file.js';
import { SandboxRegistry } from '../../src/sandbox/sandbox-registry.js';
import {
  effectiveSearchSettings,
  parseSearchSettings,
  resolveSetting,
} from '../../src/sandbox/search-settings.js';

function invalid(fn: () => unknown): InvalidSandboxError {
  try {
    fn();
  } catch (error) {
    if (error instanceof InvalidSandboxError) return error;
    throw error;
  }
  throw new Error('expected an InvalidSandboxError');
}

describe('search_settings', () => {
  it('parses time values as written, counts and the override flag', () => {
    expect(
      parseSearchSettings(
        {
          timeout: '500ms',
          cancel_after_time_interval: '2m',
          max_concurrent_shard_requests: 3,
          override_request_values: true,
        },
        'search_settings',
      ),
    ).toEqual({
      timeout: { text: '500ms', ms: 500 },
      cancelAfterTimeInterval: { text: '2m', ms: 120_000 },
      maxConcurrentShardRequests: 3,
      overrideRequestValues: true,
    });
    expect(parseSearchSettings({ timeout: '-1' }, 'p')).toEqual({ timeout: { text: '-1', ms: -1 } });
    expect(parseSearchSettings(undefined, 'p')).toEqual({});
  });

  it('refuses bad values naming the field and the value', () => {
    const cases: Array<[unknown, string]> = [
      [
        { timeout: '30' },
        'sandboxes[0].search_settings.timeout must be a time value with a unit (nanos, micros, ms, s, m, h, d), or -1 to disable (unit is missing or unrecognized); received "30"',
      ],
      [
        { timeout: '1.5s' },
        'sandboxes[0].search_settings.timeout must be a whole number of its unit (fractional time values are not supported); received "1.5s"',
      ],
      [
        { timeout: '0s' },
        'sandboxes[0].search_settings.timeout must be a positive time value, or "-1" for none; received "0s"',
      ],
      [
        { cancel_after_time_interval: true },
        'sandboxes[0].search_settings.cancel_after_time_interval must be a time value such as "500ms" or "30s", or "-1" for none; received true',
      ],
      [
        { max_concurrent_shard_requests: 0 },
        'sandboxes[0].search_settings.max_concurrent_shard_requests must be an integer in 1..65536; received 0',
      ],
      [
        { override_request_values: 'yes' },
        'sandboxes[0].search_settings.override_request_values must be true or false; received "yes"',
      ],
      [
        { batched_reduce_size: 5 },
        'sandboxes[0].search_settings.batched_reduce_size is not a search setting (expected one of timeout, cancel_after_time_interval, max_concurrent_shard_requests, override_request_values); received 5',
      ],
      [[], 'sandboxes[0].search_settings must be an object; received []'],
    ];
    for (const [settings, message] of cases) {
      const e = invalid(() =>
        parseSandboxDefinitions({ sandboxes: [{ name: 'a', priority: 1, search_settings: settings }] }),
      );
      expect(e.message).toBe(message);
    }
  });

  it('inherits each setting from the nearest ancestor that sets it; -1 cancels an inherited value', () => {
    const tree = parseSandboxDefinitions({
      sandboxes: [
        { _id: '_root', priority: 0, search_settings: { max_concurrent_shard_requests: 8 } },
        { name: 'org', priority: 1, search_settings: { timeout: '1s', override_request_values: true } },
        {
          name: 'team',
          parent_id: 'org',
          priority: 1,
          search_settings: { cancel_after_time_interval: '30s' },
        },
        {
          name: 'free',
          parent_id: 'org',
          priority: 2,
          search_settings: { timeout: '-1', override_request_values: false },
        },
      ],
    });
    const effective = effectiveSearchSettings(tree);
    expect(effective.get('team')).toMatchObject({
      timeout: { ms: 1000 },
      cancelAfterTimeInterval: { ms: 30_000 },
      maxConcurrentShardRequests: 8,
      overrideRequestValues: true,
      from: { timeout: 'org', cancelAfterTimeInterval: 'team', maxConcurrentShardRequests: '_root' },
    });
    expect(effective.get('free')).toMatchObject({ timeout: { ms: -1 }, overrideRequestValues: false });
  });

  it("resolves with OpenSearch's precedence: the request's value, unless the sandbox overrides", () => {
    expect(resolveSetting(5000, 100, false)).toEqual({ value: 5000, source: 'request' });
    expect(resolveSetting(5000, 100, true)).toEqual({ value: 100, source: 'sandbox' });
    expect(resolveSetting(undefined, 100, false)).toEqual({ value: 100, source: 'sandbox' });
    expect(resolveSetting(undefined, undefined, true)).toBeUndefined();
    expect(resolveSetting(5000, undefined, true)).toEqual({ value: 5000, source: 'request' });
    // -1: none, from either side.
    expect(resolveSetting(-1, 100, false)).toBeUndefined();
    expect(resolveSetting(5000, -1, true)).toBeUndefined();
    expect(resolveSetting(undefined, -1, false)).toBeUndefined();
  });
});

describe('concurrency caps in a definition', () => {
  it('refuses a cap out of range, one above its capped ancestor, and a per-user cap above the sandbox cap', () => {
    const cases: Array<[unknown[], string]> = [
      [
        [{ name: 'a', priority: 1, max_concurrent_tasks: 0 }],
        'sandboxes[0].max_concurrent_tasks must be an integer in 1..100000 (tasks running at once); received 0',
      ],
      [
        [{ name: 'a', priority: 1, max_concurrent_tasks_per_user: 1.5 }],
        'sandboxes[0].max_concurrent_tasks_per_user must be an integer in 1..100000 (tasks running at once); received 1.5',
      ],
      [
        [
          { name: 'a', priority: 1, max_concurrent_tasks: 4 },
          { name: 'b', parent_id: 'a', priority: 1 },
          { name: 'c', parent_id: 'b', priority: 1, max_concurrent_tasks: 5 },
        ],
        'sandboxes[2].max_concurrent_tasks must not exceed the max_concurrent_tasks of parent sandbox "a" (4); received 5',
      ],
      [
        [{ name: 'a', priority: 1, max_concurrent_tasks: 2, max_concurrent_tasks_per_user: 3 }],
        "sandboxes[0].max_concurrent_tasks_per_user must not exceed the sandbox's max_concurrent_tasks (2); received 3",
      ],
    ];
    for (const [sandboxes, message] of cases) {
      expect(invalid(() => parseSandboxDefinitions({ sandboxes })).message).toBe(message);
    }
  });
});

describe('the new fields round-trip through documents, the registry and a file store', () => {
  const directory = mkdtempSync(join(tmpdir(), 'qs-settings-store-'));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it('shows them in the document only when set, and reads the document back unchanged', () => {
    const [root, a, b] = parseSandboxDefinitions({
      sandboxes: [
        { _id: '_root', priority: 0, search_settings: { timeout: '10s' } },
        {
          name: 'a',
          priority: 1,
          search_settings: { timeout: '500ms', override_request_values: true },
          max_concurrent_tasks: 3,
          max_concurrent_tasks_per_user: 2,
        },
        { name: 'b', priority: 2 },
      ],
    });
    expect(toSandboxDocument(root!)).toMatchObject({ search_settings: { timeout: '10s' } });
    expect(toSandboxDocument(a!)).toMatchObject({
      search_settings: { timeout: '500ms', override_request_values: true },
      max_concurrent_tasks: 3,
      max_concurrent_tasks_per_user: 2,
    });
    const plain = toSandboxDocument(b!);
    expect(plain).not.toHaveProperty('search_settings');
    expect(plain).not.toHaveProperty('max_concurrent_tasks');
    const again = parseSandboxDefinitions({
      sandboxes: [toSandboxDocument(root!), toSandboxDocument(a!), plain],
    });
    expect(again.map(toSandboxDocument)).toEqual([root, a, b].map((s) => toSandboxDocument(s!)));
  });

  it('merges search_settings per key on update (null removes one, {} all), removes a cap with null, and reopens from the file', async () => {
    const file = join(directory, 'sandboxes.json');
    const registry = await SandboxRegistry.open({ store: new FileSandboxStore(file) });
    const created = await registry.create({
      name: 'a',
      priority: 1,
      search_settings: { timeout: '1s', cancel_after_time_interval: '5s' },
      max_concurrent_tasks: 4,
    });
    await registry.update(created.id, {
      search_settings: { timeout: null, max_concurrent_shard_requests: 2 },
    });
    expect(registry.get(created.id)!.searchSettings).toEqual({
      cancelAfterTimeInterval: { text: '5s', ms: 5000 },
      maxConcurrentShardRequests: 2,
    });
    await registry.update('_root', { search_settings: { timeout: '30s' } });
    const reopened = await SandboxRegistry.open({ store: new FileSandboxStore(file) });
    expect(reopened.get(created.id)).toMatchObject({
      searchSettings: { cancelAfterTimeInterval: { ms: 5000 }, maxConcurrentShardRequests: 2 },
      maxConcurrentTasks: 4,
      version: 2,
    });
    expect(reopened.get('_root')!.searchSettings).toEqual({ timeout: { text: '30s', ms: 30_000 } });
    await reopened.update(created.id, { search_settings: {}, max_concurrent_tasks: null });
    expect(reopened.get(created.id)).toMatchObject({ searchSettings: {}, maxConcurrentTasks: undefined });
    await expect(reopened.update(created.id, { search_settings: { timeout: 'soon' } })).rejects.toThrow(
      /^search_settings\.timeout must be a time value/,
    );
  });
});
