/**
 * Time for a hard-cancelled worker's replacement to be ready with the default engine's full corpus
 * loaded, and whether the spare worker kept the capacity meanwhile. A query of 600 fuzzy terms on an
 * index of one shard gives the engine no checkpoint for longer than the grace period, so the
 * governor terminates its worker. Prints, per run, the time to the cancellation, the replacement's
 * own start-up (module import and index load) and the time from termination to ready, and the wait
 * of a cheap query sent right after the termination (served by the spare).
 *
 * Usage: `npm run bench:replacement` (3 runs; the first start builds a one-shard index cache).
 */
import { createRuntime } from '../src/index.js';

const runs = Number(process.argv[2] ?? 3);
const runtime = await createRuntime({
  threads: 1,
  spareWorkers: 1,
  graceIntervals: 1,
  engineOptions: { shardsPerIndex: 1 },
  dataDir: '.query-sandbox',
  sandboxes: {
    sandboxes: [
      {
        name: 'hog',
        priority: 1,
        resourceConsumptionLimits: { cpu: { low: 0.05, high: 0.1 } },
        selectionAttributes: [{ name: 'userPattern', value: 'hog_*' }],
      },
    ],
  },
});
const words = 'mony fre ofer clik remuve bussines oportunity investmnt recieve adress'.split(' ');
const text = Array.from(
  { length: 600 },
  (_, i) => `${words[i % 10]}${String.fromCharCode(97 + (i % 26))}`,
).join(' ');
console.log(
  `replacement: full corpus, 1 worker + 1 spare, initial start-up ${runtime
    .nodeStats()
    .workerStartupMs.map((ms) => `${Math.round(ms)} ms`)
    .join(', ')}`,
);
console.log('run  cancelled after  hard  replacement start-up  termination to ready  cheap query meanwhile');
for (let i = 0; i < runs; i++) {
  const started = performance.now();
  const outcome = await runtime
    .search({
      index: 'easy-ham-1',
      body: { query: { match: { body: { query: text, fuzziness: 2 } } }, size: 1 },
      user: 'hog_1',
    })
    .catch((e: unknown) => e as { hard?: boolean });
  const cancelledAt = performance.now();
  const before = runtime.nodeStats().workersStarted;
  const cheap = performance.now();
  await runtime.search({ index: 'spam-1', body: { query: { match: { body: 'money' } }, size: 1 } });
  const cheapMs = performance.now() - cheap;
  while (runtime.nodeStats().workersStarted === before && performance.now() - cancelledAt < 20_000) {
    await new Promise((r) => setTimeout(r, 10));
  }
  const readyMs = performance.now() - cancelledAt;
  console.log(
    `${String(i + 1).padStart(3)}  ${`${Math.round(cancelledAt - started)} ms`.padStart(15)}  ${String((outcome as { hard?: boolean }).hard === true).padStart(4)}  ` +
      `${`${Math.round(runtime.nodeStats().lastReplacementStartupMs ?? Number.NaN)} ms`.padStart(20)}  ${`${Math.round(readyMs)} ms`.padStart(20)}  ${`${Math.round(cheapMs)} ms`.padStart(21)}`,
  );
  await new Promise((r) => setTimeout(r, 500));
}
await runtime.close();
