import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { headerValue } from '../../src/server/header-value.js';

const request = (headers: Record<string, string | string[] | undefined>) =>
  ({ headers }) as unknown as FastifyRequest;

describe('headerValue', () => {
  it('gives the value of a header sent once, the first of a repeated one, undefined for a missing one', () => {
    expect(headerValue(request({ 'x-user': 'ann' }), 'x-user')).toBe('ann');
    expect(headerValue(request({ 'x-user': ['ann', 'bob'] }), 'x-user')).toBe('ann');
    expect(headerValue(request({}), 'x-user')).toBeUndefined();
  });
});
