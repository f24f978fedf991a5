/**
 * Resolves an index expression from a request path (`spam-1`, `spam-*`, `easy-ham-1,spam-*`, `_all`,
 * `*`) against the concrete index names an engine serves, as OpenSearch does: a concrete name that
 * does not exist is an error (404), a wildcard that matches nothing contributes nothing.
 */
import { IndexNotFoundError, InvalidArgumentError } from '../errors.js';
import { compileWildcardPattern } from './wildcard-pattern.js';

/** Longest expression accepted, characters. */
const MAX_EXPRESSION_LENGTH = 4096;

/**
 * Concrete index names for `expression`, in the engine's order, without duplicates.
 * @param known the engine's indices, or undefined when the engine does not list them (then the
 *   expression's parts are passed through as given, wildcards included).
 * @throws IndexNotFoundError for a concrete name that is not known.
 * @throws InvalidArgumentError for an empty part or an over-long expression.
 */
export function resolveIndexExpression(expression: string, known: readonly string[] | undefined): string[] {
  if (expression.length > MAX_EXPRESSION_LENGTH) {
    throw new InvalidArgumentError(
      'index',
      `must be at most ${MAX_EXPRESSION_LENGTH} characters`,
      expression,
    );
  }
  const parts = expression.split(',');
  for (const part of parts) {
    if (part.length === 0)
      throw new InvalidArgumentError('index', 'must not contain an empty name', expression);
  }
  if (known === undefined) return [...new Set(parts)];
  const wanted = new Set<string>();
  for (const part of parts) {
    if (part === '_all' || part === '*') {
      for (const name of known) wanted.add(name);
    } else if (part.includes('*')) {
      const pattern = compileWildcardPattern(part);
      for (const name of known) if (pattern.matches(name)) wanted.add(name);
    } else if (known.includes(part)) {
      wanted.add(part);
    } else {
      throw new IndexNotFoundError(part);
    }
  }
  return known.filter((name) => wanted.has(name));
}

/** Expressions kept per list of known indices by `resolveIndexExpressionCached`; the cache is emptied when full. */
const MAX_CACHED_EXPRESSIONS = 1024;
const resolvedByKnown = new WeakMap<readonly string[], Map<string, readonly string[]>>();
/** The cache key of an engine that does not list its indices. */
const UNLISTED: readonly string[] = [];

/**
 * `resolveIndexExpression` for the request path: the same answer, frozen, kept per `known` list (by
 * identity: the engine's list, or the one the index service rebuilds when writable indices change,
 * is never changed in place; an engine that lists none has one list of its own) so that a search
 * does not resolve its expression again. At most
 * `MAX_CACHED_EXPRESSIONS` expressions are kept per list. Errors are not kept: each call throws anew.
 * @throws as `resolveIndexExpression`.
 */
export function resolveIndexExpressionCached(
  expression: string,
  known: readonly string[] | undefined,
): readonly string[] {
  const key = known ?? UNLISTED;
  let cache = resolvedByKnown.get(key);
  if (cache === undefined) {
    cache = new Map();
    resolvedByKnown.set(key, cache);
  }
  const hit = cache.get(expression);
  if (hit !== undefined) return hit;
  const resolved = Object.freeze(resolveIndexExpression(expression, known));
  if (cache.size >= MAX_CACHED_EXPRESSIONS) cache.clear();
  cache.set(expression, resolved);
  return resolved;
}
