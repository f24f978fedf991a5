#!/usr/bin/env node
// Removes the outputs under dist/ whose TypeScript source no longer exists (a file moved or deleted
// in src/, bench/, examples/ or native-shim/), so that npm pack never ships them. It removes only
// those: a server or worker running from dist/ while the project builds keeps every file it loads
// (clearing the whole of dist/ first made a running `npm start` lose its worker harness).
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const dist = path.join(root, 'dist');
const OUTPUT = /^(.*?)(\.d\.ts\.map|\.d\.ts|\.js\.map|\.js)$/;

let removed = 0;
function walk(dir) {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) {
      walk(full);
      if (readdirSync(full).length === 0) rmSync(full, { recursive: true });
      continue;
    }
    const m = OUTPUT.exec(name);
    if (m === null) continue;
    const rel = path.relative(dist, path.join(dir, m[1]));
    const candidates = ['.ts', '.mts', '.tsx', '.js', '.mjs'].map((ext) => path.join(root, rel + ext));
    if (!candidates.some((c) => existsSync(c))) {
      rmSync(full);
      removed++;
    }
  }
}
if (existsSync(dist)) walk(dist);
if (removed > 0) console.log(`clean-stale-dist: removed ${removed} output(s) without a source`);
