/** `query-sandbox serve`: a runtime behind the HTTP API until SIGINT/SIGTERM. */
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pino from 'pino';
import { InvalidArgumentError } from '../errors.js';
import { createRuntime } from '../runtime.js';
import { FileSandboxStore } from '../sandbox/file-sandbox-store.js';
import { describeJsonError } from '../sandbox/json-error-position.js';
import { FileQueryPriorityStore } from '../scheduler/query-priority-store.js';
import { parseQueryPriority } from '../scheduler/query-priority.js';
import { buildHttpServer } from '../server/http-server.js';
import { resolveAdminToken } from './admin-token.js';
import type { ServeOptions } from './serve-options.js';

/**
 * Fails fast when the address cannot be listened on, before the engine and workers load (seconds).
 * @throws InvalidArgumentError naming --port or --host.
 */
async function checkListenable(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') {
        reject(new InvalidArgumentError('--port', `is already in use on ${host}`, port));
      } else {
        reject(
          new InvalidArgumentError('--host', `cannot be listened on (${error.code ?? error.message})`, host),
        );
      }
    });
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
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
    throw new InvalidArgumentError('--query-priority', `cannot be read (${(error as NodeJS.ErrnoException).code})`, file);
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

export async function serve(options: ServeOptions): Promise<void> {
  await checkListenable(options.host, options.port);
  const log = pino({ level: options.logLevel });
  const started = performance.now();
  log.info(
    'starting: preparing the engine (first start builds the index cache) and loading it in each worker',
  );
  const dataDir = path.resolve(options.runtime.dataDir ?? '.query-sandbox');
  const queryPriority =
    options.queryPriorityFile === undefined ? undefined : await readQueryPriorityFile(options.queryPriorityFile);
  const runtime = await createRuntime({
    ...options.runtime,
    ...(queryPriority !== undefined ? { queryPriority } : {}),
    // Changes made through PUT /_query_priority survive restarts; the file seeds an empty store only.
    queryPriorityStore: new FileQueryPriorityStore(path.join(dataDir, 'query-priority.json')),
    // Sandbox changes survive restarts; the sandbox file seeds the store on the first start only.
    sandboxStore: new FileSandboxStore(path.join(dataDir, 'sandboxes.json')),
    logger: log,
  });
  // Only once the runtime has started: a start that fails leaves the token file of a running server alone.
  const admin = await resolveAdminToken(process.env, dataDir);
  const app = buildHttpServer(runtime, { logger: log, adminToken: admin.token });
  await app.listen({ host: options.host, port: options.port });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  const node = runtime.nodeStats();
  log.info(
    {
      url: `http://${options.host}:${port}`,
      startMs: Math.round(performance.now() - started),
      workerStartupMs: node.workerStartupMs.map((ms) => Math.round(ms)),
      indices: node.engineIndices,
      sandboxes: runtime.sandboxes().map((s) => s.id),
    },
    'query-sandbox listening',
  );
  if (admin.file !== undefined) {
    // Printed once, here; also kept in a file only its owner can read.
    process.stdout.write(
      `admin token for sandbox changes (Authorization: Bearer <token>; also in ${admin.file}):\n${admin.token}\n`,
    );
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    await app.close();
    await runtime.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}
