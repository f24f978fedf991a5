/** `query-sandbox serve`: a runtime behind the HTTP API until SIGINT/SIGTERM. */
import pino from 'pino';
import { createRuntime } from '../runtime.js';
import { buildHttpServer } from '../server/http-server.js';
import type { ServeOptions } from './serve-options.js';

export async function serve(options: ServeOptions): Promise<void> {
  const log = pino({ level: options.logLevel });
  const started = performance.now();
  log.info(
    'starting: preparing the engine (first start builds the index cache) and loading it in each worker',
  );
  const runtime = await createRuntime({ ...options.runtime, logger: log });
  const app = buildHttpServer(runtime, { logger: log });
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
