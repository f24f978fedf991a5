/**
 * JSON schemas at the HTTP edge (fastify route `schema`, compiled by ajv) and the one formatter that
 * turns a schema failure into this project's 400: `InvalidArgumentError` naming the field and showing
 * the value received (`size must be an integer in 1..1000; received "0"`), in the same
 * Elasticsearch-shaped body as every other error (`error-body.ts`).
 *
 * Each schema that can fail says what it wants in the `x-must` annotation (the message after the
 * field name); `x-field` overrides the field's name. A schema without `x-must` fails with ajv's own
 * words (`must be string`). The validator never changes the request: no type coercion, no defaults,
 * no removal of unknown properties (they get the routes' own messages), so a schema only replaces a
 * check and the handler reads what the client sent.
 */
import type { ErrorObject } from 'ajv';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { createSchemaAjv, schemaError } from '../common/schema-error.js';

export { schemaError } from '../common/schema-error.js';

/**
 * Compiles every route schema of `app` with one ajv instance (all parts: no coercion, no defaults, no
 * removal, the value in each error) and formats failures with `schemaError`. Call before the routes.
 */
const compiledRoutes = new WeakMap<FastifyInstance, Set<string>>();

/**
 * The routes of `app` that declare a schema, as `METHOD url`, sorted (known once `app.ready()` has
 * compiled them): what `GET`s and writes the edge checks by schema before any handler runs.
 */
export function routesWithSchemas(app: FastifyInstance): readonly string[] {
  return [...(compiledRoutes.get(app) ?? [])].sort();
}

export function installSchemaValidation(app: FastifyInstance): void {
  const routes = new Set<string>();
  compiledRoutes.set(app, routes);
  const ajv = createSchemaAjv();
  app.setValidatorCompiler(({ schema, method, url }) => {
    routes.add(`${method} ${url}`);
    return ajv.compile(schema);
  });
  app.setSchemaErrorFormatter((errors, dataVar) => schemaError(errors as ErrorObject[], dataVar));
}

/** A URL parameter that is `true` or `false` (and, with `emptyIsTrue`, present without a value). */
export function booleanParameter(emptyIsTrue = false): Record<string, unknown> {
  return {
    type: 'string',
    enum: emptyIsTrue ? ['true', 'false', ''] : ['true', 'false'],
    'x-must': 'must be true or false',
  };
}

/**
 * A URL parameter holding a decimal integer in `min..max` (leading zeros allowed, no sign, no
 * exponent): `pattern` is the regular expression for that range, written out by the caller and
 * checked at the range's edges by the tests.
 */
export function integerParameter(
  min: number,
  max: number,
  pattern: string,
  hint = '',
): Record<string, unknown> {
  return { type: 'string', pattern, 'x-must': `must be an integer in ${min}..${max}${hint}` };
}

/** `?format=` of the cat routes. */
export const CAT_FORMAT_PARAMETER: Record<string, unknown> = {
  type: 'string',
  enum: ['json', 'text', 'txt'],
  'x-must': 'must be json or text',
};

/** `?refresh=` of bulk and document writes (Elasticsearch's: empty means true). */
export const REFRESH_PARAMETER: Record<string, unknown> = {
  type: 'string',
  enum: ['true', 'false', 'wait_for', ''],
  'x-must': 'must be true, false or wait_for',
};

/** `querystring` schema of named parameters (others are left to the unknown-parameter check). */
export function querySchema(properties: Record<string, Record<string, unknown>>): FastifySchema {
  return { querystring: { type: 'object', properties } };
}
