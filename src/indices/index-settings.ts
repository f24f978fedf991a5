/**
 * Index settings: the bodies of `PUT /{index}` and `PUT /{index}/_settings`, checked as Elasticsearch
 * checks them, resolved with defaults into the frozen settings a shard and the bulk planner read.
 *
 * Settings this project knows (all others are refused, as Elasticsearch refuses an unknown setting):
 *
 * | key | kind | range | default |
 * |---|---|---|---|
 * | `index.number_of_shards` | static (final) | integer 1..1024 | 1 |
 * | `index.number_of_routing_shards` | static | integer, a multiple of the shards, >= them | `defaultRoutingNumShards(shards)` |
 * | `index.routing_partition_size` | static (final) | 1, or 2..routing shards - 1 | 1 |
 * | `index.number_of_replicas` | dynamic | integer >= 0 | 1 |
 * | `index.refresh_interval` | dynamic | time value (`1s`, `500ms`), `-1` disables | `1s` |
 * | `index.bulk_routing.enabled` | dynamic | boolean | false |
 * | `index.bulk_routing.mode` | dynamic | `routing` \| `id` | `id` |
 *
 * Body forms (Elasticsearch `Settings.Builder.loadFromMap` flattens nested objects with dots, and
 * `normalizePrefix("index.")` prefixes keys that lack it), all equivalent:
 * `{"settings":{"index":{"number_of_shards":3}}}`, `{"settings":{"index.number_of_shards":3}}`,
 * `{"settings":{"number_of_shards":3}}`. Values may be JSON numbers/booleans or their text (`"3"`,
 * `"true"`): Elasticsearch stores settings as strings.
 *
 * Sources: `IndexMetadata` (the settings, their properties and validators: number_of_shards is
 * `Final`, number_of_routing_shards is static and checked against the shards, routing_partition_size is
 * `Final`, number_of_replicas is `Dynamic` with minimum 0), `IndexSettings.INDEX_REFRESH_INTERVAL_SETTING`,
 * `MetadataUpdateSettingsService` ("Can't update non dynamic settings [...] for open indices [...]"),
 * `CreateIndexRequest.source` ("unknown key [x] for create index"), `UpdateSettingsRequest.fromXContent`
 * (the optional `settings` wrapper), `Booleans.parseBoolean` (only `true`/`false`).
 * The `bulk_routing` settings come from the bulk-routing proposal (seed 004), not from Elasticsearch.
 * `bulk_routing.mode: id` cannot be combined with `routing_partition_size` > 1, because a partitioned
 * index routes by its routing value, so an id alone cannot choose the shard.
 */
import { isPlainObject } from '../common/is-plain-object.js';
import type { BulkRoutingMode } from '../bulk/bulk-planner.js';
import { InvalidArgumentError } from '../errors.js';
import {
  resolveShardRouting,
  defaultRoutingNumShards,
  MAX_NUMBER_OF_SHARDS,
  type ShardRouting,
} from '../routing/shard-routing.js';
import { parseTimeValueMs } from '../common/time-value.js';

const MAX_INT = 0x7fffffff;

/** Explicitly given settings, each checked on its own. Keys are camelCase forms of `index.*` keys. */
export interface IndexSettingValues {
  readonly numberOfShards?: number;
  readonly numberOfRoutingShards?: number;
  readonly routingPartitionSize?: number;
  readonly numberOfReplicas?: number;
  /** As given (`1s`); the resolved settings hold it in ms too. */
  readonly refreshInterval?: string;
  readonly bulkRoutingEnabled?: boolean;
  readonly bulkRoutingMode?: BulkRoutingMode;
}

/** A `PUT /{index}/_settings` change: a value, or `null` to reset the setting to its default. */
export type IndexSettingsUpdate = {
  readonly [K in keyof IndexSettingValues]?: Exclude<IndexSettingValues[K], undefined> | null;
};

/** Resolved, frozen settings of one index. */
export interface IndexSettings {
  readonly numberOfShards: number;
  /** Explicit or `defaultRoutingNumShards(numberOfShards)`. */
  readonly numberOfRoutingShards: number;
  readonly routingPartitionSize: number;
  readonly numberOfReplicas: number;
  /** As given or the default `1s`. */
  readonly refreshInterval: string;
  /** `refreshInterval` in ms; -1 when refresh is disabled. */
  readonly refreshIntervalMs: number;
  readonly bulkRoutingEnabled: boolean;
  readonly bulkRoutingMode: BulkRoutingMode;
  /** What `shardId` reads. */
  readonly routing: ShardRouting;
  /** The values that were set explicitly (what an update keeps, what a template contributes). */
  readonly explicit: IndexSettingValues;
}

/** The defaults, as Elasticsearch has them (`number_of_shards` 1, `number_of_replicas` 1, `refresh_interval` 1s). */
export const DEFAULT_INDEX_SETTINGS = Object.freeze({
  numberOfShards: 1,
  routingPartitionSize: 1,
  numberOfReplicas: 1,
  refreshInterval: '1s',
  bulkRoutingEnabled: false,
  bulkRoutingMode: 'id' as BulkRoutingMode,
});

type Field = keyof IndexSettingValues;

interface SettingDefinition {
  readonly key: string;
  readonly field: Field;
  /** Changeable on an open index with `PUT /{index}/_settings`. */
  readonly dynamic: boolean;
  readonly parse: (value: unknown, path: string) => number | boolean | string;
}

const DEFINITIONS: readonly SettingDefinition[] = [
  {
    key: 'index.number_of_shards',
    field: 'numberOfShards',
    dynamic: false,
    parse: (v, p) => parseIntSetting(v, p, 1, MAX_NUMBER_OF_SHARDS),
  },
  {
    key: 'index.number_of_routing_shards',
    field: 'numberOfRoutingShards',
    dynamic: false,
    parse: (v, p) => parseIntSetting(v, p, 1, MAX_INT),
  },
  {
    key: 'index.routing_partition_size',
    field: 'routingPartitionSize',
    dynamic: false,
    parse: (v, p) => parseIntSetting(v, p, 1, MAX_INT),
  },
  {
    key: 'index.number_of_replicas',
    field: 'numberOfReplicas',
    dynamic: true,
    parse: (v, p) => parseIntSetting(v, p, 0, MAX_INT),
  },
  {
    key: 'index.refresh_interval',
    field: 'refreshInterval',
    dynamic: true,
    parse: (v, p) => {
      parseTimeValueMs(v, p);
      return typeof v === 'number' ? String(v) : (v as string);
    },
  },
  {
    key: 'index.bulk_routing.enabled',
    field: 'bulkRoutingEnabled',
    dynamic: true,
    parse: parseBooleanSetting,
  },
  {
    key: 'index.bulk_routing.mode',
    field: 'bulkRoutingMode',
    dynamic: true,
    parse: (v, p) => {
      if (v !== 'routing' && v !== 'id') throw new InvalidArgumentError(p, 'must be "routing" or "id"', v);
      return v;
    },
  },
];

const BY_KEY = new Map(DEFINITIONS.map((d) => [d.key, d]));
const BY_FIELD = new Map(DEFINITIONS.map((d) => [d.field, d]));

/** The `index.*` keys this project knows, sorted. */
export const KNOWN_INDEX_SETTINGS: readonly string[] = DEFINITIONS.map((d) => d.key).sort();

/** Elasticsearch `Integer.parseInt` semantics: a JSON integer or its text (`"3"`, `"+3"`). */
function parseIntSetting(value: unknown, path: string, min: number, max: number): number {
  const n = typeof value === 'string' && /^[+-]?\d+$/.test(value) ? Number(value) : value;
  const range = max === MAX_INT ? `>= ${min}` : `in ${min}..${max}`;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
    throw new InvalidArgumentError(path, `must be an integer ${range}`, value);
  }
  return n;
}

/** Elasticsearch `Booleans.parseBoolean`: only `true`/`false` (or their text). */
function parseBooleanSetting(value: unknown, path: string): boolean {
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new InvalidArgumentError(path, 'must be true or false (only [true] or [false] are allowed)', value);
}

/**
 * Flattens a settings object into `index.*` keys as Elasticsearch does: nested objects are joined with
 * dots, and keys without the `index.` prefix get it.
 *
 * @param raw the value of `settings` (or a whole `_settings` body).
 * @param path what to name in errors.
 * @returns the flat keys and their raw values (arrays and scalars), in body order; a later duplicate wins.
 * @throws InvalidArgumentError when `raw` is not an object.
 */
export function flattenSettings(raw: unknown, path = 'settings'): Map<string, unknown> {
  if (!isPlainObject(raw)) throw new InvalidArgumentError(path, 'must be an object of settings', raw);
  const flat = new Map<string, unknown>();
  const walk = (object: Record<string, unknown>, prefix: string): void => {
    for (const [key, value] of Object.entries(object)) {
      const full = prefix === '' ? key : `${prefix}.${key}`;
      if (isPlainObject(value)) walk(value, full);
      else flat.set(full.startsWith('index.') ? full : `index.${full}`, value);
    }
  };
  walk(raw, '');
  return flat;
}

/**
 * Checks each setting of a settings object on its own (types, ranges, names).
 *
 * @param raw the `settings` object in any of the three forms (see the module doc).
 * @param path the body path of `raw`, used in errors: `settings.index.number_of_shards`.
 * @param allowNull accept `null` values (an update resets them); otherwise a `null` value is refused.
 * @throws InvalidArgumentError naming `<path>.<index.key>` and the value, for an unknown setting or a
 *   value out of range.
 */
export function parseSettingValues(raw: unknown, path: string, allowNull: true): IndexSettingsUpdate;
export function parseSettingValues(raw: unknown, path: string, allowNull?: false): IndexSettingValues;
export function parseSettingValues(raw: unknown, path: string, allowNull = false): IndexSettingsUpdate {
  const values: Record<string, unknown> = {};
  for (const [key, value] of flattenSettings(raw, path)) {
    const definition = BY_KEY.get(key);
    const settingPath = `${path}.${key}`;
    if (definition === undefined) {
      throw new InvalidArgumentError(
        settingPath,
        `is an unknown setting [${key}] (known: ${KNOWN_INDEX_SETTINGS.join(', ')})`,
        value,
      );
    }
    if (value === null) {
      if (!allowNull) throw new InvalidArgumentError(settingPath, 'must not be null', value);
      values[definition.field] = null;
    } else {
      values[definition.field] = definition.parse(value, settingPath);
    }
  }
  return values as IndexSettingsUpdate;
}

/** What `PUT /{index}` asked for. */
export interface CreateIndexBody {
  readonly settings: IndexSettingValues;
  /** The `mappings` object, kept as given; this project does not interpret it yet. */
  readonly mappings: Readonly<Record<string, unknown>> | undefined;
}

/**
 * Checks a `PUT /{index}` body: `{settings?, mappings?, aliases?}`.
 *
 * @param body the parsed JSON body; `undefined`, `null` or `{}` mean "all defaults".
 * @throws InvalidArgumentError for a body that is not an object, an unknown top-level key
 *   (Elasticsearch: "unknown key [x] for create index"), non-empty `aliases` (not supported here),
 *   `mappings` that is not an object, or any invalid setting (see `parseSettingValues`). Cross-setting
 *   checks happen in `resolveIndexSettings`, after a template's settings are overlaid.
 */
export function parseCreateIndexBody(body: unknown): CreateIndexBody {
  if (body === undefined || body === null) return { settings: {}, mappings: undefined };
  if (!isPlainObject(body)) throw new InvalidArgumentError('body', 'must be an object', body);
  let settings: IndexSettingValues = {};
  let mappings: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(body)) {
    if (key === 'settings') {
      settings = parseSettingValues(value, 'settings');
    } else if (key === 'mappings') {
      if (!isPlainObject(value)) throw new InvalidArgumentError('mappings', 'must be an object', value);
      mappings = value;
    } else if (key === 'aliases') {
      if (!isPlainObject(value) || Object.keys(value).length > 0) {
        throw new InvalidArgumentError(
          'aliases',
          'is not supported (only an empty object is accepted)',
          value,
        );
      }
    } else {
      throw new InvalidArgumentError(
        key,
        `is not a create-index key (unknown key [${key}] for create index; expected settings, mappings or aliases)`,
        value,
      );
    }
  }
  return { settings, mappings };
}

/**
 * Checks a `PUT /{index}/_settings` body: the settings themselves, or wrapped in `{"settings": ...}`.
 *
 * @returns the change; `null` values reset a setting to its default.
 * @throws InvalidArgumentError when the body is not an object, mixes `settings` with other top-level
 *   keys, holds no setting (Elasticsearch: "no settings to update"), or holds an invalid setting.
 */
export function parseSettingsUpdateBody(body: unknown): IndexSettingsUpdate {
  if (!isPlainObject(body)) throw new InvalidArgumentError('body', 'must be an object of settings', body);
  let raw: unknown = body;
  let path = 'body';
  if (isPlainObject(body['settings'])) {
    if (Object.keys(body).length > 1) {
      throw new InvalidArgumentError(
        'body',
        'must hold either a settings object or settings, not a mix of both',
        body,
      );
    }
    raw = body['settings'];
    path = 'settings';
  }
  const update = parseSettingValues(raw, path, true);
  if (Object.keys(update).length === 0) {
    throw new InvalidArgumentError(path, 'must hold at least one setting (no settings to update)', raw);
  }
  return update;
}

/** Options of `resolveIndexSettings`. */
export interface ResolveIndexSettingsOptions {
  /** Defaults under the explicit values (a node may, e.g., default to 0 replicas). @default DEFAULT_INDEX_SETTINGS */
  readonly defaults?: IndexSettingValues;
  /** The body path named in errors. @default 'settings' */
  readonly path?: string;
}

/**
 * Applies defaults and checks the settings together, as `IndexMetadata` does when an index is built.
 *
 * @param explicit values already checked one by one (from `parseSettingValues`, a template overlay, or
 *   an earlier `IndexSettings.explicit`).
 * @throws InvalidArgumentError naming `<path>.index.<key>` and the value when
 *   `number_of_routing_shards` is below the shards or not a multiple of them (Elasticsearch:
 *   "index.number_of_routing_shards [N] must be >= index.number_of_shards [M]", "the number of source
 *   shards [M] must be a factor of [N]"); when `routing_partition_size` is not below the routing shards
 *   ("routing partition size [P] should be a positive number less than the number of routing shards
 *   [N]"); when `bulk_routing.mode` is `id` on a partitioned index.
 */
export function resolveIndexSettings(
  explicit: IndexSettingValues,
  options: ResolveIndexSettingsOptions = {},
): IndexSettings {
  const path = options.path ?? 'settings';
  const merged = { ...DEFAULT_INDEX_SETTINGS, ...options.defaults, ...explicit };
  const numberOfShards = merged.numberOfShards;
  const numberOfRoutingShards = merged.numberOfRoutingShards ?? defaultRoutingNumShards(numberOfShards);
  if (numberOfRoutingShards < numberOfShards) {
    throw new InvalidArgumentError(
      `${path}.index.number_of_routing_shards`,
      `must be >= index.number_of_shards [${numberOfShards}]`,
      numberOfRoutingShards,
    );
  }
  if (numberOfRoutingShards % numberOfShards !== 0) {
    throw new InvalidArgumentError(
      `${path}.index.number_of_routing_shards`,
      `must be a multiple of index.number_of_shards (the number of source shards [${numberOfShards}] must be a factor of [${numberOfRoutingShards}])`,
      numberOfRoutingShards,
    );
  }
  const routingPartitionSize = merged.routingPartitionSize;
  if (routingPartitionSize !== 1 && routingPartitionSize >= numberOfRoutingShards) {
    throw new InvalidArgumentError(
      `${path}.index.routing_partition_size`,
      `must be 1 or less than the number of routing shards [${numberOfRoutingShards}]`,
      routingPartitionSize,
    );
  }
  // A partitioned index needs routing values: unless `id` was asked for explicitly, its bulk routing
  // mode defaults to `routing` (an id alone cannot choose the shard there).
  const explicitMode = explicit.bulkRoutingMode ?? options.defaults?.bulkRoutingMode;
  const bulkRoutingMode =
    routingPartitionSize !== 1 && explicitMode === undefined ? 'routing' : merged.bulkRoutingMode;
  if (bulkRoutingMode === 'id' && routingPartitionSize !== 1) {
    throw new InvalidArgumentError(
      `${path}.index.bulk_routing.mode`,
      `must be "routing" on a partitioned index (index.routing_partition_size ${routingPartitionSize}): an id alone cannot choose the shard`,
      merged.bulkRoutingMode,
    );
  }
  const routing = resolveShardRouting({ numberOfShards, numberOfRoutingShards, routingPartitionSize });
  return Object.freeze({
    numberOfShards,
    numberOfRoutingShards,
    routingPartitionSize,
    numberOfReplicas: merged.numberOfReplicas,
    refreshInterval: merged.refreshInterval,
    refreshIntervalMs: parseTimeValueMs(merged.refreshInterval, `${path}.index.refresh_interval`),
    bulkRoutingEnabled: merged.bulkRoutingEnabled,
    bulkRoutingMode,
    routing,
    explicit: Object.freeze({ ...explicit }),
  });
}

/** The index an update is for, as Elasticsearch names it in messages (`[name/uuid]`). */
export interface IndexIdentity {
  readonly name: string;
  readonly uuid?: string | undefined;
}

/**
 * Applies `PUT /{index}/_settings` to an open index.
 *
 * @returns the new resolved settings (the old object is unchanged).
 * @throws InvalidArgumentError (path `settings`) when the change names a static setting (even with its
 *   current value, as Elasticsearch does), with Elasticsearch's text: "Can't update non dynamic settings
 *   [[index.number_of_shards]] for open indices [[name/uuid]]", the received value being the static
 *   settings asked for; or any error of `resolveIndexSettings` for the combined settings.
 */
export function applySettingsUpdate(
  current: IndexSettings,
  update: IndexSettingsUpdate,
  index: IndexIdentity,
  options: ResolveIndexSettingsOptions = {},
): IndexSettings {
  const staticKeys: string[] = [];
  const staticValues: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(update)) {
    const definition = BY_FIELD.get(field as Field)!;
    if (!definition.dynamic) {
      staticKeys.push(definition.key);
      staticValues[definition.key] = value;
    }
  }
  if (staticKeys.length > 0) {
    staticKeys.sort();
    const indexText = index.uuid === undefined ? index.name : `${index.name}/${index.uuid}`;
    throw new InvalidArgumentError(
      'settings',
      `must hold only dynamic settings for an open index: Can't update non dynamic settings [[${staticKeys.join(', ')}]] for open indices [[${indexText}]]`,
      staticValues,
    );
  }
  const explicit: Record<string, unknown> = { ...current.explicit };
  for (const [field, value] of Object.entries(update)) {
    if (value === null) delete explicit[field];
    else explicit[field] = value;
  }
  return resolveIndexSettings(explicit as IndexSettingValues, options);
}

/**
 * The settings as Elasticsearch's `GET /{index}/_settings?flat_settings=true` prints them: flat
 * `index.*` keys with string values, sorted by key.
 */
export function indexSettingsToFlat(settings: IndexSettings): Record<string, string> {
  const flat: Record<string, string> = {
    'index.bulk_routing.enabled': String(settings.bulkRoutingEnabled),
    'index.bulk_routing.mode': settings.bulkRoutingMode,
    'index.number_of_replicas': String(settings.numberOfReplicas),
    'index.number_of_routing_shards': String(settings.numberOfRoutingShards),
    'index.number_of_shards': String(settings.numberOfShards),
    'index.refresh_interval': settings.refreshInterval,
    'index.routing_partition_size': String(settings.routingPartitionSize),
  };
  return flat;
}

/**
 * The explicitly set values in Elasticsearch's flat form (`{"index.number_of_shards": 3, ...}`), as
 * `parseSettingValues` reads them back: how index metadata is stored on disk.
 */
export function explicitSettingsToFlat(
  values: IndexSettingValues,
): Record<string, string | number | boolean> {
  const flat: Record<string, string | number | boolean> = {};
  for (const [field, value] of Object.entries(values)) {
    const definition = BY_FIELD.get(field as Field);
    if (definition !== undefined && value !== undefined)
      flat[definition.key] = value as string | number | boolean;
  }
  return flat;
}
