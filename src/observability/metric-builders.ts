/**
 * Small builders over prom-client for series filled from a snapshot at scrape time: each metric's
 * `collect` clears it and sets every series from the reading, so a series of a sandbox or node that
 * is gone disappears at the next scrape. Counters filled this way carry the runtime's own running
 * totals (prom-client has no `set` on a counter: reset, then `inc` by the total).
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export type Labels<L extends string> = Partial<Record<L, string | number>>;
export type Emit<L extends string> = (labels: Labels<L>, value: number) => void;

/** Defines gauges and counters on one registry with one name prefix, filled from `read()`. */
export class SnapshotMetrics<S> {
  readonly #registry: Registry;
  readonly #prefix: string;
  readonly #read: () => S;

  constructor(registry: Registry, prefix: string, read: () => S) {
    this.#registry = registry;
    this.#prefix = prefix;
    this.#read = read;
  }

  /** A gauge whose series `fill` emits from the reading at every scrape. */
  gauge<L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    fill: (emit: Emit<L>, snapshot: S) => void,
  ): Gauge<L> {
    const read = this.#read;
    return new Gauge<L>({
      name: this.#prefix + name,
      help,
      labelNames,
      registers: [this.#registry],
      collect() {
        this.reset();
        fill((labels, value) => this.set(labels, value), read());
      },
    });
  }

  /** A counter (name ends in `_total`) whose series `fill` emits as running totals. */
  counter<L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    fill: (emit: Emit<L>, snapshot: S) => void,
  ): Counter<L> {
    const read = this.#read;
    return new Counter<L>({
      name: this.#prefix + name,
      help,
      labelNames,
      registers: [this.#registry],
      collect() {
        this.reset();
        fill((labels, value) => this.inc(labels, Math.max(0, value)), read());
      },
    });
  }
}
