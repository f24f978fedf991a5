import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import { headerValue, singleHeaderValue } from '../../src/server/header-value.js';

const request = (headers: Record<string, string | string[] | undefined>) =>
  ({ headers }) as unknown as FastifyRequest;

describe('headerValue', () => {
  it('gives the value of a header sent once, the first of a repeated one, undefined for a missing one', () => {
    expect(headerValue(request({ 'x-user': 'ann' }), 'x-user')).toBe('ann');
    expect(headerValue(request({ 'x-user': ['ann', 'bob'] }), 'x-user')).toBe('ann');
    expect(headerValue(request({}), 'x-user')).toBeUndefined();
  });
});

describe('singleHeaderValue', () => {
  const raw = (rawHeaders: string[], headers: Record<string, string>) =>
    ({ headers, raw: { rawHeaders } }) as unknown as FastifyRequest;

  it('gives the value of a header sent once, undefined for a missing one', () => {
    expect(singleHeaderValue(raw(['X-Sandbox-Id', 'a'], { 'x-sandbox-id': 'a' }), 'x-sandbox-id')).toBe('a');
    expect(singleHeaderValue(raw([], {}), 'x-sandbox-id')).toBeUndefined();
  });

  it('refuses a header sent twice (which Node joins into "a, b") naming the header and both values', () => {
    const twice = raw(['x-sandbox-id', 'a', 'X-SANDBOX-ID', 'b'], { 'x-sandbox-id': 'a, b' });
    expect(() => singleHeaderValue(twice, 'x-sandbox-id')).toThrow(
      new InvalidArgumentError('header [x-sandbox-id]', 'must be sent once (a request runs in one sandbox)', [
        'a',
        'b',
      ]),
    );
    expect(() => singleHeaderValue(twice, 'x-sandbox-id')).toThrow(
      'header [x-sandbox-id] must be sent once (a request runs in one sandbox); received ["a","b"]',
    );
  });
});
