/**
 * The process's helper threads: every thread but the main thread and the lanes' workers. They are
 * V8's platform workers, which run part of every isolate's garbage collection (concurrent marking,
 * parallel scavenges), V8's delayed-task thread, and libuv's threadpool (fs, dns, crypto, zlib). They
 * belong to no lane and run at the main thread's weight, so during a background flood the GC work of
 * background isolates competes with foreground workers at full weight (about 0.26 of a core here).
 * `weighHelperThreads` gives them a lower weight; see docs/lanes.md for what it measured and costs.
 */
import { applyThreadWeight, processThreadIds } from '../../native-shim/index.js';

/**
 * Where V8 runs the isolates' garbage collection: `per_isolate` when the process was started with
 * `node --single-threaded-gc` (or a runtime set it, `singleThreadedGc`): each isolate collects on its
 * own thread, so a lane's GC runs at the lane's weight and shows in its task's thread clock;
 * `shared`: on V8's platform threads, at nice 0 whatever the lane. With shared helper threads a
 * background flood's GC competes with the foreground at full weight: docs/lanes.md, "GC helper
 * threads", has what each costs.
 */
export type GcThreads = 'per_isolate' | 'shared';

let singleThreadedGcSet = false;

/** Records that this process turned on `--single-threaded-gc` at run time (`v8.setFlagsFromString`). */
export function noteSingleThreadedGc(): void {
  singleThreadedGcSet = true;
}

/** Where this process's isolates collect their garbage; see `GcThreads`. */
export function gcThreadsOf(execArgv: readonly string[] = process.execArgv): GcThreads {
  return singleThreadedGcSet || execArgv.includes('--single-threaded-gc') ? 'per_isolate' : 'shared';
}

/** Kernel tids of the lane workers every runtime of this process has started. */
const laneWorkerTids = new Set<number>();

/** Records a lane worker's kernel tid so that helper weighting never touches it. */
export function noteLaneWorker(tid: number): void {
  if (tid > 0) laneWorkerTids.add(tid);
}

/** What `weighHelperThreads` did. */
export interface HelperThreadsResult {
  /** Helper threads found (every thread but the main one and known lane workers). */
  readonly threads: number;
  /** Those now at the weight asked for. */
  readonly weighted: number;
  /** Why the first one that failed did, if one did. */
  readonly reason: string | undefined;
}

/**
 * Raises the nice of every helper thread that exists now to `nice` (0..19). Call after the lanes'
 * workers have started. Never lowers a nice value; never throws.
 */
export function weighHelperThreads(nice: number): HelperThreadsResult {
  const helpers = processThreadIds().filter((tid) => tid !== process.pid && !laneWorkerTids.has(tid));
  let weighted = 0;
  let reason: string | undefined;
  for (const tid of helpers) {
    const r = applyThreadWeight(tid, nice);
    if (r.applied) weighted++;
    else reason ??= r.reason;
  }
  return { threads: helpers.length, weighted, reason };
}
