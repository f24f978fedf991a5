/**
 * The URL parameters of `_search` and `_count`, folded into the body the engine reads, as
 * Elasticsearch's `RestSearchAction.parseSearchRequest` applies them over the body: `size`, `from`,
 * `timeout`, `track_total_hits`, `_source` (`_source_includes`, `_source_excludes`) and `q` (with `df`
 * and `default_operator`, a `query_string` query that replaces the body's query) take the parameter's
 * value; `sort` (`field:order,...`) is appended to the body's sort; `allow_partial_search_results`
 * (a parameter only, in Elasticsearch) travels in the body to the engine and the coordinator, which
 * also accept it there. `cancel_after_time_interval` and `max_concurrent_shard_requests` are accepted
 * here and not folded: the search route hands them on as request fields (OpenSearch's search settings,
 * see `sandbox/search-settings.ts`).
 */
import { InvalidArgumentError } from '../errors.js';

/** The parameters `_search` takes besides `pretty`. */
export const SEARCH_URL_PARAMETERS = [
  'q',
  'df',
  'default_operator',
  'size',
  'from',
  'timeout',
  'track_total_hits',
  '_source',
  '_source_includes',
  '_source_excludes',
  'sort',
  'allow_partial_search_results',
  // OpenSearch's search settings; handed on beside the body (see `registerSearchRoutes`).
  'cancel_after_time_interval',
  'max_concurrent_shard_requests',
] as const;

/** The parameters `_count` takes besides `pretty`. */
export const COUNT_URL_PARAMETERS = ['q', 'df', 'default_operator'] as const;

function single(query: Readonly<Record<string, unknown>>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string')
    throw new InvalidArgumentError(`url parameter [${name}]`, 'must be given once', value);
  return value;
}

function integer(query: Readonly<Record<string, unknown>>, name: string): number | undefined {
  const text = single(query, name);
  if (text === undefined) return undefined;
  if (!/^-?\d{1,15}$/.test(text)) {
    throw new InvalidArgumentError(`url parameter [${name}]`, 'must be an integer', text);
  }
  return Number(text);
}

function list(text: string): string[] {
  return text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
}

/**
 * `sort=date:desc,_score` as body sort entries.
 * @throws InvalidArgumentError (path `url parameter [sort]`) for an order other than asc or desc.
 */
export function sortParameter(text: string): unknown[] {
  return list(text).map((entry) => {
    const colon = entry.lastIndexOf(':');
    if (colon < 0) return entry;
    const order = entry.slice(colon + 1);
    if (order !== 'asc' && order !== 'desc') {
      throw new InvalidArgumentError(
        'url parameter [sort]',
        'must be field or field:asc|desc, comma separated',
        text,
      );
    }
    return { [entry.slice(0, colon)]: order };
  });
}

/**
 * The body with the URL parameters folded in (see module doc). The body is not changed.
 * @param query the parsed URL query.
 * @param body the request body (an object; `{}` when none).
 * @throws InvalidArgumentError naming the parameter and the value for a malformed one.
 */
export function applySearchParameters(
  query: Readonly<Record<string, unknown>>,
  body: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body };
  const size = integer(query, 'size');
  if (size !== undefined) out['size'] = size;
  const from = integer(query, 'from');
  if (from !== undefined) out['from'] = from;
  const timeout = single(query, 'timeout');
  if (timeout !== undefined) out['timeout'] = timeout;
  const track = single(query, 'track_total_hits');
  if (track !== undefined) out['track_total_hits'] = /^\d+$/.test(track) ? Number(track) : track;
  const partial = single(query, 'allow_partial_search_results');
  if (partial !== undefined) out['allow_partial_search_results'] = partial;
  const source = single(query, '_source');
  const includes = single(query, '_source_includes');
  const excludes = single(query, '_source_excludes');
  if (source === 'false') out['_source'] = false;
  else if (includes !== undefined || excludes !== undefined) {
    out['_source'] = {
      includes: list(includes ?? (source === undefined || source === 'true' ? '' : source)),
      excludes: list(excludes ?? ''),
    };
  } else if (source === 'true') out['_source'] = true;
  else if (source !== undefined) out['_source'] = list(source);
  const sort = single(query, 'sort');
  if (sort !== undefined) {
    const existing = body['sort'];
    out['sort'] = [
      ...(existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]),
      ...sortParameter(sort),
    ];
  }
  const q = single(query, 'q');
  if (q !== undefined) out['query'] = queryStringOf(query, q);
  else if (query['df'] !== undefined || query['default_operator'] !== undefined) {
    throw new InvalidArgumentError(
      'url parameter [df] / [default_operator]',
      'applies only with q',
      query['df'] ?? query['default_operator'],
    );
  }
  return out;
}

/** `{"query_string": ...}` of the `q`, `df` and `default_operator` parameters. */
export function queryStringOf(query: Readonly<Record<string, unknown>>, q: string): Record<string, unknown> {
  const df = single(query, 'df');
  const operator = single(query, 'default_operator');
  return {
    query_string: {
      query: q,
      ...(df === undefined ? {} : { default_field: df }),
      ...(operator === undefined ? {} : { default_operator: operator.toLowerCase() }),
    },
  };
}
