import { describe, expect, it } from 'vitest';
import { formatReceived, InvalidArgumentError } from '../../src/errors.js';
import { findOverflow, parseJsonBody } from '../../src/server/json-body.js';

describe('JSON bodies with numbers beyond a double', () => {
  it.each([
    ['{"size":1e309}', 'size', '1e309'],
    ['{"size":-1E+400}', 'size', '-1E+400'],
    ['1e999', 'body', '1e999'],
    ['{"query":{"range":{"n":{"gt":2e308}}}}', 'query.range.n.gt', '2e308'],
    ['{"a":[1,2,{"b":[0, 9e999]}]}', 'a[2].b[1]', '9e999'],
    ['{"a":"1e999","b":"x\\"1e999","c":1e400}', 'c', '1e400'],
    [`{"big":${'9'.repeat(400)}}`, 'big', `${'9'.repeat(117)}...`],
    ['{"k y":[],"z":{"":{"w":1e309}}}', 'z..w', '1e309'],
  ])('refuses %s naming %s and the literal as written', (text, path, shown) => {
    let error: unknown;
    try {
      parseJsonBody(text);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as InvalidArgumentError).path).toBe(path);
    expect((error as Error).message).toBe(
      `${path} must be a number within the range of a double (at most 1.7976931348623157e308 in magnitude); received ${shown}`,
    );
  });

  it.each([
    '{"size":1.7976931348623157e308}',
    '{"size":1e-400}',
    '{"text":"e1000 and 1e309 inside a string"}',
    `{"digits":"${'9'.repeat(400)}"}`,
    '{"n":123e100}',
  ])('takes %s as it is', (text) => {
    expect(parseJsonBody(text)).toEqual(JSON.parse(text));
  });

  it('throws JSON.parse errors as they are', () => {
    expect(() => parseJsonBody('{"a":')).toThrow(SyntaxError);
  });

  it('finds nothing in JSON without an overflow', () => {
    expect(findOverflow('{"a":[1,2,3],"b":{"c":"1e999"}}')).toBeUndefined();
  });

  it('prints NaN and Infinity as themselves, not as null', () => {
    expect(formatReceived(Number.POSITIVE_INFINITY)).toBe('Infinity');
    expect(formatReceived(Number.NEGATIVE_INFINITY)).toBe('-Infinity');
    expect(formatReceived(Number.NaN)).toBe('NaN');
  });
});
