import { describe, expect, it } from 'vitest';
import { MAX_BOOL_DEPTH, MAX_QUERY_TERMS, parseSearchBody } from '../../src/engine/search-request.js';
import { errorOf } from './parse-error-of.js';

/** A bool `levels` deep: each level's only must clause is the next bool; the innermost is empty. */
function nestedBool(levels: number): unknown {
  let query: unknown = { bool: {} };
  for (let i = 1; i < levels; i++) query = { bool: { must: query } };
  return query;
}

describe('parseSearchBody: bool', () => {
  it('parses every clause kind, as an array or as a single query', () => {
    const { query } = parseSearchBody({
      query: {
        bool: {
          must: { match: { body: 'money' } },
          filter: [{ range: { date: { gte: 0 } } }, { prefix: { subject: 'mon' } }],
          should: [{ match_all: {} }],
          must_not: { bool: { should: [] } },
        },
      },
    });
    expect(query).toMatchObject({
      kind: 'bool',
      must: [{ kind: 'text', text: 'money', fields: ['body'] }],
      filter: [
        { kind: 'range', field: 'date' },
        { kind: 'prefix', field: 'subject', value: 'mon' },
      ],
      should: [{ kind: 'match_all' }],
      mustNot: [{ kind: 'bool', must: [], filter: [], should: [], mustNot: [] }],
    });
  });

  it('parses an empty bool and empty clause arrays', () => {
    expect(parseSearchBody({ query: { bool: {} } }).query).toEqual({
      kind: 'bool',
      must: [],
      filter: [],
      should: [],
      mustNot: [],
    });
    expect(parseSearchBody({ query: { bool: { must: [], should: [] } } }).query).toMatchObject({
      kind: 'bool',
      must: [],
    });
  });

  it(`accepts bool nested ${MAX_BOOL_DEPTH} deep and refuses ${MAX_BOOL_DEPTH + 1}, naming the path`, () => {
    expect(() => parseSearchBody({ query: nestedBool(MAX_BOOL_DEPTH) })).not.toThrow();
    const error = errorOf({ query: nestedBool(MAX_BOOL_DEPTH + 1) });
    expect(error.type).toBe('parsing_exception');
    expect(error.message).toBe(
      `${'[bool][must]'.repeat(MAX_BOOL_DEPTH)}[bool] is nested ${MAX_BOOL_DEPTH + 1} deep; at most ${MAX_BOOL_DEPTH} levels of bool are allowed`,
    );
    // A self-referencing body (built in-process) is caught by the same limit, not a stack overflow.
    const cyclic: { bool: { must: unknown[] } } = { bool: { must: [] } };
    cyclic.bool.must.push(cyclic);
    expect(errorOf({ query: cyclic }).message).toMatch(/is nested 9 deep/);
  });

  it('caps terms over the whole query, not per clause', () => {
    const words = (n: number): string => 'money '.repeat(n);
    // One clause of exactly the cap is fine, inside a bool too.
    expect(() =>
      parseSearchBody({ query: { bool: { must: { match: { body: words(1024) } } } } }),
    ).not.toThrow();
    expect(errorOf({ query: { bool: { should: { match: { body: words(1025) } } } } }).message).toBe(
      '[bool][should][match][body] has 1025 terms; at most 1024 are allowed (max_clause_count)',
    );
    const split = errorOf({
      query: {
        bool: {
          must: [{ match: { body: words(600) } }],
          filter: {
            bool: { should: [{ multi_match: { query: words(400) } }, { prefix: { subject: 'a b c d e' } }] },
          },
          must_not: [{ match: { subject: words(20) } }],
        },
      },
    });
    expect(split.type).toBe('parsing_exception');
    expect(split.message).toBe(
      `[bool][must_not][0][match][subject] brings the query to 1025 terms and clauses; at most ${MAX_QUERY_TERMS} are allowed in the whole query (max_clause_count)`,
    );
  });

  it('counts each range, match_all and empty bool as one clause', () => {
    const clauses = (n: number): unknown[] =>
      Array.from({ length: n }, (_, i) =>
        i % 3 === 0 ? { range: { date: { gte: i } } } : i % 3 === 1 ? { match_all: {} } : { bool: {} },
      );
    expect(() => parseSearchBody({ query: { bool: { should: clauses(1024) } } })).not.toThrow();
    expect(errorOf({ query: { bool: { should: clauses(1025) } } }).message).toMatch(
      /^\[bool\]\[should\]\[1024\]\[match_all\] brings the query to 1025 terms and clauses/,
    );
  });

  it.each([
    [
      'an unknown bool key',
      { bool: { must_nt: [] } },
      /^\[bool\] does not support \[must_nt\]; expected must, filter, should, must_not$/,
    ],
    [
      'minimum_should_match',
      { bool: { should: [], minimum_should_match: 1 } },
      /^\[bool\] does not support \[minimum_should_match\]/,
    ],
    ['a bool that is not an object', { bool: [] }, /^\[bool\] must be a JSON object; received \[\]$/],
    [
      'a clause that is a string',
      { bool: { must: 'money' } },
      /^\[bool\]\[must\] must be a query object or an array of them; received "money"$/,
    ],
    [
      'a null clause',
      { bool: { filter: null } },
      /^\[bool\]\[filter\] must be a query object or an array of them; received null$/,
    ],
    [
      'a non-object entry',
      { bool: { should: [{ match_all: {} }, 7] } },
      /^\[bool\]\[should\]\[1\] must be a JSON object; received 7$/,
    ],
    [
      'an empty clause object',
      { bool: { should: [{}] } },
      /^\[bool\]\[should\]\[0\] must hold exactly one query type \(match, prefix, multi_match, match_all, range, bool, term, terms, ids, query_string\); received \{\}$/,
    ],
    [
      'an unknown query type in a clause',
      { bool: { must: { fuzzy: {} } } },
      /^\[bool\]\[must\]: unknown query \[fuzzy\]; expected one of match, prefix, multi_match, match_all, range, bool, term, terms, ids, query_string$/,
    ],
    [
      'an unknown field in a nested clause',
      { bool: { filter: { bool: { must_not: [{ match: { title: 'x' } }] } } } },
      /^\[bool\]\[filter\]\[bool\]\[must_not\]\[0\]\[match\]: unknown field \[title\]; expected one of subject, from, body$/,
    ],
    [
      'a bad option in a nested clause',
      { bool: { must: [{ multi_match: { query: 'a', fuzziness: 'lots' } }] } },
      /^\[bool\]\[must\]\[0\]\[multi_match\]\[fuzziness\] must be 0, 1, 2, "AUTO" or "AUTO:low,high"; received "lots"$/,
    ],
    [
      'match_all options in a clause',
      { bool: { must: [{ match_all: { boost: 2 } }] } },
      /^\[bool\]\[must\]\[0\]\[match_all\] query does not support \[boost\]$/,
    ],
  ])('refuses %s with a parsing_exception naming the path and value', (_what, query, message) => {
    const error = errorOf({ query });
    expect(error.type).toBe('parsing_exception');
    expect(error.statusCode).toBe(400);
    expect(error.message).toMatch(message);
  });
});
