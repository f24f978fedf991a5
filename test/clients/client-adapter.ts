/**
 * The official clients behind one small interface, so that one suite runs each of them: the
 * Elasticsearch JavaScript client 8.x (`es8`) and 9.x (`es9`, npm aliases of `@elastic/elasticsearch`)
 * and the OpenSearch JavaScript client 3.x. Each method is the client's own API call with its own
 * parameter style (Elasticsearch: `document`, `operations` and body keys at the top; OpenSearch:
 * `body`); answers are the response bodies. Every response is counted, and so is every
 * `ProductNotSupportedError` (the Elasticsearch clients' product check is on by default).
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Client as OpenSearchClient, errors as osErrors } from '@opensearch-project/opensearch';
import { Client as Elasticsearch8Client, errors as es8Errors } from 'es8';
import { Client as Elasticsearch9Client, errors as es9Errors } from 'es9';

// biome-ignore lint/suspicious/noExplicitAny: the clients' answers are read freely
export type Json = any;

/** What one family offers the suite. */
export interface ClientAdapter {
  readonly family: 'elasticsearch-8' | 'elasticsearch-9' | 'opensearch-3';
  /** The installed client version (its package.json). */
  readonly version: string;
  /** Responses seen, and `ProductNotSupportedError`s among them. */
  readonly counters: { responses: number; productNotSupported: number };
  /** The client's `ResponseError` class. */
  readonly ResponseError: new (
    ...args: never[]
  ) => Error;
  info(): Promise<Json>;
  indicesExists(index: string): Promise<boolean>;
  createIndex(index: string, settings: Json, mappings?: Json): Promise<Json>;
  index(p: {
    index: string;
    id?: string;
    document: Json;
    refresh?: boolean | 'wait_for';
    routing?: string;
    if_seq_no?: number;
    if_primary_term?: number;
  }): Promise<Json>;
  create(p: { index: string; id: string; document: Json; refresh?: boolean }): Promise<Json>;
  update(p: {
    index: string;
    id: string;
    doc: Json;
    refresh?: boolean;
    doc_as_upsert?: boolean;
  }): Promise<Json>;
  delete(p: { index: string; id: string; refresh?: boolean }): Promise<Json>;
  get(p: { index: string; id: string; routing?: string; _source_includes?: string[] }): Promise<Json>;
  exists(p: { index: string; id: string }): Promise<boolean>;
  /** `body` keys (query, sort, _source, track_total_hits...) and URL `params` (size, from, q...). */
  search(index: string, body: Json, params?: Json): Promise<Json>;
  count(index: string, query?: Json, params?: Json): Promise<Json>;
  bulk(operations: Json[], refresh?: boolean): Promise<Json>;
  /** The client's `helpers.bulk` (options as the client takes them); resolves with its stats. */
  helpersBulk(options: Json): Promise<Json>;
  health(params?: Json): Promise<Json>;
  catIndices(params?: Json): Promise<Json>;
  getSettings(index?: string): Promise<Json>;
  putSettings(index: string, settings: Json): Promise<Json>;
  getMapping(index: string): Promise<Json>;
  putTemplate(name: string, body: Json): Promise<Json>;
  getTemplate(name: string): Promise<Json>;
  existsTemplate(name: string): Promise<boolean>;
  deleteTemplate(name: string): Promise<Json>;
  refresh(index?: string): Promise<Json>;
  close(): Promise<void>;
}

const require = createRequire(import.meta.url);
/** A package's version, read from the package.json next to its entry point (not every package exports it). */
function versionOf(name: string): string {
  let dir = path.dirname(require.resolve(name));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version: string };
      if (pkg.name !== undefined) return pkg.version;
    }
    dir = path.dirname(dir);
  }
}

/** An Elasticsearch 8.x or 9.x client adapter (the two APIs are the same for these calls). */
function elasticsearch(
  family: 'elasticsearch-8' | 'elasticsearch-9',
  url: string,
  bearer: string | undefined,
): ClientAdapter {
  const Client = family === 'elasticsearch-8' ? Elasticsearch8Client : Elasticsearch9Client;
  const errors = family === 'elasticsearch-8' ? es8Errors : es9Errors;
  // biome-ignore lint/suspicious/noExplicitAny: one adapter for two client classes with the same API
  const c: any = new Client({ node: url, ...(bearer === undefined ? {} : { auth: { bearer } }) });
  const counters = { responses: 0, productNotSupported: 0 };
  c.diagnostic.on('response', (error: Error | null) => {
    counters.responses++;
    if (error instanceof errors.ProductNotSupportedError) counters.productNotSupported++;
  });
  return {
    family,
    version: versionOf(family === 'elasticsearch-8' ? 'es8' : 'es9'),
    counters,
    ResponseError: errors.ResponseError as never,
    info: () => c.info(),
    indicesExists: (index) => c.indices.exists({ index }),
    createIndex: (index, settings, mappings) =>
      c.indices.create({ index, settings, ...(mappings ? { mappings } : {}) }),
    index: ({ document, ...p }) => c.index({ ...p, document }),
    create: ({ document, ...p }) => c.create({ ...p, document }),
    update: (p) => c.update(p),
    delete: (p) => c.delete(p),
    get: (p) => c.get(p),
    exists: (p) => c.exists(p),
    search: (index, body, params = {}) => c.search({ index, ...body, ...params }),
    count: (index, query, params = {}) => c.count({ index, ...(query ? { query } : {}), ...params }),
    bulk: (operations, refresh) => c.bulk({ operations, ...(refresh ? { refresh: true } : {}) }),
    helpersBulk: (options) => c.helpers.bulk(options),
    health: (params = {}) => c.cluster.health(params),
    catIndices: (params = {}) => c.cat.indices(params),
    getSettings: (index) => c.indices.getSettings(index === undefined ? {} : { index }),
    putSettings: (index, settings) => c.indices.putSettings({ index, settings }),
    getMapping: (index) => c.indices.getMapping({ index }),
    putTemplate: (name, body) => c.indices.putIndexTemplate({ name, ...body }),
    getTemplate: (name) => c.indices.getIndexTemplate({ name }),
    existsTemplate: (name) => c.indices.existsIndexTemplate({ name }),
    deleteTemplate: (name) => c.indices.deleteIndexTemplate({ name }),
    refresh: (index) => c.indices.refresh(index === undefined ? {} : { index }),
    close: () => c.close(),
  };
}

/** The OpenSearch 3.x client adapter (answers are `{body, statusCode}`: the adapter returns `body`). */
function opensearch(url: string, bearer: string | undefined): ClientAdapter {
  // The OpenSearch client has no bearer option: the header is set for every request.
  // biome-ignore lint/suspicious/noExplicitAny: the client's API is read freely
  const c: any = new OpenSearchClient({
    node: url,
    ...(bearer === undefined ? {} : { headers: { authorization: `Bearer ${bearer}` } }),
  });
  const counters = { responses: 0, productNotSupported: 0 };
  c.on('response', () => {
    counters.responses++;
  });
  const body = async (p: Promise<{ body: Json }>) => (await p).body;
  return {
    family: 'opensearch-3',
    version: versionOf('@opensearch-project/opensearch'),
    counters,
    ResponseError: osErrors.ResponseError as never,
    info: () => body(c.info()),
    indicesExists: (index) => body(c.indices.exists({ index })),
    createIndex: (index, settings, mappings) =>
      body(c.indices.create({ index, body: { settings, ...(mappings ? { mappings } : {}) } })),
    index: ({ document, ...p }) => body(c.index({ ...p, body: document })),
    create: ({ document, ...p }) => body(c.create({ ...p, body: document })),
    update: ({ doc, doc_as_upsert, ...p }) =>
      body(c.update({ ...p, body: { doc, ...(doc_as_upsert ? { doc_as_upsert } : {}) } })),
    delete: (p) => body(c.delete(p)),
    get: (p) => body(c.get(p)),
    exists: (p) => body(c.exists(p)),
    search: (index, b, params = {}) => body(c.search({ index, body: b, ...params })),
    count: (index, query, params = {}) =>
      body(c.count({ index, ...(query ? { body: { query } } : {}), ...params })),
    bulk: (operations, refresh) => body(c.bulk({ body: operations, ...(refresh ? { refresh: true } : {}) })),
    helpersBulk: (options) => c.helpers.bulk(options),
    health: (params = {}) => body(c.cluster.health(params)),
    catIndices: (params = {}) => body(c.cat.indices(params)),
    getSettings: (index) => body(c.indices.getSettings(index === undefined ? {} : { index })),
    putSettings: (index, settings) => body(c.indices.putSettings({ index, body: settings })),
    getMapping: (index) => body(c.indices.getMapping({ index })),
    putTemplate: (name, b) => body(c.indices.putIndexTemplate({ name, body: b })),
    getTemplate: (name) => body(c.indices.getIndexTemplate({ name })),
    existsTemplate: (name) => body(c.indices.existsIndexTemplate({ name })),
    deleteTemplate: (name) => body(c.indices.deleteIndexTemplate({ name })),
    refresh: (index) => body(c.indices.refresh(index === undefined ? {} : { index })),
    close: () => c.close(),
  };
}

/** The adapter of `family` for a server at `url`; `bearer` is sent when the server has a token. */
export function clientFor(family: ClientAdapter['family'], url: string, bearer?: string): ClientAdapter {
  return family === 'opensearch-3' ? opensearch(url, bearer) : elasticsearch(family, url, bearer);
}

export const FAMILIES: readonly ClientAdapter['family'][] = [
  'elasticsearch-8',
  'elasticsearch-9',
  'opensearch-3',
];
