/**
 * Added latency on a share of a data node's internal requests: a "sick" node for benchmarks, the
 * stand-in for the long-tail shards of seed 004 (an old-GC pause, a flaky network, a failing disk).
 * Served only with `--debug-routes`: `POST /_internal/debug/latency {"delay_ms": 200, "ratio": 0.3,
 * "duration_ms": 60000}` delays that share of the node's `/_internal/` requests (searches, shard bulks,
 * replication, GETs; not the debug routes nor node info) by `delay_ms` before they are handled;
 * `DELETE` stops it. The delay is a timer, so the node's CPU is not used by it.
 */
import { InvalidArgumentError } from '../errors.js';
import { isPlainObject } from '../common/is-plain-object.js';
import { optionChecks } from '../common/option-checks.js';

/** What a latency request asks for. */
export interface LatencyRequest {
  /** Added delay, ms, integer 1..60000. */
  readonly delayMs: number;
  /** Share of the internal requests delayed, in (0, 1]. */
  readonly ratio: number;
  /** How long it lasts, ms, integer 1..3600000. */
  readonly durationMs: number;
}

/**
 * Checks a latency request body.
 * @throws InvalidArgumentError naming `delay_ms`, `ratio` or `duration_ms` and the value.
 */
export function parseLatencyRequest(raw: unknown): LatencyRequest {
  if (!isPlainObject(raw)) throw new InvalidArgumentError('body', 'must be a JSON object', raw);
  for (const key of Object.keys(raw)) {
    if (!['delay_ms', 'ratio', 'duration_ms'].includes(key)) {
      throw new InvalidArgumentError(key, 'is not a field of a latency request (delay_ms, ratio, duration_ms)', raw[key]);
    }
  }
  const delayMs = optionChecks.integerIn('delay_ms', raw['delay_ms'], 1, 60_000);
  const ratio = optionChecks.ratio('ratio', raw['ratio'] ?? 1);
  const durationMs = optionChecks.integerIn('duration_ms', raw['duration_ms'] ?? 600_000, 1, 3_600_000);
  return { delayMs, ratio, durationMs };
}

/** The latency of one node; at most one setting at a time. */
export class LatencyInjector {
  #request: LatencyRequest | undefined;
  #untilMs = 0;
  #delayed = 0;
  readonly #random: () => number;

  /** @param random the draw that decides which requests are delayed. @default Math.random */
  constructor(random: () => number = Math.random) {
    this.#random = random;
  }

  /** Starts (or replaces) the added latency. @returns when it ends, epoch ms. */
  start(request: LatencyRequest): number {
    this.#request = request;
    this.#untilMs = Date.now() + request.durationMs;
    return this.#untilMs;
  }

  stop(): void {
    this.#request = undefined;
  }

  /** Requests delayed so far. */
  get delayed(): number {
    return this.#delayed;
  }

  /** The delay for the next request, ms: 0 for most, `delayMs` for a `ratio` share while active. */
  nextDelayMs(): number {
    const r = this.#request;
    if (r === undefined) return 0;
    if (Date.now() >= this.#untilMs) {
      this.#request = undefined;
      return 0;
    }
    if (this.#random() >= r.ratio) return 0;
    this.#delayed++;
    return r.delayMs;
  }
}
