/**
 * The plan a search body's `query` parses into (`parseSearchBody` in `search-request.ts`, the
 * `query_string` parser in `query-string.ts`): plain, frozen-shape data the MiniSearch engine runs.
 * Its own module so that the parsers of each query type can share it without importing each other.
 */
import type { SearchField } from './mail-index.js';
import type { TermQueryPlan } from './term-queries.js';

/** The fields a `range` query may name: the stored `date` (epoch ms, or null when the mail had none). */
export const RANGE_FIELDS = ['date'] as const;
export type RangeField = (typeof RANGE_FIELDS)[number];

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

/** The units of Elasticsearch date math: year, month, week, day, hour (h or H), minute, second. */
export const DATE_MATH_UNITS = ['y', 'M', 'w', 'd', 'h', 'H', 'm', 's'] as const;
export type DateMathUnit = (typeof DATE_MATH_UNITS)[number];

/** One date-math step: add a signed number of units, or round to the unit (`/d`). */
export type DateMathStep =
  | { readonly op: 'add'; readonly amount: number; readonly unit: DateMathUnit }
  | { readonly op: 'round'; readonly unit: DateMathUnit };

/**
 * A date as written in a range bound, resolved only when the query runs: an anchor (`now`, or a fixed
 * epoch ms) and the date-math steps applied to it in order, in UTC. See `resolveDate`.
 */
export interface DateExpression {
  readonly anchor: 'now' | number;
  readonly steps: readonly DateMathStep[];
}

/** One end of a range: `gte`/`lte` are inclusive, `gt`/`lt` are not. */
export interface RangeBound {
  readonly inclusive: boolean;
  readonly date: DateExpression;
}

/**
 * A range filter on a stored date: matching documents score 1 (as OpenSearch's constant_score);
 * a document whose date is null never matches.
 */
export interface RangeQueryPlan {
  readonly kind: 'range';
  readonly field: RangeField;
  /** From `gte` or `gt`; null when there is no lower bound. */
  readonly lower: RangeBound | null;
  /** From `lte` or `lt`; null when there is no upper bound. */
  readonly upper: RangeBound | null;
}

/**
 * A boolean combination, as OpenSearch's bool query: a document must match every `must` and `filter`
 * clause and no `must_not` clause; when there is no `must` or `filter` clause it must match at least
 * one `should` clause. The score is the sum of the scores of the `must` and the matching `should`
 * clauses (`filter` and `must_not` score nothing); a bool with only `must_not` clauses scores 0 and
 * an empty bool matches every document with score 1.
 */
export interface BoolQueryPlan {
  readonly kind: 'bool';
  readonly must: readonly QueryPlan[];
  readonly filter: readonly QueryPlan[];
  readonly should: readonly QueryPlan[];
  readonly mustNot: readonly QueryPlan[];
}

export type QueryPlan =
  | TextQueryPlan
  | PrefixQueryPlan
  | MatchAllPlan
  | RangeQueryPlan
  | BoolQueryPlan
  | TermQueryPlan;
