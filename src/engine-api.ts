/**
 * The engine authors' entry (`query-sandbox/engine`): types only, so an engine module can be typed
 * without loading the runtime (its JavaScript is an empty module). The contract is in
 * `pool/engine-module.ts`; an engine refuses a request by throwing an error with a numeric
 * `statusCode` in 400..499 and, optionally, a `type` (e.g. `parsing_exception`).
 *
 * ```ts
 * import type { EngineRequest, TaskContext } from 'query-sandbox/engine';
 * export function handle(request: EngineRequest<{ q: string }>, ctx: TaskContext): { hits: string[] } { ... }
 * ```
 */
export type {
  EngineBody,
  EngineDescription,
  EngineInitContext,
  EngineModule,
  EnginePrepareContext,
  EngineRequest,
  EngineResult,
  EngineShape,
  QueryAttributes,
  TaskContext,
  WritableIndicesContext,
} from './pool/engine-module.js';
