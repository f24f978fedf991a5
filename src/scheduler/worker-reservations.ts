/**
 * Reserved workers (Cortex's `reserved_queriers`) inside the pool's lanes. A lane (see `lanes.ts`)
 * takes a band of priorities on workers of its own OS weight; a reservation keeps some of one lane's
 * workers for the top of that band: a reservation of `minPriority` P takes only tasks of priority P or
 * higher. A rule's reservation belongs to the lane whose band holds the rule's priority.
 *
 * The two do different jobs: lanes isolate bands from each other through the kernel (a background
 * task never holds a foreground worker, and the kernel preempts it for foreground work); a
 * reservation orders work inside one lane, so that a high-priority task finds a free worker of its
 * lane even while lower-priority work of the same lane has filled the others.
 */
import { InvalidArgumentError } from '../errors.js';
import type { QueryPriorityConfig } from './query-priority.js';

/** One reservation group of a lane: up to `workers` tasks at once, each of priority >= `minPriority`. */
export interface ReservationGroup {
  /** `-Infinity` for the lane's general group. */
  readonly minPriority: number;
  readonly workers: number;
}

/** A lane's workers split into groups: the general group first, then reserved ones by `minPriority` descending. */
export interface ReservationPlan {
  readonly groups: readonly ReservationGroup[];
  /** Workers reserved in all (0 when reservations are off or suspended). */
  readonly reserved: number;
  /**
   * Why configured reservations are not applied: `disabled` (the config is off), `pool_too_small`
   * (they would take the whole lane after it shrank), or undefined when they apply (or none exist).
   */
  readonly suspended: 'disabled' | 'pool_too_small' | undefined;
}

/** The band of priorities a lane takes: `[minPriority, maxPriority)`. */
export interface PriorityBand {
  /** Lowest priority taken; `-Infinity` for the lowest lane. */
  readonly minPriority: number;
  /** First priority not taken (the next lane's `minPriority`); `Infinity` for the highest lane. */
  readonly maxPriority: number;
}

/** A lane as reservations see it: its name (for messages), its band and its workers. */
export interface ReservationLane extends PriorityBand {
  readonly name: string;
  readonly workers: number;
}

const WHOLE_BAND: PriorityBand = {
  minPriority: Number.NEGATIVE_INFINITY,
  maxPriority: Number.POSITIVE_INFINITY,
};

/** Workers a `reserved_workers` value stands for in a lane of `workers`: a count, or ceil(f × workers). */
export function reservedCount(reservedWorkers: number, workers: number): number {
  return reservedWorkers < 1 ? Math.ceil(reservedWorkers * workers) : reservedWorkers;
}

function inBand(priority: number, band: PriorityBand): boolean {
  return priority >= band.minPriority && priority < band.maxPriority;
}

/**
 * Splits a lane of `workers` workers (>= 1) taking `band` into groups by the config's reservations
 * for priorities in that band. When they add up to the whole lane (possible only after it shrank;
 * `checkReservations` refuses it at configuration time) they are suspended and every worker is
 * general, as Cortex does.
 */
export function planReservations(
  config: QueryPriorityConfig,
  workers: number,
  band: PriorityBand = WHOLE_BAND,
): ReservationPlan {
  const general = (n: number): ReservationGroup => ({ minPriority: Number.NEGATIVE_INFINITY, workers: n });
  const reserving = config.rules.filter((r) => r.reservedWorkers !== undefined && inBand(r.priority, band));
  if (reserving.length === 0) return { groups: [general(workers)], reserved: 0, suspended: undefined };
  if (!config.enabled) return { groups: [general(workers)], reserved: 0, suspended: 'disabled' };
  const reserved = reserving
    .map((r) => ({ minPriority: r.priority, workers: reservedCount(r.reservedWorkers!, workers) }))
    .sort((a, b) => b.minPriority - a.minPriority);
  const total = reserved.reduce((sum, group) => sum + group.workers, 0);
  if (total >= workers) return { groups: [general(workers)], reserved: 0, suspended: 'pool_too_small' };
  return { groups: [general(workers - total), ...reserved], reserved: total, suspended: undefined };
}

/**
 * Checks the config's reservations against the lanes (or, given a number, one lane of that many
 * workers): in each lane at least one worker must stay general, or its low-priority work would
 * never run.
 * @throws InvalidArgumentError (`<path>.priorities`) naming the lane and what the reservations take.
 */
export function checkReservations(
  config: QueryPriorityConfig,
  lanes: number | readonly ReservationLane[],
  path = 'query_priority',
): void {
  const list: readonly ReservationLane[] =
    typeof lanes === 'number' ? [{ name: 'pool', workers: lanes, ...WHOLE_BAND }] : lanes;
  for (const lane of list) {
    let total = 0;
    const parts: string[] = [];
    for (const rule of config.rules) {
      if (rule.reservedWorkers === undefined || !inBand(rule.priority, lane)) continue;
      const n = reservedCount(rule.reservedWorkers, lane.workers);
      total += n;
      parts.push(`${n} for priority ${rule.priority}`);
    }
    if (total < lane.workers) continue;
    const whose = list.length === 1 ? "the pool's" : `lane [${lane.name}]'s`;
    throw new InvalidArgumentError(
      `${path}.priorities`,
      `must leave at least one of ${whose} ${lane.workers} workers unreserved; the reservations take ${total} (${parts.join(', ')})`,
      config.rules.map((r) => r.reservedWorkers ?? 0),
    );
  }
}
