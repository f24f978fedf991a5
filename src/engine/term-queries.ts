/**
 * The exact-value queries of the query DSL: `term`, `terms` and `ids`, in Elasticsearch's shapes
 * (`TermQueryBuilder`, `TermsQueryBuilder`, `IdsQueryBuilder`). Pure parsing into a `TermQueryPlan`;
 * `execute-search.ts` runs it.
 *
 * What a field means here (this engine indexes `subject`, `from` and `body` as analysed text and
 * stores `date`; a writable index stores its whole `_source`):
 * - `subject`, `from`, `body`: the value must equal one indexed term exactly (terms are lower-cased
 *   words, so `"Money"` matches nothing, as a `term` query on a `text` field in Elasticsearch);
 *   `case_insensitive: true` lower-cases the value first. Scored by the text index.
 * - `_id`: the document id (also what `ids` reads). Score 1.
 * - `date`: epoch ms, or a date string the `range` query reads, equal to the stored date. Score 1.
 * - `_routing`: the routing value the document was written with. Score 1.
 * - any other name (`user.id`, `tags`, `title.keyword`): the value at that dotted path of the stored
 *   `_source` (a `.keyword` suffix reads the field itself), compared as a keyword: equal strings,
 *   numbers or booleans, or an array holding one. Score 1. A field no document has matches nothing,
 *   as an unmapped field in Elasticsearch.
 */
import { isPlainObject } from '../common/is-plain-object.js';
import { EngineRequestError, formatReceived } from '../errors.js';
import { SEARCH_FIELDS, type SearchField } from './mail-index.js';

/** Most values of one `terms` or `ids` query (Elasticsearch `index.max_terms_count`). */
export const MAX_TERMS_COUNT = 65_536;

/** A scalar a term compares with. */
export type TermValue = string | number | boolean;

/** An exact-value query over one field (see module doc). */
export interface TermQueryPlan {
  readonly kind: 'term';
  /** What the field is: an indexed text field, the id, the stored date, the routing, or a `_source` path. */
  readonly target: 'text' | 'id' | 'date' | 'routing' | 'source';
  /** The text field (target `text`), or the `_source` path (target `source`), or the meta field's name. */
  readonly field: string;
  /** A document matches when one of them matches (`term`: exactly one). */
  readonly values: readonly TermValue[];
  readonly caseInsensitive: boolean;
}

function fail(message: string): never {
  throw new EngineRequestError('parsing_exception', message);
}

function isTermValue(value: unknown): value is TermValue {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function targetOf(field: string): Pick<TermQueryPlan, 'target' | 'field'> {
  if ((SEARCH_FIELDS as readonly string[]).includes(field)) return { target: 'text', field };
  if (field === '_id') return { target: 'id', field };
  if (field === 'date') return { target: 'date', field };
  if (field === '_routing') return { target: 'routing', field };
  if (field.length === 0) fail('[term] field name must not be empty');
  return { target: 'source', field: field.endsWith('.keyword') ? field.slice(0, -'.keyword'.length) : field };
}

function singleField(raw: unknown, where: string): [string, unknown] {
  if (!isPlainObject(raw)) fail(`${where} must be a JSON object; received ${formatReceived(raw)}`);
  const fields = Object.keys(raw).filter((k) => k !== 'boost' && k !== '_name');
  if (fields.length !== 1)
    fail(`${where} query must name exactly one field; received ${formatReceived(raw)}`);
  return [fields[0]!, raw[fields[0]!]];
}

/**
 * `{"term": {"<field>": value}}` or `{"term": {"<field>": {"value", "boost"?, "case_insensitive"?}}}`.
 * @param charge counts the clause against the query's budget (`max_clause_count`).
 * @throws EngineRequestError `parsing_exception` (400) naming the path and the received value.
 */
export function parseTermQuery(
  raw: unknown,
  at: string,
  charge: (where: string, n: number) => void,
): TermQueryPlan {
  const where = `${at}[term]`;
  const [field, spec] = singleField(raw, where);
  let value: unknown = spec;
  let caseInsensitive = false;
  if (isPlainObject(spec)) {
    for (const key of Object.keys(spec)) {
      if (!['value', 'boost', 'case_insensitive', '_name'].includes(key)) {
        fail(`${where}[${field}] does not support [${key}]; expected value, boost or case_insensitive`);
      }
    }
    value = spec['value'];
    const ci = spec['case_insensitive'];
    if (ci !== undefined && typeof ci !== 'boolean') {
      fail(`${where}[${field}][case_insensitive] must be true or false; received ${formatReceived(ci)}`);
    }
    caseInsensitive = ci === true;
  }
  if (!isTermValue(value)) {
    fail(`${where}[${field}] must be a string, number or boolean value; received ${formatReceived(value)}`);
  }
  charge(`${where}[${field}]`, 1);
  return { kind: 'term', ...targetOf(field), values: [value], caseInsensitive };
}

/**
 * `{"terms": {"<field>": [values], "boost"?}}`: a document matches when one value matches.
 * @throws EngineRequestError `parsing_exception` (400): not an array, a value that is not a scalar,
 *   more than `MAX_TERMS_COUNT` values, or a terms lookup (`{"index", "id", "path"}`).
 */
export function parseTermsQuery(
  raw: unknown,
  at: string,
  charge: (where: string, n: number) => void,
): TermQueryPlan {
  const where = `${at}[terms]`;
  const [field, spec] = singleField(raw, where);
  if (isPlainObject(spec))
    fail(`${where}[${field}]: terms lookup is not supported; give the values as an array`);
  if (!Array.isArray(spec))
    fail(`${where}[${field}] must be an array of values; received ${formatReceived(spec)}`);
  if (spec.length > MAX_TERMS_COUNT) {
    fail(
      `${where}[${field}] has ${spec.length} values; at most ${MAX_TERMS_COUNT} are allowed (index.max_terms_count)`,
    );
  }
  spec.forEach((v, i) => {
    if (!isTermValue(v))
      fail(`${where}[${field}][${i}] must be a string, number or boolean; received ${formatReceived(v)}`);
  });
  const target = targetOf(field);
  // A text field looks every term up in the index; a keyword comparison is one set lookup per document.
  charge(`${where}[${field}]`, target.target === 'text' ? Math.max(1, spec.length) : 1);
  return { kind: 'term', ...target, values: spec as TermValue[], caseInsensitive: false };
}

/**
 * `{"ids": {"values": ["1", "2"]}}`: documents with one of these `_id`s, score 1.
 * @throws EngineRequestError `parsing_exception` (400) naming the path and the received value.
 */
export function parseIdsQuery(
  raw: unknown,
  at: string,
  charge: (where: string, n: number) => void,
): TermQueryPlan {
  const where = `${at}[ids]`;
  if (!isPlainObject(raw)) fail(`${where} must be a JSON object; received ${formatReceived(raw)}`);
  for (const key of Object.keys(raw)) {
    if (key !== 'values' && key !== 'boost' && key !== '_name')
      fail(`${where} does not support [${key}]; expected values`);
  }
  const values = raw['values'];
  if (!Array.isArray(values) || !values.every((v) => typeof v === 'string' || typeof v === 'number')) {
    fail(`${where}[values] must be an array of ids; received ${formatReceived(values)}`);
  }
  if (values.length > MAX_TERMS_COUNT) {
    fail(
      `${where}[values] has ${values.length} ids; at most ${MAX_TERMS_COUNT} are allowed (index.max_terms_count)`,
    );
  }
  charge(where, 1);
  return { kind: 'term', target: 'id', field: '_id', values: values.map(String), caseInsensitive: false };
}

/** The text fields a `text` term plan names (for MiniSearch's `fields`). */
export function termTextField(plan: TermQueryPlan): SearchField {
  return plan.field as SearchField;
}

/**
 * Whether a stored value matches one of the plan's values as a keyword: equal scalars (a number
 * also equals its decimal text, as a keyword field holds it), or an array holding one.
 */
export function keywordMatches(
  stored: unknown,
  values: readonly TermValue[],
  caseInsensitive: boolean,
): boolean {
  if (Array.isArray(stored)) return stored.some((v) => keywordMatches(v, values, caseInsensitive));
  if (!isTermValue(stored)) return false;
  const text = String(stored);
  for (const value of values) {
    if (stored === value || text === String(value)) return true;
    if (caseInsensitive && text.toLowerCase() === String(value).toLowerCase()) return true;
  }
  return false;
}

/** The value at a dotted path of a stored `_source` (`a.b` reads `{"a": {"b": ...}}` or the key `"a.b"`). */
export function sourcePath(source: Readonly<Record<string, unknown>>, path: string): unknown {
  if (path in source) return source[path];
  const dot = path.indexOf('.');
  if (dot <= 0) return undefined;
  const inner = source[path.slice(0, dot)];
  return isPlainObject(inner) ? sourcePath(inner, path.slice(dot + 1)) : undefined;
}
