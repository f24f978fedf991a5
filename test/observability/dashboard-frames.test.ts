import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type DashboardFrame,
  FrameBroadcaster,
  type FrameSource,
} from '../../src/observability/dashboard-frames.js';

function countingSource() {
  const state = { built: 0, active: [] as boolean[] };
  const source: FrameSource = {
    setActive: (active) => state.active.push(active),
    frame: () => {
      state.built++;
      return {
        kind: 'coordinator',
        nodeId: 'c',
        timeMs: state.built,
        searchesPerSecond: 0,
        rejectionsPerSecond: 0,
        failuresPerSecond: 0,
        dataNodes: [],
      } satisfies DashboardFrame;
    },
  };
  return { source, state };
}

describe('FrameBroadcaster', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('builds one frame per tick whatever the number of pages, and only while a page is connected', () => {
    vi.useFakeTimers();
    const { source, state } = countingSource();
    const b = new FrameBroadcaster(source, 1000);
    vi.advanceTimersByTime(5000);
    expect(state.built).toBe(0);
    const received: string[][] = Array.from({ length: 50 }, () => []);
    const clients = received.map((chunks) => ({ write: (c: string) => chunks.push(c) }));
    for (const c of clients) b.add(c);
    expect(state.built).toBe(1);
    vi.advanceTimersByTime(3000);
    expect(state.built).toBe(4);
    for (const chunks of received) {
      expect(chunks).toHaveLength(4);
      expect(chunks[3]).toBe(
        `data: ${JSON.stringify({ kind: 'coordinator', nodeId: 'c', timeMs: 4, searchesPerSecond: 0, rejectionsPerSecond: 0, failuresPerSecond: 0, dataNodes: [] })}\n\n`,
      );
    }
    for (const c of clients) b.remove(c);
    expect(b.clients).toBe(0);
    vi.advanceTimersByTime(5000);
    expect(state.built).toBe(4);
    expect(state.active).toEqual([true, false]);
  });

  it('gives a page that connects between ticks the last frame, without building one', () => {
    vi.useFakeTimers();
    const { source, state } = countingSource();
    const b = new FrameBroadcaster(source, 1000);
    b.add({ write: () => {} });
    const late: string[] = [];
    b.add({ write: (c) => late.push(c) });
    expect(state.built).toBe(1);
    expect(late[0]).toContain('"timeMs":1');
    b.close();
    vi.advanceTimersByTime(3000);
    expect(state.built).toBe(1);
  });

  it('refuses an interval outside 50..60000 ms', () => {
    expect(() => new FrameBroadcaster(countingSource().source, 10)).toThrow(/intervalMs/);
  });
});
