/**
 * The page a search asks for (`from`, `size`), checked at the coordinator as the engine checks it, so
 * the coordinator can ask every shard for its best `from + size` hits from 0 and cut the page itself.
 */
import { EngineRequestError, formatReceived } from '../errors.js';

/** Largest `from + size` (OpenSearch's `index.max_result_window` default, as the engine's). */
export const MAX_RESULT_WINDOW = 10_000;
/** Default `size` (as the engine's). */
export const DEFAULT_SIZE = 10;

/**
 * `from` (default 0) and `size` (default 10) of a search body, checked as the engine checks them.
 * @throws EngineRequestError 400: `parsing_exception` for a bad `size` (0..10000) or `from` (>= 0),
 *   `illegal_argument_exception` when `from + size` is over 10000 (with the engine's messages).
 */
export function pageOf(body: Readonly<Record<string, unknown>>): { from: number; size: number } {
  const size = body['size'] ?? DEFAULT_SIZE;
  if (!Number.isInteger(size) || (size as number) < 0 || (size as number) > MAX_RESULT_WINDOW) {
    throw new EngineRequestError(
      'parsing_exception',
      `[size] must be an integer in 0..${MAX_RESULT_WINDOW}; received ${formatReceived(size)}`,
    );
  }
  const from = body['from'] ?? 0;
  if (!Number.isInteger(from) || (from as number) < 0) {
    throw new EngineRequestError(
      'parsing_exception',
      `[from] must be an integer >= 0; received ${formatReceived(from)}`,
    );
  }
  if ((from as number) + (size as number) > MAX_RESULT_WINDOW) {
    throw new EngineRequestError(
      'illegal_argument_exception',
      `Result window is too large, from + size must be less than or equal to: [${MAX_RESULT_WINDOW}] but was [${(from as number) + (size as number)}]`,
    );
  }
  return { from: from as number, size: size as number };
}
