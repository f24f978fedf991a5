/**
 * Classification cost against the number of sandboxes: 10, 100 and 1,000 sandboxes with 10 user
 * patterns each (`team<i>_<j>_*`), the runtime's `SandboxClassifier` (patterns indexed by their
 * literal heads) against the baseline a user would write: a loop over every sandbox testing each
 * pattern as a compiled regular expression. Requests use users that match one sandbox (spread over
 * all of them) and users that match none, half each. Reported: requests per second (median of the
 * rounds), the classifier / loop ratio, and how each scales from 10 to 1,000 sandboxes (flat = 1).
 *
 * Usage: `npm run bench -- classification` (part of `npm run bench`).
 */
import { SandboxClassifier } from '../src/classify/sandbox-classifier.js';
import { parseSandboxDefinitions } from '../src/sandbox/sandbox-file.js';
import { CHARTS } from './charts.js';
import { benchPhase } from './progress.js';
import { median, printTable, writeResult } from './harness.js';

const PATTERNS_PER_SANDBOX = 10;

function sandboxes(count: number) {
  return parseSandboxDefinitions(
    {
      sandboxes: Array.from({ length: count }, (_, i) => ({
        name: `team${i}`,
        priority: i,
        selectionAttributes: [
          {
            name: 'userPattern',
            value: Array.from({ length: PATTERNS_PER_SANDBOX }, (_, j) => `team${i}_${j}_*`),
          },
        ],
      })),
    },
    { maxSandboxes: 10_000 },
  );
}

/** The naive baseline: every sandbox, every pattern, as a regex; the most specific match wins. */
function naiveClassifier(count: number) {
  const compiled = Array.from({ length: count }, (_, i) => ({
    id: `team${i}`,
    priority: i,
    patterns: Array.from({ length: PATTERNS_PER_SANDBOX }, (_, j) => ({
      re: new RegExp(`^team${i}_${j}_.*$`),
      head: `team${i}_${j}_`.length,
    })),
  }));
  return (user: string): string => {
    let best = '_root';
    let bestScore = -1;
    let bestPriority = Number.NEGATIVE_INFINITY;
    for (const s of compiled) {
      for (const p of s.patterns) {
        if (p.re.test(user) && (p.head > bestScore || (p.head === bestScore && s.priority > bestPriority))) {
          best = s.id;
          bestScore = p.head;
          bestPriority = s.priority;
        }
      }
    }
    return best;
  };
}

function requestUsers(count: number, n: number): string[] {
  return Array.from({ length: n }, (_, k) =>
    k % 2 === 0 ? `team${(k * 7919) % count}_${k % PATTERNS_PER_SANDBOX}_user${k}` : `nobody_${k}`,
  );
}

/** Requests per second of `classify` over `users`, repeated for about `ms`. */
function rate(classify: (user: string) => string, users: readonly string[], ms: number): number {
  let sink = 0;
  let done = 0;
  const started = performance.now();
  while (performance.now() - started < ms) {
    for (const u of users) sink += classify(u).length;
    done += users.length;
  }
  if (sink < 0) console.log(sink);
  return (done * 1000) / (performance.now() - started);
}

export async function run(full: boolean): Promise<Record<string, unknown>> {
  const counts = [10, 100, 1000];
  const rounds = full ? 7 : 3;
  const ms = full ? 1000 : 300;
  const rows: Array<{ sandboxes: number; indexed: number; naive: number; ratio: number }> = [];
  for (const count of counts) {
    benchPhase(`${count} sandboxes`);
    const indexed = new SandboxClassifier(sandboxes(count));
    const naive = naiveClassifier(count);
    const users = requestUsers(count, 1000);
    // Both must agree before either is timed.
    for (const u of users) {
      const a = indexed.classify({ user: u, indices: [] }).id;
      const b = naive(u);
      if (a !== b) throw new Error(`classifiers disagree on ${u}: ${a} vs ${b}`);
    }
    const indexedRates: number[] = [];
    const naiveRates: number[] = [];
    for (let r = 0; r < rounds; r++) {
      indexedRates.push(rate((u) => indexed.classify({ user: u, indices: [] }).id, users, ms));
      naiveRates.push(rate(naive, users, ms));
    }
    const i = median(indexedRates);
    const n = median(naiveRates);
    rows.push({ sandboxes: count, indexed: i, naive: n, ratio: i / n });
  }
  const first = rows[0]!;
  const last = rows[rows.length - 1]!;
  console.log(
    `\nclassification: ${PATTERNS_PER_SANDBOX} user patterns per sandbox, median of ${rounds} rounds`,
  );
  printTable(
    ['sandboxes', 'indexed req/s', 'regex loop req/s', 'indexed / loop'],
    rows.map((r) => [r.sandboxes, Math.round(r.indexed), Math.round(r.naive), r.ratio]),
  );
  const flatness = { indexed: first.indexed / last.indexed, naive: first.naive / last.naive };
  console.log(
    `slow-down from 10 to 1,000 sandboxes: indexed ${flatness.indexed.toFixed(2)}x, regex loop ${flatness.naive.toFixed(1)}x`,
  );
  const data = { patternsPerSandbox: PATTERNS_PER_SANDBOX, rounds, rows, flatness };
  await writeResult('classification', data, CHARTS['classification']!(data));
  return { rows, flatness };
}

if (import.meta.url === `file://${process.argv[1]}`) await run(process.argv.includes('--full'));
