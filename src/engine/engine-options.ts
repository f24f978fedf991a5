/**
 * The `engineOptions` of the MiniSearch engine, validated.
 */

import { InvalidArgumentError } from '../errors.js';
import { CORPUS_GROUPS, type CorpusGroup } from './spam-assassin-corpus.js';
import { optionChecks } from '../common/option-checks.js';

/** Validated engine options. */
export interface MinisearchEngineOptions {
  /** Shards per index, 1..64 (default 2). Scores are shard-local; `handle` checks for cancellation between shards. */
  readonly shardsPerIndex: number;
  /** Index at most this many mails per index, the first in corpus order (default: all, `Infinity`). */
  readonly maxDocumentsPerIndex: number;
  /** The indices (corpus groups) to serve, in corpus order (default: all five). */
  readonly indices: readonly CorpusGroup[];
  /**
   * The shard copies this node holds, index name to ascending shard numbers; `undefined` (the
   * default) holds every shard of every served index. A data node of a cluster holds only the copies
   * assigned to it and loads only those; an index served but absent here holds no shard. Frozen.
   */
  readonly heldShards: Readonly<Record<string, readonly number[]>> | undefined;
}

/** Default shards per index. */
export const DEFAULT_SHARDS_PER_INDEX = 2;

const KNOWN_KEYS = ['shardsPerIndex', 'maxDocumentsPerIndex', 'indices', 'heldShards'];

/**
 * Validate raw `engineOptions`.
 *
 * @param raw the options as given to the runtime (`undefined`/`null` means all defaults).
 * @returns the options with defaults filled in.
 * @throws InvalidArgumentError naming the option and the received value, e.g.
 *   `engineOptions.shardsPerIndex must be an integer in 1..64; received 0`.
 */
export function parseEngineOptions(raw: unknown): MinisearchEngineOptions {
  if (raw === undefined || raw === null) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new InvalidArgumentError('engineOptions', 'must be an object', raw);
  }
  const options = raw as Record<string, unknown>;
  for (const key of Object.keys(options)) {
    if (!KNOWN_KEYS.includes(key)) {
      throw new InvalidArgumentError(
        `engineOptions.${key}`,
        `is not an option of the MiniSearch engine (known: ${KNOWN_KEYS.join(', ')})`,
        options[key],
      );
    }
  }
  const shards = optionChecks.integerIn(
    'engineOptions.shardsPerIndex',
    options['shardsPerIndex'] ?? DEFAULT_SHARDS_PER_INDEX,
    1,
    64,
  );
  const max = options['maxDocumentsPerIndex'] ?? Number.POSITIVE_INFINITY;
  if (max !== Number.POSITIVE_INFINITY && (!Number.isInteger(max) || (max as number) < 1)) {
    throw new InvalidArgumentError('engineOptions.maxDocumentsPerIndex', 'must be an integer >= 1', max);
  }
  const indices = options['indices'] ?? CORPUS_GROUPS;
  if (!Array.isArray(indices) || indices.length === 0) {
    throw new InvalidArgumentError(
      'engineOptions.indices',
      `must be a non-empty array of index names (${CORPUS_GROUPS.join(', ')})`,
      indices,
    );
  }
  for (const [i, name] of indices.entries()) {
    if (!(CORPUS_GROUPS as readonly unknown[]).includes(name)) {
      throw new InvalidArgumentError(
        `engineOptions.indices[${i}]`,
        `must be one of ${CORPUS_GROUPS.join(', ')}`,
        name,
      );
    }
  }
  const served = CORPUS_GROUPS.filter((g) => indices.includes(g));
  return {
    shardsPerIndex: shards as number,
    maxDocumentsPerIndex: max as number,
    indices: served,
    heldShards: parseHeldShards(options['heldShards'], served, shards as number),
  };
}

/**
 * `engineOptions.heldShards`: `{ "<index>": [shard, ...] }` with served index names and distinct
 * shard numbers in 0..shardsPerIndex-1; returned sorted and frozen.
 */
function parseHeldShards(
  raw: unknown,
  served: readonly string[],
  shardsPerIndex: number,
): Readonly<Record<string, readonly number[]>> | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new InvalidArgumentError(
      'engineOptions.heldShards',
      'must be an object of index name to shard numbers',
      raw,
    );
  }
  const held: Record<string, readonly number[]> = {};
  for (const [index, list] of Object.entries(raw as Record<string, unknown>)) {
    const path = `engineOptions.heldShards.${index}`;
    if (!served.includes(index)) {
      throw new InvalidArgumentError(path, `must name a served index (${served.join(', ')})`, list);
    }
    if (!Array.isArray(list)) throw new InvalidArgumentError(path, 'must be an array of shard numbers', list);
    for (const [i, shard] of list.entries()) {
      if (!Number.isInteger(shard) || shard < 0 || shard >= shardsPerIndex) {
        throw new InvalidArgumentError(
          `${path}[${i}]`,
          `must be an integer in 0..${shardsPerIndex - 1}`,
          shard,
        );
      }
      if (list.indexOf(shard) !== i)
        throw new InvalidArgumentError(`${path}[${i}]`, 'must not repeat a shard', shard);
    }
    held[index] = Object.freeze([...(list as number[])].sort((a, b) => a - b));
  }
  return Object.freeze(held);
}
