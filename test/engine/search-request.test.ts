import { describe, expect, it } from 'vitest';
import { fuzzyDistance, parseSearchBody } from '../../src/engine/search-request.js';
import { errorOf } from './parse-error-of.js';

describe('parseSearchBody', () => {
  it('defaults: no body or no query is match_all, size 10, from 0', () => {
    const defaults = {
      trackTotalHits: 10_000,
      source: { fetch: true, includes: [], excludes: [] },
      sort: [],
      timeoutMs: undefined,
      allowPartial: true,
    };
    expect(parseSearchBody(undefined)).toEqual({
      query: { kind: 'match_all' },
      size: 10,
      from: 0,
      ...defaults,
    });
    expect(parseSearchBody({ size: 0, from: 5 })).toEqual({
      query: { kind: 'match_all' },
      size: 0,
      from: 5,
      ...defaults,
    });
  });

  it('parses match, prefix and multi_match with their options', () => {
    expect(parseSearchBody({ query: { match: { body: 'money' } } }).query).toMatchObject({
      kind: 'text',
      text: 'money',
      fields: ['body'],
      operator: 'or',
    });
    expect(
      parseSearchBody({
        query: { match: { body: { query: 'mony', fuzziness: 'AUTO', operator: 'AND', prefix_length: 1 } } },
      }).query,
    ).toMatchObject({ fuzziness: { kind: 'auto', low: 3, high: 6 }, operator: 'and', prefixLength: 1 });
    expect(parseSearchBody({ query: { prefix: { subject: { value: 'mon' } } } }).query).toEqual({
      kind: 'prefix',
      field: 'subject',
      value: 'mon',
    });
    expect(
      parseSearchBody({
        query: { multi_match: { query: 'x', fields: ['subject', 'body^2.5'], fuzziness: 1 } },
      }).query,
    ).toMatchObject({
      fields: ['subject', 'body'],
      boost: { body: 2.5 },
      fuzziness: { kind: 'fixed', distance: 1 },
    });
  });

  it('maps fuzziness to an edit distance per term', () => {
    const auto = { kind: 'auto', low: 3, high: 6 } as const;
    expect([fuzzyDistance('ab', auto), fuzzyDistance('abc', auto), fuzzyDistance('abcdef', auto)]).toEqual([
      0, 1, 2,
    ]);
    expect(fuzzyDistance('abc', { kind: 'fixed', distance: 2 }, 3)).toBe(0);
  });

  it.each([
    ['a non-object body', 'query', /the search body must be a JSON object; received "query"/],
    ['an array body', [1], /the search body must be a JSON object; received \[1\]/],
    ['an unknown body key', { highlight: {} }, /unknown key \[highlight\]/],
    ['aggregations', { aggs: { a: { terms: { field: 'x' } } } }, /^\[aggs\]: aggregations are not supported/],
    [
      'an unknown query type',
      { query: { fuzzyy: {} } },
      /^unknown query \[fuzzyy\]; expected one of match, prefix, multi_match, match_all, range, bool, term, terms, ids, query_string$/,
    ],
    ['two query types', { query: { match: { body: 'a' }, prefix: { body: 'a' } } }, /exactly one query type/],
    [
      'an unknown match field',
      { query: { match: { title: 'a' } } },
      /\[match\]: unknown field \[title\]; expected one of subject, from, body/,
    ],
    ['an unknown prefix field', { query: { prefix: { to: 'a' } } }, /\[prefix\]: unknown field \[to\]/],
    [
      'an unknown multi_match field',
      { query: { multi_match: { query: 'a', fields: ['body', 'to^2'] } } },
      /\[multi_match\]\[fields\]\[1\]: unknown field "to\^2"/,
    ],
    [
      'a bad fuzziness',
      { query: { match: { body: { query: 'a', fuzziness: 3 } } } },
      /\[match\]\[body\]\[fuzziness\] must be 0, 1, 2, "AUTO" or "AUTO:low,high"; received 3/,
    ],
    [
      'a bad fuzziness string',
      { query: { multi_match: { query: 'a', fuzziness: 'lots' } } },
      /\[multi_match\]\[fuzziness\] .*received "lots"/,
    ],
    [
      'a bad operator',
      { query: { match: { body: { query: 'a', operator: 'xor' } } } },
      /\[match\]\[body\]\[operator\] must be "or" or "and"; received "xor"/,
    ],
    [
      'a bad prefix_length',
      { query: { match: { body: { query: 'a', prefix_length: -1 } } } },
      /\[prefix_length\] must be an integer >= 0; received -1/,
    ],
    [
      'an unknown match option',
      { query: { match: { body: { query: 'a', analyzer: 'x' } } } },
      /\[match\]\[body\] does not support \[analyzer\]/,
    ],
    [
      'a missing match query',
      { query: { match: { body: {} } } },
      /\[match\]\[body\]\[query\] must be a string; received undefined/,
    ],
    [
      'an empty prefix',
      { query: { prefix: { subject: '' } } },
      /\[prefix\]\[subject\] must be a non-empty string; received ""/,
    ],
    ['a bad size', { size: -1 }, /\[size\] must be an integer in 0..10000; received -1/],
    ['a size too large', { size: 10001 }, /\[size\] .*received 10001/],
    ['a fractional size', { size: 1.5 }, /\[size\] .*received 1.5/],
    ['a bad from', { from: 'x' }, /\[from\] must be an integer >= 0; received "x"/],
    [
      'match_all options',
      { query: { match_all: { boost: 2 } } },
      /\[match_all\] query does not support \[boost\]/,
    ],
  ])('refuses %s with a parsing_exception naming the field and value', (_what, body, message) => {
    const error = errorOf(body);
    expect(error.type).toBe('parsing_exception');
    expect(error.statusCode).toBe(400);
    expect(error.message).toMatch(message);
  });

  it('refuses from + size above the result window', () => {
    const error = errorOf({ from: 9995, size: 10 });
    expect(error.type).toBe('illegal_argument_exception');
    expect(error.message).toContain('[10005]');
  });
});
