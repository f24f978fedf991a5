/**
 * The official clients against a single node in this process (a real runtime behind its HTTP server
 * on a free loopback port): Elasticsearch 8.x and 9.x and OpenSearch 3.x each run the whole client
 * suite (`client-suite.ts`) with the Elasticsearch clients' product check on. The node's write queue
 * holds 2 shard bulks, so `helpers.bulk` meets per-item 429s and retries them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { buildHttpServer } from '../../src/server/http-server.js';
import { clientFor, FAMILIES } from './client-adapter.js';
import { printReport, runClientSuite } from './client-suite.js';

const TOKEN = 'client-suite-token-0123456789';
const CORPUS_DOCS = 20;

let dir: string;
let runtime: Runtime;
let app: FastifyInstance;
let url: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'qs-clients-'));
  runtime = await createRuntime({
    dataDir: path.join(dir, 'node'),
    cacheDir: path.join(dir, 'cache'),
    threads: 1,
    spareWorkers: 0,
    engineOptions: { maxDocumentsPerIndex: CORPUS_DOCS },
    writeQueueSize: 2,
  });
  app = buildHttpServer(runtime, { adminToken: TOKEN });
  url = await app.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await app?.close();
  await runtime?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('official clients against a single node', () => {
  for (const family of FAMILIES) {
    it(`${family}: every call works, with the product check on and no ProductNotSupportedError`, async () => {
      const client = clientFor(family, url, TOKEN);
      try {
        const report = await runClientSuite(
          client,
          { kind: 'single', corpusIndex: 'spam-1', corpusDocs: CORPUS_DOCS, bulkDocuments: 2000 },
          family.replace(/[^a-z0-9]/g, ''),
        );
        printReport(client, 'a single node', report);
        expect(client.counters.productNotSupported).toBe(0);
        expect(runtime.indices!.writeQueue.stats().rejected).toBeGreaterThan(0);
      } finally {
        await client.close();
      }
    }, 120_000);
  }
});
