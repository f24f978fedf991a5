/**
 * Lanes: the pool split into sets of workers, each with its own OS scheduling weight (the nice of its
 * threads) and a band of task priorities. Nothing in JavaScript preempts a running task, so a cheap
 * query must never wait for a worker that an expensive one holds: each band gets workers of its own,
 * and the kernel time-slices the lanes' threads by their weights. With the default two lanes of
 * `cores` workers each, the pool is oversubscribed and work-conserving: background work uses every
 * core while nothing important runs, and the kernel preempts it the moment foreground work arrives.
 *
 * A task of priority p runs in the lane with the highest `minPriority` <= p; the lowest lane takes
 * every priority below the others (its `minPriority` is `-Infinity`).
 */
import { InvalidArgumentError } from '../errors.js';
import type { ReservationLane } from './worker-reservations.js';
import { optionChecks } from '../common/option-checks.js';

/** A lane's OS scheduling weight: a nice value 0..19 (higher: less CPU under contention), or `idle` (`SCHED_IDLE`). */
export type LaneWeight = number | 'idle';

/** One lane as `createRuntime` takes it. */
export interface LaneOptions {
  /** Name in stats, logs and metrics: 1..32 characters of `[a-z0-9_-]`. */
  readonly name: string;
  /**
   * Lowest task priority the lane takes (an integer). Exactly one lane omits it: the lowest, which
   * takes every priority below the others'.
   */
  readonly minPriority?: number;
  /**
   * OS scheduling weight of the lane's worker threads: nice 0..19 (raising nice needs no privilege),
   * or `idle` for the `SCHED_IDLE` policy (through util-linux `chrt`). Default 0.
   */
  readonly weight?: LaneWeight;
  /** Tasks the lane runs at once (its workers), integer 1..1024. Default: the runtime's `threads`. */
  readonly workers?: number;
  /**
   * Loaded workers beyond `workers`, integer 0..64, that keep the lane's capacity while a
   * hard-cancelled worker's replacement loads the engine. Default: the runtime's `spareWorkers`.
   */
  readonly spareWorkers?: number;
}

/** A lane with every default filled in. */
export interface ResolvedLane extends ReservationLane {
  readonly weight: LaneWeight;
  readonly spareWorkers: number;
}

/**
 * Priority from which the default foreground lane takes tasks: everything above the default
 * priority (10, query priority's `default_priority` and the root sandbox's): the bundled `dashboards`
 * sandbox (20) runs in the foreground; `analysts` (5), the root (10) and unclassified work in the
 * background.
 */
export const DEFAULT_FOREGROUND_MIN_PRIORITY = 11;

/**
 * Nice of the default background lane. Chosen by `bench/lane-weight.ts` (see docs/lanes.md): the
 * weight at which foreground p99 under a flood stays closest to its p99 alone without costing the
 * flood's throughput on a quiet machine.
 */
export const DEFAULT_BACKGROUND_WEIGHT: LaneWeight = 19;

/** The default lanes: foreground at nice 0 for priorities >= 11, background for the rest. */
export const DEFAULT_LANES: readonly LaneOptions[] = Object.freeze([
  Object.freeze({ name: 'foreground', minPriority: DEFAULT_FOREGROUND_MIN_PRIORITY, weight: 0 }),
  Object.freeze({ name: 'background', weight: DEFAULT_BACKGROUND_WEIGHT }),
]);

/** What `lanes: false` means: one lane of every priority at nice 0 (no kernel isolation). */
export function singleLane(workers: number, spareWorkers: number): ResolvedLane {
  return {
    name: 'default',
    minPriority: Number.NEGATIVE_INFINITY,
    maxPriority: Number.POSITIVE_INFINITY,
    weight: 0,
    workers,
    spareWorkers,
  };
}

function checkWeight(path: string, weight: unknown): LaneWeight {
  if (weight === undefined) return 0;
  if (weight === 'idle') return weight;
  if (typeof weight !== 'number' || !Number.isInteger(weight) || weight < 0 || weight > 19) {
    throw new InvalidArgumentError(path, 'must be a nice value, an integer in 0..19, or "idle"', weight);
  }
  return weight;
}

const checkCount = optionChecks.integerIn;

/**
 * Validates lane options and fills defaults. Returns the lanes by `minPriority`, highest first, each
 * with its band.
 * @param lanes the option; `false`: one lane (see `singleLane`); `undefined`: `DEFAULT_LANES`.
 * @throws InvalidArgumentError naming `<path>[i].<field>` and the received value.
 */
export function resolveLanes(
  lanes: readonly LaneOptions[] | false | undefined,
  defaults: { readonly workers: number; readonly spareWorkers: number },
  path = 'options.lanes',
): readonly ResolvedLane[] {
  if (lanes === false)
    return Object.freeze([Object.freeze(singleLane(defaults.workers, defaults.spareWorkers))]);
  const list = lanes ?? DEFAULT_LANES;
  if (!Array.isArray(list) || list.length < 1 || list.length > 8) {
    throw new InvalidArgumentError(path, 'must be false or an array of 1..8 lanes', lanes);
  }
  const names = new Set<string>();
  let lowest = -1;
  const parsed = list.map((lane: unknown, i) => {
    const at = `${path}[${i}]`;
    if (typeof lane !== 'object' || lane === null || Array.isArray(lane)) {
      throw new InvalidArgumentError(at, 'must be an object', lane);
    }
    const l = lane as Record<string, unknown>;
    for (const key of Object.keys(l)) {
      if (!['name', 'minPriority', 'weight', 'workers', 'spareWorkers'].includes(key)) {
        throw new InvalidArgumentError(
          `${at}.${key}`,
          'is not a lane option (name, minPriority, weight, workers, spareWorkers)',
          l[key],
        );
      }
    }
    if (typeof l['name'] !== 'string' || !/^[a-z0-9_-]{1,32}$/.test(l['name'])) {
      throw new InvalidArgumentError(`${at}.name`, 'must be 1..32 characters of [a-z0-9_-]', l['name']);
    }
    if (names.has(l['name']))
      throw new InvalidArgumentError(`${at}.name`, 'must be unique among the lanes', l['name']);
    names.add(l['name']);
    let minPriority = Number.NEGATIVE_INFINITY;
    if (l['minPriority'] === undefined) {
      if (lowest >= 0) {
        throw new InvalidArgumentError(
          `${at}.minPriority`,
          `must be set: only one lane may omit it (lane ${lowest} does)`,
          undefined,
        );
      }
      lowest = i;
    } else {
      const p = l['minPriority'];
      if (typeof p !== 'number' || !Number.isInteger(p) || Math.abs(p) > 1e9) {
        throw new InvalidArgumentError(`${at}.minPriority`, 'must be an integer in -1e9..1e9', p);
      }
      minPriority = p;
    }
    return {
      name: l['name'],
      minPriority,
      weight: checkWeight(`${at}.weight`, l['weight']),
      workers: checkCount(`${at}.workers`, l['workers'], 1, 1024, defaults.workers),
      spareWorkers: checkCount(`${at}.spareWorkers`, l['spareWorkers'], 0, 64, defaults.spareWorkers),
    };
  });
  if (lowest < 0) {
    throw new InvalidArgumentError(
      `${path}[${parsed.length - 1}].minPriority`,
      'must be omitted on the lowest lane, which takes every priority below the others',
      parsed.at(-1)?.minPriority,
    );
  }
  const sorted = [...parsed].sort((a, b) => b.minPriority - a.minPriority);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]!.minPriority === sorted[i - 1]!.minPriority) {
      throw new InvalidArgumentError(
        `${path}.minPriority`,
        'must differ between lanes',
        sorted[i]!.minPriority,
      );
    }
  }
  return Object.freeze(
    sorted.map((lane, i) =>
      Object.freeze({
        ...lane,
        maxPriority: i === 0 ? Number.POSITIVE_INFINITY : sorted[i - 1]!.minPriority,
      }),
    ),
  );
}

/** Index of the lane (in `resolveLanes` order) that takes `priority`. */
export function laneOf(lanes: readonly ResolvedLane[], priority: number): number {
  for (let i = 0; i < lanes.length; i++) if (priority >= lanes[i]!.minPriority) return i;
  return lanes.length - 1;
}
