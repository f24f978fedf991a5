/**
 * Cost of choosing a document's shard through its auto-generated id (rejection sampling with
 * `idForShard`), per document, for 5, 150 and 1000 shards (default routing shards), against the
 * baseline of plain id generation (`DocumentIdGenerator.next`) measured in the same run. Target shards
 * go round-robin over all shards. Prints µs per document, the mean tries and the ratio to the baseline.
 *
 * Usage: `npm run build && node dist/bench/routing-id-cost.js`.
 */
import os from 'node:os';
import { DocumentIdGenerator, idForShard } from '../src/routing/document-id.js';
import { resolveShardRouting } from '../src/routing/shard-routing.js';

const MIN_MS = 600;
const MIN_DOCS = 500;

/** Runs `step` until MIN_MS and MIN_DOCS have passed; returns ns per call and the mean of what it returns. */
function measure(step: (i: number) => number): { nsPerDoc: number; mean: number } {
  let docs = 0;
  let total = 0;
  const start = process.hrtime.bigint();
  let elapsedNs = 0;
  while (docs < MIN_DOCS || elapsedNs < MIN_MS * 1e6) {
    for (let k = 0; k < 100; k++) total += step(docs++);
    elapsedNs = Number(process.hrtime.bigint() - start);
  }
  return { nsPerDoc: elapsedNs / docs, mean: total / docs };
}

const generator = new DocumentIdGenerator();
let sink = 0;
const plain = (): number => {
  sink ^= generator.next().charCodeAt(7);
  return 1;
};

measure(plain); // warm up
const baseline = measure(plain);

const rows: string[] = [];
for (const numberOfShards of [5, 150, 1000]) {
  const routing = resolveShardRouting({ numberOfShards });
  const step = (i: number): number => idForShard(i % numberOfShards, routing, generator).tries;
  if (numberOfShards === 5) measure(step); // warm up the sampling path once
  const r = measure(step);
  rows.push(
    `${String(numberOfShards).padStart(6)}  ${String(routing.routingNumShards).padStart(14)}  ` +
      `${(r.nsPerDoc / 1000).toFixed(2).padStart(11)}  ${r.mean.toFixed(1).padStart(10)}  ` +
      `${(r.nsPerDoc / baseline.nsPerDoc).toFixed(0).padStart(15)}x`,
  );
}

console.log(`routing id cost: Node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown CPU'}`);
console.log(`baseline: plain id generation ${(baseline.nsPerDoc / 1000).toFixed(3)} µs per id`);
console.log('shards  routing shards  µs per doc  mean tries  ratio to plain id');
for (const row of rows) console.log(row);
if (sink === -1) console.log(sink); // keeps the baseline's work observable
