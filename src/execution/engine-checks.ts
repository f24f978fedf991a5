/**
 * What admission asks of the engine and the writable indices: the searchable index names, the
 * engine's `validate`, and the text and time range its `queryAttributes` gives the query-priority
 * rules.
 */
import {
  clientErrorStatusOf,
  EngineFailureError,
  EngineRequestError,
  isQuerySandboxError,
} from '../errors.js';
import type { IndexService } from '../indices/index-service.js';
import type { EngineModule, EngineRequest } from '../pool/engine-module.js';
import type { RuntimeLogger } from '../runtime-logger.js';
import { ROOT_SANDBOX_ID, type Sandbox } from '../sandbox/sandbox.js';
import {
  MAX_MATCH_TEXT,
  type PriorityAttributes,
  priorityOf,
  type QueryPriorityConfig,
} from '../scheduler/query-priority.js';

export class EngineChecks {
  readonly #engine: EngineModule;
  /** The engine's own indices (`undefined`: it lists none). */
  readonly #indices: readonly string[] | undefined;
  readonly #writable: IndexService | undefined;
  readonly #log: RuntimeLogger;

  constructor(
    engine: EngineModule,
    indices: readonly string[] | undefined,
    writable: IndexService | undefined,
    log: RuntimeLogger,
  ) {
    this.#engine = engine;
    this.#indices = indices;
    this.#writable = writable;
    this.#log = log;
  }

  /** The engine's indices followed by the writable ones (`undefined`: the engine lists none). */
  searchableIndices(): readonly string[] | undefined {
    // Read on every search: the service rebuilds the list only when the writable indices change.
    return this.#writable === undefined ? this.#indices : this.#writable.searchableIndices(this.#indices);
  }

  /**
   * Runs the engine's `validate` on the request (only the engine's own index names); a plain error
   * tagged with a 4xx `statusCode` becomes an EngineRequestError, another an EngineFailureError.
   */
  validate(request: EngineRequest): void {
    const owned = this.#engineOwned(request);
    try {
      this.#engine.validate?.(owned);
    } catch (error) {
      if (isQuerySandboxError(error)) throw error;
      const e = error as { type?: unknown; message?: unknown } | undefined;
      const status = clientErrorStatusOf(error);
      if (status !== undefined) {
        throw new EngineRequestError(
          typeof e?.type === 'string' ? e.type : 'illegal_argument_exception',
          String(e?.message),
          status,
        );
      }
      throw new EngineFailureError(`engine failure in validate: ${String(e?.message ?? error)}`, {
        cause: error,
      });
    }
  }

  /** The request as the engine's `validate` checks it: only the engine's own index names. */
  #engineOwned(request: EngineRequest): EngineRequest {
    const writable = this.#writable;
    if (writable === undefined || !request.indices.some((name) => writable.has(name))) return request;
    return { ...request, indices: request.indices.filter((name) => !writable.has(name)) };
  }

  /** The task's priority: the first matching query-priority rule, else its sandbox's (see query-priority.ts). */
  priorityOf(
    config: QueryPriorityConfig,
    request: EngineRequest,
    user: string | undefined,
    sandbox: Sandbox,
  ): number {
    const isRoot = sandbox.id === ROOT_SANDBOX_ID;
    if (!config.enabled || config.rules.length === 0)
      return isRoot && config.enabled ? config.defaultPriority : sandbox.priority;
    const nowMs = Date.now();
    let text: string | undefined;
    let timeRange: PriorityAttributes['timeRange'];
    try {
      const described = this.#engine.queryAttributes?.(request, nowMs);
      text = described?.text;
      timeRange = described?.timeRange;
    } catch (error) {
      // The hook must not throw for a validated request; if it does, rules see the raw body.
      this.#log.warn({ error: String(error) }, 'engine queryAttributes failed');
    }
    text ??= JSON.stringify(request.body ?? {}) ?? '';
    // Rules read a bounded prefix: matching runs here, on the main thread, for every request.
    if (text.length > MAX_MATCH_TEXT) text = text.slice(0, MAX_MATCH_TEXT);
    const attributes: PriorityAttributes = {
      text,
      timeRange,
      user,
      indices: request.indices,
      sandboxId: sandbox.id,
    };
    return priorityOf(config, attributes, sandbox.priority, isRoot, nowMs).priority;
  }
}
