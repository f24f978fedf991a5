/**
 * How much CPU an allocation-heavy task's garbage collection spends off its worker's thread, where
 * no sandbox is charged for it, with V8's default (parallel and concurrent GC helper threads) and
 * with `singleThreadedGc`. Each mode runs in its own child process (the flag is process-wide).
 * Per task: the worker thread's CPU (its own clock) and the whole process's CPU; the difference,
 * less the main thread's, is work on other threads (mostly GC helpers). Prints the share that the
 * thread clock misses and the wall time per task, both modes in the same run.
 *
 * Usage: `npm run bench:gc` (10 tasks per mode).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { currentThreadCpuTimeNs } from '../native-shim/index.js';
import { createRuntime } from '../src/index.js';

const workerFile = fileURLToPath(new URL('../../bench/workers/alloc-task.mjs', import.meta.url));
const TASKS = 10;

interface ModeResult {
  readonly singleThreadedGc: boolean;
  readonly workerCpuMs: number;
  readonly otherThreadsCpuMs: number;
  readonly wallMsPerTask: number;
}

async function child(singleThreadedGc: boolean): Promise<ModeResult> {
  const runtime = await createRuntime({
    engine: workerFile,
    threads: 1,
    spareWorkers: 0,
    heapProbe: false,
    singleThreadedGc,
    dataDir: '.query-sandbox/bench',
  });
  await runtime.search({ index: 'x', body: { rounds: 5 } }); // warm-up
  let workerNs = 0;
  const mainBefore = currentThreadCpuTimeNs();
  const before = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < TASKS; i++) {
    const r = (await runtime.search({ index: 'x', body: { rounds: 40 } })) as { threadCpuNs: number };
    workerNs += r.threadCpuNs;
  }
  const wallMs = performance.now() - started;
  const process_ = process.cpuUsage(before);
  const mainNs = currentThreadCpuTimeNs() - mainBefore;
  await runtime.close();
  const processNs = (process_.user + process_.system) * 1000;
  return {
    singleThreadedGc,
    workerCpuMs: workerNs / 1e6,
    otherThreadsCpuMs: Math.max(0, processNs - mainNs - workerNs) / 1e6,
    wallMsPerTask: wallMs / TASKS,
  };
}

if (process.argv[2] === '--child') {
  const result = await child(process.argv[3] === 'single');
  process.stdout.write(`${JSON.stringify(result)}\n`);
} else {
  const self = fileURLToPath(import.meta.url);
  const results: ModeResult[] = [];
  for (const mode of ['default', 'single']) {
    const r = spawnSync(process.execPath, [self, '--child', mode], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`child ${mode} failed: ${r.stderr}`);
    results.push(JSON.parse(r.stdout.trim().split('\n').pop()!) as ModeResult);
  }
  console.log(`GC blind spot: ${TASKS} allocation-heavy tasks per mode, 1 worker, Node ${process.version}`);
  console.log('mode                 worker thread ms  other threads ms  missed share  wall ms/task');
  for (const r of results) {
    const missed = r.otherThreadsCpuMs / (r.workerCpuMs + r.otherThreadsCpuMs);
    console.log(
      `${(r.singleThreadedGc ? 'single-threaded GC' : 'default GC').padEnd(19)}  ${r.workerCpuMs.toFixed(0).padStart(16)}  ` +
        `${r.otherThreadsCpuMs.toFixed(0).padStart(16)}  ${(missed * 100).toFixed(1).padStart(11)} %  ${r.wallMsPerTask.toFixed(1).padStart(11)}`,
    );
  }
  const [d, s] = results as [ModeResult, ModeResult];
  console.log(
    `single-threaded / default: wall ${(s.wallMsPerTask / d.wallMsPerTask).toFixed(2)}x, ` +
      `total CPU ${((s.workerCpuMs + s.otherThreadsCpuMs) / (d.workerCpuMs + d.otherThreadsCpuMs)).toFixed(2)}x`,
  );
}
