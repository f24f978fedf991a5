import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import { checkSearchCallOptions, takeRequestTimeout } from '../../src/execution/search-call.js';

describe('takeRequestTimeout', () => {
  it("takes the body's timeout out of the body, in Elasticsearch time units", () => {
    const body = { query: { match_all: {} }, timeout: '2s' };
    const taken = takeRequestTimeout(body, undefined);
    expect(taken).toEqual({ body: { query: { match_all: {} } }, timeoutMs: 2000 });
    expect(body.timeout).toBe('2s'); // the caller's object is left alone
    expect(takeRequestTimeout({ timeout: '150ms' }, undefined).timeoutMs).toBe(150);
    expect(takeRequestTimeout({ timeout: '1m' }, undefined).timeoutMs).toBe(60_000);
  });

  it('lets ?timeout= win over the body, treats -1 as none and anything under 1 ms as 1 ms', () => {
    expect(takeRequestTimeout({ timeout: '10s' }, '300ms')).toEqual({ body: {}, timeoutMs: 300 });
    expect(takeRequestTimeout({ timeout: '-1' }, undefined).timeoutMs).toBeUndefined();
    expect(takeRequestTimeout({}, '0s').timeoutMs).toBe(1);
  });

  it('returns the same body when it has no timeout', () => {
    const body = { size: 1 };
    expect(takeRequestTimeout(body, undefined).body).toBe(body);
    expect(takeRequestTimeout(undefined, undefined)).toEqual({ body: undefined, timeoutMs: undefined });
  });

  it('refuses a bad value naming where it came from and the value', () => {
    expect(() => takeRequestTimeout({ timeout: '5 seconds' }, undefined)).toThrow(
      /^timeout must be a time value with a unit .*; received "5 seconds"$/,
    );
    expect(() => takeRequestTimeout({}, 'soon')).toThrow(/^url parameter \[timeout\] must be a time value/);
    expect(() => takeRequestTimeout({ timeout: 5 }, undefined)).toThrow(InvalidArgumentError);
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
