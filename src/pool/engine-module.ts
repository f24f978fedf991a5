/**
 * The contract between the runtime and a search engine. An engine is an ES module (given to
 * `createRuntime({ engine: '/abs/path/to/module.js' })`) that exports `handle` and, optionally,
 * `prepare`, `init` and `validate`. The module is imported once in the main thread (for `prepare`
 * and `validate`) and once in every worker (for `init` and `handle`).
 *
 * Errors: an engine refuses a request by throwing an error with a numeric `statusCode` in 400..499
 * and, optionally, an OpenSearch-style `type` (`EngineRequestError` from this package does both).
 * Anything else thrown is reported as a 500 `ENGINE_FAILURE`.
 */

/** Passed to `prepare` in the main thread, once, before any worker starts. */
export interface EnginePrepareContext {
  /** Directory for caches the engine may write (created if missing). */
  readonly cacheDir: string;
  /** `engineOptions` given to the runtime, passed through unchanged. */
  readonly options: Readonly<Record<string, unknown>>;
  /** Log a line of start-up progress. */
  log(message: string): void;
}

/** What `prepare` may report about the engine. */
export interface EngineDescription {
  /**
   * The concrete index names the engine serves. When given, the runtime resolves index expressions
   * (`spam-*`, `a,b`) against them before classification and answers unknown names with 404.
   */
  readonly indices?: readonly string[];
  /**
   * Shards of every served index (what `GET /{index}`, `_cat/indices` and `_cluster/health` report as
   * `number_of_shards`). @default 1
   */
  readonly shardsPerIndex?: number;
  /** Documents of each served index, by name (`docs.count` of `_cat/indices`). */
  readonly docsPerIndex?: Readonly<Record<string, number>>;
  /** The field mappings of the served indices, in Elasticsearch's `mappings` shape (`GET /{index}/_mapping`). */
  readonly mappings?: Readonly<Record<string, unknown>>;
}

/**
 * The runtime hands a worker its node's writable indices through this reserved key of the engine
 * options it gives the pool (the pool passes engine options to every worker unchanged); the worker
 * harness removes the key and passes its value as `EngineInitContext.writableIndices`, so an engine
 * never sees it among its options.
 */
export const WRITABLE_INDICES_OPTION = '__querySandboxWritableIndices';

/** What a worker needs to serve its node's writable indices (see `indices/index-board.ts`). */
export interface WritableIndicesContext {
  /** The node's refresh board: shard copies, log paths and published offsets. */
  readonly board: SharedArrayBuffer;
}

/** Passed to `init` in each worker, once, before it takes tasks. */
export interface EngineInitContext {
  readonly cacheDir: string;
  readonly options: Readonly<Record<string, unknown>>;
  /**
   * Present when the engine declares `writableIndices` and the runtime serves writable indices: the
   * engine searches them too, pulling refreshed operations from the board at the start of each task.
   */
  readonly writableIndices?: WritableIndicesContext;
}

/** The request the runtime hands to an engine's `handle` and `validate`. */
export interface EngineRequest<Body = unknown> {
  /** Concrete index names (resolved from the request's expression when the engine lists indices). */
  readonly indices: readonly string[];
  /** The request body as received (parsed JSON). */
  readonly body: Body;
  /**
   * The shards to search, index name to shard numbers (0-based, as `src/routing` numbers them); an
   * index of `indices` absent here, or the whole field absent, means every shard this node holds of
   * it. Set by a cluster coordinator that picked this node's copies of those shards; every key is one
   * of `indices` and every list is non-empty, without repeats (the runtime checks that). An engine
   * without shards may ignore it; one with shards refuses a shard it does not hold (a 4xx).
   */
  readonly shards?: Readonly<Record<string, readonly number[]>>;
  /**
   * The search timeout in force (ms > 0; the request's `timeout` or its sandbox's
   * `search_settings.timeout`, see `sandbox/search-settings.ts`); absent: none. As in Elasticsearch, an
   * engine past it stops collecting (between shards or other units of work, counted from the start of
   * `handle`) and returns the hits it has with `timed_out: true` rather than failing. An engine that
   * cannot stop early may ignore it. The runtime takes the `timeout` key out of an object body.
   */
  readonly timeoutMs?: number;
}

/**
 * Given to `handle` for one task: its id and the cancellation contract.
 *
 * Cancellation is cooperative first. When the governor cancels a task (its sandbox is above a high
 * limit) or the runtime shuts down, the task's shared slot is marked at once; the engine sees it
 * through any of the members below and should stop by throwing (the signal's `reason` or its own
 * error: a task asked to stop that throws is reported as cancelled, `CancelledError` with
 * `hard: false`). An engine that does not stop within its sandbox's `cancellationGraceMs` (default
 * `graceIntervals × intervalMs`, 200 ms) is cancelled hard: its worker is terminated and a
 * replacement runs the engine's `init` again (for the built-in engine's full corpus 0.46 to 0.56 s
 * on a 2-core host, `npm run bench:replacement`; tens of seconds for a large index), which is why a sandbox for engines that cannot be interrupted
 * safely may say `"cancellationGraceMs": "never"`.
 *
 * What fires when, and what it costs:
 * - `cancelled`: reads the slot (one atomic load, a few ns); never throws, never fires anything.
 * - `throwIfCancelled()`: the same read; when cancelled, fires `signal` and throws its reason.
 * - `checkpoint()`: records memory (about 1 µs) and does what `throwIfCancelled()` does.
 * - `signal`: an `AbortSignal` that may be kept (`const { signal } = ctx`). Reading
 *   `signal.aborted`, `signal.reason` or calling `signal.throwIfAborted()` reads the slot, so a
 *   synchronous loop that tests a held signal sees the cancellation at its next test. Its `abort`
 *   event (listeners, `onabort`, APIs given the signal such as `timers/promises` or `fetch`) fires at
 *   the handler's next checkpoint, at any of those reads, or, while the handler awaits with its
 *   event loop free, as soon as the cancellation is made (the worker is woken through the slot).
 *   Code that never yields, checks nothing and never checkpoints cannot be stopped softly.
 *
 * @example A synchronous engine: test the held signal (or `ctx.cancelled`) between units of work.
 * ```ts
 * export function handle(request: EngineRequest<{ q: string }>, ctx: TaskContext): Hits {
 *   const { signal } = ctx;
 *   const hits: Hit[] = [];
 *   for (const shard of shards) {
 *     signal.throwIfAborted();          // or: if (ctx.cancelled) ctx.throwIfCancelled();
 *     hits.push(...shard.search(request.body.q));
 *     ctx.checkpoint();                 // memory, and the same check
 *   }
 *   return { hits };
 * }
 * ```
 *
 * @example An asynchronous engine: hand the signal to what it awaits.
 * ```ts
 * import { setTimeout as sleep } from 'node:timers/promises';
 * export async function handle(request: EngineRequest, { signal }: TaskContext): Promise<Hits> {
 *   const page = await fetch(upstreamUrl, { signal, method: 'POST', body: JSON.stringify(request.body) });
 *   for (let i = 0; i < batches; i++) {
 *     scoreBatch(i);
 *     await sleep(0, undefined, { signal });   // rejects with the reason once cancelled
 *   }
 *   return page.json();
 * }
 * ```
 */
export interface TaskContext {
  /**
   * An AbortSignal that fires when the task is cancelled; safe to keep and test in synchronous
   * code (see above for when its `abort` event fires). Made on first read.
   */
  readonly signal: AbortSignal;
  /** True once the task was asked to stop. One atomic load of the shared slot; no side effects. */
  readonly cancelled: boolean;
  /**
   * Throws when the task was asked to stop: the signal's reason, an `Error` named `AbortError` whose
   * message says why (`task cancelled: its sandbox is above its high cpu limit`). Fires the signal
   * first. A few ns when not cancelled.
   */
  throwIfCancelled(): void;
  /**
   * Records a memory checkpoint (live heap + external memory of this worker) and then does what
   * `throwIfCancelled()` does. Costs about 1 µs; call it between units of work (an index, a shard, a
   * batch of documents). A task that stops checkpointing has its heap probed from the main thread.
   */
  checkpoint(): void;
  /** The runtime's id of this task. */
  readonly taskId: number;
}

/**
 * What the priority rules of the scheduler match on, as the engine reads a request. Returned by
 * `queryAttributes`; all fields optional.
 */
export interface QueryAttributes {
  /**
   * The query text that rule regexes run on. Default (no hook, or no `text`): the compact JSON of the
   * request body (`JSON.stringify(body)`).
   */
  readonly text?: string;
  /**
   * The time range of the data the query reads, epoch ms, inclusive. `from: -Infinity` when the query
   * has no lower bound; an open upper bound is reported as `to: nowMs` (no data lies in the future).
   * Absent when the query does not restrict time at all.
   */
  readonly timeRange?: { readonly fromMs: number; readonly toMs: number };
}

/** What `createRuntime<Engine>` takes as an engine module type: anything with a `handle`. */
export interface EngineShape {
  handle(request: never, context: never): unknown;
}

/**
 * The result of an engine module's `handle`, awaited: what `Runtime.search` resolves with.
 * `EngineResult<typeof import('./engine.js')>`; `unknown` for a type without `handle`.
 */
export type EngineResult<Engine> = Engine extends { handle(request: never, context: never): infer R }
  ? Awaited<R>
  : unknown;

/** The request body an engine module's `handle` takes (`EngineRequest<Body>`): what `search` takes as `body`. */
export type EngineBody<Engine> = Engine extends {
  handle(request: EngineRequest<infer Body>, context: never): unknown;
}
  ? Body
  : unknown;

/** The shape of an engine module. */
export interface EngineModule<Body = unknown, Result = unknown> {
  /**
   * True when the engine searches writable indices (created with `PUT /{index}`, written with `_bulk`):
   * its `init` then gets `writableIndices`, and `validate` is called with the engine's own indices only
   * (the runtime checks the names of writable ones). Without it the index and bulk APIs answer 400.
   */
  readonly writableIndices?: boolean;
  prepare?(
    context: EnginePrepareContext,
  ): EngineDescription | undefined | Promise<EngineDescription | undefined>;
  init?(context: EngineInitContext): void | Promise<void>;
  /** Main thread, on the request path: throw an `EngineRequestError` for a request the engine would refuse. Must be cheap. */
  validate?(request: EngineRequest<Body>): void;
  /**
   * Main thread, on the request path, after `validate`: the request's query text and the time range
   * it reads, for the scheduler's priority rules. Must be cheap and must not throw for a request that
   * passed `validate`. `nowMs` is the clock the rules' time windows use (epoch ms).
   */
  queryAttributes?(request: EngineRequest<Body>, nowMs: number): QueryAttributes;
  handle(request: EngineRequest<Body>, context: TaskContext): Result | Promise<Result>;
}
