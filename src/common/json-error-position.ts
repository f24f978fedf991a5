/**
 * Offset (UTF-16 code units) in `text` at which `JSON.parse(text)` failed with `error`.
 *
 * Uses the `position N` that V8 puts in most messages. Node 20's "Unexpected token" messages carry no
 * position, so for those the offset is found by bisecting: the shortest prefix of `text` whose parse
 * fails with something other than running out of input ends just after the offending character.
 * That costs O(log n) parses, on an error path only.
 */
export function jsonErrorPosition(text: string, error: Error): number {
  const reported = reportedPosition(error.message);
  if (reported !== undefined) return reported;
  if (error.message.includes('Unexpected end')) return text.length;
  let shortest = 0;
  let longest = text.length;
  while (shortest < longest) {
    const length = (shortest + longest) >>> 1;
    if (failsBeforeEnd(text.slice(0, length))) longest = length;
    else shortest = length + 1;
  }
  return Math.max(0, shortest - 1);
}

function reportedPosition(message: string): number | undefined {
  const match = /position (\d+)/.exec(message);
  return match === null ? undefined : Number(match[1]);
}

/** True when `prefix` holds a JSON error, as opposed to parsing or merely ending too soon. */
function failsBeforeEnd(prefix: string): boolean {
  try {
    JSON.parse(prefix);
    return false;
  } catch (error) {
    const message = (error as Error).message;
    if (message.includes('Unexpected end')) return false;
    const position = reportedPosition(message);
    return position === undefined || position < prefix.length;
  }
}

/** `JSON.parse`'s reason with where it went wrong: `<reason>, at line L column C, offset N`. */
export function describeJsonError(error: Error, text: string): string {
  const position = jsonErrorPosition(text, error);
  const before = text.slice(0, position);
  const line = before.split('\n').length;
  const column = position - before.lastIndexOf('\n');
  const reason = error.message.replace(/\s*\(line \d+ column \d+\)/, '');
  return `${reason}, at line ${line} column ${column}, offset ${position}`;
}
