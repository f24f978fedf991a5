/**
 * The search-body options around the query, in Elasticsearch's shapes (`SearchSourceBuilder`):
 * `track_total_hits`, `_source`, `sort`, `timeout` and `allow_partial_search_results`. Pure parsing;
 * `search-request.ts` calls it and `execute-search.ts` applies the results.
 *
 * Sources: Elasticsearch REST API docs for `_search` (request body) and `SearchSourceBuilder`,
 * `FetchSourceContext`, `SortBuilder.fromXContent`, `TimeValue`.
 */
import { EngineRequestError, formatReceived } from '../errors.js';
import { parseTimeValueMs } from '../common/time-value.js';

/**
 * Elasticsearch's default `track_total_hits`: totals are exact up to this many hits, beyond it
 * `hits.total` is `{value: 10000, relation: "gte"}`.
 */
export const DEFAULT_TRACK_TOTAL_HITS = 10_000;

/**
 * How `hits.total` is counted: `null` leaves it out (`track_total_hits: false`), a number counts
 * exactly up to it (`Infinity` for `true`), then reports `relation: "gte"`.
 */
export type TrackTotalHits = number | null;

/** Which parts of `_source` hits carry. `fetch: false` drops `_source`; patterns use `*` wildcards and dotted paths. */
export interface SourceFilter {
  readonly fetch: boolean;
  readonly includes: readonly string[];
  readonly excludes: readonly string[];
}

/** The fields a search may sort on: the relevance score and the stored `date`. */
export const SORT_FIELDS = ['_score', 'date'] as const;
export type SortFieldName = (typeof SORT_FIELDS)[number];

/** One sort key; `_score` defaults to `desc`, fields to `asc` (as Elasticsearch). */
export interface SortKey {
  readonly field: SortFieldName;
  readonly order: 'asc' | 'desc';
}

/** Every document (the `_source` option of a default search). */
export const FETCH_ALL_SOURCE: SourceFilter = Object.freeze({ fetch: true, includes: [], excludes: [] });

function fail(message: string): never {
  throw new EngineRequestError('parsing_exception', message);
}

/**
 * `track_total_hits`: `true` (exact), `false` (no total), or an integer >= 0 (exact up to it);
 * absent: `DEFAULT_TRACK_TOTAL_HITS`. A URL parameter arrives as its text (`"true"`, `"100"`).
 * @throws EngineRequestError `parsing_exception` (400) naming the field for anything else.
 */
export function parseTrackTotalHits(raw: unknown): TrackTotalHits {
  if (raw === undefined) return DEFAULT_TRACK_TOTAL_HITS;
  if (raw === true || raw === 'true') return Number.POSITIVE_INFINITY;
  if (raw === false || raw === 'false') return null;
  const n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
  if (Number.isSafeInteger(n) && (n as number) >= 0) return n as number;
  if (n === -1) return Number.POSITIVE_INFINITY; // TRACK_TOTAL_HITS_ACCURATE
  return fail(`[track_total_hits] must be true, false or an integer >= 0; received ${formatReceived(raw)}`);
}

function patternList(raw: unknown, where: string): string[] {
  const list = typeof raw === 'string' ? [raw] : raw;
  if (!Array.isArray(list) || !list.every((p) => typeof p === 'string' && p.length > 0)) {
    fail(`${where} must be a field pattern or an array of them; received ${formatReceived(raw)}`);
  }
  return list as string[];
}

/**
 * `_source`: `true`/`false`, a pattern (`"subject"`, `"user.*"`), an array of patterns (includes), or
 * `{"includes", "excludes"}` (also the older `include`/`exclude`), each a pattern or an array.
 * @throws EngineRequestError `parsing_exception` (400) naming the field for anything else.
 */
export function parseSourceFilter(raw: unknown): SourceFilter {
  if (raw === undefined || raw === true) return FETCH_ALL_SOURCE;
  if (raw === false) return { fetch: false, includes: [], excludes: [] };
  if (typeof raw === 'string' || Array.isArray(raw)) {
    return { fetch: true, includes: patternList(raw, '[_source]'), excludes: [] };
  }
  if (typeof raw === 'object' && raw !== null) {
    const spec = raw as Record<string, unknown>;
    for (const key of Object.keys(spec)) {
      if (!['includes', 'include', 'excludes', 'exclude'].includes(key)) {
        fail(`[_source] does not support [${key}]; expected includes or excludes`);
      }
    }
    const inc = spec['includes'] ?? spec['include'];
    const exc = spec['excludes'] ?? spec['exclude'];
    return {
      fetch: true,
      includes: inc === undefined ? [] : patternList(inc, '[_source][includes]'),
      excludes: exc === undefined ? [] : patternList(exc, '[_source][excludes]'),
    };
  }
  return fail(
    `[_source] must be true, false, a field pattern, an array of them or {includes, excludes}; received ${formatReceived(raw)}`,
  );
}

function sortKey(field: string, order: unknown, where: string): SortKey {
  if (!(SORT_FIELDS as readonly string[]).includes(field)) {
    fail(
      `${where}: sorting on [${field}] is not supported; the fields a search can sort on are ${SORT_FIELDS.join(', ')}`,
    );
  }
  const name = field as SortFieldName;
  if (order === undefined) return { field: name, order: name === '_score' ? 'desc' : 'asc' };
  if (order !== 'asc' && order !== 'desc') {
    fail(`${where}[order] must be "asc" or "desc"; received ${formatReceived(order)}`);
  }
  return { field: name, order };
}

/**
 * `sort`: a field name, `{"<field>": "asc"|"desc"}`, `{"<field>": {"order"}}` or an array of these;
 * fields `_score` (default `desc`) and `date` (default `asc`, documents without a date last).
 * @returns the keys in order; `[]` when absent (sort by score).
 * @throws EngineRequestError `parsing_exception` (400) naming the entry for anything else.
 */
export function parseSort(raw: unknown): SortKey[] {
  if (raw === undefined) return [];
  const entries = Array.isArray(raw) ? raw : [raw];
  return entries.map((entry, i) => {
    const where = `[sort][${i}]`;
    if (typeof entry === 'string') return sortKey(entry, undefined, where);
    if (
      typeof entry !== 'object' ||
      entry === null ||
      Array.isArray(entry) ||
      Object.keys(entry).length !== 1
    ) {
      return fail(
        `${where} must be a field name or {"<field>": "asc"|"desc"}; received ${formatReceived(entry)}`,
      );
    }
    const [field, spec] = Object.entries(entry as Record<string, unknown>)[0]!;
    if (typeof spec === 'string' || spec === undefined) return sortKey(field, spec, `${where}[${field}]`);
    if (typeof spec === 'object' && spec !== null && !Array.isArray(spec)) {
      for (const key of Object.keys(spec)) {
        if (key !== 'order') fail(`${where}[${field}] does not support [${key}]; expected order`);
      }
      return sortKey(field, (spec as Record<string, unknown>)['order'], `${where}[${field}]`);
    }
    return fail(`${where}[${field}] must be "asc", "desc" or {"order"}; received ${formatReceived(spec)}`);
  });
}

/**
 * `timeout`: an Elasticsearch time value (`"50ms"`, `"1s"`); `-1` or absent: none.
 * @returns milliseconds, or undefined for none.
 * @throws EngineRequestError `parsing_exception` (400) naming `[timeout]` for a bad value.
 */
export function parseSearchTimeout(raw: unknown): number | undefined {
  if (raw === undefined) return undefined;
  let ms: number;
  try {
    ms = parseTimeValueMs(raw, '[timeout]');
  } catch (error) {
    return fail((error as Error).message);
  }
  return ms < 0 ? undefined : ms;
}

/**
 * `allow_partial_search_results`: whether a search that could not read every shard (timed out,
 * shards failed) answers with what it has (`true`, the default) or fails. Elasticsearch takes it as a
 * URL parameter; the HTTP edge copies that parameter into the body, and the body form is accepted too.
 * @throws EngineRequestError `parsing_exception` (400) for a value that is not a boolean.
 */
export function parseAllowPartial(raw: unknown): boolean {
  if (raw === undefined || raw === true || raw === 'true') return true;
  if (raw === false || raw === 'false') return false;
  return fail(`[allow_partial_search_results] must be true or false; received ${formatReceived(raw)}`);
}

/** Whether `path` (dotted) matches `pattern` (`*` matches any run of characters, dots included). */
function matchesPattern(pattern: string, path: string): boolean {
  if (!pattern.includes('*')) return pattern === path;
  const parts = pattern.split('*');
  let at = 0;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (i === 0) {
      if (!path.startsWith(part)) return false;
      at = part.length;
      continue;
    }
    if (i === parts.length - 1) return path.length - at >= part.length && path.endsWith(part);
    const found = path.indexOf(part, at);
    if (found < 0) return false;
    at = found + part.length;
  }
  return true;
}

/** A pattern names `path` or one of its ancestors (`user` keeps `user.name`). */
function coversPath(patterns: readonly string[], path: string): boolean {
  return patterns.some(
    (p) =>
      matchesPattern(p, path) ||
      (!p.includes('*') && path.startsWith(`${p}.`)) ||
      matchesPattern(p, `${path}.`),
  );
}

/** A pattern may name something below `path` (so the object is entered while filtering). */
function mayCoverBelow(patterns: readonly string[], path: string): boolean {
  const inside = `${path}.`;
  return patterns.some((p) => {
    const literal = p.includes('*') ? p.slice(0, p.indexOf('*')) : p;
    return p.includes('*') ? inside.startsWith(literal) || literal.startsWith(inside) : p.startsWith(inside);
  });
}

/**
 * The `_source` a hit shows under `filter`, as Elasticsearch's source filtering: a leaf is kept
 * when no include is given or an include names it (or an ancestor), and no exclude names it (or an
 * ancestor); objects are kept when something inside them is. Arrays are kept or dropped whole.
 * @returns a new object (the stored one is never changed); `source` itself when nothing is filtered.
 */
export function filterSource(
  source: Readonly<Record<string, unknown>>,
  filter: SourceFilter,
): Readonly<Record<string, unknown>> {
  if (filter.includes.length === 0 && filter.excludes.length === 0) return source;
  const walk = (
    node: Readonly<Record<string, unknown>>,
    prefix: string,
  ): Record<string, unknown> | undefined => {
    const out: Record<string, unknown> = {};
    let kept = false;
    for (const [key, value] of Object.entries(node)) {
      const path = prefix === '' ? key : `${prefix}.${key}`;
      if (coversPath(filter.excludes, path)) continue;
      const included = filter.includes.length === 0 || coversPath(filter.includes, path);
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
        if (!included && !mayCoverBelow(filter.includes, path)) continue;
        const inner = walk(value as Record<string, unknown>, path);
        if (inner !== undefined || (included && Object.keys(value).length === 0)) {
          out[key] = inner ?? {};
          kept = true;
        }
        continue;
      }
      if (included) {
        out[key] = value;
        kept = true;
      }
    }
    return kept || prefix === '' ? out : undefined;
  };
  return walk(source, '') ?? {};
}
