/**
 * JSON request bodies that keep the text of a number JavaScript cannot hold.
 *
 * `JSON.parse` turns a number literal beyond the range of a double (`1e309`, a 400-digit integer)
 * into `Infinity`, and every later message then shows `Infinity`, or `null` once stringified: not what
 * the client sent. Such a literal is refused here instead, with the field's path and the literal as
 * written: `size must be a number within the range of a double (at most 1.7976931348623157e308 in
 * magnitude); received 1e309`. Elasticsearch refuses these too (Jackson: "Numeric value (1e309) out of
 * range"), where the field is a number.
 *
 * Cost: one regular-expression test of the text per body; the exact scan runs only when that test
 * finds a literal that could overflow (an exponent of three digits or more, or 200 digits in a row).
 */
import { InvalidArgumentError, VerbatimText } from '../errors.js';

/** A literal can only overflow with an exponent of 3+ digits or a mantissa of 200+ digits. */
const MAYBE_OVERFLOW = /[eE]\+?\d{3}|\d{200}/;
const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * Parses `text` as JSON (the caller has ruled out an empty body).
 * @throws SyntaxError (JSON.parse's) for text that is not JSON; InvalidArgumentError naming the path
 *   (`query.range.n.gt`, `items[2]`, or `body` for a bare number) and the literal, for a number out of
 *   the range of a double.
 */
export function parseJsonBody(text: string): unknown {
  const value: unknown = JSON.parse(text);
  if (!MAYBE_OVERFLOW.test(text)) return value;
  const overflow = findOverflow(text);
  if (overflow !== undefined) {
    throw new InvalidArgumentError(
      overflow.path,
      'must be a number within the range of a double (at most 1.7976931348623157e308 in magnitude)',
      new VerbatimText(overflow.literal),
    );
  }
  return value;
}

interface Frame {
  readonly kind: 'object' | 'array';
  /** Where this container sits in its parent (undefined for the top). */
  readonly segment: string | number | undefined;
  key: string | undefined;
  index: number;
}

/** The first number literal in `text` (valid JSON) that overflows a double, with its path. */
export function findOverflow(text: string): { path: string; literal: string } | undefined {
  const frames: Frame[] = [];
  let expectKey = false;
  const here = (): string | number | undefined => {
    const top = frames[frames.length - 1];
    if (top === undefined) return undefined;
    return top.kind === 'object' ? top.key : top.index;
  };
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let j = i + 1;
      while (j < text.length && text.charCodeAt(j) !== 0x22) j += text.charCodeAt(j) === 0x5c ? 2 : 1;
      const top = frames[frames.length - 1];
      if (top?.kind === 'object' && expectKey) {
        top.key = JSON.parse(text.slice(i, j + 1)) as string;
        expectKey = false;
      }
      i = j + 1;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      frames.push({ kind: c === 0x7b ? 'object' : 'array', segment: here(), key: undefined, index: 0 });
      expectKey = c === 0x7b;
      i++;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      frames.pop();
      expectKey = false;
      i++;
    } else if (c === 0x2c /* , */) {
      const top = frames[frames.length - 1];
      if (top?.kind === 'object') expectKey = true;
      else if (top !== undefined) top.index++;
      i++;
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      NUMBER.lastIndex = i;
      const literal = NUMBER.exec(text)![0];
      if (!Number.isFinite(Number(literal))) {
        const segments = [...frames.slice(1).map((f) => f.segment), here()];
        return { path: formatPath(segments), literal };
      }
      i += literal.length;
    } else {
      i++; // whitespace, ':', and the letters of true, false, null
    }
  }
  return undefined;
}

function formatPath(segments: ReadonlyArray<string | number | undefined>): string {
  let path = '';
  for (const s of segments) {
    if (s === undefined) continue;
    path += typeof s === 'number' ? `[${s}]` : path === '' ? s : `.${s}`;
  }
  return path === '' ? 'body' : path;
}
