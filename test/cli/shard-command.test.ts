import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseShardOptions, runShardCommand } from '../../src/cli/shard-command.js';
import { resolveShardRouting, shardId } from '../../src/routing/shard-routing.js';

describe('shard command', () => {
  it('prints the published shard of an id, one line', () => {
    expect(runShardCommand(['sEERfFzPSI', '--shards', '8', '--routing-shards', '8'])).toBe('1\n');
    expect(runShardCommand(['cNRiIrjzYd', '--shards', '8', '--routing-shards', '8'])).toBe('7\n');
    expect(runShardCommand(['--shards=8', '--routing-shards=8', 'BgfLBXUyWT'])).toBe('5\n');
  });

  it('routes by --routing instead of the id', () => {
    expect(
      runShardCommand(['foobar', '--shards', '8', '--routing-shards', '8', '--routing', 'cNRiIrjzYd']),
    ).toBe('7\n');
  });

  it('treats an empty --routing as none, as Elasticsearch requests do', () => {
    expect(runShardCommand(['sEERfFzPSI', '--shards', '8', '--routing-shards', '8', '--routing', ''])).toBe(
      '1\n',
    );
  });

  it('uses the default routing shards when --routing-shards is absent', () => {
    const options = parseShardOptions(['some-id', '--shards', '5']);
    expect(options.routing.routingNumShards).toBe(640);
    expect(runShardCommand(['some-id', '--shards', '5'])).toBe(
      `${shardId(resolveShardRouting({ numberOfShards: 5 }), 'some-id')}\n`,
    );
  });

  it('routes a partitioned index by routing value and id', () => {
    const args = ['--shards', '6', '--routing-shards', '6', '--partition-size', '2', '--routing'];
    expect(runShardCommand(['a_0', ...args, 'a'])).toBe('3\n');
    expect(runShardCommand(['b_0', ...args, 'b'])).toBe('5\n');
  });

  it('takes an id that starts with - after --', () => {
    const routing = resolveShardRouting({ numberOfShards: 5 });
    expect(runShardCommand(['--shards', '5', '--', '-Xy3'])).toBe(`${shardId(routing, '-Xy3')}\n`);
  });

  it('refuses bad values naming the flag and the value', () => {
    expect(() => runShardCommand(['x', '--shards', 'abc'])).toThrow(
      '--shards must be a positive integer; received "abc"',
    );
    expect(() => runShardCommand(['x', '--shards', '0'])).toThrow(
      '--shards must be a positive integer; received "0"',
    );
    expect(() => runShardCommand(['x', '--shards', '2000'])).toThrow(
      '--shards must be an integer in 1..1024; received 2000',
    );
    expect(() => runShardCommand(['x', '--shards', '8', '--routing-shards', '12'])).toThrow(
      '--routing-shards must be a multiple of the number of shards (8); received 12',
    );
    expect(() =>
      runShardCommand([
        'x',
        '--shards',
        '4',
        '--routing-shards',
        '4',
        '--partition-size',
        '4',
        '--routing',
        'r',
      ]),
    ).toThrow(/^--partition-size must be 1 or an integer in 2\.\.3 .*; received 4$/);
  });

  it('refuses a missing or repeated id, a missing --shards, and an unknown flag', () => {
    expect(() => runShardCommand(['--shards', '8'])).toThrow('<id> must be given exactly once; received []');
    expect(() => runShardCommand(['a', 'b', '--shards', '8'])).toThrow('<id> must be given exactly once');
    expect(() => runShardCommand(['', '--shards', '8'])).toThrow('<id> must not be empty');
    expect(() => runShardCommand(['a'])).toThrow('--shards is required');
    expect(() => runShardCommand(['a', '--shards', '8', '--frobnicate'])).toThrow(
      /arguments are invalid.*frobnicate/,
    );
  });

  it('requires --routing with a partition size above 1', () => {
    expect(() => runShardCommand(['a_0', '--shards', '6', '--partition-size', '2'])).toThrow(
      '--routing is required with --partition-size 2',
    );
  });
});

describe('query-sandbox shard (the built command)', () => {
  // The compiled command, as `npm test` builds it first (pretest).
  const main = path.resolve('dist/src/cli/main.js');
  const run = (...args: string[]) =>
    spawnSync(process.execPath, [main, 'shard', ...args], { encoding: 'utf8', timeout: 20_000 });

  it('prints the shard number on one line and exits 0', () => {
    const r = run('sEERfFzPSI', '--shards', '8', '--routing-shards', '8');
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('1\n');
    expect(r.status).toBe(0);
  });

  it('tells a bad flag value in one line without a stack and exits 1, as the other commands do', () => {
    const r = run('x', '--shards', '8', '--routing-shards', '12');
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'query-sandbox: --routing-shards must be a multiple of the number of shards (8); received 12\n',
    );
    expect(r.status).toBe(1);
  });

  it('prints its usage with --help', () => {
    const r = run('--help');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('query-sandbox shard <id> --shards N');
  });
});
