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
  /** The `classify` call that last scored it (de-duplicates candidates found along two paths). */
  seenAt: number;
}

/**
 * The patterns' literal heads (the text before the first `*`), grouped by length: a value can only
 * match a pattern whose head is one of its prefixes, so `walk` looks up the value's prefix of each
 * head length present (a handful of lengths, one hash lookup each) and visits only those sandboxes.
 * Cost: O(distinct head lengths) lookups plus the sandboxes found, whatever the sandbox count. (A
 * character trie did the same with one lookup per character and ran 4x slower at 1,000 sandboxes,
 * its nodes no longer in cache.)
 */
class HeadIndex {
  /** Head length -> head -> sandboxes; lengths ascending. */
  readonly #byLength = new Map<number, Map<string, CompiledSandbox[]>>();
  #lengths: number[] = [];

  add(head: string, sandbox: CompiledSandbox): void {
    let byHead = this.#byLength.get(head.length);
    if (byHead === undefined) {
      byHead = new Map();
      this.#byLength.set(head.length, byHead);
      this.#lengths = [...this.#byLength.keys()].sort((a, b) => a - b);
    }
    const list = byHead.get(head);
    if (list === undefined) byHead.set(head, [sandbox]);
    else if (!list.includes(sandbox)) list.push(sandbox);
  }

  /** Calls `visit` for each sandbox with a head that is a prefix of `value`. */
  walk(value: string, visit: (sandbox: CompiledSandbox) => void): void {
    const lengths = this.#lengths;
    for (let i = 0; i < lengths.length; i++) {
      const length = lengths[i]!;
      if (length > value.length) break;
      const list = this.#byLength.get(length)!.get(length === value.length ? value : value.slice(0, length));
      if (list === undefined) continue;
      for (let j = 0; j < list.length; j++) visit(list[j]!);
    }
  }
}

/** `matchScore` result for a sandbox that does not match. */
const NO_MATCH = -1;

/**
 * Binds requests to sandboxes by their selection attributes. Patterns are compiled once, here, and
 * indexed by their literal heads, so `classify` looks only at sandboxes whose patterns can match:
 * its cost does not grow with the number of sandboxes (except those whose patterns start with `*`,
 * which every request must try).
 *
 * Rules:
 * - A sandbox matches when every attribute it names matches (conjunction). `userPattern` matches a
 *   defined user that matches one of its patterns; `indicesPattern` matches when the request names
 *   at least one index and every index matches one of its patterns.
 * - A sandbox that names no attribute is never chosen: it serves as a parent that sums up its
 *   children's usage (`resolveExplicit` refuses it too).
 * - Among several matches the most specific wins: the sum over the named attributes of the literal
 *   prefix length of the matching pattern (the longest one that matches; for indices, the minimum of
 *   that over the request's indices). Ties go to the higher priority, then the smaller id (by UTF-16
 *   code units), so the choice is deterministic.
 * - No match: the root sandbox.
 */
export class SandboxClassifier {
  readonly #root: Sandbox;
  readonly #byId: ReadonlyMap<string, CompiledSandbox>;
  /** Sandboxes naming `userPattern`, by the heads of their user patterns. */
  readonly #byUserHead = new HeadIndex();
  /** Sandboxes naming only `indicesPattern`, by the heads of their index patterns. */
  readonly #byIndexHead = new HeadIndex();
  #epoch = 0;

  /**
   * @param sandboxes the whole tree, root included (as `parseSandboxDefinitions` returns it).
   * @throws InvalidArgumentError when the root is missing or two sandboxes share an id.
   */
  constructor(sandboxes: readonly Sandbox[]) {
    const byId = new Map<string, CompiledSandbox>();
    for (const sandbox of sandboxes) {
      if (byId.has(sandbox.id))
        throw new InvalidArgumentError('sandboxes', 'must have unique ids', sandbox.id);
      const compiled: CompiledSandbox = {
        sandbox,
        userPatterns: sandbox.selectionAttributes.userPattern.map(compileWildcardPattern),
        indexPatterns: sandbox.selectionAttributes.indicesPattern.map(compileWildcardPattern),
        seenAt: 0,
      };
      byId.set(sandbox.id, compiled);
      // A sandbox that names users can only match a request whose user starts with one of its heads;
      // one that names only indices, a request whose every index (so its first) starts with one.
      if (compiled.userPatterns.length > 0) {
        for (const p of compiled.userPatterns) this.#byUserHead.add(p.head, compiled);
      } else {
        for (const p of compiled.indexPatterns) this.#byIndexHead.add(p.head, compiled);
      }
    }
    const root = byId.get(ROOT_SANDBOX_ID);
    if (root === undefined) {
      throw new InvalidArgumentError('sandboxes', `must include the root sandbox "${ROOT_SANDBOX_ID}"`, [
        ...byId.keys(),
      ]);
    }
    this.#root = root.sandbox;
    this.#byId = byId;
  }

  /** The sandbox with this id, if any. */
  get(id: string): Sandbox | undefined {
    return this.#byId.get(id)?.sandbox;
  }

  /** The sandbox a request belongs to by its attributes (see the class rules); the root when none matches. */
  classify(attributes: RequestAttributes): Sandbox {
    const { user, indices } = attributes;
    const epoch = ++this.#epoch;
    let best: Sandbox = this.#root;
    let bestScore = NO_MATCH;
    // The order candidates are visited in does not matter: the winner is the maximum of a total order.
    const visit = (candidate: CompiledSandbox): void => {
      if (candidate.seenAt === epoch) return;
      candidate.seenAt = epoch;
      const score = matchScore(candidate, user, indices);
      if (score === NO_MATCH) return;
      const sandbox = candidate.sandbox;
      if (
        score > bestScore ||
        (score === bestScore &&
          (sandbox.priority > best.priority || (sandbox.priority === best.priority && sandbox.id < best.id)))
      ) {
        best = sandbox;
        bestScore = score;
      }
    };
    if (user !== undefined) this.#byUserHead.walk(user, visit);
    if (indices.length > 0) this.#byIndexHead.walk(indices[0]!, visit);
    return best;
  }

  /**
   * Honours an explicit sandbox choice (such as an `x-sandbox-id` header) only where the request has
   * earned it: the sandbox names at least one selection attribute and the request's own attributes
   * match every attribute it names, or plain classification (`classify`) would put the request in it
   * anyway. A sandbox that names no attribute, the root included, is therefore never reached by naming
   * it: naming `_root` cannot lift a request out of the sandbox its attributes bind it to (the root
   * has no limits).
   *
   * @throws SandboxForbiddenError whose message names the sandbox and why: it does not exist, it names
   *   no selection attributes (with the sandbox the request belongs to), or the attribute that failed
   *   and the value that did not match.
   */
  resolveExplicit(sandboxId: string, attributes: RequestAttributes): Sandbox {
    const compiled = this.#byId.get(sandboxId);
    if (compiled === undefined) {
      throw new SandboxForbiddenError(sandboxId, `sandbox ${JSON.stringify(sandboxId)} does not exist`);
    }
    const classified = this.classify(attributes);
    if (classified === compiled.sandbox) return classified;
    if (compiled.userPatterns.length === 0 && compiled.indexPatterns.length === 0) {
      const what = sandboxId === ROOT_SANDBOX_ID ? 'the root sandbox' : 'it';
      throw new SandboxForbiddenError(
        sandboxId,
        `request may not use sandbox ${JSON.stringify(sandboxId)}: ${what} names no selection attributes, so ` +
          `only requests that match no other sandbox run in it; this request belongs to sandbox ${JSON.stringify(classified.id)}`,
      );
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
