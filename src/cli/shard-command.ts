/**
 * `query-sandbox shard <id> --shards N [--routing-shards M] [--routing R] [--partition-size P]`: prints
 * the Elasticsearch primary shard (0-based) that a document with that `_id` goes to, one line.
 */
import { parseArgs } from 'node:util';
import { InvalidArgumentError } from '../errors.js';
import { type ShardRouting, resolveShardRouting, shardId } from '../routing/shard-routing.js';
import { argumentsError, joinNegativeValues } from '../common/option-checks.js';

export const SHARD_USAGE = `query-sandbox shard <id> --shards N [options]

  prints the primary shard (0-based) that Elasticsearch routes a document with this _id to

  --shards N             index.number_of_shards, 1..1024 (required)
  --routing-shards M     index.number_of_routing_shards, a multiple of N (default: N << max(1, 10 - ceil(log2 N)))
  --routing R            the _routing value (default: route by the id; an empty value counts as none)
  --partition-size P     index.routing_partition_size, 1 or below M (default 1; above 1 needs --routing)

  An id that starts with '-' goes after the flags and '--': query-sandbox shard --shards 5 -- -Xy3
`;

/** A parsed `shard` command line. */
export interface ShardCommandOptions {
  readonly id: string;
  readonly routing: ShardRouting;
  /** Absent when routing by the id. */
  readonly routingValue?: string;
}

/** Option names of `resolveShardRouting` and `shardId`, and the flags that set them. */
const FLAG_OF_PATH: Readonly<Record<string, string>> = {
  numberOfShards: '--shards',
  numberOfRoutingShards: '--routing-shards',
  routingPartitionSize: '--partition-size',
  routing: '--routing',
};

function positiveIntFlag(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) < 1) {
    throw new InvalidArgumentError(flag, 'must be a positive integer', text);
  }
  return Number(text);
}

const SHARD_FLAGS = {
  shards: { type: 'string' },
  'routing-shards': { type: 'string' },
  routing: { type: 'string' },
  'partition-size': { type: 'string' },
} as const;

function parseFlags(argv: readonly string[]) {
  try {
    return parseArgs({
      args: joinNegativeValues(argv, SHARD_FLAGS),
      options: SHARD_FLAGS,
      strict: true,
      allowPositionals: true,
    });
  } catch (error) {
    throw argumentsError(error, argv, SHARD_FLAGS);
  }
}

/** The same error reported against the command-line flag that set the option. */
function asFlagError(error: unknown): unknown {
  if (!(error instanceof InvalidArgumentError) || FLAG_OF_PATH[error.path] === undefined) return error;
  return new InvalidArgumentError(FLAG_OF_PATH[error.path]!, error.expectation, error.received);
}

/**
 * Parses the arguments after `shard`.
 * @throws InvalidArgumentError naming the flag (or `<id>`) and the received value.
 */
export function parseShardOptions(argv: readonly string[]): ShardCommandOptions {
  const { values, positionals } = parseFlags(argv);
  if (positionals.length !== 1) {
    throw new InvalidArgumentError('<id>', 'must be given exactly once', positionals);
  }
  const id = positionals[0]!;
  if (id === '') throw new InvalidArgumentError('<id>', 'must not be empty', id);
  const numberOfShards = positiveIntFlag('--shards', values.shards);
  if (numberOfShards === undefined) {
    throw new InvalidArgumentError('--shards', 'is required', values.shards);
  }
  let routing: ShardRouting;
  try {
    routing = resolveShardRouting({
      numberOfShards,
      numberOfRoutingShards: positiveIntFlag('--routing-shards', values['routing-shards']),
      routingPartitionSize: positiveIntFlag('--partition-size', values['partition-size']),
    });
  } catch (error) {
    throw asFlagError(error);
  }
  // Elasticsearch's requests treat an empty routing as no routing.
  const routingValue = values.routing === '' ? undefined : values.routing;
  if (routing.routingPartitionSize > 1 && routingValue === undefined) {
    throw new InvalidArgumentError(
      '--routing',
      `is required with --partition-size ${routing.routingPartitionSize}`,
      values.routing,
    );
  }
  return { id, routing, ...(routingValue !== undefined ? { routingValue } : {}) };
}

/**
 * Runs `shard` on the arguments after the sub-command and returns the line to print: the shard
 * number and a newline. @throws InvalidArgumentError naming the flag for bad arguments.
 */
export function runShardCommand(argv: readonly string[]): string {
  const options = parseShardOptions(argv);
  try {
    return `${shardId(options.routing, options.id, options.routingValue)}\n`;
  } catch (error) {
    throw asFlagError(error);
  }
}
