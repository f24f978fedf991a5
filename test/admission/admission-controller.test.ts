import { describe, expect, it } from 'vitest';
import { AdmissionController } from '../../src/admission/admission-controller.js';
import { StatsCollector } from '../../src/admission/stats-collector.js';
import { encodeStatsHeader, type NodeResourceStats } from '../../src/admission/stats-header.js';
import { InvalidArgumentError } from '../../src/errors.js';

function stats(entries: Record<string, { cpu: number; heap: number }>): Map<string, NodeResourceStats> {
  return new Map(
    Object.entries(entries).map(([nodeId, s]) => [nodeId, { nodeId, ...s, io: undefined, timestampMs: 0 }]),
  );
}

const usage = stats({
  hot: { cpu: 0.97, heap: 0.5 },
  full: { cpu: 0.2, heap: 0.93 },
  ok: { cpu: 0.5, heap: 0.5 },
  edge: { cpu: 0.95, heap: 0.1 },
  below: { cpu: 0.949, heap: 0.899 },
});

describe('AdmissionController', () => {
  it("is disabled by default, as OpenSearch's admission_control.transport.mode, and then admits without looking", () => {
    const ac = new AdmissionController();
    expect(ac.mode).toBe('disabled');
    let reads = 0;
    const counting = {
      get: (id: string) => {
        reads++;
        return usage.get(id);
      },
    };
    expect(ac.decide('search', [['hot']], counting)).toEqual({ admitted: true, wouldReject: undefined });
    expect(reads).toBe(0);
    expect(ac.counters().search.evaluated).toBe(0);
  });

  it('defaults to CPU 0.95 (OpenSearch admission_control.*.cpu_usage.limit = 95) and heap 0.9 for both actions', () => {
    const ac = new AdmissionController();
    expect(ac.limits('search')).toEqual({ cpu: 0.95, heap: 0.9 });
    expect(ac.limits('bulk')).toEqual({ cpu: 0.95, heap: 0.9 });
  });

  describe('enforced', () => {
    const ac = () => new AdmissionController({ mode: 'enforced' });

    it('refuses with 429 rejected_execution_exception when every copy of a shard is on a node over CPU', () => {
      const d = ac().decide('search', [['ok'], ['hot', 'edge']], usage);
      expect(d.admitted).toBe(false);
      if (d.admitted) return;
      expect(d.rejection).toMatchObject({
        action: 'search',
        shardIndex: 1,
        nodeId: 'hot',
        nodeIds: ['hot', 'edge'],
        resource: 'cpu',
        usage: 0.97,
        limit: 0.95,
        status: 429,
        type: 'rejected_execution_exception',
      });
      expect(d.rejection.reason).toContain('node [hot] cpu usage 0.970 >= limit 0.95');
      expect(d.rejection.reason).toContain('shard [1]');
    });

    it('names heap when the node is over its heap limit', () => {
      const d = ac().decide('bulk', [['full']], usage);
      expect(d).toMatchObject({
        admitted: false,
        rejection: { resource: 'heap', nodeId: 'full', usage: 0.93, limit: 0.9 },
      });
    });

    it('admits when one copy of each shard is below its limits', () => {
      expect(
        ac().decide(
          'search',
          [
            ['hot', 'ok'],
            ['full', 'below'],
          ],
          usage,
        ).admitted,
      ).toBe(true);
    });

    it('refuses at the limit and admits just below it (usage >= limit, as CpuBasedAdmissionController)', () => {
      expect(ac().decide('search', [['edge']], usage).admitted).toBe(false);
      expect(ac().decide('search', [['below']], usage).admitted).toBe(true);
    });

    it('never refuses on stats for a node without fresh stats', () => {
      const c = ac();
      expect(c.decide('search', [['hot', 'unknown-node']], usage).admitted).toBe(true);
      expect(c.decide('search', [['unknown-node']], usage).admitted).toBe(true);
      expect(c.counters().search).toEqual({
        evaluated: 2,
        rejected: { cpu: 0, heap: 0 },
        wouldReject: { cpu: 0, heap: 0 },
      });
    });

    it('does not refuse for a shard without eligible copies', () => {
      expect(ac().decide('search', [[], ['ok']], usage).admitted).toBe(true);
      expect(ac().decide('search', [], usage).admitted).toBe(true);
    });

    it('applies per-action limits', () => {
      const c = new AdmissionController({ mode: 'enforced', limits: { bulk: { cpu: 0.5 } } });
      expect(c.decide('search', [['ok']], usage).admitted).toBe(true);
      expect(c.decide('bulk', [['ok']], usage)).toMatchObject({
        admitted: false,
        rejection: { resource: 'cpu', limit: 0.5 },
      });
      expect(c.limits('bulk')).toEqual({ cpu: 0.5, heap: 0.9 });
      expect(c.counters()).toEqual({
        mode: 'enforced',
        search: { evaluated: 1, rejected: { cpu: 0, heap: 0 }, wouldReject: { cpu: 0, heap: 0 } },
        bulk: { evaluated: 1, rejected: { cpu: 1, heap: 0 }, wouldReject: { cpu: 0, heap: 0 } },
      });
    });
  });

  describe('monitor_only', () => {
    it('admits what it would refuse and counts it', () => {
      const ac = new AdmissionController({ mode: 'monitor_only' });
      const d = ac.decide('search', [['hot']], usage);
      expect(d.admitted).toBe(true);
      expect(d).toMatchObject({ wouldReject: { nodeId: 'hot', resource: 'cpu' } });
      ac.decide('search', [['full']], usage);
      ac.decide('search', [['ok']], usage);
      expect(ac.counters().search).toEqual({
        evaluated: 3,
        rejected: { cpu: 0, heap: 0 },
        wouldReject: { cpu: 1, heap: 1 },
      });
    });
  });

  it('switches mode at run time', () => {
    const ac = new AdmissionController({ mode: 'monitor_only' });
    ac.setMode('enforced');
    expect(ac.decide('search', [['hot']], usage).admitted).toBe(false);
    ac.setMode('disabled');
    expect(ac.decide('search', [['hot']], usage).admitted).toBe(true);
    expect(() => ac.setMode('on' as never)).toThrow(
      'mode must be one of enforced (or enabled), monitor_only, disabled; received',
    );
  });

  it('works off the collector: a node whose stats expired is unknown and admitted', () => {
    let nowMs = 1_000_000;
    const collector = new StatsCollector({ nowMs: () => nowMs });
    const value = encodeStatsHeader([
      { nodeId: 'd1', cpu: 0.99, heap: 0.2, io: undefined, timestampMs: nowMs },
    ]).value;
    collector.ingest('d1', value);
    const ac = new AdmissionController({ mode: 'enforced' });
    expect(ac.decide('search', [['d1']], collector).admitted).toBe(false);
    nowMs += 5001;
    expect(ac.decide('search', [['d1']], collector).admitted).toBe(true);
  });

  it.each([
    [
      { mode: 'strict' },
      'options.mode must be one of enforced (or enabled), monitor_only, disabled; received',
    ],
    [{ limits: { search: { cpu: 0 } } }, 'options.limits.search.cpu must be a ratio in (0, 1]; received 0'],
    [{ limits: { bulk: { heap: 95 } } }, 'options.limits.bulk.heap must be a ratio in (0, 1]; received 95'],
  ])('rejects %j', (options, message) => {
    expect(() => new AdmissionController(options as never)).toThrow(InvalidArgumentError);
    expect(() => new AdmissionController(options as never)).toThrow(message);
  });
});
