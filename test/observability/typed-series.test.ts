import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { TypedCounter, TypedHistogram } from '../../src/observability/typed-series.js';
import { parsePrometheusText, samplesOf } from './prometheus-text.js';

describe('TypedHistogram and TypedCounter', () => {
  it('expose cumulative buckets (le inclusive), sum and count, and counters, through the registry', async () => {
    const registry = new Registry();
    const h = new TypedHistogram(registry, 'x_seconds', 'x', [0.1, 1, 10]);
    const c = new TypedCounter(registry, 'y_total', 'y');
    const a = h.child({ sandbox_id: 'a' });
    for (const v of [0.05, 0.1, 0.5, 1, 20]) a.observe(v);
    h.child({ sandbox_id: 'b' }).observe(3);
    c.child({ sandbox_id: 'a' }).inc(2.5);
    c.child({ sandbox_id: 'a' }).inc(-1);
    const m = parsePrometheusText(await registry.metrics());
    expect(m.get('x_seconds')?.type).toBe('histogram');
    expect(
      samplesOf(m, 'x_seconds_bucket', { sandbox_id: 'a' }).map((s) => [s.labels['le'], s.value]),
    ).toEqual([
      ['0.1', 2],
      ['1', 4],
      ['10', 4],
      ['+Inf', 5],
    ]);
    expect(samplesOf(m, 'x_seconds_sum', { sandbox_id: 'a' })[0]?.value).toBeCloseTo(21.65, 10);
    expect(samplesOf(m, 'x_seconds_count', { sandbox_id: 'b' })[0]?.value).toBe(1);
    expect(samplesOf(m, 'y_total', { sandbox_id: 'a' })[0]?.value).toBe(2.5);
    h.retain((labels) => labels['sandbox_id'] !== 'a');
    const after = parsePrometheusText(await registry.metrics());
    expect(samplesOf(after, 'x_seconds_count', { sandbox_id: 'a' })).toHaveLength(0);
    expect(samplesOf(after, 'x_seconds_count', { sandbox_id: 'b' })).toHaveLength(1);
  });

  it('refuses bounds that are not strictly ascending', () => {
    expect(() => new TypedHistogram(new Registry(), 'z', 'z', [1, 1])).toThrow(/strictly ascending/);
  });
});
