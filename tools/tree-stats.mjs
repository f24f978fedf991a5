#!/usr/bin/env node
// Prints the shape of src/: each folder with its file count and line count (its own files, then the
// folder and everything under it), the median and p90 file length, how many files pass 150 lines,
// and src/runtime.ts's length. Usage: `npm run stats:tree [-- <dir>]` (default `src`).
// Lines are counted as `wc -l` does (newline characters), over .ts files only.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = process.argv[2] ?? 'src';
const LONG_FILE_LINES = 150;

/** @param {string} text */
function countLines(text) {
  let lines = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lines += 1;
  return lines;
}

/**
 * @typedef {{ path: string, files: number, lines: number, totalFiles: number, totalLines: number, depth: number }} FolderRow
 * @param {string} dir
 * @param {number} depth
 * @param {FolderRow[]} rows
 * @param {number[]} lengths
 * @returns {{ files: number, lines: number }}
 */
function walk(dir, depth, rows, lengths) {
  const row = { path: relative('.', dir) || '.', files: 0, lines: 0, totalFiles: 0, totalLines: 0, depth };
  rows.push(row);
  const entries = readdirSync(dir).sort();
  for (const name of entries) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) {
      const sub = walk(full, depth + 1, rows, lengths);
      row.totalFiles += sub.files;
      row.totalLines += sub.lines;
    } else if (name.endsWith('.ts')) {
      const lines = countLines(readFileSync(full, 'utf8'));
      lengths.push(lines);
      row.files += 1;
      row.lines += lines;
    }
  }
  row.totalFiles += row.files;
  row.totalLines += row.lines;
  return { files: row.totalFiles, lines: row.totalLines };
}

/** Nearest-rank percentile of sorted values (`p` in 0..1). */
function percentile(sorted, p) {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
}

/** Median: the mean of the two middle values when the count is even. */
function median(sorted) {
  if (sorted.length === 0) return 0;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const rows = [];
const lengths = [];
walk(root, 0, rows, lengths);
lengths.sort((a, b) => a - b);

const width = Math.max(...rows.map((r) => r.depth * 2 + r.path.split('/').pop().length + 1));
console.log(`${'folder'.padEnd(width)}  files  lines  (with subfolders: files  lines)`);
for (const row of rows) {
  const name = `${'  '.repeat(row.depth)}${row.depth === 0 ? row.path : row.path.split('/').pop()}/`;
  const sub =
    row.totalFiles !== row.files
      ? `  (${String(row.totalFiles).padStart(5)} ${String(row.totalLines).padStart(6)})`
      : '';
  console.log(
    `${name.padEnd(width)}  ${String(row.files).padStart(5)}  ${String(row.lines).padStart(5)}${sub}`,
  );
}
const long = lengths.filter((n) => n > LONG_FILE_LINES).length;
console.log('');
console.log(`files: ${lengths.length}, lines: ${lengths.reduce((a, b) => a + b, 0)}`);
console.log(
  `file length: median ${median(lengths)}, p90 ${percentile(lengths, 0.9)}, max ${lengths.at(-1) ?? 0} lines`,
);
console.log(`files over ${LONG_FILE_LINES} lines: ${long} of ${lengths.length}`);
let runtimeLines = 'absent';
try {
  runtimeLines = String(countLines(readFileSync(join(root, 'runtime.ts'), 'utf8')));
} catch {}
console.log(`${join(root, 'runtime.ts')}: ${runtimeLines} lines`);
