import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import { checkSearchCallOptions, requestTimeoutMs } from '../../src/execution/search-call.js';

describe('requestTimeoutMs', () => {
  it("reads the body's timeout in Elasticsearch time units and leaves the body alone (the engine reads it too)", () => {
    const body = { query: { match_all: {} }, timeout: '2s' };
    expect(requestTimeoutMs(body)).toBe(2000);
    expect(body).toEqual({ query: { match_all: {} }, timeout: '2s' });
    expect(requestTimeoutMs({ timeout: '150ms' })).toBe(150);
    expect(requestTimeoutMs({ timeout: '1m' })).toBe(60_000);
  });

  it('treats -1 and no timeout as none, and anything under 1 ms as 1 ms', () => {
    expect(requestTimeoutMs({ timeout: '-1' })).toBeUndefined();
    expect(requestTimeoutMs({ size: 1 })).toBeUndefined();
    expect(requestTimeoutMs(undefined)).toBeUndefined();
    expect(requestTimeoutMs({ timeout: '0s' })).toBe(1);
  });

  it('refuses a bad value naming the field and the value', () => {
    expect(() => requestTimeoutMs({ timeout: '5 seconds' })).toThrow(
      /^timeout must be a time value with a unit .*; received "5 seconds"$/,
    );
    expect(() => requestTimeoutMs({ timeout: 5 })).toThrow(InvalidArgumentError);
  });
});

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
