import { describe, expect, it } from 'vitest';
import { placeDataNode } from '../../src/cluster/data-node-placement.js';
import { assignShardCopies, copiesHeldBy, heldShardsOf } from '../../src/cluster/shard-layout.js';

const NODES = ['data-1', 'data-2', 'data-3'];
const INDICES = ['easy-ham-1', 'easy-ham-2', 'hard-ham-1', 'spam-1', 'spam-2'];

describe('shard layout', () => {
  it('puts the primary of shard k on node k mod N and its replica on the next node', () => {
    const layout = assignShardCopies({ indices: ['a', 'b'], shardsPerIndex: 2, nodeIds: NODES, replicas: 1 });
    expect(layout.get('a')).toEqual([
      { primary: 'data-1', replicas: ['data-2'] },
      { primary: 'data-2', replicas: ['data-3'] },
    ]);
    expect(layout.get('b')).toEqual([
      { primary: 'data-3', replicas: ['data-1'] },
      { primary: 'data-1', replicas: ['data-2'] },
    ]);
  });

  it('never puts two copies of a shard on one node and balances copies within one', () => {
    for (const [shards, nodes, replicas] of [
      [3, 3, 1],
      [8, 3, 1],
      [5, 4, 2],
      [1, 2, 1],
      [7, 5, 3],
    ] as const) {
      const nodeIds = NODES.concat(['data-4', 'data-5']).slice(0, nodes);
      const layout = assignShardCopies({ indices: INDICES, shardsPerIndex: shards, nodeIds, replicas });
      const counts = new Map(nodeIds.map((id) => [id, 0]));
      for (const copies of layout.values()) {
        expect(copies).toHaveLength(shards);
        for (const c of copies) {
          const all = [c.primary, ...c.replicas];
          expect(new Set(all).size).toBe(replicas + 1);
          for (const id of all) counts.set(id, counts.get(id)! + 1);
        }
      }
      const values = [...counts.values()];
      expect(Math.max(...values) - Math.min(...values)).toBeLessThanOrEqual(1);
    }
  });

  it('leaves replicas unassigned beyond N - 1, as Elasticsearch does', () => {
    const layout = assignShardCopies({ indices: ['a'], shardsPerIndex: 1, nodeIds: ['x', 'y'], replicas: 3 });
    expect(layout.get('a')).toEqual([{ primary: 'x', replicas: ['y'] }]);
    const alone = assignShardCopies({ indices: ['a'], shardsPerIndex: 2, nodeIds: ['x'], replicas: 1 });
    expect(alone.get('a')).toEqual([
      { primary: 'x', replicas: [] },
      { primary: 'x', replicas: [] },
    ]);
  });

  it('tells each node the copies it holds and its heldShards engine option', () => {
    const layout = assignShardCopies({ indices: INDICES, shardsPerIndex: 3, nodeIds: NODES, replicas: 1 });
    expect(heldShardsOf(layout, 'data-1')).toEqual(Object.fromEntries(INDICES.map((i) => [i, [0, 2]])));
    expect(copiesHeldBy(layout, 'data-2').slice(0, 2)).toEqual([
      { index: 'easy-ham-1', shard: 0, primary: false },
      { index: 'easy-ham-1', shard: 1, primary: true },
    ]);
    const total = NODES.reduce((n, id) => n + copiesHeldBy(layout, id).length, 0);
    expect(total).toBe(INDICES.length * 3 * 2);
    expect(heldShardsOf(layout, 'nobody')).toEqual(Object.fromEntries(INDICES.map((i) => [i, []])));
  });

  it.each([
    [{ shardsPerIndex: 0 }, 'shardsPerIndex must be an integer in 1..1024; received 0'],
    [{ replicas: -1 }, 'replicas must be an integer in 0..16; received -1'],
    [{ nodeIds: [] }, 'nodeIds must name at least one node; received []'],
    [{ nodeIds: ['a', 'a'] }, 'nodeIds must not repeat a node id; received ["a","a"]'],
  ])('refuses %j', (change, message) => {
    expect(() =>
      assignShardCopies({ indices: ['a'], shardsPerIndex: 2, nodeIds: NODES, replicas: 1, ...change }),
    ).toThrow(message);
  });
});

describe('data node placement', () => {
  const cluster = {
    shardsPerIndex: 3,
    replicas: 1,
    dataNodes: NODES.map((id, i) => ({ id, url: `http://127.0.0.1:${9201 + i}` })),
  };

  it('gives the built-in engine the shards to load and reports the copies', () => {
    const p = placeDataNode({
      nodeId: 'data-3',
      cluster,
      engineOptions: { maxDocumentsPerIndex: 5 },
      builtInEngine: true,
    });
    expect(p.shardsPerIndex).toBe(3);
    expect(p.engineOptions).toEqual({
      maxDocumentsPerIndex: 5,
      shardsPerIndex: 3,
      heldShards: Object.fromEntries(INDICES.map((i) => [i, [1, 2]])),
    });
    expect(p.copiesFor(INDICES)).toHaveLength(10);
  });

  it('holds everything without a cluster file, and leaves another engine its options', () => {
    const lone = placeDataNode({ nodeId: 'x', cluster: undefined, engineOptions: {}, builtInEngine: true });
    expect(lone.shardsPerIndex).toBe(2);
    expect(lone.copiesFor(['a'])).toEqual([
      { index: 'a', shard: 0, primary: true },
      { index: 'a', shard: 1, primary: true },
    ]);
    const other = placeDataNode({ nodeId: 'data-1', cluster, engineOptions: { k: 1 }, builtInEngine: false });
    expect(other.engineOptions).toEqual({ k: 1 });
    expect(other.copiesFor(['alpha']).map((c) => c.shard)).toEqual([0, 2]);
  });

  it('refuses a node id the cluster file does not list', () => {
    expect(() =>
      placeDataNode({ nodeId: 'data-9', cluster, engineOptions: {}, builtInEngine: true }),
    ).toThrow(
      '--node-id must name a data node of the cluster file (data-1, data-2, data-3); received "data-9"',
    );
  });
});
