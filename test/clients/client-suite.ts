/**
 * What every official client does against a server of this project (a single node or a cluster's
 * coordinator), call by call, with the answers checked: the handshake, index management, the
 * single-document APIs, search with its parameters, count, bulk and `helpers.bulk` under write
 * pressure (items refused with 429 and retried: every document lands exactly once), health, `_cat`,
 * settings, mappings and templates, and the errors' messages. Each call is recorded with a short
 * result; `QS_CLIENT_REPORT=1` prints the list.
 */
import { expect } from 'vitest';
import type { ClientAdapter, Json } from './client-adapter.js';

/** One exercised call and what it answered. */
export interface ReportLine {
  readonly call: string;
  readonly result: string;
}

/** How the server under test behaves, for the checks that differ. */
export interface SuiteTarget {
  /** `single` (one node) or `cluster` (a coordinator in front of data nodes). */
  readonly kind: 'single' | 'cluster';
  /** A corpus index the engine serves (read-only). */
  readonly corpusIndex: string;
  /** Documents in it. */
  readonly corpusDocs: number;
  /** Documents `helpers.bulk` loads under write pressure. */
  readonly bulkDocuments: number;
}

/** Awaits a call that must fail; checks the client's error class, status, type and that the message shows the reason. */
export async function expectResponseError(
  client: ClientAdapter,
  call: Promise<unknown>,
  status: number,
  type: string,
  reason: RegExp,
): Promise<Json> {
  let error: Json;
  try {
    await call;
  } catch (e) {
    error = e;
  }
  expect(error, `expected a ${status} ${type}`).toBeInstanceOf(client.ResponseError);
  expect(error.statusCode).toBe(status);
  expect(error.body.error.type).toBe(type);
  // The clients build the message from the type and the root causes: the reason must be in it.
  expect(error.message).toMatch(reason);
  return error;
}

/** Runs every call on `client` (see module doc); `index` is this run's own index name prefix. */
export async function runClientSuite(
  client: ClientAdapter,
  target: SuiteTarget,
  prefix: string,
): Promise<ReportLine[]> {
  const report: ReportLine[] = [];
  const step = async <T>(call: string, run: () => Promise<T>, show: (value: T) => string): Promise<T> => {
    const value = await run();
    report.push({ call, result: show(value) });
    return value;
  };
  const index = `${prefix}-docs`;

  // ---- handshake ----
  const info = await step(
    'info (GET /)',
    () => client.info(),
    (r) => `version.number ${r.version.number}, cluster ${r.cluster_name}`,
  );
  expect(info.version.number).toBe('9.3.0');
  expect(info.cluster_uuid).toMatch(/^[A-Za-z0-9_-]{22}$/);

  // ---- index management ----
  expect(await step('indices.exists (missing)', () => client.indicesExists(index), String)).toBe(false);
  await step(
    'indices.create',
    () =>
      client.createIndex(
        index,
        { number_of_shards: 3, number_of_replicas: target.kind === 'cluster' ? 1 : 0 },
        { properties: { subject: { type: 'text' } } },
      ),
    (r) => `acknowledged ${r.acknowledged}`,
  );
  expect(await step('indices.exists (created)', () => client.indicesExists(index), String)).toBe(true);
  await expectResponseError(
    client,
    client.createIndex(index, {}),
    400,
    'resource_already_exists_exception',
    /already exists/,
  );
  report.push({ call: 'indices.create (again)', result: '400 resource_already_exists_exception' });

  // ---- single documents ----
  const created = await step(
    'index (with id)',
    () =>
      client.index({
        index,
        id: 'd1',
        document: { subject: 'free money now', tag: 'spam', n: 1, date: '2024-01-01T00:00:00Z' },
      }),
    (r) => `${r.result} _version ${r._version} _seq_no ${r._seq_no}`,
  );
  expect(created).toMatchObject({
    _index: index,
    _id: 'd1',
    _version: 1,
    result: 'created',
    _primary_term: 1,
  });
  const auto = await step(
    'index (no id)',
    () =>
      client.index({
        index,
        document: { subject: 'meeting linux', tag: 'ham', n: 2, date: '2024-01-02T00:00:00Z' },
        refresh: true,
      }),
    (r) => `${r.result} _id ${r._id}`,
  );
  expect(auto._id).toMatch(/^[A-Za-z0-9_-]{20}$/);
  await step(
    'create',
    () => client.create({ index, id: 'd3', document: { subject: 'linux kernel', tag: 'ham', n: 3 } }),
    (r) => r.result,
  );
  await expectResponseError(
    client,
    client.create({ index, id: 'd3', document: { subject: 'again' } }),
    409,
    'version_conflict_engine_exception',
    /version conflict, document already exists/,
  );
  report.push({
    call: 'create (existing id)',
    result: '409 version_conflict_engine_exception, reason in the message',
  });
  const updated = await step(
    'update (partial doc)',
    () => client.update({ index, id: 'd1', doc: { n: 10 }, refresh: true }),
    (r) => `${r.result} _version ${r._version}`,
  );
  expect(updated).toMatchObject({ result: 'updated', _version: 2 });
  await expectResponseError(
    client,
    client.update({ index, id: 'nope', doc: { n: 1 } }),
    404,
    'document_missing_exception',
    /document missing/,
  );
  report.push({ call: 'update (missing)', result: '404 document_missing_exception' });
  const got = await step(
    'get',
    () => client.get({ index, id: 'd1' }),
    (r) => `found ${r.found}, _source.n ${r._source.n}`,
  );
  expect(got).toMatchObject({ found: true, _version: 2, _source: { subject: 'free money now', n: 10 } });
  expect((await client.get({ index, id: 'd1', _source_includes: ['n'] }))._source).toEqual({ n: 10 });
  expect(await step('exists (present)', () => client.exists({ index, id: 'd1' }), String)).toBe(true);
  expect(await step('exists (absent)', () => client.exists({ index, id: 'zz' }), String)).toBe(false);
  const conflict = await expectResponseError(
    client,
    client.index({ index, id: 'd1', document: { n: 0 }, if_seq_no: created._seq_no, if_primary_term: 1 }),
    409,
    'version_conflict_engine_exception',
    /required seqNo/,
  );
  expect(conflict.body.error.root_cause[0].type).toBe('version_conflict_engine_exception');
  report.push({ call: 'index (stale if_seq_no)', result: '409 version_conflict_engine_exception' });
  await step(
    'index (d9, then delete)',
    () => client.index({ index, id: 'd9', document: { n: 9 } }),
    (r) => r.result,
  );
  const deleted = await step(
    'delete',
    () => client.delete({ index, id: 'd9', refresh: true }),
    (r) => r.result,
  );
  expect(deleted.result).toBe('deleted');

  // ---- search ----
  const all = await step(
    'search (match_all)',
    () => client.search(index, { query: { match_all: {} } }),
    (r) => `hits.total ${r.hits.total.value} ${r.hits.total.relation}`,
  );
  expect(all.hits.total).toEqual({ value: 3, relation: 'eq' });
  const matched = await step(
    'search (match, size/from as URL parameters)',
    () => client.search(index, { query: { match: { subject: 'linux' } } }, { size: 1, from: 1 }),
    (r) => `total ${r.hits.total.value}, page ${r.hits.hits.length}`,
  );
  expect(matched.hits.total.value).toBe(2);
  expect(matched.hits.hits).toHaveLength(1);
  const byTerm = await step(
    'search (term)',
    () => client.search(index, { query: { term: { tag: 'ham' } } }),
    (r) => `total ${r.hits.total.value}`,
  );
  expect(byTerm.hits.total.value).toBe(2);
  expect((await client.search(index, { query: { terms: { tag: ['spam', 'ham'] } } })).hits.total.value).toBe(
    3,
  );
  const byIds = await step(
    'search (ids)',
    () => client.search(index, { query: { ids: { values: ['d1', 'd3'] } } }),
    (r) => `total ${r.hits.total.value}`,
  );
  expect(byIds.hits.hits.map((h: Json) => h._id).sort()).toEqual(['d1', 'd3']);
  const sorted = await step(
    'search (sort on date, _source filter, track_total_hits)',
    () =>
      client.search(index, {
        query: { match_all: {} },
        sort: [{ date: { order: 'desc' } }],
        _source: ['n'],
        track_total_hits: 2,
      }),
    (r) =>
      `order ${r.hits.hits.map((h: Json) => h._source.n).join(',')}, total ${r.hits.total.value} ${r.hits.total.relation}`,
  );
  expect(sorted.hits.hits.map((h: Json) => h._source)).toEqual([{ n: 2 }, { n: 10 }, { n: 3 }]);
  expect(sorted.hits.total).toEqual({ value: 2, relation: 'gte' });
  expect(sorted.hits.hits[0].sort).toEqual([Date.parse('2024-01-02T00:00:00Z')]);
  const viaQ = await step(
    'search (q, timeout, allow_partial_search_results as URL parameters)',
    () =>
      client.search(index, {}, { q: 'subject:linux', timeout: '5s', allow_partial_search_results: false }),
    (r) => `total ${r.hits.total.value}, timed_out ${r.timed_out}`,
  );
  expect(viaQ.hits.total.value).toBe(2);
  const noTotal = await client.search(index, { track_total_hits: false, _source: false, size: 1 });
  expect(noTotal.hits.total).toBeUndefined();
  expect(noTotal.hits.hits[0]).not.toHaveProperty('_source');
  const corpus = await step(
    'search (a corpus index)',
    () => client.search(target.corpusIndex, { query: { match_all: {} }, size: 2 }),
    (r) => `total ${r.hits.total.value}`,
  );
  expect(corpus.hits.total.value).toBe(target.corpusDocs);
  await expectResponseError(
    client,
    client.search(index, { aggs: { tags: { terms: { field: 'tag' } } } }),
    400,
    'parsing_exception',
    /aggregations are not supported/,
  );
  report.push({ call: 'search (aggs)', result: '400 parsing_exception: aggregations are not supported' });
  await expectResponseError(
    client,
    client.search(`${prefix}-missing`, {}),
    404,
    'index_not_found_exception',
    /no such index/,
  );
  report.push({ call: 'search (missing index)', result: '404 index_not_found_exception' });

  // ---- count ----
  const counted = await step(
    'count (query)',
    () => client.count(index, { term: { tag: 'ham' } }),
    (r) => `count ${r.count}`,
  );
  expect(counted.count).toBe(2);
  expect((await client.count(index)).count).toBe(3);
  expect((await client.count(index, undefined, { q: 'money' })).count).toBe(1);

  // ---- bulk ----
  const bulk = await step(
    'bulk',
    () =>
      client.bulk(
        [
          { index: { _index: index, _id: 'b1' } },
          { subject: 'bulk one', n: 101 },
          { create: { _index: index, _id: 'd3' } },
          { subject: 'conflict' },
          { update: { _index: index, _id: 'b1' } },
          { doc: { n: 102 } },
          { delete: { _index: index, _id: 'b1' } },
        ],
        true,
      ),
    (r) =>
      `errors ${r.errors}, statuses ${r.items.map((i: Json) => (Object.values(i)[0] as Json).status).join(',')}`,
  );
  expect(bulk.errors).toBe(true);
  expect(bulk.items.map((i: Json) => (Object.values(i)[0] as Json).status)).toEqual([201, 409, 200, 200]);

  // ---- helpers.bulk under write pressure ----
  const loadIndex = `${prefix}-load`;
  await client.createIndex(loadIndex, {
    number_of_shards: 3,
    number_of_replicas: target.kind === 'cluster' ? 1 : 0,
  });
  const n = target.bulkDocuments;
  const base = Date.parse('2020-01-01T00:00:00Z');
  const docs = Array.from({ length: n }, (_, i) => ({ n: i, date: base + i, subject: `load document ${i}` }));
  let dropped = 0;
  const stats = await step(
    `helpers.bulk (${n} documents, retries)`,
    () =>
      client.helpersBulk({
        datasource: docs,
        onDocument: () => ({ index: { _index: loadIndex } }),
        flushBytes: 4000,
        concurrency: 6,
        retries: 50,
        wait: 20,
        onDrop: () => {
          dropped++;
        },
        refreshOnCompletion: loadIndex,
      }),
    // helpers.bulk adds both lines (action, document) of each retried item to `stats.retry`.
    (s) => `successful ${s.successful}, failed ${s.failed}, item retries ${s.retry / 2}`,
  );
  expect(dropped).toBe(0);
  expect(stats.failed).toBe(0);
  expect(stats.successful).toBe(n);
  // The write queue holds 2 shard bulks and each bulk writes to 3 shards: some items are refused and retried.
  expect(stats.retry).toBeGreaterThan(0);
  const ids = await distinctIds(client, loadIndex, base, n);
  expect(ids.ids).toBe(n);
  expect(ids.values).toBe(n);
  report.push({
    call: `helpers.bulk check (search by _id)`,
    result: `${ids.ids} distinct _id, ${ids.values} distinct n, count ${ids.count}`,
  });

  // ---- cluster, cat, settings, mappings, templates ----
  const health = await step(
    'cluster.health',
    () => client.health(),
    (r) => `status ${r.status}, active_shards ${r.active_shards}`,
  );
  expect(['green', 'yellow']).toContain(health.status);
  expect(health.number_of_data_nodes).toBeGreaterThan(0);
  const waited = await step(
    'cluster.health (wait_for_status=yellow)',
    () => client.health({ wait_for_status: 'yellow', timeout: '5s' }),
    (r) => `timed_out ${r.timed_out}`,
  );
  expect(waited.timed_out).toBe(false);
  const cat = await step(
    'cat.indices (format=json)',
    () => client.catIndices({ index, format: 'json' }),
    (r) => `${r[0].index} docs.count ${r[0]['docs.count']} health ${r[0].health}`,
  );
  expect(cat).toEqual([expect.objectContaining({ index, pri: '3', 'docs.count': '3', status: 'open' })]);
  const catText = await step(
    'cat.indices (text, v)',
    () => client.catIndices({ v: true }),
    (r) => `${String(r).split('\n').length - 1} lines`,
  );
  expect(String(catText)).toMatch(/^health\s+status\s+index/);
  const settings = await step(
    'indices.getSettings',
    () => client.getSettings(index),
    (r) => `number_of_shards ${r[index].settings.index.number_of_shards}`,
  );
  expect(settings[index].settings.index.number_of_shards).toBe('3');
  await step(
    'indices.putSettings',
    () => client.putSettings(index, { refresh_interval: '2s' }),
    (r) => `acknowledged ${r.acknowledged}`,
  );
  expect((await client.getSettings(index))[index].settings.index.refresh_interval).toBe('2s');
  const corpusSettings = await client.getSettings(target.corpusIndex);
  expect(corpusSettings[target.corpusIndex].settings.index.blocks.write).toBe('true');
  const mapping = await step(
    'indices.getMapping (corpus)',
    () => client.getMapping(target.corpusIndex),
    (r) => Object.keys(r[target.corpusIndex].mappings.properties).join(','),
  );
  expect(mapping[target.corpusIndex].mappings.properties.body).toEqual({ type: 'text' });
  const template = `${prefix}-template`;
  await step(
    'indices.putIndexTemplate',
    () =>
      client.putTemplate(template, {
        index_patterns: [`${prefix}-logs-*`],
        template: { settings: { number_of_shards: 2 } },
      }),
    (r) => `acknowledged ${r.acknowledged}`,
  );
  expect(await step('indices.existsIndexTemplate', () => client.existsTemplate(template), String)).toBe(true);
  const templates = await step(
    'indices.getIndexTemplate',
    () => client.getTemplate(template),
    (r) => r.index_templates[0].name,
  );
  expect(templates.index_templates[0].index_template.index_patterns).toEqual([`${prefix}-logs-*`]);
  await client.index({ index: `${prefix}-logs-1`, id: 'l', document: { a: 1 } });
  expect(
    (await client.getSettings(`${prefix}-logs-1`))[`${prefix}-logs-1`].settings.index.number_of_shards,
  ).toBe('2');
  report.push({
    call: 'index into a new index matching the template',
    result: 'auto-created with number_of_shards 2',
  });
  await step(
    'indices.deleteIndexTemplate',
    () => client.deleteTemplate(template),
    (r) => `acknowledged ${r.acknowledged}`,
  );
  expect(await client.existsTemplate(template)).toBe(false);
  await step(
    'indices.refresh (all)',
    () => client.refresh(),
    (r) => `_shards.failed ${r._shards.failed}`,
  );

  expect(client.counters.productNotSupported).toBe(0);
  report.push({
    call: 'product check',
    result: `${client.counters.responses} responses, ${client.counters.productNotSupported} ProductNotSupportedError`,
  });
  return report;
}

/**
 * Distinct `_id`s and distinct `n` of the `n` documents loaded with dates `base + i`: two searches
 * of up to 10,000 hits each (the result window) over date ranges, `_source: ["n"]`; and `_count`.
 */
export async function distinctIds(
  client: ClientAdapter,
  index: string,
  base: number,
  n: number,
): Promise<{ ids: number; values: number; count: number }> {
  const ids = new Set<string>();
  const values = new Set<number>();
  for (let from = 0; from < n; from += 10_000) {
    const r = await client.search(index, {
      query: { range: { date: { gte: base + from, lt: base + from + 10_000 } } },
      size: 10_000,
      _source: ['n'],
      track_total_hits: true,
    });
    for (const hit of r.hits.hits) {
      ids.add(hit._id);
      values.add(hit._source.n);
    }
  }
  const count = (await client.count(index)).count as number;
  return { ids: ids.size, values: values.size, count };
}

/** Prints the report when `QS_CLIENT_REPORT` is set (the must-show list of calls and results). */
export function printReport(client: ClientAdapter, where: string, report: readonly ReportLine[]): void {
  if (process.env['QS_CLIENT_REPORT'] === undefined) return;
  const width = Math.max(...report.map((l) => l.call.length));
  const lines = report.map((l) => `  ${l.call.padEnd(width)}  ${l.result}`);
  process.stdout.write(`\n${client.family} ${client.version} against ${where}:\n${lines.join('\n')}\n`);
}
