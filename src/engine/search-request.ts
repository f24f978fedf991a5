/**
 * Parses and validates a search body (a subset of the OpenSearch query DSL) into a plan the
 * MiniSearch engine can run. Pure and cheap (no index access): used by `validate` and
 * `queryAttributes` in the main thread and again by `handle` in the worker.
 *
 * Supported body: `{ query?, size?, from? }` with `query` one of
 * - `{"match": {"<field>": "text"}}` or `{"match": {"<field>": {"query": "text", "fuzziness"?, "operator"?, "prefix_length"?}}}`
 * - `{"prefix": {"<field>": "val"}}` or `{"prefix": {"<field>": {"value": "val"}}}`
 * - `{"multi_match": {"query": "text", "fields"?: ["subject", "body^2"], "fuzziness"?, "operator"?, "prefix_length"?}}`
 * - `{"match_all": {}}` (also what a missing `query` means)
 * - `{"range": {"date": {"gte"?, "gt"?, "lte"?, "lt"?, "format"?}}}`: a filter on the stored `date`
 *   (see `parseRange` for the values and date math)
 * - `{"bool": {"must"?, "filter"?, "should"?, "must_not"?}}`, each a query or an array of queries,
 *   nested at most `MAX_BOOL_DEPTH` deep
 * - `{"term": ...}`, `{"terms": ...}`, `{"ids": {"values": [...]}}` (see `term-queries.ts`)
 * - `{"query_string": {"query", "default_field"?, "fields"?, "default_operator"?}}` (see `query-string.ts`)
 *
 * and the options `track_total_hits`, `_source`, `sort`, `timeout`, `allow_partial_search_results`
 * (see `search-options.ts`). Aggregations are refused with a 400 that says so.
 */

import { isPlainObject } from '../common/is-plain-object.js';
import { EngineRequestError, formatReceived } from '../errors.js';
import { SEARCH_FIELDS, type SearchField, tokenizeMail } from './mail-index.js';
import {
  type BoolQueryPlan,
  DATE_MATH_UNITS,
  type DateExpression,
  type DateMathStep,
  type DateMathUnit,
  type Fuzziness,
  type PrefixQueryPlan,
  type QueryPlan,
  RANGE_FIELDS,
  type RangeBound,
  type RangeField,
  type RangeQueryPlan,
  type TextQueryPlan,
} from './query-plan.js';
import { parseQueryString } from './query-string.js';
import {
  parseAllowPartial,
  parseSearchTimeout,
  parseSort,
  parseSourceFilter,
  parseTrackTotalHits,
  type SortKey,
  type SourceFilter,
  type TrackTotalHits,
} from './search-options.js';
import { parseIdsQuery, parseTermQuery, parseTermsQuery } from './term-queries.js';

export type { TermQueryPlan } from './term-queries.js';

/** Largest `from + size` (OpenSearch's `index.max_result_window` default). */
export const MAX_RESULT_WINDOW = 10_000;
/** Default `size`. */
export const DEFAULT_SIZE = 10;

/** The query types this engine understands. */
export const QUERY_TYPES = [
  'match',
  'prefix',
  'multi_match',
  'match_all',
  'range',
  'bool',
  'term',
  'terms',
  'ids',
  'query_string',
] as const;

/**
 * Deepest nesting of `bool` queries (a top-level bool is depth 1). Each level costs a full evaluation
 * of its clauses per shard; deeper bodies are refused with a `parsing_exception`.
 */
export const MAX_BOOL_DEPTH = 8;

/** A validated search body. */
export interface SearchPlan {
  readonly query: QueryPlan;
  /** Hits to return, 0..10000 (default 10). */
  readonly size: number;
  /** Hits to skip, >= 0 (default 0); `from + size <= 10000`. */
  readonly from: number;
  /** `track_total_hits` (default 10000: exact up to it, then `relation: "gte"`; null: no total). */
  readonly trackTotalHits: TrackTotalHits;
  /** `_source` filtering (default: the whole source). */
  readonly source: SourceFilter;
  /** `sort` keys; empty: by score. */
  readonly sort: readonly SortKey[];
  /** `timeout`, ms; undefined: none. */
  readonly timeoutMs: number | undefined;
  /** `allow_partial_search_results` (default true). */
  readonly allowPartial: boolean;
}

/** The body keys a search takes (`aggs` and the others of Elasticsearch are refused by name). */
export const SEARCH_BODY_KEYS = [
  'query',
  'size',
  'from',
  'track_total_hits',
  '_source',
  'sort',
  'timeout',
  'allow_partial_search_results',
] as const;

const NO_FUZZINESS: Fuzziness = { kind: 'fixed', distance: 0 };

/** What parsing one body has used up so far: the terms of the whole query (see `MAX_QUERY_TERMS`). */
interface ParseBudget {
  terms: number;
}

/**
 * Validate a search body and turn it into a plan.
 *
 * @param body the parsed JSON body; `undefined` or `null` means `{}` (match_all, size 10).
 * @throws EngineRequestError `parsing_exception` (400) naming the field path (`[bool][must][1][range][date][gte]`)
 *   and the received value, for a body that is not an object, an unknown key or query type, an
 *   unknown field, a bad fuzziness/operator/prefix_length/size/from, a bad range bound, date or
 *   date math, a bool nested deeper than `MAX_BOOL_DEPTH`, or more than `MAX_QUERY_TERMS` terms in
 *   the whole query; `illegal_argument_exception` (400) when from + size > 10000.
 */
export function parseSearchBody(body: unknown): SearchPlan {
  if (body === undefined || body === null) body = {};
  const obj = asObject(body, 'the search body');
  for (const key of Object.keys(obj)) {
    if (key === 'aggs' || key === 'aggregations') {
      fail(
        `[${key}]: aggregations are not supported by this engine (see docs/elasticsearch-compatibility.md)`,
      );
    }
    if (!(SEARCH_BODY_KEYS as readonly string[]).includes(key)) {
      fail(`unknown key [${key}] in the search body; expected one of ${SEARCH_BODY_KEYS.join(', ')}`);
    }
  }
  const size = obj['size'] === undefined ? DEFAULT_SIZE : obj['size'];
  if (!Number.isInteger(size) || (size as number) < 0 || (size as number) > MAX_RESULT_WINDOW) {
    fail(`[size] must be an integer in 0..${MAX_RESULT_WINDOW}; received ${formatReceived(size)}`);
  }
  const from = obj['from'] === undefined ? 0 : obj['from'];
  if (!Number.isInteger(from) || (from as number) < 0) {
    fail(`[from] must be an integer >= 0; received ${formatReceived(from)}`);
  }
  if ((from as number) + (size as number) > MAX_RESULT_WINDOW) {
    throw new EngineRequestError(
      'illegal_argument_exception',
      `Result window is too large, from + size must be less than or equal to: [${MAX_RESULT_WINDOW}] but was [${(from as number) + (size as number)}]`,
    );
  }
  const query =
    obj['query'] === undefined
      ? { kind: 'match_all' as const }
      : parseQuery(obj['query'], '', { terms: 0 }, 0);
  return {
    query,
    size: size as number,
    from: from as number,
    trackTotalHits: parseTrackTotalHits(obj['track_total_hits']),
    source: parseSourceFilter(obj['_source']),
    sort: parseSort(obj['sort']),
    timeoutMs: parseSearchTimeout(obj['timeout']),
    allowPartial: parseAllowPartial(obj['allow_partial_search_results']),
  };
}

/**
 * @param at the path of this query inside the top-level query: '' at the top, `[bool][must][0]` below.
 * @param depth how many bool queries enclose this one.
 */
function parseQuery(raw: unknown, at: string, budget: ParseBudget, depth: number): QueryPlan {
  const query = asObject(raw, at || '[query]');
  const types = Object.keys(query);
  if (types.length !== 1) {
    fail(
      `${at || '[query]'} must hold exactly one query type (${QUERY_TYPES.join(', ')}); received ${formatReceived(raw)}`,
    );
  }
  const type = types[0]!;
  const value = query[type];
  switch (type) {
    case 'match':
      return parseMatch(value, at, budget);
    case 'prefix':
      return parsePrefix(value, at, budget);
    case 'multi_match':
      return parseMultiMatch(value, at, budget);
    case 'match_all': {
      const keys = Object.keys(asObject(value, `${at}[match_all]`));
      if (keys.length > 0) fail(`${at}[match_all] query does not support [${keys[0]}]`);
      charge(budget, `${at}[match_all]`, 1);
      return { kind: 'match_all' };
    }
    case 'range':
      return parseRange(value, at, budget);
    case 'bool':
      return parseBool(value, at, budget, depth + 1);
    case 'term':
      return parseTermQuery(value, at, (where, n) => charge(budget, where, n));
    case 'terms':
      return parseTermsQuery(value, at, (where, n) => charge(budget, where, n));
    case 'ids':
      return parseIdsQuery(value, at, (where, n) => charge(budget, where, n));
    case 'query_string':
      return parseQueryStringQuery(value, at, budget);
    default:
      return fail(`${at ? `${at}: ` : ''}unknown query [${type}]; expected one of ${QUERY_TYPES.join(', ')}`);
  }
}

function parseQueryStringQuery(raw: unknown, at: string, budget: ParseBudget): QueryPlan {
  const where = `${at}[query_string]`;
  const spec = asObject(raw, where);
  checkKeys(spec, where, ['query', 'default_field', 'fields', 'default_operator']);
  const text = spec['query'];
  if (typeof text !== 'string') fail(`${where}[query] must be a string; received ${formatReceived(text)}`);
  const defaultField = spec['default_field'];
  if (defaultField !== undefined && typeof defaultField !== 'string') {
    fail(`${where}[default_field] must be a field name; received ${formatReceived(defaultField)}`);
  }
  const fields = spec['fields'];
  if (fields !== undefined && (!Array.isArray(fields) || !fields.every((f) => typeof f === 'string'))) {
    fail(`${where}[fields] must be an array of field names; received ${formatReceived(fields)}`);
  }
  return parseQueryString(
    text,
    `${where}[query]`,
    {
      defaultField: defaultField as string | undefined,
      fields: fields as string[] | undefined,
      defaultOperator: parseOperator(spec['default_operator'], `${where}[default_operator]`),
    },
    (w, terms) => chargeTerms(budget, w, terms),
  );
}

const BOOL_CLAUSES = ['must', 'filter', 'should', 'must_not'] as const;

function parseBool(raw: unknown, at: string, budget: ParseBudget, depth: number): BoolQueryPlan {
  const where = `${at}[bool]`;
  if (depth > MAX_BOOL_DEPTH) {
    fail(`${where} is nested ${depth} deep; at most ${MAX_BOOL_DEPTH} levels of bool are allowed`);
  }
  const spec = asObject(raw, where);
  checkKeys(spec, where, BOOL_CLAUSES);
  const clauses = (occur: (typeof BOOL_CLAUSES)[number]): QueryPlan[] => {
    const entries = spec[occur];
    const path = `${where}[${occur}]`;
    if (entries === undefined) return [];
    if (isPlainObject(entries)) return [parseQuery(entries, path, budget, depth)];
    if (!Array.isArray(entries)) {
      fail(`${path} must be a query object or an array of them; received ${formatReceived(entries)}`);
    }
    return entries.map((entry, i) => parseQuery(entry, `${path}[${i}]`, budget, depth));
  };
  const plan: BoolQueryPlan = {
    kind: 'bool',
    must: clauses('must'),
    filter: clauses('filter'),
    should: clauses('should'),
    mustNot: clauses('must_not'),
  };
  // An empty bool is a match_all: it costs a pass over every document like one.
  if (plan.must.length + plan.filter.length + plan.should.length + plan.mustNot.length === 0) {
    charge(budget, where, 1);
  }
  return plan;
}

function parseMatch(raw: unknown, at: string, budget: ParseBudget): TextQueryPlan {
  const [field, spec] = singleField(raw, at, 'match');
  const where = `${at}[match][${field}]`;
  if (isPlainObject(spec)) {
    checkKeys(spec, where, ['query', 'fuzziness', 'operator', 'prefix_length']);
    return {
      kind: 'text',
      text: queryText(spec['query'], `${where}[query]`, budget),
      fields: [field],
      boost: {},
      fuzziness: parseFuzziness(spec['fuzziness'], `${where}[fuzziness]`),
      operator: parseOperator(spec['operator'], `${where}[operator]`),
      prefixLength: parsePrefixLength(spec['prefix_length'], `${where}[prefix_length]`),
    };
  }
  return {
    kind: 'text',
    text: queryText(spec, where, budget),
    fields: [field],
    boost: {},
    fuzziness: NO_FUZZINESS,
    operator: 'or',
    prefixLength: 0,
  };
}

function parsePrefix(raw: unknown, at: string, budget: ParseBudget): PrefixQueryPlan {
  const [field, spec] = singleField(raw, at, 'prefix');
  let value = spec;
  let where = `${at}[prefix][${field}]`;
  if (isPlainObject(spec)) {
    checkKeys(spec, where, ['value']);
    value = spec['value'];
    where += '[value]';
  }
  if (typeof value !== 'string' || value.trim() === '') {
    fail(`${where} must be a non-empty string; received ${formatReceived(value)}`);
  }
  // MiniSearch splits a prefix value with the index tokenizer: each term is a prefix lookup.
  chargeTerms(budget, where, tokenizeMail(value).length);
  return { kind: 'prefix', field, value };
}

function parseMultiMatch(raw: unknown, at: string, budget: ParseBudget): TextQueryPlan {
  const where = `${at}[multi_match]`;
  const spec = asObject(raw, where);
  checkKeys(spec, where, ['query', 'fields', 'fuzziness', 'operator', 'prefix_length']);
  const fields: SearchField[] = [];
  const boost: Partial<Record<SearchField, number>> = {};
  const rawFields = spec['fields'] ?? [...SEARCH_FIELDS];
  if (!Array.isArray(rawFields) || rawFields.length === 0) {
    fail(`${where}[fields] must be a non-empty array of field names; received ${formatReceived(rawFields)}`);
  }
  for (const [i, entry] of rawFields.entries()) {
    const match = typeof entry === 'string' ? /^([^^]*)(?:\^(\d+(?:\.\d+)?))?$/.exec(entry) : null;
    const name = match?.[1];
    if (!match || !isSearchField(name)) {
      fail(
        `${where}[fields][${i}]: unknown field ${formatReceived(entry)}; expected one of ${SEARCH_FIELDS.join(', ')} (optionally with ^boost)`,
      );
    }
    if (!fields.includes(name)) fields.push(name);
    if (match[2] !== undefined) boost[name] = Number(match[2]);
  }
  return {
    kind: 'text',
    text: queryText(spec['query'], `${where}[query]`, budget),
    fields,
    boost,
    fuzziness: parseFuzziness(spec['fuzziness'], `${where}[fuzziness]`),
    operator: parseOperator(spec['operator'], `${where}[operator]`),
    prefixLength: parsePrefixLength(spec['prefix_length'], `${where}[prefix_length]`),
  };
}

const RANGE_BOUNDS = ['gte', 'gt', 'lte', 'lt'] as const;
type RangeBoundKey = (typeof RANGE_BOUNDS)[number];

/**
 * The date formats a range's `format` may name: those whose values this engine parses (OpenSearch's
 * default for a date field is `strict_date_optional_time||epoch_millis`). Any of them, alone or
 * joined with `||`, is accepted and values are parsed the same way whatever it says.
 */
export const RANGE_DATE_FORMATS = [
  'strict_date_optional_time',
  'date_optional_time',
  'epoch_millis',
] as const;

/**
 * `{"range": {"date": {"gte"?, "gt"?, "lte"?, "lt"?, "format"?}}}`. At least one bound, at most one
 * lower (gte or gt) and one upper (lte or lt). A bound is
 * - epoch ms: a number, or a string of digits that is not a 4-digit year (`"1030000000000"`);
 * - an ISO-8601 date, `yyyy[-MM[-dd[THH[:mm[:ss[.fff]]]]]]` with an optional `Z` or `±HH[:]mm` after
 *   a time, UTC when none is given. Missing components are filled as Elasticsearch does: month and
 *   day with 01, and for `gt`/`lte` missing time fields with their last value, 23:59:59.999 (so
 *   `"lte": "2002-08-01"` includes that whole day, `"gt": "2002-08-01T10:00:00Z"` starts after
 *   10:00:00.999, and `"lte": "2002"` ends on 2002-01-01T23:59:59.999);
 * - date math: `now` or `<ISO date>||`, then steps `+n<unit>`, `-n<unit>` (n defaults to 1) and
 *   `/<unit>` (round), units y M w d h H m s, in UTC, weeks starting on Monday. `gte`/`lt` round down
 *   to the start of the unit, `gt`/`lte` up to its last millisecond. Source:
 *   https://www.elastic.co/guide/en/elasticsearch/reference/current/common-options.html#date-math
 */
function parseRange(raw: unknown, at: string, budget: ParseBudget): RangeQueryPlan {
  const spec = asObject(raw, `${at}[range]`);
  const fields = Object.keys(spec);
  if (fields.length !== 1) {
    fail(
      `${at}[range] query must name exactly one field (${RANGE_FIELDS.join(', ')}); received ${formatReceived(raw)}`,
    );
  }
  const field = fields[0]!;
  if (!(RANGE_FIELDS as readonly string[]).includes(field)) {
    fail(`${at}[range]: unknown field [${field}]; expected one of ${RANGE_FIELDS.join(', ')}`);
  }
  const where = `${at}[range][${field}]`;
  const bounds = asObject(spec[field], where);
  checkKeys(bounds, where, [...RANGE_BOUNDS, 'format']);
  if (bounds['format'] !== undefined) parseRangeFormat(bounds['format'], `${where}[format]`);
  if (bounds['gte'] !== undefined && bounds['gt'] !== undefined) {
    fail(`${where} may give only one of gte and gt; received ${formatReceived(bounds)}`);
  }
  if (bounds['lte'] !== undefined && bounds['lt'] !== undefined) {
    fail(`${where} may give only one of lte and lt; received ${formatReceived(bounds)}`);
  }
  const bound = (key: RangeBoundKey): RangeBound | null =>
    bounds[key] === undefined
      ? null
      : {
          inclusive: key === 'gte' || key === 'lte',
          date: parseDateExpression(bounds[key], `${where}[${key}]`, key === 'gt' || key === 'lte'),
        };
  const lower = bound('gte') ?? bound('gt');
  const upper = bound('lte') ?? bound('lt');
  if (lower === null && upper === null) {
    fail(`${where} must give at least one of ${RANGE_BOUNDS.join(', ')}; received ${formatReceived(bounds)}`);
  }
  charge(budget, where, 1);
  return { kind: 'range', field: field as RangeField, lower, upper };
}

function parseRangeFormat(raw: unknown, where: string): void {
  const known = RANGE_DATE_FORMATS as readonly string[];
  if (typeof raw !== 'string' || !raw.split('||').every((format) => known.includes(format))) {
    fail(
      `${where} must be one or more of ${RANGE_DATE_FORMATS.join(', ')} joined with ||; received ${formatReceived(raw)}`,
    );
  }
}

/** Largest |epoch ms| a JavaScript Date holds (±100,000,000 days around 1970). */
const MAX_DATE_MS = 8.64e15;
const DAY_MS = 86_400_000;
/** Largest amount in one date-math step (Elasticsearch parses it as a Java int). */
const MAX_DATE_MATH_AMOUNT = 2_147_483_647;
const ISO_DATE =
  /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2})(?::(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?)?)?$/;
const DATE_MATH_STEP = /^([+\-/])(\d*)(.?)/;

/**
 * A range bound as written: epoch ms (number or digits), an ISO-8601 date, or date math.
 *
 * @param roundUp fill a plain ISO date's missing time with 23:59:59.999 (for gt and lte); does not
 *   apply to the anchor of `<date>||...`, as in Elasticsearch.
 */
function parseDateExpression(raw: unknown, where: string, roundUp: boolean): DateExpression {
  const expected = `${where} must be epoch ms, an ISO-8601 date (2002-08-01T10:00:00Z) or date math (now-1d/d)`;
  if (typeof raw === 'number') {
    if (!Number.isFinite(raw) || Math.abs(raw) > MAX_DATE_MS) {
      fail(`${where} must be epoch ms within ±${MAX_DATE_MS}; received ${formatReceived(raw)}`);
    }
    return { anchor: raw, steps: [] };
  }
  if (typeof raw !== 'string') return fail(`${expected}; received ${formatReceived(raw)}`);
  let anchor: 'now' | number;
  let math: string;
  if (raw.startsWith('now')) {
    anchor = 'now';
    math = raw.slice(3);
  } else {
    const split = raw.indexOf('||');
    const date = parseDateText(split < 0 ? raw : raw.slice(0, split), split < 0 && roundUp);
    if (date === null) return fail(`${expected}; received ${formatReceived(raw)}`);
    if (split < 0) return { anchor: date, steps: [] };
    anchor = date;
    math = raw.slice(split + 2);
  }
  return { anchor, steps: parseDateMath(math, where, raw) };
}

/** Epoch ms of `text` (digits: epoch ms; else an ISO-8601 date as `ISO_DATE`), or null when it is neither. */
function parseDateText(text: string, roundUp: boolean): number | null {
  if (/^-?\d+$/.test(text) && !/^\d{4}$/.test(text)) {
    const ms = Number(text);
    return Math.abs(ms) <= MAX_DATE_MS ? ms : null;
  }
  const m = ISO_DATE.exec(text);
  if (!m) return null;
  const year = Number(m[1]);
  const month = m[2] === undefined ? 1 : Number(m[2]);
  const day = m[3] === undefined ? 1 : Number(m[3]);
  const fill = roundUp ? [23, 59, 59, 999] : [0, 0, 0, 0];
  const hour = m[4] === undefined ? fill[0]! : Number(m[4]);
  const minute = m[5] === undefined ? fill[1]! : Number(m[5]);
  const second = m[6] === undefined ? fill[2]! : Number(m[6]);
  const ms = m[7] === undefined ? fill[3]! : Number(m[7].slice(0, 3).padEnd(3, '0'));
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month - 1)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMs = 0;
  const zone = m[8];
  if (zone !== undefined && zone !== 'Z') {
    const zoneHours = Number(zone.slice(1, 3));
    const zoneMinutes = zone.length > 3 ? Number(zone.slice(-2)) : 0;
    if (zoneHours > 18 || zoneMinutes > 59) return null;
    offsetMs = (zone[0] === '-' ? -1 : 1) * (zoneHours * 60 + zoneMinutes) * 60_000;
  }
  return utcDayMs(year, month - 1, day) + ((hour * 60 + minute) * 60 + second) * 1000 + ms - offsetMs;
}

function parseDateMath(math: string, where: string, raw: string): DateMathStep[] {
  const steps: DateMathStep[] = [];
  let rest = math;
  while (rest.length > 0) {
    const m = DATE_MATH_STEP.exec(rest);
    const bad = (why: string): never =>
      fail(`${where} has bad date math [${math}]: ${why}; received ${formatReceived(raw)}`);
    if (!m) return bad(`operator [${rest[0]}] is not supported; expected +, - or /`);
    const [step, op, digits, unit] = m as unknown as [string, string, string, string];
    if (unit === '') bad(`[${step}] is truncated; expected a unit after it`);
    if (!(DATE_MATH_UNITS as readonly string[]).includes(unit)) {
      bad(`unit [${unit}] is not supported; expected one of ${DATE_MATH_UNITS.join(', ')}`);
    }
    if (op === '/') {
      if (digits !== '' && digits !== '1') bad(`rounding [${step}] takes a unit without a number`);
      steps.push({ op: 'round', unit: unit as DateMathUnit });
    } else {
      const amount = digits === '' ? 1 : Number(digits);
      if (amount > MAX_DATE_MATH_AMOUNT) bad(`[${digits}] is larger than ${MAX_DATE_MATH_AMOUNT}`);
      steps.push({ op: 'add', amount: op === '-' ? -amount : amount, unit: unit as DateMathUnit });
    }
    rest = rest.slice(step.length);
  }
  return steps;
}

/**
 * The epoch ms of a date expression.
 *
 * @param nowMs what `now` means (epoch ms).
 * @param roundUp round (`/unit`) to the last millisecond of the unit (for gt and lte) instead of its
 *   first (for gte and lt).
 * @returns epoch ms; ±Infinity when a step leaves the range of a JavaScript Date (the bound then lies
 *   beyond every date). Never throws.
 */
export function resolveDate(date: DateExpression, nowMs: number, roundUp: boolean): number {
  let ms = date.anchor === 'now' ? nowMs : date.anchor;
  for (const step of date.steps) ms = applyDateMathStep(ms, step, roundUp);
  return ms;
}

/** The dates a range accepts, epoch ms inclusive: `fromMs` -Infinity and `toMs` +Infinity when open. */
export interface DateInterval {
  readonly fromMs: number;
  readonly toMs: number;
}

/**
 * The inclusive interval of a range on integer epoch ms: `gt x` starts at floor(x) + 1 and `lt x`
 * ends at ceil(x) - 1; `gte`/`lt` round down and `gt`/`lte` round up (see `resolveDate`).
 */
export function resolveDateRange(range: RangeQueryPlan, nowMs: number): DateInterval {
  const { lower, upper } = range;
  let fromMs = Number.NEGATIVE_INFINITY;
  let toMs = Number.POSITIVE_INFINITY;
  if (lower) {
    const ms = resolveDate(lower.date, nowMs, !lower.inclusive);
    fromMs = lower.inclusive ? ms : Math.floor(ms) + 1;
  }
  if (upper) {
    const ms = resolveDate(upper.date, nowMs, upper.inclusive);
    toMs = upper.inclusive ? ms : Math.ceil(ms) - 1;
  }
  return { fromMs, toMs };
}

/**
 * The time range of `date` a query reads, for the scheduler's rules (`QueryAttributes.timeRange`):
 * the intersection of the ranges in positions that must match (the query itself, and recursively
 * the `must` and `filter` clauses of a bool). Ranges under `should` or `must_not` do not restrict.
 *
 * @returns epoch ms inclusive: `fromMs` -Infinity without a lower bound; `toMs` at most `nowMs` (no
 *   data lies in the future, so an open upper bound, or one after now such as `lte: now/d`, reads up
 *   to now); empty (fromMs > toMs) when the ranges do not overlap or all lie after now; undefined
 *   when no range restricts the query. Never throws.
 */
export function dateRangeRead(query: QueryPlan, nowMs: number): DateInterval | undefined {
  const read = { fromMs: Number.NEGATIVE_INFINITY, toMs: Number.POSITIVE_INFINITY, restricted: false };
  intersectRequiredRanges(query, nowMs, read);
  if (!read.restricted) return undefined;
  return { fromMs: read.fromMs, toMs: Math.min(read.toMs, nowMs) };
}

function intersectRequiredRanges(
  query: QueryPlan,
  nowMs: number,
  read: { fromMs: number; toMs: number; restricted: boolean },
): void {
  if (query.kind === 'range') {
    const { fromMs, toMs } = resolveDateRange(query, nowMs);
    read.fromMs = Math.max(read.fromMs, fromMs);
    read.toMs = Math.min(read.toMs, toMs);
    read.restricted = true;
  } else if (query.kind === 'bool') {
    for (const clause of query.must) intersectRequiredRanges(clause, nowMs, read);
    for (const clause of query.filter) intersectRequiredRanges(clause, nowMs, read);
  }
}

function applyDateMathStep(ms: number, step: DateMathStep, roundUp: boolean): number {
  if (!Number.isFinite(ms)) return ms;
  const unit = step.unit;
  if (step.op === 'add') {
    const n = step.amount;
    switch (unit) {
      case 'y':
        return addMonths(ms, n * 12);
      case 'M':
        return addMonths(ms, n);
      default:
        return saturate(ms + n * UNIT_MS[unit]);
    }
  }
  const date = new Date(ms);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  let start: number;
  let end: number;
  switch (unit) {
    case 'y':
      start = utcDayMs(year, 0, 1);
      end = utcDayMs(year + 1, 0, 1);
      break;
    case 'M':
      start = utcDayMs(year, month, 1);
      end = month === 11 ? utcDayMs(year + 1, 0, 1) : utcDayMs(year, month + 1, 1);
      break;
    case 'w':
      // ISO weeks start on Monday; getUTCDay() is 0 on Sunday.
      start = Math.floor(ms / DAY_MS) * DAY_MS - ((date.getUTCDay() + 6) % 7) * DAY_MS;
      end = start + 7 * DAY_MS;
      break;
    default:
      start = Math.floor(ms / UNIT_MS[unit]) * UNIT_MS[unit];
      end = start + UNIT_MS[unit];
  }
  return saturate(roundUp ? end - 1 : start);
}

const UNIT_MS: Readonly<Record<Exclude<DateMathUnit, 'y' | 'M'>, number>> = {
  w: 7 * DAY_MS,
  d: DAY_MS,
  h: 3_600_000,
  H: 3_600_000,
  m: 60_000,
  s: 1000,
};

/** `ms` plus `months` calendar months, the day clamped to the end of a shorter month (as Java's plusMonths). */
function addMonths(ms: number, months: number): number {
  const date = new Date(ms);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  const dayStart = utcDayMs(year, month, date.getUTCDate());
  const total = year * 12 + month + months;
  const toYear = Math.floor(total / 12);
  const toMonth = total - toYear * 12;
  const toDay = Math.min(date.getUTCDate(), daysInMonth(toYear, toMonth));
  const result = utcDayMs(toYear, toMonth, toDay);
  if (Number.isNaN(result)) return months > 0 ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
  return saturate(result + (ms - dayStart));
}

/** Epoch ms of midnight UTC of a day (month 0..11); years 0..99 are taken literally; NaN out of range. */
function utcDayMs(year: number, month: number, day: number): number {
  const date = new Date(0);
  return date.setUTCFullYear(year, month, day);
}

function daysInMonth(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month]!;
}

/** ±Infinity beyond the range of a Date, so that later steps keep the bound beyond every date. */
function saturate(ms: number): number {
  if (ms > MAX_DATE_MS) return Number.POSITIVE_INFINITY;
  if (ms < -MAX_DATE_MS) return Number.NEGATIVE_INFINITY;
  return ms;
}

/**
 * The edit distance for one query term under a fuzziness setting. AUTO:low,high (default 3,6) gives
 * 0 below `low` characters, 1 below `high`, else 2. Terms no longer than `prefixLength` get 0 (an
 * approximation: MiniSearch cannot keep a fuzzy term's first characters fixed).
 */
export function fuzzyDistance(term: string, fuzziness: Fuzziness, prefixLength = 0): number {
  if (term.length <= prefixLength) return 0;
  if (fuzziness.kind === 'fixed') return fuzziness.distance;
  if (term.length < fuzziness.low) return 0;
  return term.length < fuzziness.high ? 1 : 2;
}

function parseFuzziness(raw: unknown, where: string): Fuzziness {
  if (raw === undefined) return NO_FUZZINESS;
  if (raw === 0 || raw === 1 || raw === 2) return { kind: 'fixed', distance: raw };
  if (typeof raw === 'string') {
    if (raw === '0' || raw === '1' || raw === '2')
      return { kind: 'fixed', distance: Number(raw) as 0 | 1 | 2 };
    const auto = /^auto(?::(\d+),(\d+))?$/i.exec(raw);
    if (auto) {
      const low = auto[1] === undefined ? 3 : Number(auto[1]);
      const high = auto[2] === undefined ? 6 : Number(auto[2]);
      if (low <= high) return { kind: 'auto', low, high };
    }
  }
  return fail(`${where} must be 0, 1, 2, "AUTO" or "AUTO:low,high"; received ${formatReceived(raw)}`);
}

function parseOperator(raw: unknown, where: string): 'or' | 'and' {
  if (raw === undefined) return 'or';
  if (typeof raw === 'string' && (raw.toLowerCase() === 'or' || raw.toLowerCase() === 'and')) {
    return raw.toLowerCase() as 'or' | 'and';
  }
  return fail(`${where} must be "or" or "and"; received ${formatReceived(raw)}`);
}

function parsePrefixLength(raw: unknown, where: string): number {
  if (raw === undefined) return 0;
  if (Number.isInteger(raw) && (raw as number) >= 0) return raw as number;
  return fail(`${where} must be an integer >= 0; received ${formatReceived(raw)}`);
}

/**
 * Most terms the whole query may hold: each term is a separate (possibly fuzzy) lookup in every shard,
 * and a 40,000-term text ran for 36 s and exhausted a worker's heap. A match, multi_match or prefix
 * counts its terms (at least 1), a range, a match_all and an empty bool count 1 each, summed over
 * every clause of every bool. The figure and its meaning follow OpenSearch's
 * `indices.query.bool.max_clause_count` default (1024).
 */
export const MAX_QUERY_TERMS = 1024;

function queryText(raw: unknown, where: string, budget: ParseBudget): string {
  let text: string;
  if (typeof raw === 'string') text = raw;
  else if (typeof raw === 'number' || typeof raw === 'boolean') text = String(raw);
  else return fail(`${where} must be a string; received ${formatReceived(raw)}`);
  chargeTerms(budget, where, tokenizeMail(text).length);
  return text;
}

/** Count a text's terms (at least 1: every clause costs a lookup) against the whole query's budget. */
function chargeTerms(budget: ParseBudget, where: string, terms: number): void {
  if (terms > MAX_QUERY_TERMS) {
    fail(`${where} has ${terms} terms; at most ${MAX_QUERY_TERMS} are allowed (max_clause_count)`);
  }
  charge(budget, where, Math.max(terms, 1));
}

function charge(budget: ParseBudget, where: string, terms: number): void {
  budget.terms += terms;
  if (budget.terms > MAX_QUERY_TERMS) {
    fail(
      `${where} brings the query to ${budget.terms} terms and clauses; at most ${MAX_QUERY_TERMS} are allowed in the whole query (max_clause_count)`,
    );
  }
}

function singleField(raw: unknown, at: string, type: string): [SearchField, unknown] {
  const spec = asObject(raw, `${at}[${type}]`);
  const fields = Object.keys(spec);
  if (fields.length !== 1) {
    fail(
      `${at}[${type}] query must name exactly one field (${SEARCH_FIELDS.join(', ')}); received ${formatReceived(raw)}`,
    );
  }
  const field = fields[0]!;
  if (!isSearchField(field)) {
    fail(`${at}[${type}]: unknown field [${field}]; expected one of ${SEARCH_FIELDS.join(', ')}`);
  }
  return [field, spec[field]];
}

function checkKeys(spec: Record<string, unknown>, where: string, allowed: readonly string[]): void {
  for (const key of Object.keys(spec)) {
    if (!allowed.includes(key)) fail(`${where} does not support [${key}]; expected ${allowed.join(', ')}`);
  }
}

function isSearchField(name: unknown): name is SearchField {
  return (SEARCH_FIELDS as readonly unknown[]).includes(name);
}

function asObject(value: unknown, what: string): Record<string, unknown> {
  if (!isPlainObject(value)) fail(`${what} must be a JSON object; received ${formatReceived(value)}`);
  return value;
}

function fail(message: string): never {
  throw new EngineRequestError('parsing_exception', message);
}
