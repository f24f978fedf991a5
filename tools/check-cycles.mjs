#!/usr/bin/env node
// `npm run check:cycles` (part of `npm run lint`, so of `.ci/run`): fails on an import cycle between
// files of src/, native-shim/, bench/ and test/, and on a cycle between folders of src/ (a folder is
// `src/<name>/` with everything under it). The files at the top of src/ (errors.ts, runtime.ts,
// index.ts...) are not a folder here: errors.ts is imported from every folder and runtime.ts composes
// them all, so they are held to the file rule only.
//
// The import graph comes from dependency-cruiser (type-only imports count: they tie the folders as
// much as values do). Cycles are the strongly connected components of the graph (Tarjan); for each,
// one cycle through it is printed, with the imports that make each folder edge.
//
// TOLERATED lists folder edges that close a cycle but sit in files other streams of work are changing
// now; the check passes over them (and says so) so that CI fails only on a new cycle. Remove an entry
// once the edge is gone: the check says when one no longer exists.
// LEAVES (common/, routing/) may import nothing of src/ but themselves and errors.ts.
// Usage: `npm run check:cycles [-- --all]` (`--all`: ignore TOLERATED, list every cycle).
import { cruise } from 'dependency-cruiser';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';

/**
 * Folders at the bottom of src/: what their files may import of src/ (path prefixes). Anything else
 * fails the check, so that they stay importable from everywhere without closing a cycle.
 */
const LEAVES = new Map([
  ['src/common', ['src/common/', 'src/errors.ts']],
  ['src/routing', ['src/routing/', 'src/errors.ts']],
]);

/** `from -> to` folder edges allowed for now, with why. */
const TOLERATED = new Map([
  [
    'src/cluster -> src/observability',
    'coordinator.ts (issue 18) writes the decision log itself; observability/ reads the coordinator: ' +
      'the coordinator should publish its decisions on a channel that the decision log subscribes to',
  ],
]);

const ROOTS = ['src', 'native-shim', 'bench', 'test'];
const all = process.argv.includes('--all');

const tsConfig = extractTSConfig('tsconfig.json');
const result = await cruise(
  ROOTS,
  {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist)/' },
  },
  {},
  { tsConfig },
);
const modules = result.output.modules;
const ours = (path) => ROOTS.some((root) => path.startsWith(`${root}/`));

/** file -> files it imports (ours only). */
const fileGraph = new Map();
for (const module of modules) {
  if (!ours(module.source)) continue;
  const targets = new Set();
  for (const dependency of module.dependencies) {
    if (!dependency.coreModule && ours(dependency.resolved)) targets.add(dependency.resolved);
  }
  fileGraph.set(module.source, targets);
}

/** `src/<name>` for a file under a folder of src/; undefined for the top of src/ and other roots. */
function folderOf(path) {
  const match = /^src\/([^/]+)\//.exec(path);
  return match === null ? undefined : `src/${match[1]}`;
}

/** folder -> folder -> the imports ("a.ts -> b.ts") that make the edge. */
const folderEdges = new Map();
for (const [from, targets] of fileGraph) {
  const a = folderOf(from);
  if (a === undefined) continue;
  for (const to of targets) {
    const b = folderOf(to);
    if (b === undefined || b === a) continue;
    if (!folderEdges.has(a)) folderEdges.set(a, new Map());
    const edges = folderEdges.get(a);
    if (!edges.has(b)) edges.set(b, []);
    edges.get(b).push(`${from} -> ${to}`);
  }
}

/** Strongly connected components with more than one node (Tarjan, iterative). */
function cycles(graph) {
  let next = 0;
  const index = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const components = [];
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work = [[start, [...(graph.get(start) ?? [])], 0]];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work.at(-1);
      const [node, targets] = frame;
      if (frame[2] < targets.length) {
        const target = targets[frame[2]++];
        if (!index.has(target)) {
          index.set(target, next);
          low.set(target, next++);
          stack.push(target);
          onStack.add(target);
          work.push([target, [...(graph.get(target) ?? [])], 0]);
        } else if (onStack.has(target)) {
          low.set(node, Math.min(low.get(node), index.get(target)));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work.at(-1)[0];
        low.set(parent, Math.min(low.get(parent), low.get(node)));
      }
      if (low.get(node) === index.get(node)) {
        const component = [];
        let member;
        do {
          member = stack.pop();
          onStack.delete(member);
          component.push(member);
        } while (member !== node);
        if (component.length > 1) components.push(component.sort());
      }
    }
  }
  return components;
}

/** One cycle through `component`: the shortest path from its first node back to itself (BFS). */
function oneCycle(graph, component) {
  const inside = new Set(component);
  const start = component[0];
  const previous = new Map();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift();
    for (const target of graph.get(node) ?? []) {
      if (!inside.has(target)) continue;
      if (target === start) {
        const path = [node];
        while (path[0] !== start) path.unshift(previous.get(path[0]));
        return [...path, start];
      }
      if (!previous.has(target)) {
        previous.set(target, node);
        queue.push(target);
      }
    }
  }
  return [start];
}

let failed = false;

const fileCycles = cycles(fileGraph);
for (const component of fileCycles) {
  failed = true;
  console.log(`file cycle (${component.length} files): ${oneCycle(fileGraph, component).join(' -> ')}`);
}

for (const [from, targets] of fileGraph) {
  const allowed = LEAVES.get(folderOf(from));
  if (allowed === undefined) continue;
  for (const to of targets) {
    if (!to.startsWith('src/') || allowed.some((prefix) => to.startsWith(prefix))) continue;
    failed = true;
    console.log(`${folderOf(from)}/ is a leaf (imports only ${allowed.join(', ')}): ${from} -> ${to}`);
  }
}

const folderGraph = new Map();
const stale = [];
for (const key of TOLERATED.keys()) {
  const [a, b] = key.split(' -> ');
  if (!folderEdges.get(a)?.has(b)) stale.push(key);
}
for (const [a, edges] of folderEdges) {
  folderGraph.set(a, new Set([...edges.keys()].filter((b) => all || !TOLERATED.has(`${a} -> ${b}`))));
}
const folderCycles = cycles(folderGraph);
for (const component of folderCycles) {
  failed = true;
  const path = oneCycle(folderGraph, component);
  console.log(`folder cycle (${component.length} folders: ${component.join(', ')}): ${path.join(' -> ')}`);
  for (let i = 0; i + 1 < path.length; i++) {
    const imports = folderEdges.get(path[i]).get(path[i + 1]);
    console.log(`  ${path[i]} -> ${path[i + 1]}: ${imports.length} import(s), e.g. ${imports[0]}`);
  }
}

if (!all) {
  for (const [key, why] of TOLERATED) {
    if (stale.includes(key)) continue;
    const [a, b] = key.split(' -> ');
    console.log(`tolerated for now: ${key} (${why}): ${folderEdges.get(a).get(b).join('; ')}`);
  }
}
for (const key of stale) console.log(`tolerated edge ${key} no longer exists: remove it from TOLERATED`);

const folders = new Set([...fileGraph.keys()].map(folderOf).filter((f) => f !== undefined));
console.log(
  `${fileGraph.size} files, ${folders.size} folders of src/: ${fileCycles.length} file cycle(s), ` +
    `${folderCycles.length} folder cycle(s)${all ? '' : `, ${TOLERATED.size - stale.length} tolerated edge(s)`}`,
);
process.exit(failed ? 1 : 0);
