/**
 * The checks every option parser uses: one place for "an integer in min..max", "a ratio in (0, 1]",
 * "one word of a set" and the rest, so that each option's error reads the same wherever it is checked:
 * `<path> <expectation>; received <value>` (`InvalidArgumentError`, or the error `makeOptionChecks` is
 * given, e.g. `InvalidSandboxError` for sandbox fields).
 *
 * Each check takes the field's `path` (`options.intervalMs`, `lanes[1].workers`, `--interval-ms`) and
 * the value, returns the value checked (a word in its canonical spelling, `-0` as `0`), and, given a
 * `fallback`, returns it for an absent (`undefined`) value. A check never coerces: `"1"` is not a
 * number, `1` is not a boolean; `NaN` and `±Infinity` are never numbers in a range. CLI flags, whose
 * values are text, have their own two checks (`integerText`, `ratioText`).
 *
 * The case rule: words of a set (modes, `"never"`) are matched in any case and returned in the set's
 * own (lower-case) spelling, as OpenSearch matches `resiliency_mode` (`ResiliencyMode.fromName`,
 * `equalsIgnoreCase`). Elasticsearch URL parameters and wire formats keep their own rules (`refresh`,
 * time values) and are not checked here.
 */
import { InvalidArgumentError, InvalidSandboxError } from '../errors.js';
import { parseTimeValueMs } from './time-value.js';
import { nearName } from './near-name.js';

/** Makes the error a failed check throws: `path` names the field, `received` is the value. */
export type OptionErrorFactory = (path: string, expectation: string, received: unknown) => Error;

/** The checks, bound to one error class. */
export interface OptionChecks {
  /** An integer in `min..max` (both included): `must be an integer in 1..64`. */
  integerIn(path: string, value: unknown, min: number, max: number, fallback?: number): number;
  /** An integer `>= min`, with no upper bound but `Number.MAX_SAFE_INTEGER`: `must be an integer >= 1`. */
  integerAtLeast(path: string, value: unknown, min: number, fallback?: number): number;
  /** A finite number in `min..max` (both included): `must be a number in 0..1`. */
  numberIn(path: string, value: unknown, min: number, max: number, fallback?: number): number;
  /** A finite number `> 0`: `must be a positive finite number`. */
  positiveNumber(path: string, value: unknown, fallback?: number): number;
  /** A finite number `>= 0`: `must be a non-negative finite number`. */
  nonNegativeNumber(path: string, value: unknown, fallback?: number): number;
  /** A ratio in (0, 1]: `must be a ratio in (0, 1]`. */
  ratio(path: string, value: unknown, fallback?: number): number;
  /** A ratio in [0, 1]: `must be a ratio in [0, 1]`. */
  ratioOrZero(path: string, value: unknown, fallback?: number): number;
  /** `true` or `false`: `must be true or false` (or `expectation`). */
  boolean(path: string, value: unknown, fallback?: boolean, expectation?: string): boolean;
  /**
   * One word of `words`, in any case; returns the word as `words` spells it:
   * `must be one of enforced, soft, monitor` (or `expectation`).
   */
  oneOf<W extends string>(
    path: string,
    value: unknown,
    words: readonly W[],
    fallback?: W,
    expectation?: string,
  ): W;
  /** A string (`nonEmpty`: of at least one character): `must be a string`, `must be a non-empty string`. */
  string(
    path: string,
    value: unknown,
    options?: { readonly nonEmpty?: boolean; readonly fallback?: string },
  ): string;
  /** An Elasticsearch time value (`"1s"`, `"500ms"`, `-1`) in ms (`common/time-value.ts`). */
  timeValueMs(path: string, value: unknown, fallback?: number): number;
  /** A CLI flag's text that is an integer in `min..max`: `--interval-ms must be an integer in 10..60000`. */
  integerText(path: string, text: string | undefined, min: number, max: number): number | undefined;
  /** A CLI flag's text that is a ratio in (0, 1]: `--cpu-limit must be a ratio in (0, 1]`. */
  ratioText(path: string, text: string | undefined): number | undefined;
}

const INTEGER_TEXT = /^-?\d+$/;
const DECIMAL_TEXT = /^\d*\.?\d+$/;

/** The checks throwing the errors `fail` makes. */
export function makeOptionChecks(fail: OptionErrorFactory): OptionChecks {
  const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
  // -0 passes `>= 0` but prints as 0 and divides as -Infinity: hand back a plain 0.
  const plain = (value: number): number => (value === 0 ? 0 : value);
  return {
    integerIn(path, value, min, max, fallback) {
      if (value === undefined && fallback !== undefined) return fallback;
      if (!isNumber(value) || !Number.isInteger(value) || value < min || value > max) {
        throw fail(path, `must be an integer in ${min}..${max}`, value);
      }
      return plain(value);
    },
    integerAtLeast(path, value, min, fallback) {
      if (value === undefined && fallback !== undefined) return fallback;
      if (!isNumber(value) || !Number.isSafeInteger(value) || value < min) {
        throw fail(path, `must be an integer >= ${min}`, value);
      }
      return plain(value);
    },
    numberIn(path, value, min, max, fallback) {
      if (value === undefined && fallback !== undefined) return fallback;
      if (!isNumber(value) || value < min || value > max)
        throw fail(path, `must be a number in ${min}..${max}`, value);
      return plain(value);
    },
    positiveNumber(path, value, fallback) {
      if (value === undefined && fallback !== undefined) return fallback;
      if (!isNumber(value) || !(value > 0)) throw fail(path, 'must be a positive finite number', value);
      return value;
    },
    nonNegativeNumber(path, value, fallback) {
      if (value === undefined && fallback !== undefined) return fallback;
      if (!isNumber(value) || value < 0) throw fail(path, 'must be a non-negative finite number', value);
      return plain(value);
    },
    ratio(path, value, fallback) {
      if (value === undefined && fallback !== undefined) return fallback;
      if (!isNumber(value) || !(value > 0 && value <= 1))
        throw fail(path, 'must be a ratio in (0, 1]', value);
      return value;
    },
    ratioOrZero(path, value, fallback) {
      if (value === undefined && fallback !== undefined) return fallback;
      if (!isNumber(value) || !(value >= 0 && value <= 1))
        throw fail(path, 'must be a ratio in [0, 1]', value);
      return plain(value);
    },
    boolean(path, value, fallback, expectation = 'must be true or false') {
      if (value === undefined && fallback !== undefined) return fallback;
      if (typeof value !== 'boolean') throw fail(path, expectation, value);
      return value;
    },
    oneOf(path, value, words, fallback, expectation) {
      if (value === undefined && fallback !== undefined) return fallback;
      if (typeof value === 'string') {
        const lower = value.toLowerCase();
        for (const word of words) if (word.toLowerCase() === lower) return word;
      }
      throw fail(path, expectation ?? `must be one of ${words.join(', ')}`, value);
    },
    string(path, value, options = {}) {
      if (value === undefined && options.fallback !== undefined) return options.fallback;
      if (typeof value !== 'string' || (options.nonEmpty === true && value.length === 0)) {
        throw fail(
          path,
          options.nonEmpty === true ? 'must be a non-empty string' : 'must be a string',
          value,
        );
      }
      return value;
    },
    timeValueMs(path, value, fallback) {
      if (value === undefined && fallback !== undefined) return fallback;
      try {
        return parseTimeValueMs(value, path);
      } catch (error) {
        if (error instanceof InvalidArgumentError) throw fail(error.path, error.expectation, error.received);
        throw error;
      }
    },
    integerText(path, text, min, max) {
      if (text === undefined) return undefined;
      const n = Number(text);
      if (!INTEGER_TEXT.test(text) || n < min || n > max)
        throw fail(path, `must be an integer in ${min}..${max}`, text);
      return plain(n);
    },
    ratioText(path, text) {
      if (text === undefined) return undefined;
      const n = Number(text);
      if (!DECIMAL_TEXT.test(text) || !(n > 0 && n <= 1)) throw fail(path, 'must be a ratio in (0, 1]', text);
      return n;
    },
  };
}

/** The checks, throwing `InvalidArgumentError` (HTTP 400, `QS_INVALID_ARGUMENT`). */
export const optionChecks: OptionChecks = makeOptionChecks(
  (path, expectation, received) => new InvalidArgumentError(path, expectation, received),
);

/** The checks, throwing `InvalidSandboxError` (HTTP 400, `QS_INVALID_SANDBOX`): sandbox definitions. */
export const sandboxChecks: OptionChecks = makeOptionChecks(
  (path, expectation, received) => new InvalidSandboxError(path, expectation, received),
);

/**
 * Joins a string flag and a negative number after it (`--spare-workers -1` → `--spare-workers=-1`)
 * for `node:util` `parseArgs`, which otherwise refuses the pair as ambiguous ("did you forget to
 * specify the option argument?"), so that the flag's own range check names it and the value. Only
 * tokens that read as a number (`-1`, `-0.5`) are joined; `--port --host` stays an error. With
 * `options`, only after string flags (for commands that take positionals); without, after any flag
 * (a boolean one then fails as "does not take an argument", as the loose number would have).
 */
export function joinNegativeValues(
  args: readonly string[],
  options?: Readonly<Record<string, { readonly type: 'string' | 'boolean' }>>,
): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const next = args[i + 1];
    const name = arg.startsWith('--') && !arg.includes('=') ? arg.slice(2) : undefined;
    if (
      name !== undefined &&
      (options === undefined || options[name]?.type === 'string') &&
      next !== undefined &&
      /^-\d/.test(next) &&
      Number.isFinite(Number(next))
    ) {
      out.push(`${arg}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}

/**
 * The error for arguments `node:util` `parseArgs` refused, naming them; for an unknown flag that is a
 * near miss of one of `flags` (`--prot`), it suggests that one (`did you mean --port?`).
 */
export function argumentsError(
  error: unknown,
  argv: readonly string[],
  flags: Readonly<Record<string, unknown>>,
): InvalidArgumentError {
  const message = error instanceof Error ? error.message : String(error);
  const unknown =
    (error as { code?: unknown }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
      ? /'--([^'=]+)/.exec(message)?.[1]
      : undefined;
  const near = unknown === undefined ? undefined : nearName(unknown, Object.keys(flags));
  return new InvalidArgumentError(
    'arguments',
    `are invalid (${message}${near === undefined ? '' : `; did you mean --${near}?`})`,
    argv.join(' '),
  );
}

/** `parseArgs` options declaring each of `names` a string flag (`{ port: { type: 'string' } }`). */
export function stringFlags(...names: string[]): Record<string, { readonly type: 'string' }> {
  return Object.fromEntries(names.map((n) => [n, { type: 'string' as const }]));
}
