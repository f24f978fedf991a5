/**
 * A compiled wildcard pattern: `*` matches any run of characters (also none); every other character
 * matches itself. Matching takes time linear in the value (plus the pattern): the pattern is split on
 * `*`, the first and last pieces are anchored at the ends, and the pieces between are found left to
 * right with `indexOf`, each at its earliest place. Taking the earliest place never loses a match, so
 * there is no backtracking (unlike a `.*` regular expression on inputs such as `aaaa…`).
 */
export class WildcardPattern {
  /** The pattern as written. */
  readonly source: string;
  /**
   * Characters before the first `*`: the whole length for a pattern without `*`, 0 for `*…`. Used
   * as the pattern's specificity (`dash_alice` > `dash_*` > `d*` > `*`).
   */
  readonly literalPrefixLength: number;
  /** Text before the first `*` (the whole pattern when there is none). */
  readonly head: string;
  /** Text after the last `*`; `null` when the pattern has no `*` (exact match). */
  readonly #tail: string | null;
  /** Non-empty pieces between the first and last `*`. */
  readonly #middle: readonly string[];
  /** Shortest value that can match: the total length of the literal pieces. */
  readonly #minLength: number;

  constructor(source: string) {
    const pieces = source.split('*');
    this.source = source;
    this.head = pieces[0]!;
    this.literalPrefixLength = this.head.length;
    if (pieces.length === 1) {
      this.#tail = null;
      this.#middle = [];
      this.#minLength = source.length;
    } else {
      this.#tail = pieces[pieces.length - 1]!;
      this.#middle = pieces.slice(1, -1).filter((piece) => piece.length > 0);
      this.#minLength = source.length - (pieces.length - 1);
    }
  }

  /** True when `value` matches the whole pattern. */
  matches(value: string): boolean {
    const tail = this.#tail;
    if (tail === null) return value === this.head;
    if (value.length < this.#minLength) return false;
    if (!value.startsWith(this.head) || !value.endsWith(tail)) return false;
    let from = this.head.length;
    const end = value.length - tail.length;
    const middle = this.#middle;
    for (let i = 0; i < middle.length; i++) {
      const piece = middle[i]!;
      const at = value.indexOf(piece, from);
      if (at === -1 || at + piece.length > end) return false;
      from = at + piece.length;
    }
    return true;
  }

  toString(): string {
    return this.source;
  }
}

/**
 * Compiles a wildcard pattern once, for matching many values.
 *
 * @param pattern any string; `*` is the only special character (`?`, `.`, `[` match themselves).
 * @example compileWildcardPattern('logs-*-2024').matches('logs-web-2024') // true
 */
export function compileWildcardPattern(pattern: string): WildcardPattern {
  return new WildcardPattern(pattern);
}
