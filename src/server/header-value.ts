import type { FastifyRequest } from 'fastify';
import { InvalidArgumentError } from '../errors.js';

/** The first value of a request header (lower-case `name`), or `undefined`. */
export function headerValue(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The value of a header that names one thing (lower-case `name`: the explicit sandbox), or
 * `undefined` when it is absent. Node joins repeated custom headers into one `a, b` string, which
 * would read as one odd name; the raw header lines tell them apart.
 * @throws InvalidArgumentError (HTTP 400) naming `header [name]` and the values when it is sent more than once.
 */
export function singleHeaderValue(request: FastifyRequest, name: string): string | undefined {
  const raw = request.raw?.rawHeaders;
  if (raw !== undefined) {
    const values: string[] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) {
      if ((raw[i] as string).toLowerCase() === name) values.push(raw[i + 1] as string);
    }
    if (values.length > 1) {
      throw new InvalidArgumentError(
        `header [${name}]`,
        'must be sent once (a request runs in one sandbox)',
        values,
      );
    }
  }
  const v = request.headers[name];
  if (Array.isArray(v) && v.length > 1) {
    throw new InvalidArgumentError(
      `header [${name}]`,
      'must be sent once (a request runs in one sandbox)',
      v,
    );
  }
  return Array.isArray(v) ? v[0] : v;
}
