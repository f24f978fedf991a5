import { describe, expect, it } from 'vitest';
import {
  clusterHealth,
  indexHealth,
  statusAtLeast,
  type ShardCopyState,
} from '../../src/indices/cluster-health.js';

const copy = (shard: number, primary: boolean, state: ShardCopyState['state']): ShardCopyState => ({
  shard,
  primary,
  state,
});

describe('cluster health', () => {
  it('is green with every copy started, yellow with a replica not started, red with a primary not started', () => {
    const green = indexHealth({
      index: 'g',
      numberOfShards: 2,
      numberOfReplicas: 1,
      copies: [
        copy(0, true, 'STARTED'),
        copy(0, false, 'STARTED'),
        copy(1, true, 'STARTED'),
        copy(1, false, 'STARTED'),
      ],
    });
    expect(green).toMatchObject({
      status: 'green',
      active_primary_shards: 2,
      active_shards: 4,
      unassigned_shards: 0,
    });
    const yellow = indexHealth({
      index: 'y',
      numberOfShards: 1,
      numberOfReplicas: 1,
      copies: [copy(0, true, 'STARTED'), copy(0, false, 'INITIALIZING')],
    });
    expect(yellow).toMatchObject({ status: 'yellow', active_shards: 1, initializing_shards: 1 });
    const red = indexHealth({
      index: 'r',
      numberOfShards: 2,
      numberOfReplicas: 0,
      copies: [copy(0, true, 'UNASSIGNED'), copy(1, true, 'STARTED')],
    });
    expect(red).toMatchObject({
      status: 'red',
      active_primary_shards: 1,
      unassigned_shards: 1,
      unassigned_primary_shards: 1,
    });
    // A shard without any copy listed counts as an unassigned primary.
    expect(indexHealth({ index: 'e', numberOfShards: 1, numberOfReplicas: 0, copies: [] })).toMatchObject({
      status: 'red',
      unassigned_primary_shards: 1,
    });
  });

  it('takes the worst index status and counts the active share of every copy', () => {
    const h = clusterHealth([
      {
        index: 'a',
        numberOfShards: 1,
        numberOfReplicas: 1,
        copies: [copy(0, true, 'STARTED'), copy(0, false, 'UNASSIGNED')],
      },
      { index: 'b', numberOfShards: 1, numberOfReplicas: 0, copies: [copy(0, true, 'STARTED')] },
    ]);
    expect(h.status).toBe('yellow');
    expect(h.counts).toMatchObject({ active_shards: 2, unassigned_shards: 1 });
    expect(h.activeShardsPercent).toBeCloseTo(200 / 3);
    expect(clusterHealth([]).status).toBe('green');
    expect(clusterHealth([]).activeShardsPercent).toBe(100);
    expect(statusAtLeast('green', 'yellow')).toBe(true);
    expect(statusAtLeast('yellow', 'green')).toBe(false);
  });
});
