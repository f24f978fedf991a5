/**
 * Start-up steps of `createRuntime` that are not wiring: loading the sandboxes, checking the workers'
 * heap limit, reporting the lanes, removing the runtime's own temporary directory.
 */
import fs from 'node:fs/promises';
import { InvalidArgumentError } from './errors.js';
import { gcThreadsOf } from './pool/helper-threads.js';
import type { LanePool, PoolLaneStats } from './pool/lane-pool.js';
import type { NodeStats } from './runtime-api.js';
import type { ResolvedRuntimeOptions } from './runtime-options.js';
import type { RuntimeLogger } from './runtime-logger.js';
import { createRootSandbox, type Sandbox } from './sandbox/sandbox.js';
import { loadSandboxFile, parseSandboxDefinitions } from './sandbox/sandbox-file.js';

export async function loadSandboxes(source: ResolvedRuntimeOptions['sandboxes']): Promise<Sandbox[]> {
  if (source === undefined) return [createRootSandbox()];
  if (typeof source === 'string') return loadSandboxFile(source);
  return parseSandboxDefinitions(source);
}

/** Removes a directory the runtime made for itself, if any. */
export async function removeDir(dir: string | undefined): Promise<void> {
  if (dir !== undefined) await fs.rm(dir, { recursive: true, force: true });
}

/**
 * Says at start what the lanes give, so that nothing claims isolation it does not have: a warning for
 * every lane whose weight could not be set.
 */
export function logLanes(log: RuntimeLogger, pool: LanePool): void {
  const lanes = pool.laneStats();
  for (const lane of lanes) {
    if (!lane.weighted) {
      log.warn(
        { lane: lane.name, weight: lane.weight, reason: lane.weightReason },
        `lane [${lane.name}] is unweighted: its threads could not be given weight ${lane.weight}; ` +
          'the lanes time-slice but the kernel does not favour the foreground',
      );
    }
  }
  const gcThreads = gcThreadsOf();
  if (lanes.length > 1 && gcThreads === 'shared') {
    log.warn(
      { gcThreads },
      "garbage collection runs on V8's shared helper threads at nice 0, whatever the lane: a background " +
        "flood's GC competes with the foreground at full weight; start node with --single-threaded-gc " +
        '(npm start and the query-sandbox command do) so that each lane collects at its own weight (docs/lanes.md)',
    );
  }
  log.info(
    {
      lanes: lanes.map((l) => ({
        name: l.name,
        weight: l.weight,
        nice: l.nice,
        workers: l.workers,
        spare: l.spareWorkers,
      })),
      isolation: isolationOf(lanes),
      gcThreads,
    },
    'lanes ready',
  );
}

/**
 * `weighted` only when every lane runs at the weight it asked for and each lane's threads really weigh
 * less than the lane above: a process started at nice 19 cannot give its background lane less weight
 * than its foreground (both end at 19), and then nothing favours the foreground.
 */
export function isolationOf(lanes: readonly PoolLaneStats[]): NodeStats['isolation'] {
  if (lanes.length < 2) return 'single_lane';
  if (!lanes.every((l) => l.weighted)) return 'unweighted';
  for (let i = 1; i < lanes.length; i++) {
    const above = lanes[i - 1]!;
    const below = lanes[i]!;
    const belowIdle = below.weight === 'idle' && above.weight !== 'idle';
    if (!belowIdle && !((below.nice ?? 0) > (above.nice ?? 0))) return 'unweighted';
  }
  return 'weighted';
}

/**
 * Refuses to run when a process-wide `--max-old-space-size` (command line or NODE_OPTIONS) has
 * replaced the workers' `resourceLimits`, whether larger or smaller: then a worker's heap limit is the
 * process's (seen: 4,144 MiB and 560 MiB where 1,024 were asked), memory ratios and messages are
 * wrong, and a larger one lets one task take the machine's memory. The young generation adds a
 * little to the limit (256 MiB gives 304), hence the margin above.
 * @throws InvalidArgumentError naming options.workerHeapMb; the pool is closed.
 */
export async function checkWorkerHeapLimit(pool: LanePool, workerHeapMb: number): Promise<void> {
  const limits = pool.startups.map((s) => s.heapLimitBytes / 1048576);
  const reportedMb = limits.find((mb) => mb < workerHeapMb || mb > workerHeapMb * 1.25 + 64);
  if (reportedMb !== undefined) {
    await pool.close();
    throw new InvalidArgumentError(
      'options.workerHeapMb',
      `is overridden: workers report a heap limit of ${Math.round(reportedMb)} MiB, so a process-wide ` +
        '--max-old-space-size (command line or NODE_OPTIONS) is in force; remove it and set workerHeapMb instead',
      workerHeapMb,
    );
  }
}
