import { describe, expect, it } from 'vitest';
import {
  cancelAfterOf,
  describeLimit,
  requestedParameters,
  timeoutOf,
} from '../../src/execution/search-parameters.js';
import { parseSandboxDefinitions } from '../../src/sandbox/sandbox-file.js';
import { effectiveSearchSettings } from '../../src/sandbox/search-settings.js';

describe('requestedParameters', () => {
  it("takes the body's timeout out of the body the engine gets; the URL parameter wins over it", () => {
    const body = { query: { match_all: {} }, timeout: '2s' };
    expect(requestedParameters({ body })).toEqual({
      body: { query: { match_all: {} } },
      timeoutMs: 2000,
      cancelAfterMs: undefined,
    });
    expect(requestedParameters({ body, timeout: '50ms', cancelAfterTimeInterval: '1m' })).toEqual({
      body: { query: { match_all: {} } },
      timeoutMs: 50,
      cancelAfterMs: 60_000,
    });
    // Left alone otherwise (a body without the key is passed on as the same object).
    const plain = { q: 1 };
    expect(requestedParameters({ body: plain }).body).toBe(plain);
    expect(requestedParameters({ body: plain, timeout: '-1' }).timeoutMs).toBe(-1);
  });

  it('refuses a bad value naming the parameter', () => {
    expect(() => requestedParameters({ body: { timeout: '10' } })).toThrow(
      /^timeout must be a time value with a unit/,
    );
    expect(() => requestedParameters({ body: {}, timeout: '0ms' })).toThrow(
      'timeout must be a positive time value such as "500ms", or -1 for none; received "0ms"',
    );
    expect(() => requestedParameters({ body: {}, cancelAfterTimeInterval: 'x' })).toThrow(
      /^cancel_after_time_interval /,
    );
  });
});

describe('limits in force and their messages', () => {
  const settings = effectiveSearchSettings(
    parseSandboxDefinitions({
      sandboxes: [
        { name: 's', priority: 1, search_settings: { timeout: '300ms', cancel_after_time_interval: '5s' } },
      ],
    }),
  );

  it('names the sandbox setting or the request parameter the limit came from', () => {
    const fromSandbox = cancelAfterOf(undefined, settings.get('s')!)!;
    expect(fromSandbox).toEqual({ ms: 5000, source: 'sandbox', sandboxId: 's', text: '5s' });
    expect(describeLimit(fromSandbox, 'cancel_after_time_interval')).toBe(
      'search_settings.cancel_after_time_interval [5s] of sandbox [s]',
    );
    const fromRequest = timeoutOf(40, settings.get('s')!)!;
    expect(describeLimit(fromRequest, 'timeout')).toBe("the request's timeout [40ms]");
    expect(timeoutOf(undefined, settings.get('_root')!)).toBeUndefined();
  });
});
