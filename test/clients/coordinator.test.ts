/**
 * The official clients against a cluster's coordinator in this process: three data-node runtimes
 * (role `data`, behind their HTTP servers, each with a write queue of 2 shard bulks) and a
 * coordinator that owns the writable indices' metadata. Elasticsearch 8.x and 9.x and OpenSearch 3.x
 * each run the whole client suite (`client-suite.ts`): single-document writes and bulks go to the
 * primaries and their replicas, searches fan out and merge, `helpers.bulk` retries the items a data
 * node's write queue refused.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterSpec } from '../../src/cluster/cluster-spec.js';
import { Coordinator } from '../../src/cluster/coordinator.js';
import { placeDataNode } from '../../src/cluster/data-node-placement.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { buildCoordinatorServer } from '../../src/server/coordinator-server.js';
import { registerDataNodeRoutes } from '../../src/server/data-node-routes.js';
import { buildHttpServer } from '../../src/server/http-server.js';
import { clientFor, FAMILIES } from './client-adapter.js';
import { printReport, runClientSuite } from './client-suite.js';

const TOKEN = 'client-suite-token-0123456789';
const SECRET = 'client-suite-cluster-secret-0123456789';
const CORPUS_DOCS = 10;
const ENGINE = { maxDocumentsPerIndex: CORPUS_DOCS };
const IDS = ['d1', 'd2', 'd3'];
const spec: ClusterSpec = {
  shardsPerIndex: 2,
  replicas: 1,
  dataNodes: IDS.map((id, i) => ({ id, url: `http://127.0.0.1:${1 + i}` })),
};

let dir: string;
const data: { runtime: Runtime; app: FastifyInstance; url: string; id: string }[] = [];
let coordinator: Coordinator;
let app: FastifyInstance;
let url: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'qs-clients-cluster-'));
  for (const id of IDS) {
    const placement = placeDataNode({
      nodeId: id,
      cluster: spec,
      engineOptions: ENGINE,
      builtInEngine: true,
    });
    const runtime = await createRuntime({
      cacheDir: path.join(dir, 'cache'),
      threads: 1,
      spareWorkers: 0,
      engineOptions: placement.engineOptions,
      dataDir: path.join(dir, id),
      nodeId: id,
      nodeRole: 'data',
      writeQueueSize: 2,
    });
    const server = buildHttpServer(runtime, { adminToken: TOKEN, clusterSecret: SECRET });
    registerDataNodeRoutes(server, runtime, {
      shardsPerIndex: placement.shardsPerIndex,
      copies: placement.copiesFor(runtime.nodeStats().engineIndices ?? []),
      clusterSecret: SECRET,
    });
    data.push({ id, runtime, app: server, url: await server.listen({ host: '127.0.0.1', port: 0 }) });
  }
  coordinator = await Coordinator.start({
    dataNodes: data.map((d) => ({ id: d.id, url: d.url })),
    discoveryTimeoutMs: 10_000,
    dataDir: path.join(dir, 'coordinator'),
    clusterSecret: SECRET,
  });
  app = buildCoordinatorServer(coordinator, { adminToken: TOKEN });
  url = await app.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await app?.close();
  for (const d of data) {
    await d.app.close();
    await d.runtime.close();
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('official clients against a cluster coordinator', () => {
  for (const family of FAMILIES) {
    it(`${family}: every call works through the coordinator, with no ProductNotSupportedError`, async () => {
      const client = clientFor(family, url, TOKEN);
      try {
        const report = await runClientSuite(
          client,
          { kind: 'cluster', corpusIndex: 'spam-1', corpusDocs: CORPUS_DOCS, bulkDocuments: 1000 },
          `c${family.replace(/[^a-z0-9]/g, '')}`,
        );
        printReport(client, 'a cluster coordinator (3 data nodes)', report);
        expect(client.counters.productNotSupported).toBe(0);
      } finally {
        await client.close();
      }
    }, 180_000);
  }

  it('counts the items the data nodes refused at the coordinator', () => {
    expect(coordinator.nodesStats().writes!.rejectedItems).toBeGreaterThan(0);
    expect(data.some((d) => d.runtime.indices!.writeQueue.stats().rejected > 0)).toBe(true);
  });
});
