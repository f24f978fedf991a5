import { describe, expect, it } from 'vitest';
import { decodeLatencyRequest } from '../../src/cluster/internal-codecs.js';
import { LatencyInjector } from '../../src/cluster/latency-injector.js';
import { IndexingPressure } from '../../src/indices/indexing-pressure.js';

describe('LatencyInjector', () => {
  it('delays the given share of requests while active, then none', () => {
    const draws = [0.1, 0.5, 0.29, 0.9];
    const injector = new LatencyInjector(() => draws.shift() ?? 0.99);
    expect(injector.nextDelayMs()).toBe(0);
    injector.start({ delayMs: 200, ratio: 0.3, durationMs: 60_000 });
    expect([
      injector.nextDelayMs(),
      injector.nextDelayMs(),
      injector.nextDelayMs(),
      injector.nextDelayMs(),
    ]).toEqual([200, 0, 200, 0]);
    expect(injector.delayed).toBe(2);
    injector.stop();
    expect(injector.nextDelayMs()).toBe(0);
  });

  it.each([
    [{ delay_ms: 0 }, 'delay_ms must be an integer in 1..60000; received 0'],
    [{ delay_ms: 10, ratio: 2 }, 'ratio must be a ratio in (0, 1]; received 2'],
    [{ delay_ms: 10, duration_ms: -1 }, 'duration_ms must be an integer in 1..3600000; received -1'],
    [
      { delay_ms: 10, share: 1 },
      'share is not a field of a latency request (delay_ms, ratio, duration_ms); received 1',
    ],
  ])('refuses %j', (body, message) => {
    expect(() => decodeLatencyRequest(body)).toThrow(message);
  });
});

describe('IndexingPressure', () => {
  it('refuses an operation that would take the bytes in flight over the limit, and frees them on release', () => {
    const pressure = new IndexingPressure(100);
    const a = pressure.acquire(60, 'coordinating');
    expect(() => pressure.acquire(50, 'coordinating')).toThrow(
      'rejected execution of coordinating operation [in_flight_bytes=60, operation_bytes=50, max_bytes=100]',
    );
    const b = pressure.acquire(40, 'coordinating');
    a();
    a(); // idempotent
    expect(pressure.stats()).toEqual({ inFlightBytes: 40, limitBytes: 100, accepted: 2, rejections: 1 });
    b();
    // Alone, an oversized operation still runs.
    pressure.acquire(500, 'primary')();
    expect(pressure.stats().inFlightBytes).toBe(0);
    expect(() => new IndexingPressure(0)).toThrow(
      'limitBytes must be a positive integer (bytes); received 0',
    );
  });
});
