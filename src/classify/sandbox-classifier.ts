import { InvalidArgumentError, SandboxForbiddenError } from '../errors.js';
import { ROOT_SANDBOX_ID, type Sandbox } from '../sandbox/sandbox.js';
import { compileWildcardPattern, type WildcardPattern } from './wildcard-pattern.js';

/** What a request offers for classification. */
export interface RequestAttributes {
  /** The authenticated user name; `undefined` for an anonymous request. */
  readonly user: string | undefined;
  /** The index names the request searches; may be empty. */
  readonly indices: readonly string[];
}

/** A sandbox with its patterns compiled; an empty list means the attribute is not named. */
interface CompiledSandbox {
  readonly sandbox: Sandbox;
  readonly userPatterns: readonly WildcardPattern[];
  readonly indexPatterns: readonly WildcardPattern[];
}

/** `matchScore` result for a sandbox that does not match. */
const NO_MATCH = -1;

/**
 * Binds requests to sandboxes by their selection attributes. Patterns are compiled once, here;
 * `classify` allocates nothing.
 *
 * Rules:
 * - A sandbox matches when every attribute it names matches (conjunction). `userPattern` matches a
 *   defined user that matches one of its patterns; `indicesPattern` matches when the request names
 *   at least one index and every index matches one of its patterns.
 * - A sandbox that names no attribute is never chosen implicitly (only by `resolveExplicit`).
 * - Among several matches the most specific wins: the sum over the named attributes of the literal
 *   prefix length of the matching pattern (the longest one that matches; for indices, the minimum of
 *   that over the request's indices). Ties go to the higher priority, then the smaller id (by UTF-16
 *   code units), so the choice is deterministic.
 * - No match: the root sandbox.
 */
export class SandboxClassifier {
  readonly #root: Sandbox;
  readonly #byId: ReadonlyMap<string, CompiledSandbox>;
  /** Sandboxes that name at least one attribute, in the order given. */
  readonly #candidates: readonly CompiledSandbox[];

  /**
   * @param sandboxes the whole tree, root included (as `parseSandboxDefinitions` returns it).
   * @throws InvalidArgumentError when the root is missing or two sandboxes share an id.
   */
  constructor(sandboxes: readonly Sandbox[]) {
    const byId = new Map<string, CompiledSandbox>();
    const candidates: CompiledSandbox[] = [];
    for (const sandbox of sandboxes) {
      if (byId.has(sandbox.id))
        throw new InvalidArgumentError('sandboxes', 'must have unique ids', sandbox.id);
      const compiled: CompiledSandbox = {
        sandbox,
        userPatterns: sandbox.selectionAttributes.userPattern.map(compileWildcardPattern),
        indexPatterns: sandbox.selectionAttributes.indicesPattern.map(compileWildcardPattern),
      };
      byId.set(sandbox.id, compiled);
      if (compiled.userPatterns.length > 0 || compiled.indexPatterns.length > 0) candidates.push(compiled);
    }
    const root = byId.get(ROOT_SANDBOX_ID);
    if (root === undefined) {
      throw new InvalidArgumentError('sandboxes', `must include the root sandbox "${ROOT_SANDBOX_ID}"`, [
        ...byId.keys(),
      ]);
    }
    this.#root = root.sandbox;
    this.#byId = byId;
    this.#candidates = candidates;
  }

  /** The sandbox with this id, if any. */
  get(id: string): Sandbox | undefined {
    return this.#byId.get(id)?.sandbox;
  }

  /** The sandbox a request belongs to by its attributes (see the class rules); the root when none matches. */
  classify(attributes: RequestAttributes): Sandbox {
    const { user, indices } = attributes;
    let best: Sandbox = this.#root;
    let bestScore = NO_MATCH;
    const candidates = this.#candidates;
    for (let i = 0; i < candidates.length; i++) {
      const candidate = candidates[i]!;
      const score = matchScore(candidate, user, indices);
      if (score === NO_MATCH) continue;
      const sandbox = candidate.sandbox;
      if (
        score > bestScore ||
        (score === bestScore &&
          (sandbox.priority > best.priority || (sandbox.priority === best.priority && sandbox.id < best.id)))
      ) {
        best = sandbox;
        bestScore = score;
      }
    }
    return best;
  }

  /**
   * Honours an explicit sandbox choice (such as an `x-sandbox-id` header): the sandbox must exist
   * and the request's attributes must match every attribute it names. The root is always allowed; a
   * sandbox that names no attribute is allowed to every request.
   *
   * @throws SandboxForbiddenError whose message names the sandbox, the attribute that failed and the
   *   value that did not match (or that the sandbox does not exist).
   */
  resolveExplicit(sandboxId: string, attributes: RequestAttributes): Sandbox {
    const compiled = this.#byId.get(sandboxId);
    if (compiled === undefined) {
      throw new SandboxForbiddenError(sandboxId, `sandbox ${JSON.stringify(sandboxId)} does not exist`);
    }
    const reason = mismatchReason(compiled, attributes);
    if (reason !== undefined) {
      throw new SandboxForbiddenError(
        sandboxId,
        `request may not use sandbox ${JSON.stringify(sandboxId)}: ${reason}`,
      );
    }
    return compiled.sandbox;
  }
}

/** Literal prefix length of the most specific pattern that matches `value`, or NO_MATCH. */
function bestPrefix(patterns: readonly WildcardPattern[], value: string): number {
  let best = NO_MATCH;
  for (let i = 0; i < patterns.length; i++) {
    const pattern = patterns[i]!;
    if (pattern.literalPrefixLength > best && pattern.matches(value)) best = pattern.literalPrefixLength;
  }
  return best;
}

/** Specificity of a match (>= 0), or NO_MATCH. */
function matchScore(compiled: CompiledSandbox, user: string | undefined, indices: readonly string[]): number {
  let score = 0;
  if (compiled.userPatterns.length > 0) {
    if (user === undefined) return NO_MATCH;
    const prefix = bestPrefix(compiled.userPatterns, user);
    if (prefix === NO_MATCH) return NO_MATCH;
    score += prefix;
  }
  if (compiled.indexPatterns.length > 0) {
    if (indices.length === 0) return NO_MATCH;
    let weakest = Number.POSITIVE_INFINITY;
    for (let i = 0; i < indices.length; i++) {
      const prefix = bestPrefix(compiled.indexPatterns, indices[i]!);
      if (prefix === NO_MATCH) return NO_MATCH;
      if (prefix < weakest) weakest = prefix;
    }
    score += weakest;
  }
  return score;
}

/** Why the request does not match the sandbox's attributes, or undefined when it does. */
function mismatchReason(compiled: CompiledSandbox, attributes: RequestAttributes): string | undefined {
  const { userPattern, indicesPattern } = compiled.sandbox.selectionAttributes;
  if (compiled.userPatterns.length > 0) {
    const patterns = `userPattern ${JSON.stringify(userPattern)}`;
    if (attributes.user === undefined)
      return `it requires a user matching ${patterns}; the request has no user`;
    if (bestPrefix(compiled.userPatterns, attributes.user) === NO_MATCH) {
      return `user ${JSON.stringify(attributes.user)} does not match ${patterns}`;
    }
  }
  if (compiled.indexPatterns.length > 0) {
    const patterns = `indicesPattern ${JSON.stringify(indicesPattern)}`;
    if (attributes.indices.length === 0)
      return `it requires indices matching ${patterns}; the request names none`;
    for (const index of attributes.indices) {
      if (bestPrefix(compiled.indexPatterns, index) === NO_MATCH) {
        return `index ${JSON.stringify(index)} does not match ${patterns}`;
      }
    }
  }
  return undefined;
}
