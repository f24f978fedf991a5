import { describe, expect, it } from 'vitest';
import { applySearchParameters, sortParameter } from '../../src/server/search-parameters.js';

describe('search URL parameters', () => {
  it('fold into the body as Elasticsearch applies them: the parameter wins, sort is appended, q replaces the query', () => {
    const body = { query: { match_all: {} }, size: 50, sort: ['_score'], _source: true };
    expect(
      applySearchParameters(
        {
          size: '3',
          from: '6',
          q: 'subject:free',
          df: 'body',
          default_operator: 'AND',
          sort: 'date:desc,_score',
          timeout: '1s',
          track_total_hits: '100',
          allow_partial_search_results: 'false',
          _source_includes: 'subject,date',
        },
        body,
      ),
    ).toEqual({
      query: { query_string: { query: 'subject:free', default_field: 'body', default_operator: 'and' } },
      size: 3,
      from: 6,
      sort: ['_score', { date: 'desc' }, '_score'],
      timeout: '1s',
      track_total_hits: 100,
      allow_partial_search_results: 'false',
      _source: { includes: ['subject', 'date'], excludes: [] },
    });
    expect(body).toEqual({ query: { match_all: {} }, size: 50, sort: ['_score'], _source: true });
  });

  it('reads _source as false, true, a field list, and with excludes', () => {
    expect(applySearchParameters({ _source: 'false' }, {})).toEqual({ _source: false });
    expect(applySearchParameters({ _source: 'true' }, { _source: false })).toEqual({ _source: true });
    expect(applySearchParameters({ _source: 'a,b' }, {})).toEqual({ _source: ['a', 'b'] });
    expect(applySearchParameters({ _source_excludes: 'big' }, {})).toEqual({
      _source: { includes: [], excludes: ['big'] },
    });
    expect(applySearchParameters({ track_total_hits: 'false' }, {})).toEqual({ track_total_hits: 'false' });
  });

  it('refuses malformed parameters naming them', () => {
    expect(() => applySearchParameters({ size: 'ten' }, {})).toThrow(
      'url parameter [size] must be an integer; received "ten"',
    );
    expect(() => applySearchParameters({ from: ['1', '2'] }, {})).toThrow(
      'url parameter [from] must be given once',
    );
    expect(() => applySearchParameters({ df: 'body' }, {})).toThrow(/applies only with q/);
    expect(() => sortParameter('date:up')).toThrow(/must be field or field:asc\|desc/);
  });
});
