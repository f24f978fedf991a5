import { afterEach, describe, expect, it, vi } from 'vitest';
import { ProgressReporter } from '../../src/cli/progress-reporter.js';

describe('ProgressReporter', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('prints the phase, its elapsed and planned time and live figures, when it starts and then periodically', () => {
    vi.useFakeTimers();
    const lines: string[] = [];
    let done = 0;
    const p = new ProgressReporter({ label: 'demo', write: (l) => lines.push(l), everyMs: 2000 });
    p.phase('enforcement on', { plannedMs: 10_000, detail: () => `${done} done` });
    expect(lines).toEqual(['demo: enforcement on, 0 s of 10 s (total 0 s): 0 done']);
    done = 7;
    vi.advanceTimersByTime(4000);
    expect(lines).toHaveLength(3);
    expect(lines[2]).toBe('demo: enforcement on, 4 s of 10 s (total 4 s): 7 done');
    p.phase('next');
    expect(lines[3]).toBe('demo: next, 0 s (total 4 s)');
    p.stop();
    vi.advanceTimersByTime(10_000);
    expect(lines).toHaveLength(4);
  });

  it('leaves out a figure that throws', () => {
    const lines: string[] = [];
    const p = new ProgressReporter({ label: 'x', write: (l) => lines.push(l) });
    p.phase('a', {
      detail: () => {
        throw new Error('not yet');
      },
    });
    p.stop();
    expect(lines).toEqual(['x: a, 0 s (total 0 s)']);
  });
});
