/**
 * A deliberate CPU hog inside a data node's process, for demonstrations and benchmarks of admission
 * control: `threads` plain worker threads (not the pool's: no task, no sandbox) spin until a deadline.
 * The node's own usage tracker sees the process's CPU rise, its answers slow down, and a coordinator
 * ranks it lower or refuses work for it. Served only when the node runs with `--debug-routes`
 * (`POST /_internal/debug/cpu_hog {"threads": 2, "duration_ms": 10000}`, `DELETE` to stop).
 */
import { Worker } from 'node:worker_threads';
import { InvalidArgumentError } from '../errors.js';
import { isPlainObject } from '../common/is-plain-object.js';
import { optionChecks } from '../common/option-checks.js';

/** What a hog request asks for. */
export interface CpuHogRequest {
  /** Spinning threads, integer 1..64. */
  readonly threads: number;
  /** How long they spin, ms, integer 1..600000. */
  readonly durationMs: number;
}

// Spins in slices of about 1 ms of work between clock reads, until the deadline (epoch ms).
const SPIN_SOURCE = `
const { workerData } = require('node:worker_threads');
let x = 0;
while (Date.now() < workerData.untilMs) {
  for (let i = 0; i < 100000; i++) x += Math.sqrt(i + x);
}
`;

/**
 * Checks a hog request body (`{"threads": n, "duration_ms": ms}`).
 * @throws InvalidArgumentError naming `threads` or `duration_ms` and the value.
 */
export function parseCpuHogRequest(raw: unknown): CpuHogRequest {
  if (!isPlainObject(raw)) throw new InvalidArgumentError('body', 'must be a JSON object', raw);
  const threads = optionChecks.integerIn('threads', raw['threads'] ?? 1, 1, 64);
  const durationMs = optionChecks.integerIn('duration_ms', raw['duration_ms'], 1, 600_000);
  return { threads, durationMs };
}

/** The spinning threads of one node; at most one hog at a time. */
export class CpuHog {
  #workers: Worker[] = [];
  #untilMs = 0;

  /** Starts a hog, replacing one that is running. @returns when it ends, epoch ms. */
  async start(request: CpuHogRequest): Promise<number> {
    await this.stop();
    this.#untilMs = Date.now() + request.durationMs;
    this.#workers = Array.from({ length: request.threads }, () => {
      const worker = new Worker(SPIN_SOURCE, {
        eval: true,
        workerData: { untilMs: this.#untilMs },
        resourceLimits: { maxOldGenerationSizeMb: 16 },
      });
      worker.unref();
      worker.on('error', () => {});
      worker.on('exit', () => {
        this.#workers = this.#workers.filter((w) => w !== worker);
      });
      return worker;
    });
    return this.#untilMs;
  }

  /** Threads spinning now. */
  get running(): number {
    return this.#workers.length;
  }

  /** Stops the hog at once (terminates its threads). Idempotent. */
  async stop(): Promise<void> {
    const workers = this.#workers;
    this.#workers = [];
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
