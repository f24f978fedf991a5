import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import {
  applySettingsUpdate,
  indexSettingsToFlat,
  parseCreateIndexBody,
  parseSettingsUpdateBody,
  resolveIndexSettings,
} from '../../src/indices/index-settings.js';
import { shardId } from '../../src/routing/shard-routing.js';

function created(body: unknown) {
  return resolveIndexSettings(parseCreateIndexBody(body).settings);
}

describe('parseCreateIndexBody + resolveIndexSettings', () => {
  it('accepts the nested, flat and unprefixed forms alike', () => {
    const forms = [
      { settings: { index: { number_of_shards: 3, bulk_routing: { enabled: true } } } },
      { settings: { 'index.number_of_shards': 3, 'index.bulk_routing.enabled': true } },
      { settings: { number_of_shards: 3, 'bulk_routing.enabled': true } },
      { settings: { number_of_shards: '3', bulk_routing: { enabled: 'true' } } },
    ];
    for (const body of forms) {
      expect(created(body)).toMatchObject({
        numberOfShards: 3,
        bulkRoutingEnabled: true,
        numberOfRoutingShards: 768,
      });
    }
  });

  it('applies Elasticsearch defaults, and this project’s for bulk routing', () => {
    for (const body of [undefined, null, {}, { settings: {} }]) {
      const settings = created(body);
      expect(settings).toMatchObject({
        numberOfShards: 1,
        numberOfRoutingShards: 1024,
        routingPartitionSize: 1,
        numberOfReplicas: 1,
        refreshInterval: '1s',
        refreshIntervalMs: 1000,
        bulkRoutingEnabled: false,
        bulkRoutingMode: 'id',
        explicit: {},
      });
      expect(Object.isFrozen(settings)).toBe(true);
    }
  });

  it('routes with the resolved settings: 8 shards over 8 routing shards as in Elasticsearch', () => {
    const settings = created({ settings: { number_of_shards: 8, number_of_routing_shards: 8 } });
    expect(shardId(settings.routing, 'sEERfFzPSI')).toBe(1);
    expect(shardId(settings.routing, 'cNRiIrjzYd')).toBe(7);
  });

  it('keeps mappings as given and accepts empty aliases', () => {
    expect(parseCreateIndexBody({ mappings: { properties: { a: { type: 'text' } } }, aliases: {} })).toEqual({
      settings: {},
      mappings: { properties: { a: { type: 'text' } } },
    });
  });

  it('renders flat string settings as GET _settings?flat_settings=true does', () => {
    expect(
      indexSettingsToFlat(created({ settings: { number_of_shards: 2, refresh_interval: '500ms' } })),
    ).toEqual({
      'index.bulk_routing.enabled': 'false',
      'index.bulk_routing.mode': 'id',
      'index.number_of_replicas': '1',
      'index.number_of_routing_shards': '1024',
      'index.number_of_shards': '2',
      'index.refresh_interval': '500ms',
      'index.routing_partition_size': '1',
    });
  });
});

/** Bodies of PUT /{index} that are refused, and the exact message (path, expectation, received). */
const INVALID_CREATE: readonly (readonly [name: string, body: unknown, message: string])[] = [
  ['a body that is not an object', [1], 'body must be an object; received [1]'],
  [
    'an unknown top-level key',
    { setings: {} },
    'setings is not a create-index key (unknown key [setings] for create index; expected settings, mappings or aliases); received {}',
  ],
  ['settings that are not an object', { settings: 3 }, 'settings must be an object of settings; received 3'],
  [
    'zero shards',
    { settings: { index: { number_of_shards: 0 } } },
    'settings.index.number_of_shards must be an integer in 1..1024; received 0',
  ],
  [
    'too many shards',
    { settings: { number_of_shards: 1025 } },
    'settings.index.number_of_shards must be an integer in 1..1024; received 1025',
  ],
  [
    'a fractional shard count',
    { settings: { number_of_shards: 1.5 } },
    'settings.index.number_of_shards must be an integer in 1..1024; received 1.5',
  ],
  [
    'a shard count that is not a number',
    { settings: { number_of_shards: 'three' } },
    'settings.index.number_of_shards must be an integer in 1..1024; received "three"',
  ],
  [
    'negative replicas',
    { settings: { 'index.number_of_replicas': -1 } },
    'settings.index.number_of_replicas must be an integer >= 0; received -1',
  ],
  [
    'routing shards below the shards',
    { settings: { number_of_shards: 4, number_of_routing_shards: 2 } },
    'settings.index.number_of_routing_shards must be >= index.number_of_shards [4]; received 2',
  ],
  [
    'routing shards that are not a multiple of the shards',
    { settings: { number_of_shards: 4, number_of_routing_shards: 6 } },
    'settings.index.number_of_routing_shards must be a multiple of index.number_of_shards (the number of source shards [4] must be a factor of [6]); received 6',
  ],
  [
    'a partition as large as the routing shards',
    {
      settings: {
        number_of_shards: 2,
        number_of_routing_shards: 4,
        routing_partition_size: 4,
        bulk_routing: { mode: 'routing' },
      },
    },
    'settings.index.routing_partition_size must be 1 or less than the number of routing shards [4]; received 4',
  ],
  [
    'id mode on a partitioned index',
    { settings: { routing_partition_size: 2, bulk_routing: { mode: 'id' } } },
    'settings.index.bulk_routing.mode must be "routing" on a partitioned index (index.routing_partition_size 2): an id alone cannot choose the shard; received "id"',
  ],
  [
    'a refresh interval without a unit',
    { settings: { refresh_interval: 10 } },
    'settings.index.refresh_interval must be a time value with a unit (nanos, micros, ms, s, m, h, d), or -1 to disable (unit is missing or unrecognized); received 10',
  ],
  [
    'a fractional refresh interval',
    { settings: { refresh_interval: '1.5s' } },
    'settings.index.refresh_interval must be a whole number of its unit (fractional time values are not supported); received "1.5s"',
  ],
  [
    'a bulk_routing.enabled that is not a boolean',
    { settings: { 'index.bulk_routing.enabled': 'yes' } },
    'settings.index.bulk_routing.enabled must be true or false (only [true] or [false] are allowed); received "yes"',
  ],
  [
    'an unknown bulk routing mode',
    { settings: { 'bulk_routing.mode': 'shard' } },
    'settings.index.bulk_routing.mode must be "routing" or "id"; received "shard"',
  ],
  [
    'an unknown setting',
    { settings: { index: { codec: 'best_compression' } } },
    'settings.index.codec is an unknown setting [index.codec] (known: index.bulk_routing.enabled, index.bulk_routing.mode, index.number_of_replicas, index.number_of_routing_shards, index.number_of_shards, index.refresh_interval, index.routing_partition_size); received "best_compression"',
  ],
  [
    'a null setting',
    { settings: { number_of_shards: null } },
    'settings.index.number_of_shards must not be null; received null',
  ],
  [
    'aliases (not supported)',
    { aliases: { a: {} } },
    'aliases is not supported (only an empty object is accepted); received {"a":{}}',
  ],
];

describe('PUT /{index} validation table', () => {
  it.each(INVALID_CREATE)('refuses %s', (_name, body, message) => {
    let error: unknown;
    try {
      created(body);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as InvalidArgumentError).message).toBe(message);
    expect((error as InvalidArgumentError).type).toBe('illegal_argument_exception');
  });

  it.each([
    [{ number_of_shards: 1024 }, { numberOfShards: 1024, numberOfRoutingShards: 2048 }],
    [{ number_of_shards: 5, number_of_routing_shards: 640 }, { numberOfRoutingShards: 640 }],
    [{ number_of_replicas: 0 }, { numberOfReplicas: 0 }],
    [{ refresh_interval: '-1' }, { refreshIntervalMs: -1 }],
    [{ refresh_interval: -1 }, { refreshIntervalMs: -1, refreshInterval: '-1' }],
    [{ refresh_interval: '2m' }, { refreshIntervalMs: 120_000 }],
    [{ refresh_interval: '0' }, { refreshIntervalMs: 0 }],
    [
      {
        number_of_shards: 8,
        number_of_routing_shards: 8,
        routing_partition_size: 7,
        'bulk_routing.mode': 'routing',
      },
      { routingPartitionSize: 7 },
    ],
  ])('accepts %j', (settings, expected) => {
    expect(created({ settings })).toMatchObject(expected);
  });
});

describe('PUT /{index}/_settings', () => {
  const current = created({ settings: { number_of_shards: 3, number_of_replicas: 2 } });

  it('accepts the settings bare or wrapped, nested or flat', () => {
    const forms = [
      { 'index.bulk_routing.enabled': true },
      { index: { bulk_routing: { enabled: true } } },
      { settings: { 'bulk_routing.enabled': true } },
      { settings: { index: { 'bulk_routing.enabled': 'true' } } },
    ];
    for (const body of forms) expect(parseSettingsUpdateBody(body)).toEqual({ bulkRoutingEnabled: true });
  });

  it('changes dynamic settings and keeps the others', () => {
    const next = applySettingsUpdate(
      current,
      parseSettingsUpdateBody({
        index: {
          number_of_replicas: 0,
          refresh_interval: '30s',
          bulk_routing: { enabled: true, mode: 'routing' },
        },
      }),
      { name: 'logs' },
    );
    expect(next).toMatchObject({
      numberOfShards: 3,
      numberOfReplicas: 0,
      refreshIntervalMs: 30_000,
      bulkRoutingEnabled: true,
      bulkRoutingMode: 'routing',
    });
    expect(current.numberOfReplicas).toBe(2); // unchanged
    expect(next.routing).toEqual(current.routing);
  });

  it('resets a setting given as null to its default', () => {
    const next = applySettingsUpdate(current, parseSettingsUpdateBody({ number_of_replicas: null }), {
      name: 'logs',
    });
    expect(next.numberOfReplicas).toBe(1);
    expect(next.explicit).toEqual({ numberOfShards: 3 });
  });

  it('refuses static settings on an open index with Elasticsearch’s message, even at their current value', () => {
    for (const body of [{ number_of_shards: 6 }, { number_of_shards: 3 }]) {
      expect(() =>
        applySettingsUpdate(current, parseSettingsUpdateBody(body), { name: 'logs', uuid: 'u-1' }),
      ).toThrow(
        `settings must hold only dynamic settings for an open index: Can't update non dynamic settings [[index.number_of_shards]] for open indices [[logs/u-1]]; received {"index.number_of_shards":${body.number_of_shards}}`,
      );
    }
    expect(() =>
      applySettingsUpdate(
        current,
        parseSettingsUpdateBody({
          routing_partition_size: 2,
          number_of_routing_shards: 6,
          number_of_replicas: 1,
        }),
        { name: 'logs' },
      ),
    ).toThrow(
      "Can't update non dynamic settings [[index.number_of_routing_shards, index.routing_partition_size]] for open indices [[logs]]",
    );
  });

  it('refuses an empty update, a mixed body and a combination that is invalid as a whole', () => {
    expect(() => parseSettingsUpdateBody({})).toThrow(
      'body must hold at least one setting (no settings to update); received {}',
    );
    expect(() => parseSettingsUpdateBody({ settings: {}, number_of_replicas: 1 })).toThrow(
      'body must hold either a settings object or settings, not a mix of both',
    );
    // Without a mode, a partitioned index takes `routing` (bulk routing on or off); `id` stays refused.
    expect(
      created({ settings: { number_of_shards: 6, routing_partition_size: 2, 'bulk_routing.enabled': false } })
        .bulkRoutingMode,
    ).toBe('routing');
    expect(created({ settings: { routing_partition_size: 2 } }).bulkRoutingMode).toBe('routing');
    const partitioned = created({ settings: { routing_partition_size: 2, 'bulk_routing.mode': 'routing' } });
    expect(() =>
      applySettingsUpdate(partitioned, parseSettingsUpdateBody({ 'bulk_routing.mode': 'id' }), { name: 'p' }),
    ).toThrow('settings.index.bulk_routing.mode must be "routing" on a partitioned index');
  });
});
