/**
 * An app that embeds query-sandbox with its own engine (Orama, `engine.ts`): two sandboxes, a shop's
 * interactive searches and a reporting job's expensive fuzzy ones, run side by side for a few
 * seconds; the reports' sandbox has tight CPU limits, so the governor refuses and cancels its work
 * while the shop's searches go on. The app watches the runtime's events (diagnostics_channel),
 * drains at the end, and prints a JSON summary.
 *
 * Run: `npm run build && node dist/examples/orama-products/app.js [--products N] [--seconds S]
 * [--cache-dir DIR]` (from the project; in an app of your own, `npm install query-sandbox
 * @orama/orama` and the same code).
 */
import diagnostics_channel from 'node:diagnostics_channel';
import { parseArgs } from 'node:util';
import {
  CancelledError,
  ChannelName,
  createRuntime,
  RejectedError,
  type SandboxFileDocument,
  type TaskCancellingEvent,
  type TaskEndedEvent,
} from 'query-sandbox';

const { values } = parseArgs({
  options: {
    products: { type: 'string', default: '20000' },
    seconds: { type: 'string', default: '5' },
    'cache-dir': { type: 'string' },
  },
});
const products = Number(values.products);
const seconds = Number(values.seconds);

const sandboxes: SandboxFileDocument = {
  sandboxes: [
    {
      name: 'shop',
      priority: 20,
      selectionAttributes: [{ name: 'userPattern', value: 'shop_*' }],
    },
    {
      name: 'reports',
      priority: 1,
      // Never lose a worker over a report: a shard's search takes well under this.
      cancellationGraceMs: 3000,
      resourceConsumptionLimits: { cpu: { low: 0.05, high: 0.1 } },
      selectionAttributes: [{ name: 'userPattern', value: 'report_*' }],
    },
  ],
};

// Events: counted per channel, and the time from each soft cancellation to its task's end.
const counts: Record<string, number> = {};
const cancelledAt = new Map<number, number>();
const decisionToEndMs: number[] = [];
const outcomes: Record<string, number> = {};
const count = (name: string) => (message: unknown) => {
  counts[name] = (counts[name] ?? 0) + 1;
  if (name === ChannelName.TASK_CANCELLING) {
    const e = message as TaskCancellingEvent;
    if (!e.hard) cancelledAt.set(e.taskId, performance.now());
  } else if (name === ChannelName.TASK_ENDED) {
    const e = message as TaskEndedEvent;
    const key = `${e.sandboxId}:${e.outcome}${e.cancellation === undefined ? '' : e.cancellation.hard ? ':hard' : ':soft'}`;
    outcomes[key] = (outcomes[key] ?? 0) + 1;
    const at = cancelledAt.get(e.taskId);
    // A task asked to stop may still complete, when it ends before it looks at its signal: that is
    // no cancellation to time.
    if (at !== undefined && e.outcome === 'cancelled') decisionToEndMs.push(performance.now() - at);
  }
};
for (const name of Object.values(ChannelName)) diagnostics_channel.subscribe(name, count(name));

const started = performance.now();
// Typed by the engine module: `search` takes a ProductQuery and resolves with ProductHits.
const runtime = await createRuntime<typeof import('./engine.js')>({
  engine: new URL('./engine.js', import.meta.url),
  engineOptions: { products, shards: 4 },
  sandboxes,
  ...(values['cache-dir'] !== undefined ? { cacheDir: values['cache-dir'] } : {}),
});
const startupMs = performance.now() - started;

const first = await runtime.search({ index: 'products', body: { q: 'brass lamp', limit: 3 }, user: 'shop_ann' });
const topName: string | undefined = first.hits[0]?.name; // typed: a ProductHit's name

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const until = performance.now() + seconds * 1000;
const shop = { sent: 0, completed: 0, failed: 0, latenciesMs: [] as number[] };
const reports = { completed: 0, cancelledSoft: 0, cancelledHard: 0, rejected: 0 };

// The shop: an open loop of cheap searches, 20 a second.
const shopping = (async () => {
  const pending: Promise<void>[] = [];
  while (performance.now() < until) {
    shop.sent++;
    const t0 = performance.now();
    pending.push(
      runtime
        .search({ index: 'products', body: { q: shop.sent % 2 ? 'oak table' : 'green rug', limit: 5 }, user: 'shop_bo' })
        .then(
          () => {
            shop.completed++;
            shop.latenciesMs.push(performance.now() - t0);
          },
          () => {
            shop.failed++;
          },
        ),
    );
    await sleep(50);
  }
  await Promise.all(pending);
})();

// The reports: two loops of fuzzy searches, backing off after a refusal.
const reporting = Array.from({ length: 2 }, async (_, i) => {
  while (performance.now() < until) {
    try {
      await runtime.search({
        index: 'products',
        body: { q: `modrn walnt shelff ofice ${i}`, fuzzy: 2, limit: 50 },
        user: `report_${i}`,
      });
      reports.completed++;
    } catch (error) {
      if (error instanceof CancelledError) {
        if (error.hard) reports.cancelledHard++;
        else reports.cancelledSoft++;
      } else if (error instanceof RejectedError) {
        reports.rejected++;
        await sleep(100);
      } else {
        throw error;
      }
    }
  }
});
await Promise.all([shopping, ...reporting]);

// Queued and running work finishes before the workers stop.
const closing = performance.now();
await runtime.close({ drain: true, timeoutMs: 10_000 });
const closeMs = performance.now() - closing;

const sorted = [...shop.latenciesMs].sort((a, b) => a - b);
const percentile = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
const medianOf = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? Number.NaN;
console.log(
  JSON.stringify({
    products,
    startupMs: Math.round(startupMs),
    topName,
    shop: {
      sent: shop.sent,
      completed: shop.completed,
      failed: shop.failed,
      p50Ms: +percentile(50).toFixed(1),
      p99Ms: +percentile(99).toFixed(1),
    },
    reports,
    softCancellationToEndMs: { count: decisionToEndMs.length, median: +medianOf(decisionToEndMs).toFixed(1) },
    outcomes,
    events: Object.fromEntries(Object.entries(counts).map(([k, v]) => [k.replace('query-sandbox:', ''), v])),
    closeMs: Math.round(closeMs),
  }),
);
