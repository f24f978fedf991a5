/**
 * A failed JSON-schema check (ajv) as this project's 400: `InvalidArgumentError` naming the field and
 * showing the value received (`size must be an integer in 1..1000; received "0"`). Shared by the HTTP
 * edge's route schemas (`server/route-schemas.ts`) and the internal protocol's decoders
 * (`cluster/internal-codecs.ts`), so that both say the same thing about the same body.
 *
 * Each schema that can fail says what it wants in the `x-must` annotation (the message after the
 * field name); `x-field` overrides the field's name. A schema without `x-must` fails with ajv's own
 * words (`must be string`).
 */
import { Ajv, type ErrorObject } from 'ajv';
import { InvalidArgumentError } from '../errors.js';

/**
 * An ajv instance as this project checks with: every error's value kept (`verbose`), the first error
 * only, and a validator that never changes what it checks (no type coercion, no defaults, no removal
 * of unknown properties), so a schema only replaces a check and the reader sees what was sent.
 */
export function createSchemaAjv(): Ajv {
  return new Ajv({
    allErrors: false,
    verbose: true,
    coerceTypes: false,
    useDefaults: false,
    removeAdditional: false,
    keywords: ['x-must', 'x-field'],
  });
}

let shared: Ajv | undefined;

/**
 * Compiles `schema` once into a check that throws `schemaError`'s `InvalidArgumentError` (naming the
 * field under `part`, e.g. `body`) for a value the schema refuses.
 */
export function schemaCheck(
  schema: Readonly<Record<string, unknown>>,
  part: string,
): (value: unknown) => void {
  shared ??= createSchemaAjv();
  const validate = shared.compile(schema);
  return (value) => {
    if (!validate(value)) throw schemaError(validate.errors ?? [], part);
  };
}

/** Schema annotations read by `schemaError`. */
interface Annotated {
  readonly 'x-must'?: string;
  readonly 'x-field'?: string;
}

/**
 * The 400 for the first schema failure: the field (`x-field`, else the failing property's path in
 * dots, else the request part: `body`, `params`, `querystring`), the message (`x-must`, else ajv's)
 * and the value received.
 */
export function schemaError(errors: readonly ErrorObject[], part: string): InvalidArgumentError {
  const e = errors[0];
  if (e === undefined) return new InvalidArgumentError(part, 'is invalid', undefined);
  const path = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (e.keyword === 'required') {
    // A missing field fails as its own check would have on `undefined`, when its schema says how.
    const missing = (e.params as { missingProperty: string }).missingProperty;
    const own = (e.parentSchema as { properties?: Record<string, Annotated> } | undefined)?.properties?.[
      missing
    ];
    return new InvalidArgumentError(
      own?.['x-field'] ?? [...path, missing].join('.'),
      own?.['x-must'] ?? 'is required',
      undefined,
    );
  }
  const schema = (e.parentSchema ?? {}) as Annotated;
  const field = schema['x-field'] ?? (path.length > 0 ? path.join('.') : part);
  return new InvalidArgumentError(field, schema['x-must'] ?? e.message ?? 'is invalid', e.data);
}
