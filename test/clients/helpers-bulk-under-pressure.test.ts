/**
 * The must-show load: `helpers.bulk` of the Elasticsearch 9.x client loads 20,000 documents with
 * automatic ids into a node under write pressure (a write queue of 4 shard bulks, bulks of about
 * 100 documents spread over 3 shards, 8 bulks in flight). The node refuses the items of the shards it
 * cannot take with 429 and the helper retries exactly those: every document lands once. Checked by
 * `_count`, by the distinct `_id`s and by the distinct `n` field of every stored document (an item
 * written twice would show as a second `_id` with the same `n`). `QS_CLIENT_REPORT=1` prints the figures.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { buildHttpServer } from '../../src/server/http-server.js';
import { clientFor } from './client-adapter.js';
import { distinctIds } from './client-suite.js';

const TOKEN = 'client-suite-token-0123456789';
const DOCUMENTS = 20_000;

let dir: string;
let runtime: Runtime;
let app: FastifyInstance;
let url: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'qs-helpers-bulk-'));
  runtime = await createRuntime({
    dataDir: path.join(dir, 'node'),
    cacheDir: path.join(dir, 'cache'),
    threads: 1,
    spareWorkers: 0,
    engineOptions: { maxDocumentsPerIndex: 5 },
    writeQueueSize: 4,
  });
  app = buildHttpServer(runtime, { adminToken: TOKEN });
  url = await app.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await app?.close();
  await runtime?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('helpers.bulk against a node under write pressure', () => {
  it(`loads ${DOCUMENTS} documents exactly once, retrying the items refused with 429`, async () => {
    const client = clientFor('elasticsearch-9', url, TOKEN);
    try {
      await client.createIndex('load', { number_of_shards: 3, number_of_replicas: 0 });
      const base = Date.parse('2020-01-01T00:00:00Z');
      const docs = Array.from({ length: DOCUMENTS }, (_, i) => ({
        n: i,
        date: base + i,
        subject: `load document ${i}`,
      }));
      let dropped = 0;
      let refusedAnswers = 0;
      const stats = await client.helpersBulk({
        datasource: docs,
        onDocument: () => ({ index: { _index: 'load' } }),
        flushBytes: 10_000,
        concurrency: 8,
        retries: 100,
        wait: 10,
        onDrop: () => {
          dropped++;
        },
        refreshOnCompletion: 'load',
      });
      const queue = runtime.indices!.writeQueue.stats();
      refusedAnswers = queue.rejected;
      const check = await distinctIds(client, 'load', base, DOCUMENTS);
      if (process.env['QS_CLIENT_REPORT'] !== undefined) {
        process.stdout.write(
          `\nhelpers.bulk (${client.family} ${client.version}), ${DOCUMENTS} documents, write queue ${queue.capacity}, concurrency 8:\n` +
            `  successful ${stats.successful}, failed ${stats.failed}, dropped ${dropped}, item retries ${stats.retry / 2}, ` +
            `shard bulks refused by the node ${refusedAnswers}, time ${stats.time} ms\n` +
            `  stored: count ${check.count}, distinct _id ${check.ids}, distinct n ${check.values}\n`,
        );
      }
      expect(dropped).toBe(0);
      expect(stats.failed).toBe(0);
      expect(stats.successful).toBe(DOCUMENTS);
      expect(stats.retry).toBeGreaterThan(0);
      expect(refusedAnswers).toBeGreaterThan(0);
      expect(check).toEqual({ ids: DOCUMENTS, values: DOCUMENTS, count: DOCUMENTS });
      expect(client.counters.productNotSupported).toBe(0);
    } finally {
      await client.close();
    }
  }, 180_000);
});
