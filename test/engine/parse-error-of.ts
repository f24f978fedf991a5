import { expect } from 'vitest';
import { parseSearchBody } from '../../src/engine/search-request.js';
import { EngineRequestError } from '../../src/errors.js';

/** The EngineRequestError `parseSearchBody` throws for `body`; fails the test when it accepts it. */
export function errorOf(body: unknown): EngineRequestError {
  try {
    parseSearchBody(body);
  } catch (error) {
    expect(error).toBeInstanceOf(EngineRequestError);
    return error as EngineRequestError;
  }
  throw new Error(`expected ${JSON.stringify(body)} to be refused`);
}
