import { describe, expect, it } from 'vitest';
import { resolveIndexExpression, resolveIndexExpressionCached } from '../../src/classify/index-expression.js';
import { IndexNotFoundError, InvalidArgumentError } from '../../src/errors.js';

describe('resolveIndexExpression', () => {
  const known = ['easy-ham-1', 'spam-1', 'spam-2'];

  it("resolves names, wildcards, lists and _all in the engine's order, without repeats", () => {
    expect(resolveIndexExpression('spam-2,spam-1', known)).toEqual(['spam-1', 'spam-2']);
    expect(resolveIndexExpression('spam-*,spam-1', known)).toEqual(['spam-1', 'spam-2']);
    expect(resolveIndexExpression('_all', known)).toEqual(known);
    expect(resolveIndexExpression('nothing-*', known)).toEqual([]);
  });

  it('refuses a missing concrete name (404) and an empty part', () => {
    expect(() => resolveIndexExpression('spam-3', known)).toThrow(IndexNotFoundError);
    expect(() => resolveIndexExpression('spam-1,', known)).toThrow('must not contain an empty name');
  });
});
describe('resolveIndexExpressionCached', () => {
  it("gives resolveIndexExpression's answer, frozen, the same array again for the same list and expression", () => {
    const known = ['spam-1', 'spam-2', 'ham-1'];
    const a = resolveIndexExpressionCached('spam-*', known);
    expect(a).toEqual(resolveIndexExpression('spam-*', known));
    expect(Object.isFrozen(a)).toBe(true);
    expect(resolveIndexExpressionCached('spam-*', known)).toBe(a);
  });

  it('resolves anew against a new list of indices (writable indices changed)', () => {
    const before = ['spam-1'];
    const after = ['spam-1', 'spam-9'];
    expect(resolveIndexExpressionCached('spam-*', before)).toEqual(['spam-1']);
    expect(resolveIndexExpressionCached('spam-*', after)).toEqual(['spam-1', 'spam-9']);
  });

  it('throws for a missing concrete index on every call, keeping nothing', () => {
    const known = ['spam-1'];
    expect(() => resolveIndexExpressionCached('nope', known)).toThrow(IndexNotFoundError);
    expect(() => resolveIndexExpressionCached('nope', known)).toThrow(IndexNotFoundError);
  });

  it('keeps answering correctly past its bound of kept expressions', () => {
    const known = Array.from({ length: 1500 }, (_, i) => `i-${i}`);
    for (let i = 0; i < 1500; i++) expect(resolveIndexExpressionCached(`i-${i}`, known)).toEqual([`i-${i}`]);
    expect(resolveIndexExpressionCached('i-0', known)).toEqual(['i-0']);
  });

  it('keeps the pass-through answer of an engine that lists no indices apart from an empty list', () => {
    const a = resolveIndexExpressionCached('logs-*,b,b', undefined);
    expect(a).toEqual(['logs-*', 'b']);
    expect(resolveIndexExpressionCached('logs-*,b,b', undefined)).toBe(a);
    expect(resolveIndexExpressionCached('logs-*', [])).toEqual([]);
    expect(() => resolveIndexExpressionCached('b', [])).toThrow(IndexNotFoundError);
    expect(() => resolveIndexExpressionCached('a,,b', undefined)).toThrow(InvalidArgumentError);
  });
});
