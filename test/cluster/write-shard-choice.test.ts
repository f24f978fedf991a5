import { describe, expect, it } from 'vitest';
import { ReplicaRanking } from '../../src/admission/replica-ranking.js';
import { StatsCollector } from '../../src/admission/stats-collector.js';
import { WriteShardChoice } from '../../src/cluster/write-shard-choice.js';
import type { IndexMetadata } from '../../src/indices/index-metadata-store.js';

/** Three shards, one primary per node, no replicas (the choice reads only the layout). */
const meta = {
  layout: [
    { primary: 'd1', replicas: [] },
    { primary: 'd2', replicas: [] },
    { primary: 'd3', replicas: [] },
  ],
} as unknown as IndexMetadata;

function slowD3(ranking: ReplicaRanking, choice: WriteShardChoice): void {
  for (let i = 0; i < 5; i++) {
    for (const [node, ms] of [
      ['d1', 2],
      ['d2', 2],
      ['d3', 40],
    ] as const) {
      ranking.recordResponse(node, { responseTimeNs: ms * 1e6, serviceTimeNs: ms * 1e6, queueSize: 0 });
      choice.sampled(node);
    }
  }
}

describe('WriteShardChoice', () => {
  it('draws uniformly when no node has figures', () => {
    let draw = 0;
    const choice = new WriteShardChoice({
      ranking: new ReplicaRanking(),
      collector: new StatsCollector(),
      isDown: () => false,
      random: () => [0, 0.4, 0.9][draw++ % 3]!,
    });
    expect([0, 1, 2].map(() => choice.choose(meta, [0, 1, 2]))).toEqual([0, 1, 2]);
    expect(choice.chosen()).toEqual({ d1: 1, d2: 1, d3: 1 });
  });

  it('keeps a node slower than slowNodeFactor × the median out while its figures are fresh', () => {
    const ranking = new ReplicaRanking();
    const choice = new WriteShardChoice({
      ranking,
      collector: new StatsCollector(),
      isDown: () => false,
      slowNodeRetryMs: 60_000,
    });
    slowD3(ranking, choice);
    const chosen = Array.from({ length: 40 }, () => choice.choose(meta, [0, 1, 2]));
    expect(chosen).not.toContain(2);
  });

  it('lets a slow node without news take a probe bulk once slowNodeRetryMs passed', () => {
    const ranking = new ReplicaRanking();
    const choice = new WriteShardChoice({
      ranking,
      collector: new StatsCollector(),
      isDown: () => false,
      slowNodeRetryMs: 0,
      random: () => 0.99,
    });
    slowD3(ranking, choice);
    expect(choice.choose(meta, [0, 1, 2])).toBe(2);
  });

  it('falls back to every candidate when every node is down', () => {
    const choice = new WriteShardChoice({
      ranking: new ReplicaRanking(),
      collector: new StatsCollector(),
      isDown: () => true,
      random: () => 0.5,
    });
    expect(choice.choose(meta, [0, 1, 2])).toBe(1);
  });
});
