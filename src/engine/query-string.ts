/**
 * A subset of Lucene's query-string syntax, for the `q` URL parameter of `_search` and `_count` and
 * the `query_string` query (Elasticsearch turns `q` into a `query_string` query).
 *
 * Supported: terms and `"quoted phrases"` separated by white space; `field:value` on `subject`,
 * `from`, `body`, `_id` and `date`; `+` (must), `-` and `!` (must not), `AND`/`&&`, `OR`/`||`, `NOT`
 * between clauses as the classic query parser reads them (`a AND b`: both required; `a OR b`: either);
 * a trailing `*` (`mon*`: a prefix query); `*` or `*:*` alone (every document). A bare term searches
 * `default_field` (`df`), by default every text field (Elasticsearch's `index.query.default_field`
 * `*`). A phrase is matched as all its words (word order and adjacency are not checked: this engine has
 * no positions). With `default_operator: AND` every clause without an operator is required.
 *
 * Refused with a 400 naming the construct: parentheses, ranges (`[a TO b]`, `{a TO b}`, `>x`),
 * fuzziness and proximity (`~`), boosts (`^`), `?` wildcards, regular expressions (`/re/`), and fields
 * the engine does not index.
 *
 * Source: Lucene `QueryParser` syntax (classic), Elasticsearch `query_string` docs.
 */
import { EngineRequestError, formatReceived } from '../errors.js';
import { SEARCH_FIELDS, type SearchField, tokenizeMail } from './mail-index.js';
import type { QueryPlan } from './query-plan.js';

/** Options of a `query_string` query (or of the `q` parameter's `df` and `default_operator`). */
export interface QueryStringOptions {
  /** Field of bare terms; `*` or absent: every text field. */
  readonly defaultField?: string | undefined;
  /** Several fields for bare terms (`fields`), searched as one `multi_match`. */
  readonly fields?: readonly string[] | undefined;
  readonly defaultOperator?: 'or' | 'and' | undefined;
}

type Occur = 'must' | 'should' | 'must_not';

interface Clause {
  occur: Occur | undefined;
  readonly plan: QueryPlan;
}

function fail(where: string, message: string): never {
  throw new EngineRequestError('parsing_exception', `${where}: ${message}`);
}

/** Splits the text into tokens: quoted phrases stay whole (with their quotes). */
function tokenize(text: string, where: string): string[] {
  const tokens: string[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    let j = i;
    let token = '';
    while (j < text.length && !/\s/.test(text[j]!)) {
      if (text[j] === '"') {
        const end = text.indexOf('"', j + 1);
        if (end < 0)
          fail(
            where,
            `unterminated phrase (a '"' without its closing '"'); received ${formatReceived(text)}`,
          );
        token += text.slice(j, end + 1);
        j = end + 1;
        continue;
      }
      if (text[j] === '\\' && j + 1 < text.length) {
        token += text[j + 1];
        j += 2;
        continue;
      }
      token += text[j];
      j++;
    }
    tokens.push(token);
    i = j;
  }
  return tokens;
}

const UNSUPPORTED: readonly [RegExp, string][] = [
  [/^[([{]|[)\]}]$/, 'parentheses and ranges are not supported'],
  [/^[<>]=?/, 'ranges are not supported'],
  [/~/, 'fuzzy and proximity searches (~) are not supported; use a match query with fuzziness'],
  [/\^/, 'boosts (^) are not supported'],
  [/\?/, 'the ? wildcard is not supported (only a trailing *)'],
  [/^\//, 'regular expressions are not supported'],
];

/**
 * Parses `text` into a query plan (see module doc).
 * @param where the path named in errors (`[q]` or `[query_string][query]`).
 * @param chargeTerms counts a text's terms against the query's budget.
 * @throws EngineRequestError `parsing_exception` (400) naming the construct and the received text.
 */
export function parseQueryString(
  text: string,
  where: string,
  options: QueryStringOptions,
  chargeTerms: (where: string, terms: number) => void,
): QueryPlan {
  const defaultFields = resolveFields(options, where);
  const operator = options.defaultOperator ?? 'or';
  const clauses: Clause[] = [];
  let pendingConjunction: 'and' | 'or' | undefined;
  let negateNext = false;
  for (const token of tokenize(text, where)) {
    if (token === 'AND' || token === '&&' || token === 'OR' || token === '||') {
      if (clauses.length === 0)
        fail(where, `[${token}] has no clause before it; received ${formatReceived(text)}`);
      pendingConjunction = token === 'AND' || token === '&&' ? 'and' : 'or';
      continue;
    }
    if (token === 'NOT') {
      negateNext = true;
      continue;
    }
    let body = token;
    let occur: Occur | undefined;
    if (body.startsWith('+')) {
      occur = 'must';
      body = body.slice(1);
    } else if (body.startsWith('-') || body.startsWith('!')) {
      occur = 'must_not';
      body = body.slice(1);
    }
    if (negateNext) occur = 'must_not';
    negateNext = false;
    const plan = clausePlan(body, defaultFields, where, text, chargeTerms);
    const clause: Clause = { occur, plan };
    if (pendingConjunction !== undefined) {
      const previous = clauses[clauses.length - 1]!;
      const joined: Occur = pendingConjunction === 'and' ? 'must' : 'should';
      if (previous.occur !== 'must_not') previous.occur = joined;
      if (clause.occur === undefined) clause.occur = joined;
      pendingConjunction = undefined;
    }
    clauses.push(clause);
  }
  if (pendingConjunction !== undefined || negateNext) {
    fail(where, `the query ends with an operator; received ${formatReceived(text)}`);
  }
  if (clauses.length === 0) fail(where, `the query string is empty; received ${formatReceived(text)}`);
  for (const c of clauses) c.occur ??= operator === 'and' ? 'must' : 'should';
  if (clauses.length === 1 && clauses[0]!.occur !== 'must_not') return clauses[0]!.plan;
  const of = (occur: Occur) => clauses.filter((c) => c.occur === occur).map((c) => c.plan);
  return { kind: 'bool', must: of('must'), filter: [], should: of('should'), mustNot: of('must_not') };
}

function resolveFields(options: QueryStringOptions, where: string): SearchField[] {
  const names = options.fields ?? [options.defaultField ?? '*'];
  const fields: SearchField[] = [];
  for (const name of names) {
    if (name === '*') {
      for (const f of SEARCH_FIELDS) if (!fields.includes(f)) fields.push(f);
      continue;
    }
    if (!(SEARCH_FIELDS as readonly string[]).includes(name)) {
      fail(where, `unknown default field [${name}]; expected one of ${SEARCH_FIELDS.join(', ')} or *`);
    }
    if (!fields.includes(name as SearchField)) fields.push(name as SearchField);
  }
  return fields;
}

function clausePlan(
  token: string,
  defaultFields: readonly SearchField[],
  where: string,
  text: string,
  chargeTerms: (where: string, terms: number) => void,
): QueryPlan {
  if (token === '*' || token === '*:*') return { kind: 'match_all' };
  let fields: readonly SearchField[] = defaultFields;
  let value = token;
  const colon = token.startsWith('"') ? -1 : token.indexOf(':');
  if (colon > 0) {
    const field = token.slice(0, colon);
    value = token.slice(colon + 1);
    if (field === '_id' || field === 'date') {
      const exact = value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
      if (exact.length === 0) fail(where, `[${field}:] has no value; received ${formatReceived(text)}`);
      chargeTerms(where, 1);
      const date = field === 'date' && /^-?\d+$/.test(exact) ? Number(exact) : exact;
      return {
        kind: 'term',
        target: field === '_id' ? 'id' : 'date',
        field,
        values: [date],
        caseInsensitive: false,
      };
    }
    if (!(SEARCH_FIELDS as readonly string[]).includes(field)) {
      fail(
        where,
        `unknown field [${field}]; the fields a query string can search are ${[...SEARCH_FIELDS, '_id', 'date'].join(', ')}`,
      );
    }
    fields = [field as SearchField];
  }
  if (value.length === 0) fail(where, `a clause has no value; received ${formatReceived(text)}`);
  const phrase = value.startsWith('"') && value.endsWith('"') && value.length >= 2;
  if (!phrase) {
    for (const [pattern, why] of UNSUPPORTED) {
      if (pattern.test(value)) fail(where, `${why}; received ${formatReceived(text)}`);
    }
  }
  if (!phrase && value.endsWith('*')) {
    const stem = value.slice(0, -1);
    if (stem.length === 0 || stem.includes('*')) {
      fail(
        where,
        `only a trailing * after at least one character is supported; received ${formatReceived(text)}`,
      );
    }
    chargeTerms(where, Math.max(1, tokenizeMail(stem).length) * fields.length);
    if (fields.length === 1) return { kind: 'prefix', field: fields[0]!, value: stem };
    return {
      kind: 'bool',
      must: [],
      filter: [],
      should: fields.map((field) => ({ kind: 'prefix' as const, field, value: stem })),
      mustNot: [],
    };
  }
  const words = phrase ? value.slice(1, -1) : value;
  chargeTerms(where, tokenizeMail(words).length);
  return {
    kind: 'text',
    text: words,
    fields,
    boost: {},
    fuzziness: { kind: 'fixed', distance: 0 },
    operator: phrase ? 'and' : 'or',
    prefixLength: 0,
  };
}
