/**
 * The grace a sandbox gives its tasks between a soft cancellation (the task's signal fires) and a
 * hard one (its worker is terminated and replaced, so the engine's `init` runs again). A sandbox
 * field, `cancellationGraceMs`: an integer number of ms in 0..3600000, or `"never"` (in any case, the
 * rule of `common/option-checks.ts` for words; stored as `"never"`) for engines that
 * cannot be interrupted safely (their tasks are asked to stop and then left to finish). Absent: the
 * parent's value, up to the root's; absent on the root too: the runtime's `graceIntervals ×
 * intervalMs` (200 ms by default).
 */
import { InvalidSandboxError } from '../errors.js';
import { ROOT_SANDBOX_ID, type Sandbox } from './sandbox.js';

/** A sandbox's own grace: ms, or `never`. */
export type CancellationGrace = number | 'never';

/** The longest grace in ms (one hour). */
export const MAX_CANCELLATION_GRACE_MS = 3_600_000;

/**
 * Checks a `cancellationGraceMs` value; `undefined` (absent) stays `undefined`.
 * @throws InvalidSandboxError naming `path` and the value.
 */
export function parseCancellationGrace(value: unknown, path: string): CancellationGrace | undefined {
  if (value === undefined) return value;
  if (typeof value === 'string' && value.toLowerCase() === 'never') return 'never';
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < 0 ||
    value > MAX_CANCELLATION_GRACE_MS
  ) {
    throw new InvalidSandboxError(
      path,
      `must be an integer number of ms in 0..${MAX_CANCELLATION_GRACE_MS} or "never"`,
      value,
    );
  }
  return value;
}

/**
 * Every sandbox's effective grace in ms (`Infinity` for `never`): its own, else its nearest
 * ancestor's, else `defaultMs`.
 */
export function effectiveCancellationGrace(
  sandboxes: readonly Sandbox[],
  defaultMs: number,
): ReadonlyMap<string, number> {
  const byId = new Map(sandboxes.map((s) => [s.id, s]));
  const out = new Map<string, number>();
  const resolve = (s: Sandbox, depth: number): number => {
    const known = out.get(s.id);
    if (known !== undefined) return known;
    let ms: number;
    if (s.cancellationGraceMs !== undefined) {
      ms = s.cancellationGraceMs === 'never' ? Number.POSITIVE_INFINITY : s.cancellationGraceMs;
    } else {
      const parent = s.parentId === null ? undefined : byId.get(s.parentId);
      ms = parent === undefined || depth > 64 ? defaultMs : resolve(parent, depth + 1);
    }
    out.set(s.id, ms);
    return ms;
  };
  for (const s of sandboxes) resolve(s, 0);
  if (!out.has(ROOT_SANDBOX_ID)) out.set(ROOT_SANDBOX_ID, defaultMs);
  return out;
}
