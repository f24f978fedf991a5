import { describe, expect, it } from 'vitest';
import {
  InvalidSandboxError,
  SandboxConflictError,
  SandboxLimitError,
  SandboxNotFoundError,
} from '../../src/errors.js';
import { parseSandboxDefinitions } from '../../src/sandbox/sandbox-file.js';
import { SandboxRegistry } from '../../src/sandbox/sandbox-registry.js';
import type { SandboxInput } from '../../src/sandbox/sandbox-input.js';
import { MemorySandboxStore, type SandboxStore } from '../../src/sandbox/sandbox-store.js';

let idCounter = 0;
const newId = () => `sb${++idCounter}`;

async function open(options: { store?: SandboxStore; maxSandboxes?: number; seed?: unknown } = {}) {
  const store = options.store ?? new MemorySandboxStore();
  const seed = options.seed === undefined ? undefined : parseSandboxDefinitions(options.seed);
  const registry = await SandboxRegistry.open({
    store,
    ...(seed !== undefined ? { seed } : {}),
    ...(options.maxSandboxes !== undefined ? { maxSandboxes: options.maxSandboxes } : {}),
    newId,
    nowMs: () => 1_700_000_000_000,
  });
  return { registry, store };
}

// Typed as the registry's input; tests of refusals spread fields the type does not allow on purpose.
const team = (name: string, priority: number, extra: Record<string, unknown> = {}): SandboxInput =>
  ({
    name,
    priority,
    resourceConsumptionLimits: { cpu: { low: 0.4, high: 0.5 } },
    selectionAttributes: [{ name: 'userPattern', value: `${name}_*` }],
    ...extra,
  }) as SandboxInput;

describe('SandboxRegistry', () => {
  it('seeds an empty store with version 1 and reads it back on the next open', async () => {
    const { registry, store } = await open({ seed: { sandboxes: [team('a', 1)] } });
    expect(registry.version).toBe(1);
    expect(registry.list().map((s) => s.id)).toEqual(['_root', 'a']);
    const again = await SandboxRegistry.open({ store, seed: [] });
    expect(again.list().map((s) => s.id)).toEqual(['_root', 'a']);
  });

  it('creates a sandbox with a server-made id, version 1 and updated_at, and bumps the set version', async () => {
    const { registry } = await open();
    const created = await registry.create(team('dash', 5));
    expect(created.id).toMatch(/^sb\d+$/);
    expect(created.version).toBe(1);
    expect(created.updatedAt).toBe(1_700_000_000_000);
    expect(created.parentId).toBe('_root');
    expect(registry.version).toBe(2);
    expect(registry.get(created.id)).toBe(created);
  });

  it('accepts the seed API form: single-number percent limits, low defaulting to 80 % of high', async () => {
    const { registry } = await open();
    const created = await registry.create({
      name: 'sales',
      priority: 2,
      resourceConsumptionLimits: { jvmUsageLimit: '85', cpuUsageLimit: 90 },
      selectionAttributes: [
        { name: 'userPattern', value: 'sales_*' },
        { name: 'indicesPattern', value: '*logs*' },
      ],
      tags: ['sales', 'support'],
    });
    expect(created.limits).toEqual({ cpu: { low: 0.72, high: 0.9 }, memory: { low: 0.68, high: 0.85 } });
  });

  it('refuses a body that sets server fields or is invalid, naming the field and value', async () => {
    const { registry } = await open();
    // The input types refuse these at compile time too; the registry refuses them at run time.
    // @ts-expect-error: _id is the server's
    await expect(registry.create({ ...team('x', 1), _id: 'mine' })).rejects.toThrow(
      '_id is set by the server and may not be given; received "mine"',
    );
    // @ts-expect-error: not an object
    await expect(registry.create([1])).rejects.toThrow('body must be a JSON object; received [1]');
    const bad = await registry
      .create(team('x', 1, { resourceConsumptionLimits: { cpu: { low: 0.5, high: 1.5 } } }))
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(InvalidSandboxError);
    expect((bad as Error).message).toBe(
      'resourceConsumptionLimits.cpu.high must be a ratio in (0, 1]; received 1.5',
    );
    // @ts-expect-error: not a sandbox field
    await expect(registry.create({ ...team('y', 1), color: 'red' })).rejects.toThrow(
      'color is not allowed (expected one of name, parent_id, priority, mode, resourceConsumptionLimits, selectionAttributes, tags, max_queue_wait, cancellationGraceMs, search_settings, max_concurrent_tasks, max_concurrent_tasks_per_user); received "red"',
    );
    expect(registry.version).toBe(1); // nothing half-applied
  });

  it('answers 409 for a taken name and for identical selection attributes', async () => {
    const { registry } = await open();
    await registry.create(team('a', 1));
    const name = await registry.create(team('a', 2, { selectionAttributes: [] })).catch((e: unknown) => e);
    expect(name).toBeInstanceOf(SandboxConflictError);
    expect((name as SandboxConflictError).reason).toBe('name');
    const same = await registry
      .create(team('b', 2, { selectionAttributes: [{ name: 'userPattern', value: 'a_*' }] }))
      .catch((e: unknown) => e);
    expect((same as SandboxConflictError).reason).toBe('attributes');
  });

  it('builds a tree: children under parents, limits within the parent, depth bounded', async () => {
    const { registry } = await open();
    const org = await registry.create(
      team('org', 1, { resourceConsumptionLimits: { cpu: { low: 0.4, high: 0.6 } } }),
    );
    const dept = await registry.create(team('dept', 1, { parent_id: org.id }));
    const unit = await registry.create(team('unit', 1, { parent_id: dept.id }));
    expect(unit.parentId).toBe(dept.id);
    await expect(registry.create(team('deeper', 1, { parent_id: unit.id }))).rejects.toThrow(
      /parent_id must keep the sandbox at most 3 levels below the root/,
    );
    await expect(
      registry.create(
        team('greedy', 2, { parent_id: org.id, resourceConsumptionLimits: { cpu: { low: 0.5, high: 0.7 } } }),
      ),
    ).rejects.toThrow(/resourceConsumptionLimits.cpu.low must not exceed the low limit of parent sandbox/);
    await expect(registry.create(team('twin', 1, { parent_id: org.id }))).rejects.toThrow(
      /priority must be unique among the children/,
    );
    await expect(registry.create(team('orphan', 1, { parent_id: 'nope' }))).rejects.toThrow(
      /parent_id must be the _id/,
    );
  });

  it('updates only the named fields, merges limits per resource and bumps the version', async () => {
    const { registry } = await open();
    const s = await registry.create(
      team('a', 1, {
        resourceConsumptionLimits: { cpu: { low: 0.4, high: 0.5 }, memory: { low: 0.2, high: 0.3 } },
      }),
    );
    const updated = await registry.update(
      s.id,
      { priority: 7, resourceConsumptionLimits: { cpu: { low: 0.1, high: 0.2 } } },
      1,
    );
    expect(updated.priority).toBe(7);
    expect(updated.limits).toEqual({ cpu: { low: 0.1, high: 0.2 }, memory: { low: 0.2, high: 0.3 } });
    expect(updated.selectionAttributes.userPattern).toEqual(['a_*']);
    expect(updated.version).toBe(2);
    const removed = await registry.update(s.id, { resourceConsumptionLimits: { memory: null } });
    expect(removed.limits.memory).toBeUndefined();
  });

  it('refuses a stale If-Match version with 409 and keeps the newer state', async () => {
    const { registry } = await open();
    const s = await registry.create(team('a', 1));
    await registry.update(s.id, { priority: 2 }, 1);
    const stale = await registry.update(s.id, { priority: 3 }, 1).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(SandboxConflictError);
    expect((stale as SandboxConflictError).reason).toBe('version');
    expect(registry.get(s.id)!.priority).toBe(2);
  });

  it('names other sandboxes by _id, not by their position in the set, in a refusal', async () => {
    const { registry } = await open();
    const parent = await registry.create(
      team('p', 1, { resourceConsumptionLimits: { memory: { low: 0.5, high: 0.6 } } }),
    );
    const child = await registry.create(
      team('c', 1, { parent_id: parent.id, resourceConsumptionLimits: { memory: { low: 0.24, high: 0.3 } } }),
    );
    const error = await registry
      .update(parent.id, { resourceConsumptionLimits: { memory: { low: 0.1, high: 0.2 } } })
      .catch((e: unknown) => e);
    expect((error as Error).message).toBe(
      `sandbox [${child.id}].resourceConsumptionLimits.memory.low must not exceed the low limit of parent sandbox "${parent.id}" (0.1); received 0.24`,
    );
    const sibling = await registry.create(team('s', 1)).catch((e: unknown) => e);
    expect((sibling as Error).message).toContain(`(sandbox [${parent.id}] "${parent.id}" has it)`);
  });

  it('keeps the version when an update changes nothing', async () => {
    const { registry } = await open();
    const s = await registry.create(team('a', 1));
    const same = await registry.update(s.id, { priority: 1 });
    expect(same.version).toBe(1);
    expect(registry.version).toBe(2);
  });

  it('refuses a delete with a stale If-Match version', async () => {
    const { registry } = await open();
    const s = await registry.create(team('a', 1));
    await registry.update(s.id, { priority: 2 });
    await expect(registry.delete(s.id, 1)).rejects.toBeInstanceOf(SandboxConflictError);
    await expect(registry.delete(s.id, 2)).resolves.toMatchObject({ id: s.id });
  });

  it('reads the seed only when the store is empty, and refuses a seed above maxSandboxes', async () => {
    const store = new MemorySandboxStore();
    let reads = 0;
    const seed = async () => {
      reads++;
      return parseSandboxDefinitions({ sandboxes: [team('a', 1), team('b', 2)] });
    };
    await expect(SandboxRegistry.open({ store, seed, maxSandboxes: 1 })).rejects.toThrow(
      'sandboxes must hold at most 1 sandboxes besides the root; received 2',
    );
    const first = await SandboxRegistry.open({ store, seed, maxSandboxes: 5, nowMs: () => 42 });
    expect(first.seeded).toBe(true);
    expect(first.get('a')!.updatedAt).toBe(42);
    const second = await SandboxRegistry.open({
      store,
      seed: async () => {
        throw new Error('must not be read');
      },
    });
    expect(second.seeded).toBe(false);
    expect(reads).toBe(2);
  });

  it('names the store in an error about what it holds', async () => {
    const store = {
      location: '/data/sandboxes.json',
      load: async () => ({
        version: 3,
        sandboxes: [{ name: 'x', priority: 1, resourceConsumptionLimits: { cpu: { low: 0.5, high: 1.5 } } }],
      }),
      compareAndSet: async () => false,
    };
    await expect(SandboxRegistry.open({ store })).rejects.toThrow(
      '/data/sandboxes.json: sandboxes[0].resourceConsumptionLimits.cpu.high must be a ratio in (0, 1]; received 1.5',
    );
  });

  it('answers 404 for an unknown id and refuses to delete the root or a parent', async () => {
    const { registry } = await open();
    await expect(registry.update('nope', {})).rejects.toBeInstanceOf(SandboxNotFoundError);
    await expect(registry.delete('nope')).rejects.toBeInstanceOf(SandboxNotFoundError);
    await expect(registry.delete('_root')).rejects.toBeInstanceOf(InvalidSandboxError);
    const parent = await registry.create(team('p', 1));
    await registry.create(team('c', 1, { parent_id: parent.id }));
    const conflict = await registry.delete(parent.id).catch((e: unknown) => e);
    expect((conflict as SandboxConflictError).reason).toBe('children');
  });

  it('deletes a sandbox and tells listeners at once', async () => {
    const { registry } = await open();
    const seen: string[][] = [];
    registry.onChange((list) => seen.push(list.map((s) => s.id)));
    const s = await registry.create(team('a', 1));
    await registry.delete(s.id);
    expect(seen).toEqual([['_root', s.id], ['_root']]);
    expect(registry.get(s.id)).toBeUndefined();
  });

  it('gives exactly N successes for 50 concurrent creates against a limit of N', async () => {
    const { registry, store } = await open({ maxSandboxes: 10 });
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) => registry.create(team(`t${i}`, i))),
    );
    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
    expect(ok).toHaveLength(10);
    expect(refused).toHaveLength(40);
    expect(refused.every((r) => r.reason instanceof SandboxLimitError)).toBe(true);
    expect((refused[0]!.reason as Error).message).toContain('limit of 10 sandboxes');
    expect(registry.list()).toHaveLength(11);
    expect((await store.load())!.sandboxes).toHaveLength(11);
  });

  it('re-reads and re-checks when another writer changed the store first', async () => {
    const store = new MemorySandboxStore();
    const { registry: a } = await open({ store, maxSandboxes: 1 });
    const b = await SandboxRegistry.open({ store, maxSandboxes: 1, newId });
    await b.create(team('from-b', 1));
    // `a` still believes the set is empty; its compare-and-swap fails, it re-reads, and the bound holds.
    await expect(a.create(team('from-a', 2))).rejects.toBeInstanceOf(SandboxLimitError);
    expect(a.list().map((s) => s.name)).toEqual(['_root', 'from-b']);
  });
});
