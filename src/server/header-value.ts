import type { FastifyRequest } from 'fastify';

/** The first value of a request header (lower-case `name`), or `undefined`. */
export function headerValue(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
