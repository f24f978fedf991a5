import { describe, expect, it } from 'vitest';
import { gcThreadsOf, noteSingleThreadedGc } from '../../src/pool/helper-threads.js';

describe('gcThreadsOf', () => {
  it('says per_isolate only for a process started with --single-threaded-gc, or once a runtime set it', () => {
    expect(gcThreadsOf([])).toBe('shared');
    expect(gcThreadsOf(['--max-old-space-size=512'])).toBe('shared');
    expect(gcThreadsOf(['--single-threaded-gc'])).toBe('per_isolate');
    noteSingleThreadedGc();
    expect(gcThreadsOf([])).toBe('per_isolate');
  });
});
