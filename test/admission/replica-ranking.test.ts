import { describe, expect, it } from 'vitest';
import { c3Rank, ReplicaRanking, type ResponseSample } from '../../src/admission/replica-ranking.js';
import type { NodeResourceStats } from '../../src/admission/stats-header.js';
import { InvalidArgumentError } from '../../src/errors.js';

const ms = 1_000_000;
const FAST: ResponseSample = { responseTimeNs: 5 * ms, serviceTimeNs: 2 * ms, queueSize: 1 };
const SLOW: ResponseSample = { responseTimeNs: 8 * ms, serviceTimeNs: 3 * ms, queueSize: 2 };
const MID: ResponseSample = { responseTimeNs: 6 * ms, serviceTimeNs: 2 * ms, queueSize: 1 };

function usage(entries: Record<string, { cpu: number; heap: number }>): Map<string, NodeResourceStats> {
  return new Map(
    Object.entries(entries).map(([nodeId, s]) => [nodeId, { nodeId, ...s, io: undefined, timestampMs: 0 }]),
  );
}

function record(r: ReplicaRanking, nodeId: string, sample: ResponseSample, times = 1): void {
  for (let i = 0; i < times; i++) r.recordResponse(nodeId, sample);
}

describe('c3Rank (Elasticsearch ComputedNodeStats.innerRank)', () => {
  it('is R − S + qHat³·S in ms with qHat = 1 + outstanding·clientNum + queue', () => {
    const stats = { queueSize: 3, responseTimeNs: 10 * ms, serviceTimeNs: 4 * ms, observations: 1 };
    // qHat = 1 + 2·3 + 3 = 10; rank = 10 − 4 + 1000·4
    expect(c3Rank(stats, 2, 3)).toBe(4006);
    expect(c3Rank(stats, 0, 3)).toBe(10 - 4 + 4 ** 3 * 4);
  });
});

describe('ReplicaRanking', () => {
  it('keeps EWMAs with alpha 0.3 started at the first sample, and the queue size truncated', () => {
    const r = new ReplicaRanking();
    r.recordResponse('n', { responseTimeNs: 10 * ms, serviceTimeNs: 4 * ms, queueSize: 3 });
    expect(r.nodeStats('n')).toEqual({
      queueSize: 3,
      responseTimeNs: 10 * ms,
      serviceTimeNs: 4 * ms,
      observations: 1,
    });
    r.recordResponse('n', { responseTimeNs: 20 * ms, serviceTimeNs: 8 * ms, queueSize: 6 });
    const s = r.nodeStats('n')!;
    expect(s.responseTimeNs).toBeCloseTo(13 * ms, 3);
    expect(s.serviceTimeNs).toBeCloseTo(5.2 * ms, 3);
    expect(s.queueSize).toBe(3); // EWMA 3.9
    expect(s.observations).toBe(2);
  });

  it('counts clientNum as the nodes with response stats, as Elasticsearch', () => {
    const r = new ReplicaRanking();
    expect(r.clientNum).toBe(0);
    record(r, 'a', FAST);
    record(r, 'b', SLOW);
    expect(r.clientNum).toBe(2);
    r.removeNode('b');
    expect(r.clientNum).toBe(1);
  });

  it('orders known nodes by rank, lowest first', () => {
    const r = new ReplicaRanking({ warmupSamples: 0 });
    record(r, 'a', FAST); // qHat 2: 5 − 2 + 8·2 = 19
    record(r, 'b', SLOW); // qHat 3: 8 − 3 + 27·3 = 86
    expect(r.rank(['b', 'a'])).toEqual(['a', 'b']);
  });

  it('counts requests in flight from this coordinator, times clientNum, into qHat', () => {
    const r = new ReplicaRanking({ warmupSamples: 0 });
    record(r, 'a', FAST);
    record(r, 'b', SLOW);
    r.onSend('a');
    r.onSend('a'); // qHat = 1 + 2·2 + 1 = 6: 5 − 2 + 216·2 = 435 > 86
    expect(r.outstanding('a')).toBe(2);
    expect(r.rank(['a', 'b'])).toEqual(['b', 'a']);
    r.onDone('a');
    r.onDone('a');
    r.onDone('a'); // never below 0
    expect(r.outstanding('a')).toBe(0);
    expect(r.rank(['a', 'b'])).toEqual(['a', 'b']);
  });

  it('ranks a node in duress (CPU >= 0.9 or heap >= 0.7) after every healthy node, whatever its rank', () => {
    const r = new ReplicaRanking({ warmupSamples: 0 });
    record(r, 'a', FAST); // 19, the best
    record(r, 'b', SLOW); // 86
    record(r, 'c', MID); // 20
    expect(r.rank(['a', 'b', 'c'])).toEqual(['a', 'c', 'b']);
    expect(
      r.rank(['a', 'b', 'c'], usage({ a: { cpu: 0.95, heap: 0.1 }, c: { cpu: 0.89, heap: 0.69 } })),
    ).toEqual(['c', 'b', 'a']);
    expect(
      r.rank(['a', 'b', 'c'], usage({ a: { cpu: 0.1, heap: 0.75 }, c: { cpu: 0.9, heap: 0.1 } })),
    ).toEqual(['b', 'a', 'c']);
  });

  it('does not treat a node without fresh resource stats as idle: it keeps its place by response stats', () => {
    const r = new ReplicaRanking({ warmupSamples: 0 });
    record(r, 'a', FAST);
    record(r, 'b', SLOW);
    // b has no resource stats (unknown), a has healthy ones: b is neither in duress nor preferred
    expect(r.rank(['b', 'a'], usage({ a: { cpu: 0.5, heap: 0.5 } }))).toEqual(['a', 'b']);
  });

  it('honours configured duress thresholds', () => {
    const r = new ReplicaRanking({ warmupSamples: 0, cpuDuressThreshold: 0.5, heapDuressThreshold: 0.95 });
    record(r, 'a', FAST);
    record(r, 'b', SLOW);
    expect(r.rank(['a', 'b'], usage({ a: { cpu: 0.5, heap: 0.9 } }))).toEqual(['b', 'a']);
  });

  it('blends the winner into the losers on select (Elasticsearch adjustStats), and rank changes nothing', () => {
    const r = new ReplicaRanking({ warmupSamples: 0 });
    record(r, 'a', FAST);
    record(r, 'b', SLOW);
    const before = r.nodeStats('b');
    r.rank(['a', 'b']);
    expect(r.nodeStats('b')).toEqual(before);
    expect(r.select(['a', 'b'])).toEqual(['a', 'b']);
    expect(r.nodeStats('a')).toEqual({
      queueSize: 1,
      responseTimeNs: 5 * ms,
      serviceTimeNs: 2 * ms,
      observations: 1,
    });
    const b = r.nodeStats('b')!;
    expect(b.queueSize).toBe(1); // EWMA 0.3·floor(3/2) + 0.7·2 = 1.7
    expect(b.responseTimeNs).toBeCloseTo(0.3 * 6.5 * ms + 0.7 * 8 * ms, 3);
    expect(b.serviceTimeNs).toBe(2_850_000); // trunc(0.3·2.5 ms + 0.7·3 ms)
    expect(b.observations).toBe(1);
  });

  it('probes a node without response stats ahead of the others while it has fewer than 2 requests in flight', () => {
    const r = new ReplicaRanking({ warmupSamples: 0 });
    record(r, 'a', FAST);
    record(r, 'b', SLOW);
    expect(r.rank(['a', 'b', 'new'])).toEqual(['new', 'a', 'b']);
    r.onSend('new');
    expect(r.rank(['a', 'b', 'new'])).toEqual(['new', 'a', 'b']);
    r.onSend('new');
    expect(r.rank(['a', 'b', 'new'])).toEqual(['a', 'b', 'new']);
    r.onDone('new');
    expect(r.rank(['a', 'b', 'new'])[0]).toBe('new');
  });

  it('spreads over nodes when none has response stats, fewest in flight first', () => {
    const r = new ReplicaRanking();
    r.onSend('x');
    r.onSend('y');
    r.onSend('y');
    expect(r.rank(['y', 'x', 'z'])).toEqual(['z', 'x', 'y']);
  });

  it('does not let a warming-up node look better than the best warm node, and caps it in flight', () => {
    const r = new ReplicaRanking(); // warmupSamples 100, probeInflightCap 2
    record(r, 'a', FAST, 100); // warm: 19
    record(r, 'b', SLOW, 100); // warm: 86
    record(r, 'n', { responseTimeNs: 1 * ms, serviceTimeNs: 0.5 * ms, queueSize: 0 }); // bare rank 1
    expect(r.rank(['a', 'b', 'n'])).toEqual(['a', 'n', 'b']); // clamped to 19: tie with a, input order
    expect(r.rank(['n', 'a', 'b'])).toEqual(['n', 'a', 'b']);
    r.onSend('n');
    r.onSend('n');
    expect(r.rank(['n', 'a', 'b'])).toEqual(['a', 'b', 'n']);
    const noWarmup = new ReplicaRanking({ warmupSamples: 0 });
    record(noWarmup, 'a', FAST);
    record(noWarmup, 'n', { responseTimeNs: 1 * ms, serviceTimeNs: 0.5 * ms, queueSize: 0 });
    expect(noWarmup.rank(['a', 'n'])).toEqual(['n', 'a']);
  });

  it('keeps duplicate candidates once', () => {
    const r = new ReplicaRanking({ warmupSamples: 0 });
    record(r, 'a', FAST);
    expect(r.rank(['a', 'b', 'a'])).toEqual(['b', 'a']);
  });

  describe('over 1000 selections with 8 requests in flight', () => {
    /** Runs selections; `stuck` never returns response stats (its responses time out). */
    function simulate(r: ReplicaRanking, stuck: string) {
      const profiles: Record<string, ResponseSample> = { a: FAST, b: SLOW };
      const inFlight: string[] = [];
      const wins: Record<string, number> = { a: 0, b: 0, [stuck]: 0 };
      let maxStuckInFlight = 0;
      for (let i = 0; i < 1000; i++) {
        const winner = r.select(['a', 'b', stuck])[0]!;
        r.onSend(winner);
        wins[winner]!++;
        inFlight.push(winner);
        maxStuckInFlight = Math.max(maxStuckInFlight, r.outstanding(stuck));
        if (inFlight.length >= 8) {
          const done = inFlight.shift()!;
          r.onDone(done);
          if (done !== stuck) r.recordResponse(done, profiles[done]!);
        }
      }
      return { wins, maxStuckInFlight };
    }

    it('does not flood a node without response stats: at most 2 in flight, at most about 2 in 8 requests', () => {
      const r = new ReplicaRanking();
      record(r, 'a', FAST, 100);
      record(r, 'b', SLOW, 100);
      const { wins, maxStuckInFlight } = simulate(r, 'c');
      expect(maxStuckInFlight).toBe(2);
      expect(wins['c']).toBeGreaterThan(0); // still probed
      expect(wins['c']).toBeLessThanOrEqual(252);
      expect(wins['a']! + wins['b']!).toBeGreaterThanOrEqual(748);
    });

    it('without the in-flight cap the stat-less node takes every request (the behaviour the cap prevents)', () => {
      const r = new ReplicaRanking({ probeInflightCap: 1000 });
      record(r, 'a', FAST, 100);
      record(r, 'b', SLOW, 100);
      const { wins, maxStuckInFlight } = simulate(r, 'c');
      expect(wins['c']).toBe(1000);
      expect(maxStuckInFlight).toBe(8); // every request in the window
    });
  });

  it('refuses a negative or non-finite sample', () => {
    const r = new ReplicaRanking();
    expect(() => r.recordResponse('a', { ...FAST, responseTimeNs: -1 })).toThrow(InvalidArgumentError);
    expect(() => r.recordResponse('a', { ...FAST, queueSize: Number.NaN })).toThrow(
      'sample.queueSize must be a finite number >= 0',
    );
    expect(r.nodeStats('a')).toBeUndefined();
  });

  it.each([
    [{ alpha: 0 }, 'options.alpha must be a ratio in (0, 1]; received 0'],
    [{ heapDuressThreshold: 70 }, 'options.heapDuressThreshold must be a ratio in (0, 1]; received 70'],
    [{ probeInflightCap: -1 }, 'options.probeInflightCap must be an integer in 0..1000; received -1'],
    [{ warmupSamples: 0.5 }, 'options.warmupSamples must be an integer in 0..10000; received 0.5'],
  ])('rejects %j', (options, message) => {
    expect(() => new ReplicaRanking(options)).toThrow(message);
  });
});
