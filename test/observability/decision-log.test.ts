import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { DecisionLog } from '../../src/observability/decision-log.js';

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  let bytes = 0;
  const stream = new Writable({
    write(chunk, _enc, done) {
      bytes += chunk.length;
      for (const line of String(chunk).split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, bytes: () => bytes, logger: pino({ level: 'info' }, stream) };
}

const cancellation = (taskId: number) => ({
  taskId,
  sandboxId: 'analysts',
  breachedSandboxId: 'analysts',
  resource: 'cpu' as const,
  kind: 'soft' as const,
  usage: 0.71234567,
  highLimit: 0.6,
  taskUsage: 0.5,
});

describe('DecisionLog', () => {
  it('writes each decision at info with its fields', () => {
    const { lines, logger } = capture();
    const log = new DecisionLog(logger, { nowMs: () => 0 });
    log.stateChanged({
      sandboxId: 'a',
      from: 'ok',
      to: 'rejecting',
      resource: 'cpu',
      usage: 0.35,
      lowLimit: 0.3,
      highLimit: 0.6,
    });
    log.cancelled({ ...cancellation(7), kind: 'hard' });
    log.admissionRejected({
      nodeId: 'n1',
      resource: 'heap',
      usage: 0.93,
      limit: 0.9,
      index: 'alpha',
      shard: 2,
    });
    expect(lines.map((l) => [l['level'], l['msg']])).toEqual([
      [30, 'sandbox state changed'],
      [30, 'task cancelled'],
      [30, 'admission rejected'],
    ]);
    expect(lines[0]).toMatchObject({
      sandboxId: 'a',
      from: 'ok',
      to: 'rejecting',
      resource: 'cpu',
      usage: 0.35,
      lowLimit: 0.3,
    });
    expect(lines[1]).toMatchObject({
      taskId: 7,
      kind: 'hard',
      resource: 'cpu',
      usage: 0.7123,
      highLimit: 0.6,
      taskUsage: 0.5,
    });
    expect(lines[2]).toMatchObject({
      nodeId: 'n1',
      resource: 'heap',
      usage: 0.93,
      limit: 0.9,
      index: 'alpha',
      shard: 2,
    });
  });

  it('keeps a flood within the rate limit and says how many lines it dropped', () => {
    const { lines, logger, bytes } = capture();
    let now = 0;
    const log = new DecisionLog(logger, { linesPerSecond: 20, burst: 100, nowMs: () => now });
    // 100,000 cancellations over 10 s of clock: at most the burst plus 20 a second get through.
    for (let i = 0; i < 100_000; i++) {
      now = i / 10; // ms
      log.cancelled(cancellation(i));
    }
    const written = lines.filter((l) => l['msg'] === 'task cancelled').length;
    expect(written).toBeLessThanOrEqual(100 + 20 * 10 + 1);
    expect(written).toBeGreaterThanOrEqual(100 + 20 * 10 - 1);
    expect(log.counts).toEqual({ written, suppressed: 100_000 - written });
    const reports = lines.filter((l) => l['msg'] === 'decision log lines suppressed');
    expect(reports.length).toBeGreaterThan(0);
    // Every dropped line is accounted for by a report, except those after the last line written.
    const reported = reports.reduce((sum, l) => sum + (l['suppressed'] as number), 0);
    expect(reported).toBeLessThanOrEqual(100_000 - written);
    expect(reported).toBeGreaterThan(100_000 - written - 500);
    // Bounded bytes: about 300 per line.
    expect(bytes()).toBeLessThan((written + reports.length) * 400);
  });

  it('refills with time: after a quiet second, 20 more lines get through', () => {
    const { lines, logger } = capture();
    let now = 0;
    const log = new DecisionLog(logger, { linesPerSecond: 20, burst: 5, nowMs: () => now });
    for (let i = 0; i < 50; i++) log.cancelled(cancellation(i));
    expect(log.counts).toEqual({ written: 5, suppressed: 45 });
    now = 1000;
    for (let i = 0; i < 50; i++) log.cancelled(cancellation(i));
    expect(log.counts.written).toBe(10);
    expect(lines.find((l) => l['msg'] === 'decision log lines suppressed')).toMatchObject({ suppressed: 45 });
  });

  it('refuses a rate that is not positive', () => {
    expect(() => new DecisionLog(pino({ level: 'silent' }), { linesPerSecond: 0 })).toThrow(/linesPerSecond/);
  });
});
