/**
 * The observability routes of the node's and the coordinator's servers (all `auth: 'read'`):
 * - `GET /_prometheus/metrics` (alias `GET /metrics`): the Prometheus text exposition (prom-client).
 * - `GET /_dashboard`: the live dashboard page, with its script and style under `/_dashboard/` and
 *   uPlot served from the installed npm package (`/_dashboard/vendor/`): no build step, nothing
 *   fetched from elsewhere.
 * - `GET /_dashboard/stream`: server-sent events, one `data: <frame JSON>` about once a second while
 *   the page is open (see `observability/dashboard-frames.ts`). A page that does not read its stream
 *   (over 1 MiB unsent) is disconnected rather than buffered without bound.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ServerResponse } from 'node:http';
import { packageRoot } from '../common/package-root.js';
import type { Coordinator } from '../cluster/coordinator.js';
import { CoordinatorFeed, CoordinatorMetrics } from '../observability/coordinator-metrics.js';
import {
  CoordinatorFrameSource,
  FrameBroadcaster,
  type FrameClient,
  type FrameSource,
  NodeFrameSource,
} from '../observability/dashboard-frames.js';
import { RuntimeFeed } from '../observability/runtime-feed.js';
import { RuntimeMetrics } from '../observability/runtime-metrics.js';
import type { Runtime } from '../runtime.js';

/** What the routes serve: a metrics registry and a source of dashboard frames. */
export interface Observability {
  readonly metrics: { metrics(): Promise<string>; readonly contentType: string };
  readonly frames: FrameSource;
}

/** A runtime's metrics and frames, read through `feed` (default: a feed without task ends). */
export function runtimeObservability(runtime: Runtime, feed?: RuntimeFeed): Observability {
  const f = feed ?? new RuntimeFeed().attach(runtime);
  return { metrics: new RuntimeMetrics(f), frames: new NodeFrameSource(f) };
}

export function coordinatorObservability(coordinator: Coordinator): Observability {
  const feed = new CoordinatorFeed(coordinator);
  return { metrics: new CoordinatorMetrics(feed), frames: new CoordinatorFrameSource(feed) };
}

/** Most bytes a page may leave unread on its stream before it is disconnected. */
const MAX_UNSENT_BYTES = 1024 * 1024;

interface Asset {
  readonly body: Buffer;
  readonly type: string;
}

function loadAssets(): Map<string, Asset> {
  const pageDir = path.join(packageRoot(), 'dashboard');
  const uplotDir = path.dirname(createRequire(import.meta.url).resolve('uplot'));
  const read = (file: string, type: string): Asset => ({ body: readFileSync(file), type });
  return new Map([
    ['/_dashboard', read(path.join(pageDir, 'index.html'), 'text/html; charset=utf-8')],
    ['/_dashboard/app.js', read(path.join(pageDir, 'app.js'), 'text/javascript; charset=utf-8')],
    ['/_dashboard/app.css', read(path.join(pageDir, 'app.css'), 'text/css; charset=utf-8')],
    [
      '/_dashboard/vendor/uPlot.iife.min.js',
      read(path.join(uplotDir, 'uPlot.iife.min.js'), 'text/javascript; charset=utf-8'),
    ],
    [
      '/_dashboard/vendor/uPlot.min.css',
      read(path.join(uplotDir, 'uPlot.min.css'), 'text/css; charset=utf-8'),
    ],
  ]);
}

let assets: Map<string, Asset> | undefined;

/**
 * Registers the metrics and dashboard routes on `app`.
 * @param frameIntervalMs time between dashboard frames, 50..60000 ms. Default 1000.
 */
export function registerObservabilityRoutes(
  app: FastifyInstance,
  observability: Observability,
  frameIntervalMs = 1000,
): void {
  const read = { config: { auth: 'read' } } as const;
  const metrics = async (_request: unknown, reply: FastifyReply) =>
    reply
      .header('content-type', observability.metrics.contentType)
      .send(await observability.metrics.metrics());
  app.get('/_prometheus/metrics', read, metrics);
  app.get('/metrics', read, metrics);

  assets ??= loadAssets();
  for (const [url, asset] of assets) {
    app.get(url, read, async (_request, reply) =>
      reply.header('content-type', asset.type).header('cache-control', 'no-cache').send(asset.body),
    );
  }

  const broadcaster = new FrameBroadcaster(observability.frames, frameIntervalMs);
  const open = new Set<ServerResponse>();
  app.get('/_dashboard/stream', read, (request, reply) => {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
    });
    res.write('retry: 2000\n\n');
    open.add(res);
    const client: FrameClient = {
      write: (chunk) => {
        if (res.writableEnded) return;
        if (res.writableLength > MAX_UNSENT_BYTES) {
          res.end();
          return;
        }
        res.write(chunk);
      },
    };
    const gone = () => {
      open.delete(res);
      broadcaster.remove(client);
    };
    request.raw.on('close', gone);
    res.on('close', gone);
    broadcaster.add(client);
  });
  // Open streams would hold the server's close forever: end them first.
  app.addHook('preClose', async () => {
    broadcaster.close();
    for (const res of open) res.end();
    open.clear();
  });
}
