/**
 * Query-priority rules, after Cortex's per-tenant `query_priority` (seed 003), applied per request at
 * admission: the first rule whose attributes match gives the task its priority.
 *
 * The configuration document (JSON, snake_case as in the seed):
 *
 * ```json
 * {
 *   "enabled": true,
 *   "default_priority": 0,
 *   "aging_ms_per_priority": 100,
 *   "lending": false,
 *   "max_queued_per_sandbox": 200,
 *   "sandbox_queue_limits": { "analysts": 50 },
 *   "priorities": [
 *     { "priority": 30, "reserved_workers": 1,
 *       "query_attributes": [{ "regex": "\"match\"", "user": "dash_*" }] },
 *     { "priority": 1,
 *       "query_attributes": [{ "time_window": { "start": "24h" } }] }
 *   ]
 * }
 * ```
 *
 * - `enabled` (boolean, default true): false leaves every task at its sandbox's priority and turns
 *   reservations off; the queue bounds still apply.
 * - `default_priority` (integer, default 0): the priority of an unmatched request bound to the root
 *   (catch-all) sandbox. An unmatched request bound to any other sandbox gets that sandbox's priority.
 * - `aging_ms_per_priority` (number in 0..86400000, or the string "Infinity" for strict priority;
 *   default: the runtime's `agingMsPerPriority`, 100): ms of waiting worth one priority point.
 * - `lending` (boolean, default false): an idle reserved worker may take one lower-priority task
 *   when nothing it is reserved for waits (work-conserving).
 * - `max_queued_per_sandbox` (integer >= 1, default: none beyond the runtime's global bound): tasks one
 *   sandbox may have waiting; `sandbox_queue_limits` overrides it per sandbox id.
 * - `priorities`: at most 64 entries, each `{priority, reserved_workers?, query_attributes?}`, with
 *   distinct integer priorities. An entry matches when one of its `query_attributes` matches; an
 *   attribute matches when every field it sets matches:
 *   - `regex`: RE2 syntax, unanchored, over the first 8,192 characters of the query text (the
 *     engine's `queryAttributes().text`, by default the compact JSON of the body). Matching is linear
 *     in the text (re2js): patterns that need backtracking (backreferences, lookaround) do not
 *     compile and are refused. At most 32 regexes in all.
 *   - `time_window: {start?, end?}`: durations before now (`"2h"`, `"1h30m"`, `"7d"`, `"0s"`; units
 *     ms s m h d w). The query's data range `[from, to]` must lie inside `[now − start, now − end]`,
 *     edges included. A query with no time restriction reads `[−∞, now]`, so it never matches a
 *     window with a `start`.
 *   - `user`, `index`, `sandbox`: a wildcard pattern or a list of them (`*` only, linear time); `index`
 *     matches when every index the request names matches one of the patterns.
 *   An entry without attributes matches nothing; it still holds its reservation.
 * - `reserved_workers`: a count (integer >= 1) or a fraction of the pool (0 < f < 1, rounded up),
 *   reserved for tasks of this entry's priority or higher. Reservations adding up to the whole pool
 *   are refused.
 */
import { RE2JS } from 're2js';
import { compileWildcardPattern, type WildcardPattern } from '../classify/wildcard-pattern.js';
import { InvalidArgumentError } from '../errors.js';
import { isPlainObject } from '../common/is-plain-object.js';
import { optionChecks } from '../common/option-checks.js';

/** The most entries in `priorities`. */
export const MAX_PRIORITY_RULES = 64;
/** The longest regex source, characters. */
export const MAX_REGEX_LENGTH = 1000;
/** The most `regex` attributes over all entries: each one reads the query text on the main thread. */
export const MAX_REGEXES = 32;
/**
 * How much of the query text the regexes read, characters: matching runs on the main thread for every
 * request, so its cost is bounded (RE2 is linear: about 0.03 to 0.26 µs a character here, so at most
 * about 2 ms per regex).
 */
export const MAX_MATCH_TEXT = 8192;
/** The largest finite `aging_ms_per_priority`: one day per priority point. */
export const MAX_AGING_MS = 86_400_000;
/** The most entries in `sandbox_queue_limits`. */
export const MAX_SANDBOX_QUEUE_LIMITS = 1000;
/** The most attributes per entry and patterns per attribute field. */
export const MAX_ATTRIBUTES = 16;

/** A validated configuration, ready to match. */
export interface QueryPriorityConfig {
  readonly enabled: boolean;
  readonly defaultPriority: number;
  /** undefined: the runtime's default. */
  readonly agingMsPerPriority: number | undefined;
  readonly lending: boolean;
  readonly maxQueuedPerSandbox: number | undefined;
  readonly sandboxQueueLimits: ReadonlyMap<string, number>;
  readonly rules: readonly PriorityRule[];
  /** The document as given (normalised), for GET. */
  readonly document: QueryPriorityDocument;
}

export interface PriorityRule {
  readonly priority: number;
  /** Count (>= 1) or fraction (0 < f < 1); undefined: none. */
  readonly reservedWorkers: number | undefined;
  readonly attributes: readonly CompiledAttribute[];
}

interface CompiledAttribute {
  readonly regex: RE2JS | undefined;
  readonly startMs: number | undefined;
  readonly endMs: number | undefined;
  readonly user: readonly WildcardPattern[] | undefined;
  readonly index: readonly WildcardPattern[] | undefined;
  readonly sandbox: readonly WildcardPattern[] | undefined;
}

/** One attribute of a rule's `query_attributes` (every field it sets must match). */
export interface QueryAttributeInput {
  /** RE2 syntax, unanchored, over the first 8,192 characters of the query text. */
  readonly regex?: string;
  /** Durations before now (`"2h"`, `"1h30m"`, `"7d"`; units ms s m h d w). */
  readonly time_window?: { readonly start?: string; readonly end?: string };
  /** Wildcard patterns (`*` only), one or a list. */
  readonly user?: string | readonly string[];
  readonly index?: string | readonly string[];
  readonly sandbox?: string | readonly string[];
}

/** One entry of `priorities`. */
export interface QueryPriorityRuleInput {
  /** Integer, distinct across entries; higher = more important. */
  readonly priority: number;
  /** A count (integer >= 1) or a fraction of the pool (0 < f < 1). */
  readonly reserved_workers?: number;
  readonly query_attributes?: readonly QueryAttributeInput[];
}

/**
 * The configuration as a caller writes it (`Runtime.setQueryPriority`, `options.queryPriority`,
 * `PUT /_query_priority`); every field optional (see the module comment for defaults). Types only:
 * the document is checked at run time all the same.
 */
export interface QueryPriorityInput {
  readonly enabled?: boolean;
  readonly default_priority?: number;
  readonly aging_ms_per_priority?: number | 'Infinity';
  readonly lending?: boolean;
  readonly max_queued_per_sandbox?: number;
  readonly sandbox_queue_limits?: Readonly<Record<string, number>>;
  readonly priorities?: readonly QueryPriorityRuleInput[];
}

/** The JSON shape of the configuration (see the module comment). */
export interface QueryPriorityDocument {
  readonly enabled: boolean;
  readonly default_priority: number;
  readonly aging_ms_per_priority?: number | 'Infinity';
  readonly lending: boolean;
  readonly max_queued_per_sandbox?: number;
  readonly sandbox_queue_limits: Readonly<Record<string, number>>;
  readonly priorities: readonly QueryPriorityRuleInput[];
}

/** What a request offers the rules. */
export interface PriorityAttributes {
  readonly text: string;
  /** Epoch ms, inclusive; undefined: the query reads all time. */
  readonly timeRange: { readonly fromMs: number; readonly toMs: number } | undefined;
  readonly user: string | undefined;
  readonly indices: readonly string[];
  readonly sandboxId: string;
}

const TOP_KEYS = [
  'enabled',
  'default_priority',
  'aging_ms_per_priority',
  'lending',
  'max_queued_per_sandbox',
  'sandbox_queue_limits',
  'priorities',
] as const;
const RULE_KEYS = ['priority', 'reserved_workers', 'query_attributes'] as const;
const ATTRIBUTE_KEYS = ['regex', 'time_window', 'user', 'index', 'sandbox'] as const;

/** The configuration when none is given: enabled, no rules, no per-sandbox bound. */
export const DEFAULT_QUERY_PRIORITY: QueryPriorityConfig = parseQueryPriority({});

/**
 * Validates a configuration document.
 *
 * @param raw the parsed JSON (an object).
 * @param path the name of the document in messages (default `query_priority`).
 * @throws InvalidArgumentError naming the field (`query_priority.priorities[1].query_attributes[0].regex`)
 *   and the received value: unknown keys, wrong types (`null` included), non-integer or duplicate
 *   priorities, a regex that does not compile as RE2 or is longer than 1000 characters, more than 32
 *   regexes, a bad duration, `end` after `start`, a bad reservation, more than 64 entries.
 *   Reservations against the pool's size are checked by `checkReservations` (worker-reservations.ts).
 */
export function parseQueryPriority(raw: unknown, path = 'query_priority'): QueryPriorityConfig {
  if (!isPlainObject(raw)) throw new InvalidArgumentError(path, 'must be a JSON object', raw);
  checkKeys(raw, TOP_KEYS, path);
  const enabled = optionalBoolean(raw['enabled'], `${path}.enabled`, true);
  const defaultPriority = optionalInteger(raw['default_priority'], `${path}.default_priority`, 0);
  const lending = optionalBoolean(raw['lending'], `${path}.lending`, false);
  let agingMsPerPriority: number | undefined;
  const aging = raw['aging_ms_per_priority'];
  if (aging === 'Infinity') agingMsPerPriority = Number.POSITIVE_INFINITY;
  else if (aging !== undefined) {
    if (typeof aging !== 'number' || !Number.isFinite(aging) || aging < 0 || aging > MAX_AGING_MS)
      throw new InvalidArgumentError(
        `${path}.aging_ms_per_priority`,
        `must be a number in 0..${MAX_AGING_MS} (0: FIFO) or "Infinity" (strict priority)`,
        aging,
      );
    agingMsPerPriority = aging;
  }
  const maxQueued = raw['max_queued_per_sandbox'];
  const maxQueuedPerSandbox =
    maxQueued === undefined ? undefined : positiveInteger(maxQueued, `${path}.max_queued_per_sandbox`);
  const limitsRaw = raw['sandbox_queue_limits'] === undefined ? {} : raw['sandbox_queue_limits'];
  if (!isPlainObject(limitsRaw))
    throw new InvalidArgumentError(
      `${path}.sandbox_queue_limits`,
      'must be an object of sandbox id to a queue bound',
      limitsRaw,
    );
  const sandboxQueueLimits = new Map<string, number>();
  const limitEntries = Object.entries(limitsRaw);
  if (limitEntries.length > MAX_SANDBOX_QUEUE_LIMITS)
    throw new InvalidArgumentError(
      `${path}.sandbox_queue_limits`,
      `must have at most ${MAX_SANDBOX_QUEUE_LIMITS} entries`,
      `[object of ${limitEntries.length}]`,
    );
  for (const [id, value] of limitEntries) {
    if (id.length === 0 || id.length > 128)
      throw new InvalidArgumentError(
        `${path}.sandbox_queue_limits`,
        'must have sandbox ids of 1 to 128 characters as keys',
        shortKey(id),
      );
    sandboxQueueLimits.set(id, positiveInteger(value, `${path}.sandbox_queue_limits.${id}`));
  }

  const prioritiesRaw = raw['priorities'] === undefined ? [] : raw['priorities'];
  if (!Array.isArray(prioritiesRaw))
    throw new InvalidArgumentError(`${path}.priorities`, 'must be an array', prioritiesRaw);
  if (prioritiesRaw.length > MAX_PRIORITY_RULES)
    throw new InvalidArgumentError(
      `${path}.priorities`,
      `must have at most ${MAX_PRIORITY_RULES} entries`,
      `[array of ${prioritiesRaw.length}]`,
    );
  const seen = new Set<number>();
  let regexes = 0;
  const rules = prioritiesRaw.map((entry, i) => {
    const rule = parseRule(entry, `${path}.priorities[${i}]`);
    if (seen.has(rule.priority))
      throw new InvalidArgumentError(
        `${path}.priorities[${i}].priority`,
        'must differ from the other entries (put several query_attributes in one entry instead)',
        rule.priority,
      );
    seen.add(rule.priority);
    for (const [j, attribute] of rule.attributes.entries()) {
      if (attribute.regex !== undefined && ++regexes > MAX_REGEXES)
        throw new InvalidArgumentError(
          `${path}.priorities[${i}].query_attributes[${j}].regex`,
          `is one regex too many: at most ${MAX_REGEXES} in all (each reads the query text of every request)`,
          (entry as { query_attributes: { regex: unknown }[] }).query_attributes[j]!.regex,
        );
    }
    return rule;
  });
  const document: QueryPriorityDocument = {
    enabled,
    default_priority: defaultPriority,
    ...(agingMsPerPriority !== undefined
      ? { aging_ms_per_priority: Number.isFinite(agingMsPerPriority) ? agingMsPerPriority : 'Infinity' }
      : {}),
    lending,
    ...(maxQueuedPerSandbox !== undefined ? { max_queued_per_sandbox: maxQueuedPerSandbox } : {}),
    sandbox_queue_limits: Object.fromEntries(sandboxQueueLimits),
    priorities: structuredClone(prioritiesRaw),
  };
  return {
    enabled,
    defaultPriority,
    agingMsPerPriority,
    lending,
    maxQueuedPerSandbox,
    sandboxQueueLimits,
    rules,
    document,
  };
}

/**
 * The priority of a request: the first matching rule's, else its sandbox's (`sandboxPriority`), or
 * `default_priority` when it is bound to the root. Rules are skipped when the config is disabled.
 *
 * @returns the priority and the index of the matching rule (-1: none).
 */
export function priorityOf(
  config: QueryPriorityConfig,
  attributes: PriorityAttributes,
  sandboxPriority: number,
  boundToRoot: boolean,
  nowMs: number,
): { priority: number; rule: number } {
  if (!config.enabled) return { priority: sandboxPriority, rule: -1 };
  const rules = config.rules;
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i]!;
    for (const attribute of rule.attributes) {
      if (attributeMatches(attribute, attributes, nowMs)) return { priority: rule.priority, rule: i };
    }
  }
  return { priority: boundToRoot ? config.defaultPriority : sandboxPriority, rule: -1 };
}

function attributeMatches(a: CompiledAttribute, r: PriorityAttributes, nowMs: number): boolean {
  if (a.user !== undefined && (r.user === undefined || !anyMatches(a.user, r.user))) return false;
  if (a.sandbox !== undefined && !anyMatches(a.sandbox, r.sandboxId)) return false;
  if (a.index !== undefined) {
    if (r.indices.length === 0) return false;
    for (const index of r.indices) if (!anyMatches(a.index, index)) return false;
  }
  if (a.startMs !== undefined || a.endMs !== undefined) {
    const fromMs = r.timeRange?.fromMs ?? Number.NEGATIVE_INFINITY;
    const toMs = r.timeRange?.toMs ?? nowMs;
    if (a.startMs !== undefined && fromMs < nowMs - a.startMs) return false;
    if (a.endMs !== undefined && toMs > nowMs - a.endMs) return false;
  }
  // The regex last: it is the one check that reads the whole text.
  if (a.regex !== undefined && !a.regex.matcher(r.text).find()) return false;
  return true;
}

function anyMatches(patterns: readonly WildcardPattern[], value: string): boolean {
  for (const p of patterns) if (p.matches(value)) return true;
  return false;
}

function parseRule(raw: unknown, path: string): PriorityRule {
  if (!isPlainObject(raw)) throw new InvalidArgumentError(path, 'must be a JSON object', raw);
  checkKeys(raw, RULE_KEYS, path);
  const priority = raw['priority'];
  if (typeof priority !== 'number' || !Number.isSafeInteger(priority))
    throw new InvalidArgumentError(`${path}.priority`, 'must be an integer', priority);
  const reserved = raw['reserved_workers'];
  let reservedWorkers: number | undefined;
  if (reserved !== undefined) {
    if (
      typeof reserved !== 'number' ||
      !(reserved > 0) ||
      !Number.isFinite(reserved) ||
      (reserved >= 1 && !Number.isInteger(reserved))
    )
      throw new InvalidArgumentError(
        `${path}.reserved_workers`,
        'must be a worker count (an integer >= 1) or a fraction of the pool (0 < f < 1)',
        reserved,
      );
    reservedWorkers = reserved;
  }
  const attributesRaw = raw['query_attributes'] === undefined ? [] : raw['query_attributes'];
  if (!Array.isArray(attributesRaw))
    throw new InvalidArgumentError(`${path}.query_attributes`, 'must be an array', attributesRaw);
  if (attributesRaw.length > MAX_ATTRIBUTES)
    throw new InvalidArgumentError(
      `${path}.query_attributes`,
      `must have at most ${MAX_ATTRIBUTES} entries`,
      `[array of ${attributesRaw.length}]`,
    );
  const attributes = attributesRaw.map((a, i) => parseAttribute(a, `${path}.query_attributes[${i}]`));
  return { priority, reservedWorkers, attributes };
}

function parseAttribute(raw: unknown, path: string): CompiledAttribute {
  if (!isPlainObject(raw)) throw new InvalidArgumentError(path, 'must be a JSON object', raw);
  checkKeys(raw, ATTRIBUTE_KEYS, path);
  if (Object.keys(raw).length === 0)
    throw new InvalidArgumentError(
      path,
      `must set at least one of ${ATTRIBUTE_KEYS.join(', ')} (an empty attribute would match everything)`,
      raw,
    );
  let regex: RE2JS | undefined;
  const source = raw['regex'];
  if (source !== undefined) {
    if (typeof source !== 'string' || source.length === 0 || source.length > MAX_REGEX_LENGTH)
      throw new InvalidArgumentError(
        `${path}.regex`,
        `must be a non-empty string of at most ${MAX_REGEX_LENGTH} characters`,
        source,
      );
    try {
      regex = RE2JS.compile(source);
    } catch (error) {
      throw new InvalidArgumentError(
        `${path}.regex`,
        `must be an RE2 regular expression (linear-time: no backreferences or lookaround): ${(error as Error).message}`,
        source,
      );
    }
  }
  let startMs: number | undefined;
  let endMs: number | undefined;
  const window = raw['time_window'];
  if (window !== undefined) {
    if (!isPlainObject(window))
      throw new InvalidArgumentError(`${path}.time_window`, 'must be an object {start?, end?}', window);
    checkKeys(window, ['start', 'end'], `${path}.time_window`);
    if (window['start'] !== undefined) startMs = parseDuration(window['start'], `${path}.time_window.start`);
    if (window['end'] !== undefined) endMs = parseDuration(window['end'], `${path}.time_window.end`);
    if (startMs === undefined && endMs === undefined)
      throw new InvalidArgumentError(`${path}.time_window`, 'must set start, end or both', window);
    if (startMs !== undefined && endMs !== undefined && endMs > startMs)
      throw new InvalidArgumentError(
        `${path}.time_window.end`,
        `must not be further back than start (${String(window['start'])})`,
        window['end'],
      );
  }
  return {
    regex,
    startMs,
    endMs,
    user: patterns(raw['user'], `${path}.user`),
    index: patterns(raw['index'], `${path}.index`),
    sandbox: patterns(raw['sandbox'], `${path}.sandbox`),
  };
}

function patterns(raw: unknown, path: string): WildcardPattern[] | undefined {
  if (raw === undefined) return undefined;
  const list = typeof raw === 'string' ? [raw] : raw;
  if (
    !Array.isArray(list) ||
    list.length === 0 ||
    list.length > MAX_ATTRIBUTES ||
    !list.every((p) => typeof p === 'string' && p.length > 0 && p.length <= 100)
  )
    throw new InvalidArgumentError(
      path,
      `must be a wildcard pattern or a list of 1 to ${MAX_ATTRIBUTES} of them (non-empty, at most 100 characters each)`,
      raw,
    );
  return list.map((p: string) => compileWildcardPattern(p));
}

const DURATION_UNITS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/**
 * A duration such as `"2h"`, `"1h30m"`, `"7d"` or `"0s"` (units ms s m h d w, as in Prometheus
 * durations, without `y`), in ms.
 *
 * @throws InvalidArgumentError naming `path` for anything else.
 */
export function parseDuration(raw: unknown, path: string): number {
  const bad = () =>
    new InvalidArgumentError(
      path,
      'must be a duration such as "2h", "1h30m", "7d" or "0s" (units ms s m h d w)',
      raw,
    );
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > 40) throw bad();
  const re = /(\d+)(ms|s|m|h|d|w)/y;
  let total = 0;
  let at = 0;
  while (at < raw.length) {
    re.lastIndex = at;
    const m = re.exec(raw);
    if (m === null) throw bad();
    total += Number(m[1]) * DURATION_UNITS[m[2]!]!;
    at = re.lastIndex;
  }
  if (!Number.isSafeInteger(total)) throw bad();
  return total;
}

/** A key as shown in a message: at most 64 characters. */
function shortKey(key: string): string {
  return key.length > 64 ? `${key.slice(0, 61)}...` : key;
}

function checkKeys(obj: Record<string, unknown>, allowed: readonly string[], path: string): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key))
      throw new InvalidArgumentError(
        `${path}.${shortKey(key)}`,
        `is not a known field; expected one of ${allowed.join(', ')}`,
        obj[key],
      );
  }
}

function optionalBoolean(raw: unknown, path: string, fallback: boolean): boolean {
  return optionChecks.boolean(path, raw, fallback);
}

function optionalInteger(raw: unknown, path: string, fallback: number): number {
  if (raw === undefined) return fallback;
  if (typeof raw !== 'number' || !Number.isSafeInteger(raw))
    throw new InvalidArgumentError(path, 'must be an integer', raw);
  return raw;
}

function positiveInteger(raw: unknown, path: string): number {
  return optionChecks.integerAtLeast(path, raw, 1);
}
