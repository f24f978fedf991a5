/**
 * Reserved workers: the pool's capacity split into lanes. The general lane takes any task; a reserved
 * lane of `minPriority` P takes only tasks of priority P or higher (Cortex's `reserved_queriers`).
 */
import { InvalidArgumentError } from '../errors.js';
import type { QueryPriorityConfig } from './query-priority.js';

/** One lane: up to `workers` tasks at once, each of priority >= `minPriority`. */
export interface Lane {
  /** `-Infinity` for the general lane. */
  readonly minPriority: number;
  readonly workers: number;
}

/** The pool split into lanes: the general lane first, then reserved lanes by `minPriority` descending. */
export interface LanePlan {
  readonly lanes: readonly Lane[];
  /** Workers reserved in all (0 when reservations are off or suspended). */
  readonly reserved: number;
  /**
   * Why configured reservations are not applied: `disabled` (the config is off), `pool_too_small`
   * (they would take the whole pool after it shrank), or undefined when they apply (or none exist).
   */
  readonly suspended: 'disabled' | 'pool_too_small' | undefined;
}

/** Workers a `reserved_workers` value stands for in a pool of `poolSize`: a count, or ceil(f × pool). */
export function reservedCount(reservedWorkers: number, poolSize: number): number {
  return reservedWorkers < 1 ? Math.ceil(reservedWorkers * poolSize) : reservedWorkers;
}

/**
 * Splits a pool of `poolSize` workers (>= 1) into lanes by the config's reservations. When they add up
 * to the whole pool (possible only after the pool shrank; `checkReservations` refuses it at
 * configuration time) they are suspended, and every worker is general, as Cortex does.
 */
export function planLanes(config: QueryPriorityConfig, poolSize: number): LanePlan {
  const general = (workers: number): Lane => ({ minPriority: Number.NEGATIVE_INFINITY, workers });
  const reserving = config.rules.filter((r) => r.reservedWorkers !== undefined);
  if (reserving.length === 0) return { lanes: [general(poolSize)], reserved: 0, suspended: undefined };
  if (!config.enabled) return { lanes: [general(poolSize)], reserved: 0, suspended: 'disabled' };
  const reserved = reserving
    .map((r) => ({ minPriority: r.priority, workers: reservedCount(r.reservedWorkers!, poolSize) }))
    .sort((a, b) => b.minPriority - a.minPriority);
  const total = reserved.reduce((sum, lane) => sum + lane.workers, 0);
  if (total >= poolSize) return { lanes: [general(poolSize)], reserved: 0, suspended: 'pool_too_small' };
  return { lanes: [general(poolSize - total), ...reserved], reserved: total, suspended: undefined };
}

/**
 * @throws InvalidArgumentError (`query_priority.priorities`) when the reservations add up to the
 *   whole pool of `poolSize` workers: at least one worker must stay general, or low-priority work
 *   would never run.
 */
export function checkReservations(config: QueryPriorityConfig, poolSize: number, path = 'query_priority'): void {
  let total = 0;
  const parts: string[] = [];
  for (const rule of config.rules) {
    if (rule.reservedWorkers === undefined) continue;
    const n = reservedCount(rule.reservedWorkers, poolSize);
    total += n;
    parts.push(`${n} for priority ${rule.priority}`);
  }
  if (total >= poolSize)
    throw new InvalidArgumentError(
      `${path}.priorities`,
      `must leave at least one of the pool's ${poolSize} workers unreserved; the reservations take ${total} (${parts.join(', ')})`,
      config.rules.map((r) => r.reservedWorkers ?? 0),
    );
}
