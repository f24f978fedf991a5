/**
 * Cost of the runtime's events (`src/diagnostics.ts`) per task, with and without a subscriber.
 *
 * Micro: the three publications of a completed task (`task:queued`, `task:started`, `task:ended`)
 * through the publishers the runtime calls, in a tight loop, against a baseline loop that calls a
 * function with the same arguments and publishes nothing; ns per task, medians of rounds.
 * Macro: trivial tasks through a runtime (the echo engine, a closed loop), in interleaved rounds
 * with no subscriber and with one on every channel; µs per task and the ratio.
 *
 * Usage: `npm run bench:events` (`node dist/bench/events.js [--full]`).
 */
import diagnostics_channel from 'node:diagnostics_channel';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ChannelName,
  type EventSource,
  publishTaskEnded,
  publishTaskQueued,
  publishTaskStarted,
} from '../src/diagnostics.js';
import { createRuntime } from '../src/index.js';
import { median, printTable, writeResult } from './harness.js';

const full = process.argv.includes('--full');
const rounds = full ? 15 : 7;
const tasksPerRound = full ? 2_000_000 : 500_000;
const source: EventSource = Object.freeze({ runtimeId: 1, nodeId: 'bench' });

let sink = 0;
let received = 0;
const subscriber = (): void => {
  received++;
};

/** Stands in for a publisher in the baseline: takes the same arguments, keeps one so it is not dropped. */
function keep(
  _source: EventSource,
  taskId: number,
  _sandboxId: string,
  priority: number,
  _lane: string,
): void {
  sink += taskId + priority;
}

function baselineRound(n: number): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    keep(source, i, 'analysts', 5, 'background');
    keep(source, i, 'analysts', 5, 'background');
    keep(source, i, 'analysts', 5, 'background');
  }
  return Number(process.hrtime.bigint() - started) / n;
}

function eventsRound(n: number): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    publishTaskQueued(source, i, 'analysts', 5, 'background');
    publishTaskStarted(source, i, 'analysts', 5, 'background', 0.25, false);
    publishTaskEnded(source, i, 'analysts', 5, 'background', undefined, undefined, 1e6, 0.25, 0);
  }
  return Number(process.hrtime.bigint() - started) / n;
}

const EVENT_CHANNELS = [ChannelName.TASK_QUEUED, ChannelName.TASK_STARTED, ChannelName.TASK_ENDED];
const subscribeAll = (names: readonly string[]) => {
  for (const name of names) diagnostics_channel.subscribe(name, subscriber);
};
const unsubscribeAll = (names: readonly string[]) => {
  for (const name of names) diagnostics_channel.unsubscribe(name, subscriber);
};

// Micro: warm up each loop, then interleave the three modes round by round.
baselineRound(100_000);
eventsRound(100_000);
subscribeAll(EVENT_CHANNELS);
eventsRound(100_000);
unsubscribeAll(EVENT_CHANNELS);
const micro = { baseline: [] as number[], unsubscribed: [] as number[], subscribed: [] as number[] };
for (let r = 0; r < rounds; r++) {
  micro.baseline.push(baselineRound(tasksPerRound));
  micro.unsubscribed.push(eventsRound(tasksPerRound));
  subscribeAll(EVENT_CHANNELS);
  micro.subscribed.push(eventsRound(tasksPerRound));
  unsubscribeAll(EVENT_CHANNELS);
}
const m = {
  baseline: median(micro.baseline),
  unsubscribed: median(micro.unsubscribed),
  subscribed: median(micro.subscribed),
};
console.log(`events, micro: 3 publications per task, ${rounds} rounds of ${tasksPerRound} tasks, medians`);
printTable(
  ['mode', 'ns per task', 'above baseline, ns', 'ratio to baseline'],
  [
    ['baseline (no events)', m.baseline.toFixed(1), '0', '1.00'],
    [
      'no subscriber',
      m.unsubscribed.toFixed(1),
      (m.unsubscribed - m.baseline).toFixed(1),
      (m.unsubscribed / m.baseline).toFixed(2),
    ],
    [
      'one subscriber',
      m.subscribed.toFixed(1),
      (m.subscribed - m.baseline).toFixed(1),
      (m.subscribed / m.baseline).toFixed(2),
    ],
  ],
);

// Macro: the same runtime, a closed loop of trivial tasks, rounds with and without subscribers.
const echoEngine = fileURLToPath(new URL('../../test/fixtures/echo-engine.mjs', import.meta.url));
const runtime = await createRuntime({
  engine: echoEngine,
  lanes: false,
  dataDir: mkdtempSync(path.join(tmpdir(), 'qs-bench-events-')),
});
const inFlight = runtime.options.threads * 4;
const perRound = full ? 20_000 : 4_000;
async function drive(count: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  const lane = async () => {
    for (let n = next++; n < count; n = next++) await runtime.search({ index: 'alpha', body: { echo: n } });
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return ((performance.now() - started) * 1000) / count;
}
const ALL = Object.values(ChannelName);
await drive(1000);
const macro = { unsubscribed: [] as number[], subscribed: [] as number[] };
for (let r = 0; r < rounds; r++) {
  macro.unsubscribed.push(await drive(perRound));
  subscribeAll(ALL);
  macro.subscribed.push(await drive(perRound));
  unsubscribeAll(ALL);
}
await runtime.close();
const a = { unsubscribed: median(macro.unsubscribed), subscribed: median(macro.subscribed) };
console.log(
  `\nevents, macro: trivial tasks through a runtime (${runtime.options.threads} workers, ${inFlight} in flight), ${rounds} rounds of ${perRound}, medians`,
);
printTable(
  ['mode', 'µs per task', 'ratio'],
  [
    ['no subscriber', a.unsubscribed.toFixed(2), '1.00'],
    ['a subscriber on every channel', a.subscribed.toFixed(2), (a.subscribed / a.unsubscribed).toFixed(3)],
  ],
);
if (sink === -1 || received === -1) console.log('');
await writeResult('events', {
  rounds,
  micro: { tasksPerRound, nsPerTask: m, rounds: micro },
  macro: { tasksPerRound: perRound, inFlight, usPerTask: a, rounds: macro },
});
