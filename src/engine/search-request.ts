/**
 * Parses and validates a search body (a subset of the OpenSearch query DSL) into a plan the
 * MiniSearch engine can run. Pure and cheap (no index access): used by `validate` in the main
 * thread and again by `handle` in the worker.
 *
 * Supported body: `{ query?, size?, from? }` with `query` one of
 * - `{"match": {"<field>": "text"}}` or `{"match": {"<field>": {"query": "text", "fuzziness"?, "operator"?, "prefix_length"?}}}`
 * - `{"prefix": {"<field>": "val"}}` or `{"prefix": {"<field>": {"value": "val"}}}`
 * - `{"multi_match": {"query": "text", "fields"?: ["subject", "body^2"], "fuzziness"?, "operator"?, "prefix_length"?}}`
 * - `{"match_all": {}}` (also what a missing `query` means)
 */

import { EngineRequestError, formatReceived } from '../errors.js';
import { SEARCH_FIELDS, type SearchField, tokenizeMail } from './mail-index.js';

/** Largest `from + size` (OpenSearch's `index.max_result_window` default). */
export const MAX_RESULT_WINDOW = 10_000;
/** Default `size`. */
export const DEFAULT_SIZE = 10;

/** The query types this engine understands. */
export const QUERY_TYPES = ['match', 'prefix', 'multi_match', 'match_all'] as const;

/** Fuzziness as an edit distance per term: fixed, or OpenSearch's AUTO:low,high by term length. */
export type Fuzziness =
  | { readonly kind: 'fixed'; readonly distance: 0 | 1 | 2 }
  | { readonly kind: 'auto'; readonly low: number; readonly high: number };

/** A full-text query over one or more fields (match, multi_match). */
export interface TextQueryPlan {
  readonly kind: 'text';
  readonly text: string;
  readonly fields: readonly SearchField[];
  /** Per-field boost (multi_match `field^n`); fields absent here have boost 1. */
  readonly boost: Readonly<Partial<Record<SearchField, number>>>;
  readonly fuzziness: Fuzziness;
  readonly operator: 'or' | 'and';
  /** Terms of at most this many characters are not fuzzed (see `fuzzyDistance`). */
  readonly prefixLength: number;
}

/** A prefix query on one field. */
export interface PrefixQueryPlan {
  readonly kind: 'prefix';
  readonly field: SearchField;
  readonly value: string;
}

/** Every document, score 1. */
export interface MatchAllPlan {
  readonly kind: 'match_all';
}

export type QueryPlan = TextQueryPlan | PrefixQueryPlan | MatchAllPlan;

/** A validated search body. */
export interface SearchPlan {
  readonly query: QueryPlan;
  /** Hits to return, 0..10000 (default 10). */
  readonly size: number;
  /** Hits to skip, >= 0 (default 0); `from + size <= 10000`. */
  readonly from: number;
}

const NO_FUZZINESS: Fuzziness = { kind: 'fixed', distance: 0 };

/**
 * Validate a search body and turn it into a plan.
 *
 * @param body the parsed JSON body; `undefined` or `null` means `{}` (match_all, size 10).
 * @throws EngineRequestError `parsing_exception` (400) naming the field and the received value, for a
 *   body that is not an object, an unknown key or query type, an unknown field, or a bad
 *   fuzziness/operator/prefix_length/size/from; `illegal_argument_exception` (400) when from + size > 10000.
 */
export function parseSearchBody(body: unknown): SearchPlan {
  if (body === undefined || body === null) body = {};
  const obj = asObject(body, 'the search body');
  for (const key of Object.keys(obj)) {
    if (key !== 'query' && key !== 'size' && key !== 'from') {
      fail(`unknown key [${key}] in the search body; expected query, size or from`);
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
  const query = obj['query'] === undefined ? { kind: 'match_all' as const } : parseQuery(obj['query']);
  return { query, size: size as number, from: from as number };
}

function parseQuery(raw: unknown): QueryPlan {
  const query = asObject(raw, '[query]');
  const types = Object.keys(query);
  if (types.length !== 1) {
    fail(
      `[query] must hold exactly one query type (${QUERY_TYPES.join(', ')}); received ${formatReceived(raw)}`,
    );
  }
  const type = types[0]!;
  const value = query[type];
  switch (type) {
    case 'match':
      return parseMatch(value);
    case 'prefix':
      return parsePrefix(value);
    case 'multi_match':
      return parseMultiMatch(value);
    case 'match_all': {
      const keys = Object.keys(asObject(value, '[match_all]'));
      if (keys.length > 0) fail(`[match_all] query does not support [${keys[0]}]`);
      return { kind: 'match_all' };
    }
    default:
      return fail(`unknown query [${type}]; expected one of ${QUERY_TYPES.join(', ')}`);
  }
}

function parseMatch(raw: unknown): TextQueryPlan {
  const [field, spec] = singleField(raw, 'match');
  if (isObject(spec)) {
    const where = `[match][${field}]`;
    checkKeys(spec, where, ['query', 'fuzziness', 'operator', 'prefix_length']);
    return {
      kind: 'text',
      text: queryText(spec['query'], `${where}[query]`),
      fields: [field],
      boost: {},
      fuzziness: parseFuzziness(spec['fuzziness'], `${where}[fuzziness]`),
      operator: parseOperator(spec['operator'], `${where}[operator]`),
      prefixLength: parsePrefixLength(spec['prefix_length'], `${where}[prefix_length]`),
    };
  }
  return {
    kind: 'text',
    text: queryText(spec, `[match][${field}]`),
    fields: [field],
    boost: {},
    fuzziness: NO_FUZZINESS,
    operator: 'or',
    prefixLength: 0,
  };
}

function parsePrefix(raw: unknown): PrefixQueryPlan {
  const [field, spec] = singleField(raw, 'prefix');
  let value = spec;
  let where = `[prefix][${field}]`;
  if (isObject(spec)) {
    checkKeys(spec, where, ['value']);
    value = spec['value'];
    where += '[value]';
  }
  if (typeof value !== 'string' || value.trim() === '') {
    fail(`${where} must be a non-empty string; received ${formatReceived(value)}`);
  }
  return { kind: 'prefix', field, value };
}

function parseMultiMatch(raw: unknown): TextQueryPlan {
  const spec = asObject(raw, '[multi_match]');
  checkKeys(spec, '[multi_match]', ['query', 'fields', 'fuzziness', 'operator', 'prefix_length']);
  const fields: SearchField[] = [];
  const boost: Partial<Record<SearchField, number>> = {};
  const rawFields = spec['fields'] ?? [...SEARCH_FIELDS];
  if (!Array.isArray(rawFields) || rawFields.length === 0) {
    fail(
      `[multi_match][fields] must be a non-empty array of field names; received ${formatReceived(rawFields)}`,
    );
  }
  for (const [i, entry] of rawFields.entries()) {
    const match = typeof entry === 'string' ? /^([^^]*)(?:\^(\d+(?:\.\d+)?))?$/.exec(entry) : null;
    const name = match?.[1];
    if (!match || !isSearchField(name)) {
      fail(
        `[multi_match][fields][${i}]: unknown field ${formatReceived(entry)}; expected one of ${SEARCH_FIELDS.join(', ')} (optionally with ^boost)`,
      );
    }
    if (!fields.includes(name)) fields.push(name);
    if (match[2] !== undefined) boost[name] = Number(match[2]);
  }
  return {
    kind: 'text',
    text: queryText(spec['query'], '[multi_match][query]'),
    fields,
    boost,
    fuzziness: parseFuzziness(spec['fuzziness'], '[multi_match][fuzziness]'),
    operator: parseOperator(spec['operator'], '[multi_match][operator]'),
    prefixLength: parsePrefixLength(spec['prefix_length'], '[multi_match][prefix_length]'),
  };
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
 * Most terms one query text may hold: each term is a separate (possibly fuzzy) lookup in every shard,
 * and a 40,000-term text ran for 36 s and exhausted a worker's heap. The figure and its meaning follow
 * OpenSearch's `indices.query.bool.max_clause_count` default (1024).
 */
export const MAX_QUERY_TERMS = 1024;

function queryText(raw: unknown, where: string): string {
  let text: string;
  if (typeof raw === 'string') text = raw;
  else if (typeof raw === 'number' || typeof raw === 'boolean') text = String(raw);
  else return fail(`${where} must be a string; received ${formatReceived(raw)}`);
  const terms = tokenizeMail(text).length;
  if (terms > MAX_QUERY_TERMS) {
    fail(`${where} has ${terms} terms; at most ${MAX_QUERY_TERMS} are allowed (max_clause_count)`);
  }
  return text;
}

function singleField(raw: unknown, type: string): [SearchField, unknown] {
  const spec = asObject(raw, `[${type}]`);
  const fields = Object.keys(spec);
  if (fields.length !== 1) {
    fail(
      `[${type}] query must name exactly one field (${SEARCH_FIELDS.join(', ')}); received ${formatReceived(raw)}`,
    );
  }
  const field = fields[0]!;
  if (!isSearchField(field)) {
    fail(`[${type}]: unknown field [${field}]; expected one of ${SEARCH_FIELDS.join(', ')}`);
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

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asObject(value: unknown, what: string): Record<string, unknown> {
  if (!isObject(value)) fail(`${what} must be a JSON object; received ${formatReceived(value)}`);
  return value;
}

function fail(message: string): never {
  throw new EngineRequestError('parsing_exception', message);
}
