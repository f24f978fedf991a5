import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ErrorCode, InvalidSandboxError } from '../../src/errors.js';
import { ROOT_SANDBOX_ID, type Sandbox } from '../../src/sandbox/sandbox.js';
import { loadSandboxFile, parseSandboxDefinitions } from '../../src/sandbox/sandbox-file.js';

const DEFAULT_FILE = fileURLToPath(new URL('../../config/sandboxes.json', import.meta.url));

/** A valid entry; tests override one field at a time. */
function entry(name: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    priority: 1,
    selectionAttributes: [{ name: 'userPattern', value: `${name}_*` }],
    ...overrides,
  };
}

function parse(...sandboxes: unknown[]): Sandbox[] {
  return parseSandboxDefinitions({ sandboxes });
}

/** Runs `fn`, expects an InvalidSandboxError, and returns it. */
function invalid(fn: () => unknown): InvalidSandboxError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidSandboxError);
    return error as InvalidSandboxError;
  }
  throw new Error('expected an InvalidSandboxError');
}

function expectInvalid(sandboxes: unknown[], path: string, message: string | RegExp): void {
  const error = invalid(() => parse(...sandboxes));
  expect(error.code).toBe(ErrorCode.INVALID_SANDBOX);
  expect(error.path).toBe(path);
  if (typeof message === 'string') expect(error.message).toBe(message);
  else expect(error.message).toMatch(message);
}

describe('parseSandboxDefinitions', () => {
  it('builds frozen sandboxes from the file shape, root first', () => {
    const sandboxes = parse({
      _id: 'dashboards',
      name: 'dashboards',
      priority: 20,
      mode: 'soft',
      resourceConsumptionLimits: { cpu: { low: 0.6, high: 0.9 }, memory: { low: 0.5, high: 0.8 } },
      selectionAttributes: [
        { name: 'userPattern', value: 'dash_*' },
        { name: 'indicesPattern', value: ['easy-ham-*', 'hard-ham-1'] },
      ],
      tags: ['dashboards'],
    });
    expect(sandboxes.map((s) => s.id)).toEqual([ROOT_SANDBOX_ID, 'dashboards']);
    expect(sandboxes[1]).toEqual({
      id: 'dashboards',
      name: 'dashboards',
      parentId: ROOT_SANDBOX_ID,
      priority: 20,
      mode: 'soft',
      limits: { cpu: { low: 0.6, high: 0.9 }, memory: { low: 0.5, high: 0.8 } },
      selectionAttributes: { userPattern: ['dash_*'], indicesPattern: ['easy-ham-*', 'hard-ham-1'] },
      tags: ['dashboards'],
      searchSettings: {},
      maxConcurrentTasks: undefined,
      maxConcurrentTasksPerUser: undefined,
      updatedAt: 0,
      version: 1,
    });
    expect(Object.isFrozen(sandboxes[1])).toBe(true);
    expect(Object.isFrozen(sandboxes[1]?.limits.cpu)).toBe(true);
  });

  it("reads the store's updated_at and version, and refuses bad ones", () => {
    const [, sandbox] = parse({ name: 'kept', priority: 1, updated_at: 1_700_000_000_000, version: 4 });
    expect(sandbox).toMatchObject({ updatedAt: 1_700_000_000_000, version: 4 });
    expectInvalid(
      [{ name: 'kept', priority: 1, version: 0 }],
      'sandboxes[0].version',
      'sandboxes[0].version must be an integer >= 1; received 0',
    );
  });

  it('defaults the id to the name, the mode to enforced, tags and limits to empty', () => {
    const [, sandbox] = parse({ name: 'plain', priority: 3 });
    expect(sandbox).toMatchObject({ id: 'plain', mode: 'enforced', tags: [], limits: {} });
    expect(sandbox?.selectionAttributes).toEqual({ userPattern: [], indicesPattern: [] });
  });

  it('returns only the root, with priority 0, for an empty list', () => {
    expect(parse()).toEqual([expect.objectContaining({ id: ROOT_SANDBOX_ID, priority: 0, parentId: null })]);
  });

  it('lets a _root entry set the root priority', () => {
    const [root] = parse({ _id: '_root', priority: 10 }, entry('a'));
    expect(root).toMatchObject({ id: ROOT_SANDBOX_ID, priority: 10, limits: {} });
  });

  it('refuses anything but the priority on the _root entry', () => {
    expectInvalid(
      [{ _id: '_root', priority: 10, mode: 'soft' }],
      'sandboxes[0].mode',
      'sandboxes[0].mode is not allowed on the root sandbox entry (only _id, priority, max_queue_wait, cancellationGraceMs and search_settings may be set); received "soft"',
    );
  });

  it('refuses a second _root entry', () => {
    expectInvalid(
      [
        { _id: '_root', priority: 1 },
        { _id: '_root', priority: 2 },
      ],
      'sandboxes[1]._id',
      'sandboxes[1]._id must be unique (sandboxes[0] has it); received "_root"',
    );
  });

  it('orders parents before children, in file order within a level', () => {
    const ids = parse(
      entry('leaf', { parent_id: 'mid', priority: 1 }),
      entry('mid', { parent_id: 'top', priority: 1 }),
      entry('top', { priority: 1 }),
      entry('other', { priority: 2 }),
    ).map((s) => [s.id, s.parentId]);
    expect(ids).toEqual([
      ['_root', null],
      ['top', '_root'],
      ['other', '_root'],
      ['mid', 'top'],
      ['leaf', 'mid'],
    ]);
  });

  it('treats parent_id "_root" and null as the root', () => {
    const sandboxes = parse(entry('a', { parent_id: '_root' }), entry('b', { parent_id: null, priority: 2 }));
    expect(sandboxes.map((s) => s.parentId)).toEqual([null, '_root', '_root']);
  });

  describe('top level', () => {
    it('refuses a value that is not an object', () => {
      const error = invalid(() => parseSandboxDefinitions([]));
      expect(error.message).toBe('(file) must be an object { "sandboxes": [...] }; received []');
    });

    it('refuses a missing sandboxes list', () => {
      const error = invalid(() => parseSandboxDefinitions({}));
      expect(error.message).toBe('sandboxes must be a list of sandbox entries; received undefined');
    });

    it('refuses unknown top-level keys', () => {
      const error = invalid(() => parseSandboxDefinitions({ sandboxes: [], groups: [] }));
      expect(error.path).toBe('groups');
    });

    it('accepts a version counter and checks it', () => {
      expect(parseSandboxDefinitions({ version: 3, sandboxes: [] })).toHaveLength(1);
      expect(invalid(() => parseSandboxDefinitions({ version: -1, sandboxes: [] })).path).toBe('version');
    });

    it('refuses more than 100 sandboxes besides the root', () => {
      const many = Array.from({ length: 101 }, (_, i) => entry(`s${i}`, { priority: i }));
      expect(parse(...many.slice(0, 100), { _id: '_root', priority: 0 })).toHaveLength(101);
      expectInvalid(
        many,
        'sandboxes',
        'sandboxes must hold at most 100 sandboxes besides the root; received 101',
      );
    });

    it('refuses an entry that is not an object', () => {
      expectInvalid([entry('a'), 'b'], 'sandboxes[1]', 'sandboxes[1] must be an object; received "b"');
    });

    it('refuses unknown keys on an entry', () => {
      expectInvalid(
        [entry('a', { limits: {} })],
        'sandboxes[0].limits',
        'sandboxes[0].limits is not allowed (expected one of _id, name, parent_id, priority, mode, ' +
          'resourceConsumptionLimits, selectionAttributes, tags, max_queue_wait, cancellationGraceMs, search_settings, max_concurrent_tasks, ' +
          'max_concurrent_tasks_per_user, updated_at, version); received {}',
      );
    });
  });

  describe('names and ids', () => {
    it('requires a name of 1..50 characters of [A-Za-z0-9_-]', () => {
      const expectation = 'must be 1..50 characters of [A-Za-z0-9_-]';
      expectInvalid(
        [entry('a', { name: undefined })],
        'sandboxes[0].name',
        `sandboxes[0].name ${expectation}; received undefined`,
      );
      expectInvalid(
        [entry('a', { name: '' })],
        'sandboxes[0].name',
        `sandboxes[0].name ${expectation}; received ""`,
      );
      expectInvalid(
        [entry('a', { name: 'a b' })],
        'sandboxes[0].name',
        `sandboxes[0].name ${expectation}; received "a b"`,
      );
      const long = 'n'.repeat(51);
      expectInvalid(
        [entry(long)],
        'sandboxes[0].name',
        `sandboxes[0].name ${expectation}; received "${long}"`,
      );
      expect(parse(entry('n'.repeat(50)))[1]?.name).toHaveLength(50);
    });

    it('refuses a duplicate name', () => {
      expectInvalid(
        [entry('a'), entry('a', { _id: 'other', priority: 2, selectionAttributes: [] })],
        'sandboxes[1].name',
        'sandboxes[1].name must be unique (sandboxes[0] has it); received "a"',
      );
    });

    it('refuses the root name for another sandbox', () => {
      expectInvalid(
        [entry('_root', { _id: 'x' })],
        'sandboxes[0].name',
        'sandboxes[0].name must be unique (the root sandbox has it); received "_root"',
      );
    });

    it('refuses a duplicate _id, also one derived from a name', () => {
      expectInvalid(
        [entry('a', { _id: 'x' }), entry('b', { _id: 'x', priority: 2 })],
        'sandboxes[1]._id',
        'sandboxes[1]._id must be unique (sandboxes[0] has it); received "x"',
      );
      expectInvalid(
        [entry('a', { _id: 'b' }), entry('b', { priority: 2 })],
        'sandboxes[1].name',
        'sandboxes[1].name gives an _id that must be unique (sandboxes[0] has it); received "b"',
      );
    });

    it('refuses an _id that is not a string of [A-Za-z0-9_-]', () => {
      expectInvalid(
        [entry('a', { _id: 7 })],
        'sandboxes[0]._id',
        'sandboxes[0]._id must be 1..100 characters of [A-Za-z0-9_-]; received 7',
      );
    });
  });

  describe('priority and mode', () => {
    it('requires an integer priority', () => {
      const expectation = 'must be an integer in -(2^53 - 1)..2^53 - 1 (higher = more important)';
      expectInvalid(
        [entry('a', { priority: undefined })],
        'sandboxes[0].priority',
        `sandboxes[0].priority ${expectation}; received undefined`,
      );
      expectInvalid(
        [entry('a', { priority: 1.5 })],
        'sandboxes[0].priority',
        `sandboxes[0].priority ${expectation}; received 1.5`,
      );
      expectInvalid(
        [entry('a', { priority: '2' })],
        'sandboxes[0].priority',
        `sandboxes[0].priority ${expectation}; received "2"`,
      );
    });

    it('refuses two siblings with the same priority', () => {
      expectInvalid(
        [entry('a', { priority: 5 }), entry('b', { priority: 5 })],
        'sandboxes[1].priority',
        'sandboxes[1].priority must be unique among the children of "_root" (sandboxes[0] "a" has it); received 5',
      );
    });

    it('allows the same priority under different parents', () => {
      const sandboxes = parse(
        entry('a', { priority: 5 }),
        entry('b', { priority: 6 }),
        entry('a1', { priority: 5, parent_id: 'a' }),
        entry('b1', { priority: 5, parent_id: 'b' }),
      );
      expect(sandboxes).toHaveLength(5);
    });

    it('refuses an unknown mode', () => {
      expectInvalid(
        [entry('a', { mode: 'strict' })],
        'sandboxes[0].mode',
        'sandboxes[0].mode must be one of enforced, soft, monitor; received "strict"',
      );
    });
  });

  describe('parents', () => {
    it('refuses a parent_id that names no sandbox in the file', () => {
      expectInvalid(
        [entry('a', { parent_id: 'ghost' })],
        'sandboxes[0].parent_id',
        'sandboxes[0].parent_id must be the _id of another sandbox; received "ghost"',
      );
    });

    it('refuses a sandbox that is its own parent', () => {
      expectInvalid(
        [entry('a', { parent_id: 'a' })],
        'sandboxes[0].parent_id',
        'sandboxes[0].parent_id must name another sandbox, not itself; received "a"',
      );
    });

    it('refuses a cycle', () => {
      expectInvalid(
        [entry('a', { parent_id: 'b' }), entry('b', { parent_id: 'a' })],
        'sandboxes[0].parent_id',
        'sandboxes[0].parent_id must not form a cycle (a -> b -> a); received "b"',
      );
    });

    it('allows 3 levels below the root and refuses a 4th', () => {
      const chain = [entry('l1'), entry('l2', { parent_id: 'l1' }), entry('l3', { parent_id: 'l2' })];
      expect(parse(...chain)).toHaveLength(4);
      expectInvalid(
        [...chain, entry('l4', { parent_id: 'l3' })],
        'sandboxes[3].parent_id',
        'sandboxes[3].parent_id must keep the sandbox at most 3 levels below the root ' +
          '(l4 -> l3 -> l2 -> l1 -> _root); received "l3"',
      );
    });
  });

  describe('resource limits', () => {
    function limits(value: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
      return entry('a', { resourceConsumptionLimits: value, ...extra });
    }

    it('refuses a ratio above 1 with the exact field path', () => {
      expectInvalid(
        [entry('z', { priority: 9 }), entry('y', { priority: 8 }), limits({ cpu: { low: 0.5, high: 1.5 } })],
        'sandboxes[2].resourceConsumptionLimits.cpu.high',
        'sandboxes[2].resourceConsumptionLimits.cpu.high must be a ratio in (0, 1]; received 1.5',
      );
    });

    it('refuses a ratio of 0, a negative one and a non-number', () => {
      const message = (value: string) =>
        `sandboxes[0].resourceConsumptionLimits.memory.low must be a ratio in (0, 1]; received ${value}`;
      const path = 'sandboxes[0].resourceConsumptionLimits.memory.low';
      expectInvalid([limits({ memory: { low: 0, high: 0.5 } })], path, message('0'));
      expectInvalid([limits({ memory: { low: -0.1, high: 0.5 } })], path, message('-0.1'));
      expectInvalid([limits({ memory: { low: '0.1', high: 0.5 } })], path, message('"0.1"'));
    });

    it('accepts a ratio of exactly 1', () => {
      expect(parse(limits({ cpu: { low: 1, high: 1 } }))[1]?.limits.cpu).toEqual({ low: 1, high: 1 });
    });

    it('refuses low above high', () => {
      expectInvalid(
        [limits({ cpu: { low: 0.9, high: 0.6 } })],
        'sandboxes[0].resourceConsumptionLimits.cpu.low',
        'sandboxes[0].resourceConsumptionLimits.cpu.low must be at most high (0.6); received 0.9',
      );
    });

    it('requires high and defaults low to 80 % of high', () => {
      expect(parse(limits({ cpu: { high: 0.9 } }))[1]?.limits.cpu).toEqual({ low: 0.72, high: 0.9 });
      expect(parse(limits({ memory: 0.5 }))[1]?.limits.memory).toEqual({ low: 0.4, high: 0.5 });
      expectInvalid(
        [limits({ cpu: { low: 0.5 } })],
        'sandboxes[0].resourceConsumptionLimits.cpu.high',
        'sandboxes[0].resourceConsumptionLimits.cpu.high is required; received undefined',
      );
      // A bad low without a high is named for what it is (seen: "high is required" for low "x").
      expectInvalid(
        [limits({ cpu: { low: 'x' } })],
        'sandboxes[0].resourceConsumptionLimits.cpu.low',
        /^sandboxes\[0\]\.resourceConsumptionLimits\.cpu\.low must be .*; received "x"$/,
      );
    });

    it('refuses unknown limit keys and unknown fields in a limit', () => {
      expectInvalid(
        [limits({ io: { low: 0.1, high: 0.2 } })],
        'sandboxes[0].resourceConsumptionLimits.io',
        'sandboxes[0].resourceConsumptionLimits.io is not a known limit (expected one of cpu, memory, ' +
          'cpuUsageLimit, jvmUsageLimit); received {"low":0.1,"high":0.2}',
      );
      expectInvalid(
        [limits({ cpu: { low: 0.1, high: 0.2, max: 0.3 } })],
        'sandboxes[0].resourceConsumptionLimits.cpu.max',
        'sandboxes[0].resourceConsumptionLimits.cpu.max is not a known field (expected low, high); received 0.3',
      );
    });

    it('reads the seed percent aliases cpuUsageLimit and jvmUsageLimit as ratios', () => {
      const [, sandbox] = parse(
        limits({ cpuUsageLimit: { low: 70, high: 80 }, jvmUsageLimit: { low: '50', high: '85' } }),
      );
      expect(sandbox?.limits).toEqual({ cpu: { low: 0.7, high: 0.8 }, memory: { low: 0.5, high: 0.85 } });
    });

    it('reads a single percent, number or numeric string, as high with low at 80 % of it', () => {
      const [, sandbox] = parse(limits({ jvmUsageLimit: '85', cpuUsageLimit: 90 }));
      expect(sandbox?.limits).toEqual({ cpu: { low: 0.72, high: 0.9 }, memory: { low: 0.68, high: 0.85 } });
    });

    it('refuses a percent out of (0, 100] with the alias path', () => {
      expectInvalid(
        [limits({ cpuUsageLimit: '150' })],
        'sandboxes[0].resourceConsumptionLimits.cpuUsageLimit',
        'sandboxes[0].resourceConsumptionLimits.cpuUsageLimit must be a percent in (0, 100]; received "150"',
      );
      expectInvalid(
        [limits({ jvmUsageLimit: { low: 0, high: 50 } })],
        'sandboxes[0].resourceConsumptionLimits.jvmUsageLimit.low',
        'sandboxes[0].resourceConsumptionLimits.jvmUsageLimit.low must be a percent in (0, 100]; received 0',
      );
      expectInvalid(
        [limits({ jvmUsageLimit: 'high' })],
        'sandboxes[0].resourceConsumptionLimits.jvmUsageLimit',
        'sandboxes[0].resourceConsumptionLimits.jvmUsageLimit must be a percent in (0, 100]; received "high"',
      );
    });

    it('refuses a resource given both as a ratio and as a percent', () => {
      expectInvalid(
        [limits({ cpu: 0.5, cpuUsageLimit: 50 })],
        'sandboxes[0].resourceConsumptionLimits.cpuUsageLimit',
        'sandboxes[0].resourceConsumptionLimits.cpuUsageLimit must not be set together with ' +
          'sandboxes[0].resourceConsumptionLimits.cpu; received 50',
      );
    });

    it('refuses a child limit above its parent limit', () => {
      const parent = entry('p', { resourceConsumptionLimits: { cpu: { low: 0.3, high: 0.6 } } });
      expectInvalid(
        [parent, entry('c', { parent_id: 'p', resourceConsumptionLimits: { cpu: { low: 0.3, high: 0.8 } } })],
        'sandboxes[1].resourceConsumptionLimits.cpu.high',
        'sandboxes[1].resourceConsumptionLimits.cpu.high must not exceed the high limit of parent sandbox "p" ' +
          '(0.6); received 0.8',
      );
      expectInvalid(
        [parent, entry('c', { parent_id: 'p', resourceConsumptionLimits: { cpuUsageLimit: 55 } })],
        'sandboxes[1].resourceConsumptionLimits.cpuUsageLimit.low',
        'sandboxes[1].resourceConsumptionLimits.cpuUsageLimit.low must not exceed the low limit of parent ' +
          'sandbox "p" (30) (defaulted to 80 % of high); received 44',
      );
    });

    it('checks a child against its nearest ancestor that limits the same resource', () => {
      const top = entry('top', { resourceConsumptionLimits: { memory: { low: 0.2, high: 0.4 } } });
      const mid = entry('mid', {
        parent_id: 'top',
        resourceConsumptionLimits: { cpu: { low: 0.5, high: 0.9 } },
      });
      const ok = entry('ok', {
        parent_id: 'mid',
        resourceConsumptionLimits: { memory: { low: 0.2, high: 0.3 } },
      });
      expect(parse(top, mid, ok)).toHaveLength(4);
      expectInvalid(
        [
          top,
          mid,
          entry('bad', { parent_id: 'mid', resourceConsumptionLimits: { memory: { low: 0.2, high: 0.5 } } }),
        ],
        'sandboxes[2].resourceConsumptionLimits.memory.high',
        'sandboxes[2].resourceConsumptionLimits.memory.high must not exceed the high limit of parent sandbox "top" ' +
          '(0.4); received 0.5',
      );
    });
  });

  describe('selection attributes', () => {
    function attributes(value: unknown): Record<string, unknown> {
      return entry('a', { selectionAttributes: value });
    }

    it('merges several entries with the same name (OR)', () => {
      const [, sandbox] = parse(
        attributes([
          { name: 'userPattern', value: 'a_*' },
          { name: 'userPattern', value: ['b_*', 'c'] },
        ]),
      );
      expect(sandbox?.selectionAttributes).toEqual({ userPattern: ['a_*', 'b_*', 'c'], indicesPattern: [] });
    });

    it('refuses a value that is not a list', () => {
      expectInvalid(
        [attributes({ userPattern: 'a' })],
        'sandboxes[0].selectionAttributes',
        'sandboxes[0].selectionAttributes must be a list of { name, value }; received {"userPattern":"a"}',
      );
    });

    it('refuses an unknown attribute name and unknown entry keys', () => {
      expectInvalid(
        [attributes([{ name: 'rolePattern', value: 'x' }])],
        'sandboxes[0].selectionAttributes[0].name',
        'sandboxes[0].selectionAttributes[0].name must be one of userPattern, indicesPattern; received "rolePattern"',
      );
      expectInvalid(
        [attributes([{ name: 'userPattern', value: 'x', regex: true }])],
        'sandboxes[0].selectionAttributes[0].regex',
        'sandboxes[0].selectionAttributes[0].regex is not a known field (expected name, value); received true',
      );
    });

    it('refuses a value that is neither a string nor a non-empty list of strings', () => {
      const path = 'sandboxes[0].selectionAttributes[0].value';
      const message = (received: string) =>
        `${path} must be a pattern or a non-empty list of patterns; received ${received}`;
      expectInvalid([attributes([{ name: 'userPattern', value: 3 }])], path, message('3'));
      expectInvalid([attributes([{ name: 'userPattern', value: [] }])], path, message('[]'));
    });

    it('refuses an empty, a too long or a non-string pattern', () => {
      const path = 'sandboxes[0].selectionAttributes[0].value[1]';
      const message = (received: string) =>
        `${path} must be a pattern of 1..100 characters; received ${received}`;
      expectInvalid([attributes([{ name: 'indicesPattern', value: ['a', ''] }])], path, message('""'));
      expectInvalid([attributes([{ name: 'indicesPattern', value: ['a', 5] }])], path, message('5'));
      const long = 'x'.repeat(101);
      expect(invalid(() => parse(attributes([{ name: 'indicesPattern', value: ['a', long] }]))).path).toBe(
        path,
      );
      expect(parse(attributes([{ name: 'indicesPattern', value: 'x'.repeat(100) }]))).toHaveLength(2);
    });

    it('refuses more than 10 patterns for one attribute, across entries', () => {
      const ten = Array.from({ length: 10 }, (_, i) => `p${i}`);
      expect(
        parse(attributes([{ name: 'userPattern', value: ten }]))[1]?.selectionAttributes.userPattern,
      ).toHaveLength(10);
      expectInvalid(
        [
          attributes([
            { name: 'userPattern', value: ten },
            { name: 'userPattern', value: 'p10' },
          ]),
        ],
        'sandboxes[0].selectionAttributes[1].value',
        'sandboxes[0].selectionAttributes[1].value exceeds the limit of 10 userPattern patterns; received "p10"',
      );
    });

    it('refuses a repeated pattern', () => {
      expectInvalid(
        [attributes([{ name: 'userPattern', value: ['a', 'a'] }])],
        'sandboxes[0].selectionAttributes[0].value[1]',
        'sandboxes[0].selectionAttributes[0].value[1] must not repeat a userPattern pattern; received "a"',
      );
    });

    it('refuses two sandboxes with identical selection attributes, in any order', () => {
      const first = entry('a', {
        selectionAttributes: [
          { name: 'userPattern', value: ['x', 'y'] },
          { name: 'indicesPattern', value: 'logs-*' },
        ],
      });
      const second = entry('b', {
        priority: 2,
        selectionAttributes: [
          { name: 'indicesPattern', value: 'logs-*' },
          { name: 'userPattern', value: ['y', 'x'] },
        ],
      });
      const error = invalid(() => parse(first, second));
      expect(error.path).toBe('sandboxes[1].selectionAttributes');
      expect(error.message).toMatch(
        /^sandboxes\[1\]\.selectionAttributes must differ from those of every other sandbox \(sandboxes\[0\] "a" has the same\)/,
      );
    });

    it('allows several sandboxes that name no attribute', () => {
      expect(
        parse(entry('a', { selectionAttributes: [] }), entry('b', { priority: 2, selectionAttributes: [] })),
      ).toHaveLength(3);
    });
  });

  describe('tags', () => {
    it('requires a list of non-empty strings', () => {
      expectInvalid(
        [entry('a', { tags: 'x' })],
        'sandboxes[0].tags',
        'sandboxes[0].tags must be a list of strings; received "x"',
      );
      expectInvalid(
        [entry('a', { tags: ['ok', ''] })],
        'sandboxes[0].tags[1]',
        'sandboxes[0].tags[1] must be a string of 1..100 characters; received ""',
      );
    });
  });
});

describe('loadSandboxFile', () => {
  async function tempFile(text: string): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'sandbox-file-'));
    const path = join(dir, 'sandboxes.json');
    await writeFile(path, text);
    return path;
  }

  async function rejection(path: string): Promise<InvalidSandboxError> {
    const error: unknown = await loadSandboxFile(path).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(InvalidSandboxError);
    return error as InvalidSandboxError;
  }

  it('loads the default config file: root at priority 10 between analysts and dashboards', async () => {
    const sandboxes = await loadSandboxFile(DEFAULT_FILE);
    expect(sandboxes.map((s) => [s.id, s.priority])).toEqual([
      ['_root', 10],
      ['dashboards', 20],
      ['analysts', 5],
    ]);
    expect(sandboxes[1]?.limits).toEqual({ cpu: { low: 0.6, high: 0.9 }, memory: { low: 0.6, high: 0.8 } });
    expect(sandboxes[2]?.limits).toEqual({ cpu: { low: 0.3, high: 0.6 }, memory: { low: 0.15, high: 0.25 } });
    expect(sandboxes[2]?.selectionAttributes.userPattern).toEqual(['analyst_*']);
  });

  it('reports a missing file with its name', async () => {
    const path = join(tmpdir(), 'no-such-dir-for-sandboxes', 'missing.json');
    const error = await rejection(path);
    expect(error.path).toBe(path);
    expect(error.message).toBe(
      `${path} must be a readable sandbox file (ENOENT); received ${JSON.stringify(path)}`,
    );
  });

  it('reports invalid JSON with the file name, line and column', async () => {
    const path = await tempFile('{\n  "sandboxes": [\n    { "name": "a", }\n  ]\n}\n');
    const error = await rejection(path);
    expect(error.path).toBe(path);
    expect(error.message).toContain(`${path} must hold valid JSON (`);
    expect(error.message).toContain('at line 3 column 20, offset 38)');
  });

  it('reports truncated JSON at its end', async () => {
    const path = await tempFile('{ "sandboxes": [');
    const error = await rejection(path);
    expect(error.message).toContain('at line 1 column 17, offset 16)');
  });

  it('reports a definition error with the field path and names the file', async () => {
    const path = await tempFile(JSON.stringify({ sandboxes: [entry('a', { priority: 'high' })] }));
    const error = await rejection(path);
    expect(error.path).toBe('sandboxes[0].priority');
    expect(error.message).toBe(
      `sandboxes[0].priority must be an integer in -(2^53 - 1)..2^53 - 1 (higher = more important); received "high" (in ${path})`,
    );
  });
});
