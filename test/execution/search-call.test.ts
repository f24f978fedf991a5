import { describe, expect, it } from 'vitest';
import { checkSearchCallOptions } from '../../src/execution/search-call.js';

describe('checkSearchCallOptions', () => {
  it('accepts a signal and a timeout, and nothing at all', () => {
    const signal = new AbortController().signal;
    expect(checkSearchCallOptions({ signal, timeoutMs: 10 })).toEqual({ signal, timeoutMs: 10 });
    expect(checkSearchCallOptions(undefined)).toBeUndefined();
    expect(checkSearchCallOptions({})).toBeUndefined();
  });

  it('refuses what is not, naming the option and the value', () => {
    expect(() => checkSearchCallOptions({ timeoutMs: 0 })).toThrow(
      'options.timeoutMs must be an integer in 1..2147483647; received 0',
    );
    expect(() => checkSearchCallOptions({ timeoutMs: 1.5 })).toThrow('options.timeoutMs');
    expect(() => checkSearchCallOptions({ signal: { aborted: 'no' } })).toThrow(
      'options.signal must be an AbortSignal; received {"aborted":"no"}',
    );
    expect(() => checkSearchCallOptions('fast')).toThrow('options must be an object { signal?, timeoutMs? }');
  });
});
