/**
 * The index and bulk APIs as the HTTP routes call them (`server/index-routes.ts`,
 * `server/document-routes.ts`, `server/index-info-routes.ts`), and the Elasticsearch-shaped answers
 * they print. One implementation, `IndexService` (index-service.ts), over a single node's local
 * shards (`indices/local-placement.ts`) or a coordinator's data nodes (`cluster/remote-placement.ts`).
 */
import { InvalidArgumentError } from '../errors.js';
import type { PlannedItem } from '../bulk/bulk-planner.js';
import {
  type BulkParameters,
  type BulkResponse,
  type ShardBulkOutcome,
  shardFailureResponse,
  shardItemResponse,
} from '../bulk/bulk-response.js';
import { shardId } from '../routing/shard-routing.js';
import type { IndexMetadata, IndexMetadataStore } from './index-metadata-store.js';
import { explicitSettingsToFlat, type IndexSettings, indexSettingsToFlat } from './index-settings.js';
import type { IndexTemplate } from './index-templates.js';

export type { BulkParameters, BulkResponse } from '../bulk/bulk-response.js';

/** The index APIs of a node that serves writable indices (see module doc). */
export interface IndexApi {
  /** Writable index names, in creation order. */
  names(): readonly string[];
  createIndex(name: string, body: unknown): Promise<Record<string, unknown>>;
  deleteIndex(expression: string): Promise<Record<string, unknown>>;
  updateSettings(expression: string, body: unknown): Promise<Record<string, unknown>>;
  getSettings(expression: string): Record<string, unknown>;
  /** `GET /{index}/_mapping`: `{"<index>": {"mappings": {...}}}` (the mappings given at creation, else `{}`). */
  getMappings(expression: string): Record<string, unknown>;
  putTemplate(name: string, body: unknown, create: boolean): Promise<Record<string, unknown>>;
  deleteTemplate(name: string): Promise<Record<string, unknown>>;
  getTemplates(name?: string): Record<string, unknown>;
  getDocument(index: string, id: string, routing: string | undefined): GetResponse | Promise<GetResponse>;
  catShards(expression?: string): CatShardRow[] | Promise<CatShardRow[]>;
  refresh(expression?: string): Record<string, unknown> | Promise<Record<string, unknown>>;
  bulk(body: string | Uint8Array, parameters?: BulkParameters): Promise<BulkResponse>;
}

/** `GET /_cat/shards?format=json` row, as Elasticsearch prints it (every value a string or null). */
export interface CatShardRow {
  readonly index: string;
  readonly shard: string;
  readonly prirep: 'p' | 'r';
  readonly state: 'STARTED' | 'INITIALIZING' | 'UNASSIGNED';
  readonly docs: string | null;
  readonly node: string | null;
}

/** A real-time GET answer (`GET /{index}/_doc/{id}`): `found` false answers 404. */
export type GetResponse =
  | {
      readonly _index: string;
      readonly _id: string;
      readonly _version: number;
      readonly _seq_no: number;
      readonly _primary_term: 1;
      readonly _routing?: string;
      readonly found: true;
      readonly _source: Readonly<Record<string, unknown>>;
    }
  | { readonly _index: string; readonly _id: string; readonly found: false };

/** Nested `{"index": {...}}` settings from flat `index.*` keys, as `GET /{index}/_settings` prints them. */
export function nestSettings(flat: Readonly<Record<string, string>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(flat)) {
    const parts = key.split('.');
    let node = out;
    for (const part of parts.slice(0, -1)) {
      node[part] ??= {};
      node = node[part] as Record<string, unknown>;
    }
    node[parts[parts.length - 1]!] = value;
  }
  return out;
}

/** `GET /{index}/_settings` entry of one index. */
export function settingsView(meta: IndexMetadata): Record<string, unknown> {
  return {
    settings: nestSettings({
      ...indexSettingsToFlat(meta.settings),
      'index.uuid': meta.uuid,
      'index.creation_date': String(meta.creationDateMs),
      'index.provided_name': meta.name,
    }),
  };
}

/** `GET /{index}/_mapping` entries of `names`: the mappings each index was created with, else `{}`. */
export function mappingsView(
  metadata: IndexMetadataStore,
  names: readonly string[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of names) out[name] = { mappings: metadata.get(name)?.mappings ?? {} };
  return out;
}

/** `GET /_index_template` entry of one template, as Elasticsearch prints it. */
export function templateView(template: IndexTemplate): Record<string, unknown> {
  return {
    name: template.name,
    index_template: {
      index_patterns: template.indexPatterns,
      priority: template.priority,
      ...(template.version !== undefined ? { version: template.version } : {}),
      template: {
        settings: nestSettings(
          Object.fromEntries(
            Object.entries(explicitSettingsToFlat(template.settings)).map(([k, v]) => [k, String(v)]),
          ),
        ),
        ...(template.mappings !== undefined ? { mappings: template.mappings } : {}),
      },
      ...(template.meta !== undefined ? { _meta: template.meta } : {}),
      composed_of: [],
    },
  };
}

/** The routing shard of a GET. @throws InvalidArgumentError (path `routing`) on a partitioned index without one. */
export function getShard(
  settings: IndexSettings,
  index: string,
  id: string,
  routing: string | undefined,
): number {
  if (settings.routingPartitionSize !== 1 && routing === undefined) {
    throw new InvalidArgumentError(
      'routing',
      `is required for [${index}]/[${id}]: the index is partitioned (routing_partition_size ${settings.routingPartitionSize})`,
      routing,
    );
  }
  return shardId(settings.routing, id, routing);
}

/** Fills the responses of a batch from its shard outcome. */
export function assignResults(
  items: readonly PlannedItem[],
  shard: number,
  outcome: ShardBulkOutcome,
  responses: (Record<string, unknown> | undefined)[],
): void {
  const byPosition = new Map(outcome.results.map((r) => [r.position, r]));
  for (const planned of items) {
    const result = byPosition.get(planned.position);
    responses[planned.position] =
      result === undefined
        ? shardFailureResponse(planned, 500, {
            type: 'exception',
            reason: 'the shard gave no result for the item',
          })
        : shardItemResponse(planned, shard, result, outcome);
  }
}
