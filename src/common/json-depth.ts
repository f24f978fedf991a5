/**
 * Object and array nesting of a JSON value, counted without recursion (a value nested thousands deep
 * cannot overflow the stack): a scalar is 0, `{}` or `[]` is 1, `{"a": [1]}` is 2.
 *
 * `stopAbove` bounds the walk: once a value deeper than `stopAbove` is found, that depth (the first
 * one over, `stopAbove + 1`) is returned without looking further. Default: walk everything.
 */
export function jsonDepth(value: unknown, stopAbove = Number.POSITIVE_INFINITY): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > deepest) deepest = depth;
    if (depth > stopAbove) return depth;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return deepest;
}
