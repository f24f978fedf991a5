/**
 * The known name a misspelt one most likely meant: one that differs only in letter case, or by one
 * inserted, deleted or changed character. For "did you mean" hints in error messages.
 */

/** The first of `known` that `name` is a near miss of, or undefined (also for an exact match). */
export function nearName(name: string, known: Iterable<string>): string | undefined {
  for (const k of known) {
    if (k !== name && (k.toLowerCase() === name.toLowerCase() || editDistanceIsOne(k, name))) return k;
  }
  return undefined;
}

/** True when `a` becomes `b` by one insertion, deletion or substitution. */
function editDistanceIsOne(a: string, b: string): boolean {
  if (Math.abs(a.length - b.length) > 1 || a === b) return false;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  if (a.length === b.length) return a.slice(i + 1) === b.slice(i + 1);
  return a.length > b.length ? a.slice(i + 1) === b.slice(i) : a.slice(i) === b.slice(i + 1);
}
