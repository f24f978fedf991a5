/**
 * `query-sandbox serve`: a runtime behind the HTTP API until SIGINT/SIGTERM (`--role single`, the
 * default, and `--role data`, which adds the internal routes a coordinator calls), or a cluster
 * coordinator (`--role coordinator`: no runtime, it discovers the data nodes and routes to them).
 * Stop requests (signals, and a launcher that started the node with an IPC channel going away) are
 * watched from the very start (see `node-lifecycle.ts`): a killed launcher leaves no orphans, even
 * one killed while its nodes were still starting. Once listening, a node started by a launcher tells
 * it so over that channel.
 *
 * Credentials (docs/security.md): the admin token, an optional writer token and, for the roles of a
 * cluster, the cluster secret, from the environment (`node-secrets.ts`); a bad or missing one stops
 * the start before anything loads. `--insecure-skip-auth` opens writes to everyone and says so loudly.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { readClusterFile } from '../cluster/cluster-spec.js';
import { Coordinator } from '../cluster/coordinator.js';
import { type DataNodePlacement, placeDataNode } from '../cluster/data-node-placement.js';
import { InvalidArgumentError } from '../errors.js';
import { RuntimeFeed, withTaskEnds } from '../observability/runtime-feed.js';
import { createRuntime } from '../runtime.js';
import { FileSandboxStore } from '../sandbox/file-sandbox-store.js';
import { describeJsonError } from '../common/json-error-position.js';
import { FileQueryPriorityStore } from '../scheduler/query-priority-store.js';
import { parseQueryPriority } from '../scheduler/query-priority.js';
import { buildCoordinatorServer } from '../server/coordinator-server.js';
import { type DataNodeRecovery, registerDataNodeRoutes } from '../server/data-node-routes.js';
import { buildHttpServer } from '../server/http-server.js';
import { resolveAdminToken } from './admin-token.js';
import { notifyListening, type StopWatch, watchStopRequests } from './node-lifecycle.js';
import { type NodeSecrets, readNodeSecrets } from './node-secrets.js';
import { probePort } from './port-probe.js';
import type { ServeOptions } from './serve-options.js';
import type { EtcdConnection } from '../etcd/etcd-connection.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import type { StoredSandboxes } from '../sandbox/sandbox-store.js';

/**
 * `--etcd`: the node's connection to the cluster state, checked with one read at start (loaded only
 * then: a node without `--etcd` never loads the etcd client).
 * @throws ClusterStateUnavailableError when etcd does not answer at start.
 */
async function connectClusterState(
  options: ServeOptions,
  log: pino.Logger,
): Promise<EtcdConnection | undefined> {
  if (options.etcd === undefined) return undefined;
  const { EtcdConnection } = await import('../etcd/etcd-connection.js');
  const connection = new EtcdConnection({
    endpoints: options.etcd,
    ...(options.etcdPrefix !== undefined ? { prefix: options.etcdPrefix } : {}),
    logger: log,
  });
  try {
    await connection.call('start (reading the cluster state)', (client) =>
      client.get(connection.key('probe')).string(),
    );
  } catch (error) {
    connection.close();
    throw error;
  }
  log.info({ endpoints: options.etcd, prefix: connection.prefix }, 'cluster state in etcd');
  return connection;
}

/**
 * Fails fast when the address cannot be listened on, before the engine and workers load (seconds).
 * @throws InvalidArgumentError naming --port or --host.
 */
async function checkListenable(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const code = await probePort(host, port);
  if (code === 'EADDRINUSE') throw new InvalidArgumentError('--port', `is already in use on ${host}`, port);
  if (code !== undefined) throw new InvalidArgumentError('--host', `cannot be listened on (${code})`, host);
}

/**
 * Reads and validates a `--query-priority` file.
 * @throws InvalidArgumentError naming the file: unreadable, not JSON (with the line and column), or an
 *   invalid document (naming the field and the received value).
 */
async function readQueryPriorityFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new InvalidArgumentError(
      '--query-priority',
      `cannot be read (${(error as NodeJS.ErrnoException).code})`,
      file,
    );
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new InvalidArgumentError(
      '--query-priority',
      `is not valid JSON (${describeJsonError(error as Error, text)})`,
      file,
    );
  }
  try {
    parseQueryPriority(document);
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    throw new InvalidArgumentError(error.path, `${error.expectation} (in ${file})`, error.received);
  }
  return document;
}

/** `http://host:port`, with an IPv6 host in brackets. */
function urlOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** The loud warning of `--insecure-skip-auth`, once at start. */
function warnIfOpen(options: ServeOptions, log: pino.Logger): void {
  if (!options.insecureSkipAuth) return;
  log.warn(
    { insecureSkipAuth: true, host: options.host },
    'AUTHENTICATION IS OFF (--insecure-skip-auth): anyone who reaches this port can create and delete ' +
      'indices, write documents and change sandboxes. For local experiments only.',
  );
}

async function serveCoordinator(
  options: ServeOptions,
  log: pino.Logger,
  stops: StopWatch,
  secrets: NodeSecrets,
): Promise<void> {
  const c = options.coordinator!;
  const dataNodes = c.dataNodes ?? (await readClusterFile(options.clusterFile!)).dataNodes;
  const started = performance.now();
  log.info({ dataNodes: dataNodes.map((n) => n.url) }, 'starting coordinator: discovering the data nodes');
  const connection = await connectClusterState(options, log);
  const membership =
    connection === undefined
      ? undefined
      : await (await import('../cluster/membership.js')).MembershipWatcher.open(connection);
  // With etcd the coordinator reads the data nodes' sandboxes (never writes them): their search settings
  // bound its fan-out (max_concurrent_shard_requests).
  const sandboxes = connection === undefined ? undefined : await watchSandboxes(connection, log);
  const coordinator = await Coordinator.start({
    ...(connection !== undefined && membership !== undefined
      ? { clusterState: { connection, membership } }
      : {}),
    ...(sandboxes !== undefined ? { sandboxes: sandboxes.list } : {}),
    nodeId: c.nodeId,
    dataNodes,
    admission: {
      mode: c.admissionMode,
      limits: {
        search: {
          ...(c.admissionCpu !== undefined ? { cpu: c.admissionCpu } : {}),
          ...(c.admissionHeap !== undefined ? { heap: c.admissionHeap } : {}),
        },
      },
    },
    ranking: {
      ...(c.duressCpu !== undefined ? { cpuDuressThreshold: c.duressCpu } : {}),
      ...(c.duressHeap !== undefined ? { heapDuressThreshold: c.duressHeap } : {}),
    },
    statsCollector: {
      ...(c.statsTtlMs !== undefined ? { ttlMs: c.statsTtlMs } : {}),
      ...(c.statsRefreshMs !== undefined ? { minRefreshMs: c.statsRefreshMs } : {}),
    },
    ...(c.shardTimeoutMs !== undefined ? { shardTimeoutMs: c.shardTimeoutMs } : {}),
    ...(c.discoveryTimeoutMs !== undefined ? { discoveryTimeoutMs: c.discoveryTimeoutMs } : {}),
    ...(c.indexingPressureBytes !== undefined ? { indexingPressureBytes: c.indexingPressureBytes } : {}),
    // Writable indices' metadata and templates survive restarts.
    dataDir: path.resolve(options.runtime.dataDir ?? '.query-sandbox'),
    logger: log,
    clusterSecret: secrets.clusterSecret,
  });
  const admin = await resolveAdminToken(
    process.env,
    path.resolve(options.runtime.dataDir ?? '.query-sandbox'),
  );
  const app = buildCoordinatorServer(coordinator, {
    logger: log,
    adminToken: admin.token,
    writerToken: secrets.writerToken,
    insecureSkipAuth: options.insecureSkipAuth,
    connectionLimits: options.connectionLimits,
  });
  await app.listen({ host: options.host, port: options.port });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  log.info(
    {
      url: `http://${options.host}:${port}`,
      dashboard: `${urlOf(options.host, port)}/_dashboard`,
      metrics: `${urlOf(options.host, port)}/_prometheus/metrics`,
      startMs: Math.round(performance.now() - started),
      dataNodes: coordinator.routingTable.nodeIds,
      indices: coordinator.routingTable.indices,
      admission: c.admissionMode,
    },
    'query-sandbox coordinator listening',
  );
  warnIfOpen(options, log);
  process.stdout.write(`dashboard: ${urlOf(options.host, port)}/_dashboard\n`);
  printAdminToken(admin);
  notifyListening(coordinator.nodeId, port);
  stops.serving(async (signal) => {
    log.info({ signal }, 'stopping');
    await app.close();
    await membership?.close();
    await sandboxes?.close();
    connection?.close();
    process.exit(0);
  });
}

export async function serve(options: ServeOptions): Promise<void> {
  const log = pino({ level: options.logLevel });
  // First thing: a node told to stop, or whose launcher went away, while it starts must not stay on.
  const stops = watchStopRequests((signal) => log.info({ signal }, 'stopping during start-up'));
  await checkListenable(options.host, options.port);
  const secrets = readNodeSecrets(process.env, options.role);
  if (options.role === 'coordinator') return serveCoordinator(options, log, stops, secrets);
  const started = performance.now();
  let placement: DataNodePlacement | undefined;
  if (options.role === 'data') {
    const cluster =
      options.clusterFile === undefined ? undefined : await readClusterFile(options.clusterFile);
    if (cluster !== undefined && options.runtime.nodeId === undefined) {
      throw new InvalidArgumentError(
        '--node-id',
        'is required with --cluster (the data node to be)',
        undefined,
      );
    }
    placement = placeDataNode({
      nodeId: options.runtime.nodeId ?? `node-${process.pid}`,
      cluster,
      engineOptions: options.runtime.engineOptions ?? {},
      builtInEngine: options.runtime.engine === undefined,
    });
  }
  log.info(
    'starting: preparing the engine (first start builds the index cache) and loading it in each worker',
  );
  const dataDir = path.resolve(options.runtime.dataDir ?? '.query-sandbox');
  const queryPriority =
    options.queryPriorityFile === undefined
      ? undefined
      : await readQueryPriorityFile(options.queryPriorityFile);
  const connection = await connectClusterState(options, log);
  const shared =
    connection === undefined ? undefined : await sharedStores(connection, options.role === 'data');
  // Metrics and the dashboard read the runtime through this feed (task ends feed the histograms).
  const feed = new RuntimeFeed();
  const runtime = await createRuntime(
    withTaskEnds(
      {
        ...options.runtime,
        ...(placement !== undefined ? { engineOptions: placement.engineOptions } : {}),
        ...(queryPriority !== undefined ? { queryPriority } : {}),
        // Changes made through PUT /_query_priority survive restarts; the file seeds an empty store only.
        // With --etcd, every node shares one document (and one sandbox set), seeded by the first node.
        queryPriorityStore:
          shared?.queryPriority ?? new FileQueryPriorityStore(path.join(dataDir, 'query-priority.json')),
        // Sandbox changes survive restarts; the sandbox file seeds the store on the first start only.
        sandboxStore: shared?.sandboxes ?? new FileSandboxStore(path.join(dataDir, 'sandboxes.json')),
        ...(shared?.indexMetadata !== undefined ? { indexMetadataStore: shared.indexMetadata } : {}),
        logger: log,
      },
      feed,
    ),
  );
  // With shared metadata, the copies follow every change of the shard table made elsewhere.
  if (shared?.indexMetadata !== undefined && runtime.indices !== undefined) {
    const indices = runtime.indices.placement;
    shared.indexMetadata.onChange(() => void indices.syncMetadata().catch(() => undefined));
    await indices.syncMetadata();
  }
  // Only once the runtime has started: a start that fails leaves the token file of a running server alone.
  const admin = await resolveAdminToken(process.env, dataDir);
  const app = buildHttpServer(runtime, {
    logger: log,
    adminToken: admin.token,
    feed: feed.attach(runtime, true),
    ...(connection !== undefined ? { clusterState: () => connection.stats() } : {}),
    writerToken: secrets.writerToken,
    clusterSecret: secrets.clusterSecret,
    insecureSkipAuth: options.insecureSkipAuth,
    connectionLimits: options.connectionLimits,
  });
  let recovery: DataNodeRecovery | undefined;
  const copies = placement?.copiesFor(runtime.nodeStats().engineIndices ?? []) ?? [];
  if (placement !== undefined) {
    recovery = registerDataNodeRoutes(app, runtime, {
      shardsPerIndex: placement.shardsPerIndex,
      copies,
      debugRoutes: options.debugRoutes,
      logger: log,
      // With cluster state in etcd the primaries keep the in-sync sets and catch their replicas up.
      trackInSync: shared?.indexMetadata !== undefined,
      clusterSecret: secrets.clusterSecret,
    });
  }
  await app.listen({ host: options.host, port: options.port });
  // Replicas reopened from their logs catch up with their primaries, and primaries resync their
  // replicas (peer recovery), in the background. With etcd the primaries' probes do it instead.
  if (shared?.indexMetadata === undefined) void recovery?.recover();
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  // A data node joins the cluster once it listens: registered under a lease the coordinator watches.
  let registration: { close(): Promise<void> } | undefined;
  if (connection !== undefined && placement !== undefined) {
    const { MemberRegistration } = await import('../cluster/membership.js');
    const nodeId = runtime.options.nodeId;
    const host = options.host.includes(':') ? `[${options.host}]` : options.host;
    registration = await MemberRegistration.register(
      connection,
      {
        nodeId,
        url: `http://${host}:${port}`,
        info: {
          node_id: nodeId,
          roles: ['data'],
          indices: runtime.nodeStats().engineIndices ?? [],
          shards_per_index: placement.shardsPerIndex,
          copies,
        },
      },
      { logger: log },
    );
  }
  const node = runtime.nodeStats();
  log.info(
    {
      url: `http://${options.host}:${port}`,
      dashboard: `${urlOf(options.host, port)}/_dashboard`,
      metrics: `${urlOf(options.host, port)}/_prometheus/metrics`,
      startMs: Math.round(performance.now() - started),
      workerStartupMs: node.workerStartupMs.map((ms) => Math.round(ms)),
      indices: node.engineIndices,
      sandboxes: runtime.sandboxes().map((s) => s.id),
      role: options.role,
      nodeId: node.nodeId,
    },
    'query-sandbox listening',
  );
  warnIfOpen(options, log);
  process.stdout.write(`dashboard: ${urlOf(options.host, port)}/_dashboard\n`);
  printAdminToken(admin);
  notifyListening(node.nodeId, port);
  stops.serving(async (signal) => {
    log.info({ signal }, 'stopping');
    await registration?.close();
    await app.close();
    await runtime.close();
    await shared?.close();
    connection?.close();
    process.exit(0);
  });
}

/**
 * The sandbox set in etcd as a coordinator sees it: read and watched, never seeded or written (the
 * data nodes own it); the root alone until a set is stored, and the last good set when a stored one
 * does not pass the checks.
 */
async function watchSandboxes(connection: EtcdConnection, log: pino.Logger) {
  const [{ EtcdSandboxStore }, { parseSandboxDefinitions }, { createRootSandbox }] = await Promise.all([
    import('../sandbox/etcd-sandbox-store.js'),
    import('../sandbox/sandbox-file.js'),
    import('../sandbox/sandbox.js'),
  ]);
  const store = new EtcdSandboxStore(connection);
  let list: readonly Sandbox[] = [createRootSandbox()];
  let version = 0;
  const take = (stored: StoredSandboxes | undefined) => {
    if (stored === undefined || stored.version <= version) return;
    try {
      list = parseSandboxDefinitions(
        { version: stored.version, sandboxes: stored.sandboxes },
        { maxSandboxes: 10_000 },
      );
      version = stored.version;
    } catch (error) {
      log.warn(
        { version: stored.version, error: (error as Error).message },
        'sandbox set in etcd refused; the last one stays',
      );
    }
  };
  take(await store.load().catch(() => undefined));
  const unwatch = store.watch(take);
  return {
    list: () => list,
    close: async () => {
      unwatch();
      await store.close();
    },
  };
}

/** The stores of a node whose cluster state is in etcd (loaded only with `--etcd`). */
async function sharedStores(connection: EtcdConnection, dataNode: boolean) {
  const [
    { EtcdSandboxStore },
    { EtcdQueryPriorityStore },
    { EtcdMetadataPersistence },
    { IndexMetadataStore },
  ] = await Promise.all([
    import('../sandbox/etcd-sandbox-store.js'),
    import('../scheduler/etcd-query-priority-store.js'),
    import('../cluster/etcd-index-metadata.js'),
    import('../indices/index-metadata-store.js'),
  ]);
  const sandboxes = new EtcdSandboxStore(connection);
  const queryPriority = new EtcdQueryPriorityStore(connection);
  // A data node's writable-index metadata and shard table are the cluster's; a single node keeps its own.
  const indexMetadata = dataNode
    ? await IndexMetadataStore.open({
        path: connection.key('metadata'),
        persistence: new EtcdMetadataPersistence(connection),
      })
    : undefined;
  return {
    sandboxes,
    queryPriority,
    indexMetadata,
    close: async () => {
      indexMetadata?.close();
      await sandboxes.close();
      await queryPriority.close();
    },
  };
}

/** A token made at this start is printed once, here; it is also kept in a file only its owner can read. */
function printAdminToken(admin: { readonly token: string; readonly file: string | undefined }): void {
  if (admin.file === undefined) return;
  process.stdout.write(
    `admin token for index, bulk and sandbox changes (Authorization: Bearer <token>; also in ${admin.file}):\n${admin.token}\n`,
  );
}
