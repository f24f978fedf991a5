/**
 * Bare piscina's closed-loop capacity for the isolation benchmark's flood (its expensive queries, the
 * same engine and workers as case (b)), in a process of its own started with node's default flags.
 * It is the baseline when the benchmark runs under `node --single-threaded-gc` (as `npm run bench`
 * does): that flag is process-wide, so the in-process bare pool collects garbage the way the lanes
 * do, and this one shows what bare piscina gets with V8's default collector.
 *
 * Prints one JSON line, `{ "perSecond": n }` (completed queries per second over `--ms`).
 *
 * Usage: `node dist/bench/bare-capacity.js --threads N --ms MS --indices a,b,c` (the engine's
 * indices, for resolving the queries' index patterns as the benchmark does).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { barePiscina, capacity, expensive, indexResolver, poolTarget } from './search-load.js';

const script = fileURLToPath(import.meta.url);

/**
 * Runs this module in a child process with node's default flags and returns its capacity, queries
 * per second. @throws Error when the child fails (its stderr in the message).
 */
export function bareCapacityWithDefaultGc(
  threads: number,
  ms: number,
  indices: readonly string[],
  dataDir: string,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [script, '--threads', String(threads), '--ms', String(ms), '--indices', indices.join(',')],
      {
        env: { ...process.env, QS_BENCH_DATA_DIR: dataDir },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const line = out.trim().split('\n').at(-1) ?? '';
      try {
        const perSecond = (JSON.parse(line) as { perSecond: number }).perSecond;
        if (code === 0 && Number.isFinite(perSecond)) return resolve(perSecond);
      } catch {
        // Reported below with the child's output.
      }
      reject(new Error(`bare-capacity child exited ${code}: ${err.trim() || line}`));
    });
  });
}

function arg(name: string): string {
  const i = process.argv.indexOf(name);
  if (i < 0 || process.argv[i + 1] === undefined) throw new Error(`bare-capacity: ${name} is required`);
  return process.argv[i + 1]!;
}

function positiveInteger(name: string, max: number): number {
  const text = arg(name);
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw new Error(`bare-capacity: ${name} must be an integer in 1..${max}; received "${text}"`);
  return n;
}

async function main(): Promise<void> {
  const threads = positiveInteger('--threads', 1024);
  const ms = positiveInteger('--ms', 3_600_000);
  const indices = arg('--indices').split(',');
  const dataDir = process.env.QS_BENCH_DATA_DIR ?? path.resolve('.query-sandbox/bench');
  const resolveIndex = indexResolver(indices);
  // The flood's queries read spam-* and easy-ham-*: with none of those, every query would find nothing
  // at once and the figure would mean nothing.
  if (resolveIndex(expensive(0).index).length === 0) {
    throw new Error(
      `bare-capacity: --indices must name the engine's indices (spam-*, easy-ham-*); received "${indices.join(',')}"`,
    );
  }
  const pool = barePiscina(threads, dataDir);
  const target = poolTarget('bare piscina, default GC', resolveIndex, pool);
  try {
    // Warm up as the benchmark warms its own pools (the JIT, each worker's first queries).
    await capacity(target, threads, 3000);
    const perSecond = await capacity(target, threads, ms);
    console.log(JSON.stringify({ perSecond }));
  } finally {
    await pool.destroy();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 2;
  });
}
