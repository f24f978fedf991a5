import { describe, expect, it } from 'vitest';
import { StatsCollector, type StatsCollectorOptions } from '../../src/admission/stats-collector.js';
import { encodeStatsHeader, type NodeResourceStats } from '../../src/admission/stats-header.js';
import { InvalidArgumentError } from '../../src/errors.js';

const T0 = 1_700_000_000_000;

function header(...entries: Partial<NodeResourceStats>[]): string {
  return encodeStatsHeader(
    entries.map((e) => ({ nodeId: 'n1', cpu: 0.5, heap: 0.4, io: 0.1, timestampMs: T0, ...e })),
  ).value;
}

function collector(options: StatsCollectorOptions = {}) {
  const clock = { nowMs: T0 };
  const c = new StatsCollector({ nowMs: () => clock.nowMs, ...options });
  return { c, clock };
}

const ZERO = {
  accepted: 0,
  foreign: 0,
  throttled: 0,
  malformed: 0,
  stale: 0,
  delayed: 0,
  dropped: 0,
  unknownVersion: 0,
};

describe('StatsCollector', () => {
  it("stores the called node's own entry and serves it while fresh", () => {
    const { c } = collector();
    expect(c.ingest('n1', header({}))).toBe(1);
    expect(c.get('n1')).toEqual({ nodeId: 'n1', cpu: 0.5, heap: 0.4, io: 0.1, timestampMs: T0 });
    expect(c.state('n1')).toBe('fresh');
    expect(c.counters()).toEqual({ ...ZERO, accepted: 1 });
  });

  it('treats a node it has no stats for as unknown, not idle', () => {
    const { c } = collector();
    expect(c.get('n9')).toBeUndefined();
    expect(c.state('n9')).toBe('unknown');
  });

  it('accepts only entries of the node it called: others are foreign', () => {
    const { c } = collector();
    expect(c.ingest('n1', header({ nodeId: 'n2' }, { nodeId: 'n1' }, { nodeId: 'n3' }))).toBe(1);
    expect(c.get('n2')).toBeUndefined();
    expect(c.get('n3')).toBeUndefined();
    expect(c.get('n1')).toBeDefined();
    expect(c.counters()).toEqual({ ...ZERO, accepted: 1, foreign: 2 });
  });

  it('cannot be poisoned by a header that came from an end client and was passed on by a node', () => {
    const { c } = collector();
    const forged = header({ nodeId: 'n2', cpu: 1, heap: 1 });
    expect(c.ingest('n1', forged)).toBe(0);
    expect(c.get('n2')).toBeUndefined();
    expect(c.counters().foreign).toBe(1);
  });

  it('refreshes a node at most once per minRefreshMs (default 1000)', () => {
    const { c, clock } = collector();
    c.ingest('n1', header({ cpu: 0.1 }));
    clock.nowMs += 999;
    expect(c.ingest('n1', header({ cpu: 0.2, timestampMs: T0 + 999 }))).toBe(0);
    expect(c.get('n1')!.cpu).toBe(0.1);
    clock.nowMs += 1;
    expect(c.ingest('n1', header({ cpu: 0.3, timestampMs: T0 + 1000 }))).toBe(1);
    expect(c.get('n1')!.cpu).toBe(0.3);
    expect(c.counters()).toEqual({ ...ZERO, accepted: 2, throttled: 1 });
  });

  it('does not parse the figures of a throttled entry', () => {
    const { c, clock } = collector();
    c.ingest('n1', header({}));
    clock.nowMs += 10;
    c.ingest('n1', 'v1|n1:garbage');
    expect(c.counters()).toEqual({ ...ZERO, accepted: 1, throttled: 1 });
  });

  it('honours a configured minRefreshMs, 0 meaning every response', () => {
    const { c, clock } = collector({ minRefreshMs: 0 });
    c.ingest('n1', header({ cpu: 0.1 }));
    clock.nowMs += 1;
    c.ingest('n1', header({ cpu: 0.2, timestampMs: T0 + 1 }));
    expect(c.get('n1')!.cpu).toBe(0.2);
  });

  it('drops an entry older than the stored one (a delayed response)', () => {
    const { c, clock } = collector();
    c.ingest('n1', header({ cpu: 0.7, timestampMs: T0 }));
    clock.nowMs += 1500;
    expect(c.ingest('n1', header({ cpu: 0.2, timestampMs: T0 - 500 }))).toBe(0);
    expect(c.get('n1')!.cpu).toBe(0.7);
    expect(c.counters()).toEqual({ ...ZERO, accepted: 1, delayed: 1 });
  });

  it('replaces on an equal timestamp', () => {
    const { c, clock } = collector();
    c.ingest('n1', header({ cpu: 0.7 }));
    clock.nowMs += 1000;
    expect(c.ingest('n1', header({ cpu: 0.7 }))).toBe(1);
  });

  it('drops an entry already older than the TTL (default 5000 ms), or further ahead than it', () => {
    const { c } = collector();
    expect(c.ingest('n1', header({ timestampMs: T0 - 5001 }))).toBe(0);
    expect(c.ingest('n1', header({ timestampMs: T0 + 5001 }))).toBe(0);
    expect(c.get('n1')).toBeUndefined();
    expect(c.ingest('n1', header({ timestampMs: T0 - 5000 }))).toBe(1);
    expect(c.counters()).toEqual({ ...ZERO, accepted: 1, stale: 2 });
  });

  it('stops serving stats once they are older than the TTL: the node becomes unknown', () => {
    const { c, clock } = collector();
    c.ingest('n1', header({ timestampMs: T0 - 1000 }));
    clock.nowMs += 4000;
    expect(c.state('n1')).toBe('fresh');
    clock.nowMs += 1;
    expect(c.get('n1')).toBeUndefined();
    expect(c.state('n1')).toBe('unknown');
    expect(c.fresh()).toEqual([]);
  });

  it('keeps stats with a timestamp ahead of the coordinator no longer than the TTL after accepting them', () => {
    const { c, clock } = collector();
    c.ingest('n1', header({ timestampMs: T0 + 3000 })); // the node's clock runs 3 s ahead
    clock.nowMs += 5000;
    expect(c.state('n1')).toBe('fresh');
    clock.nowMs += 1;
    expect(c.state('n1')).toBe('unknown');
  });

  it('honours a configured TTL', () => {
    const { c, clock } = collector({ ttlMs: 100 });
    c.ingest('n1', header({}));
    clock.nowMs += 101;
    expect(c.get('n1')).toBeUndefined();
  });

  it('counts malformed entries, entries past the bounds and unknown versions', () => {
    const { c, clock } = collector({ maxEntries: 2 });
    expect(c.ingest('n1', 'v1|n1:1,2,x,4')).toBe(0);
    clock.nowMs += 1000;
    c.ingest('n1', `${header({})};n2:1,2,3,4;n3:1,2,3,4`);
    c.ingest('n1', 'v7|n1:1,2,3,4');
    c.ingest('n1', 'not a header');
    c.ingest('n1', undefined);
    expect(c.counters()).toEqual({
      ...ZERO,
      accepted: 1,
      malformed: 2,
      foreign: 1,
      dropped: 1,
      unknownVersion: 1,
    });
  });

  it('reads the header from a response header record with lower-case keys', () => {
    const { c } = collector();
    expect(c.ingestResponseHeaders('n1', { 'content-type': 'x', resource_usage_stats: header({}) })).toBe(1);
    expect(c.ingestResponseHeaders('n2', { 'content-type': 'x' })).toBe(0);
  });

  it('forgets a node that left', () => {
    const { c } = collector();
    c.ingest('n1', header({}));
    expect(c.remove('n1')).toBe(true);
    expect(c.get('n1')).toBeUndefined();
  });

  it('lists the fresh stats of every node', () => {
    const { c, clock } = collector();
    c.ingest('n1', header({}));
    clock.nowMs += 3000;
    c.ingest('n2', header({ nodeId: 'n2', timestampMs: T0 + 3000 }));
    expect(c.fresh().map((s) => s.nodeId)).toEqual(['n1', 'n2']);
    clock.nowMs += 2001;
    expect(c.fresh().map((s) => s.nodeId)).toEqual(['n2']);
  });

  it.each([
    [{ ttlMs: 0 }, 'options.ttlMs must be an integer in 1..600000; received 0'],
    [{ minRefreshMs: -1 }, 'options.minRefreshMs must be an integer in 0..600000; received -1'],
    [{ maxBytes: 1.5 }, 'options.maxBytes must be an integer in 0..1048576; received 1.5'],
  ])('rejects %j', (options, message) => {
    expect(() => new StatsCollector(options)).toThrow(InvalidArgumentError);
    expect(() => new StatsCollector(options)).toThrow(message);
  });
});
