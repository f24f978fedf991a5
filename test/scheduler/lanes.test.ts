import { describe, expect, it } from 'vitest';
import { DEFAULT_LANES, laneOf, resolveLanes } from '../../src/scheduler/lanes.js';

const defaults = { workers: 2, spareWorkers: 1 };

describe('resolveLanes', () => {
  it('defaults to a foreground lane above the default priority and a background lane at nice 19', () => {
    const lanes = resolveLanes(undefined, defaults);
    expect(
      lanes.map((l) => [l.name, l.minPriority, l.maxPriority, l.weight, l.workers, l.spareWorkers]),
    ).toEqual([
      ['foreground', 11, Number.POSITIVE_INFINITY, 0, 2, 1],
      ['background', Number.NEGATIVE_INFINITY, 11, 19, 2, 1],
    ]);
    expect(Object.isFrozen(lanes)).toBe(true);
    expect(DEFAULT_LANES).toHaveLength(2);
  });

  it('is one lane of every priority at nice 0 when turned off', () => {
    expect(resolveLanes(false, defaults)).toEqual([
      {
        name: 'default',
        minPriority: Number.NEGATIVE_INFINITY,
        maxPriority: Number.POSITIVE_INFINITY,
        weight: 0,
        workers: 2,
        spareWorkers: 1,
      },
    ]);
  });

  it('sorts lanes by band, takes per-lane sizes and weights, and maps priorities to lanes', () => {
    const lanes = resolveLanes(
      [
        { name: 'batch', weight: 'idle', workers: 1, spareWorkers: 0 },
        { name: 'interactive', minPriority: 50, workers: 3 },
        { name: 'normal', minPriority: 0, weight: 10 },
      ],
      defaults,
    );
    expect(
      lanes.map((l) => [l.name, l.minPriority, l.maxPriority, l.weight, l.workers, l.spareWorkers]),
    ).toEqual([
      ['interactive', 50, Number.POSITIVE_INFINITY, 0, 3, 1],
      ['normal', 0, 50, 10, 2, 1],
      ['batch', Number.NEGATIVE_INFINITY, 0, 'idle', 1, 0],
    ]);
    expect([100, 50, 49, 0, -1, -1e9].map((p) => laneOf(lanes, p))).toEqual([0, 0, 1, 1, 2, 2]);
  });

  it.each([
    [[], 'options.lanes must be false or an array of 1..8 lanes; received []'],
    [
      [{ name: 'Fore ground' }],
      'options.lanes[0].name must be 1..32 characters of [a-z0-9_-]; received "Fore ground"',
    ],
    [
      [{ name: 'a' }, { name: 'a', minPriority: 1 }],
      'options.lanes[1].name must be unique among the lanes; received "a"',
    ],
    [
      [{ name: 'a' }, { name: 'b' }],
      'options.lanes[1].minPriority must be set: only one lane may omit it (lane 0 does)',
    ],
    [
      [{ name: 'a', minPriority: 3 }],
      'options.lanes[0].minPriority must be omitted on the lowest lane, which takes every priority below the others; received 3',
    ],
    [
      [{ name: 'a', minPriority: 1.5 }, { name: 'b' }],
      'options.lanes[0].minPriority must be an integer in -1e9..1e9; received 1.5',
    ],
    [
      [{ name: 'a', weight: -1 }],
      'options.lanes[0].weight must be a nice value, an integer in 0..19, or "idle"; received -1',
    ],
    [
      [{ name: 'a', weight: 20 }],
      'options.lanes[0].weight must be a nice value, an integer in 0..19, or "idle"; received 20',
    ],
    [[{ name: 'a', workers: 0 }], 'options.lanes[0].workers must be an integer in 1..1024; received 0'],
    [
      [{ name: 'a', spareWorkers: 65 }],
      'options.lanes[0].spareWorkers must be an integer in 0..64; received 65',
    ],
    [
      [{ name: 'a', nice: 5 }],
      'options.lanes[0].nice is not a lane option (name, minPriority, weight, workers, spareWorkers); received 5',
    ],
    [
      [{ name: 'a', minPriority: 5 }, { name: 'b', minPriority: 5 }, { name: 'c' }],
      'options.lanes.minPriority must differ between lanes; received 5',
    ],
    [['fast'], 'options.lanes[0] must be an object; received "fast"'],
  ])('refuses %j naming the field and the value', (lanes, message) => {
    expect(() => resolveLanes(lanes as never, defaults)).toThrow(message);
  });
});
