import { describe, expect, it } from 'vitest';
import { compileWildcardPattern } from '../../src/classify/wildcard-pattern.js';

function matches(pattern: string, value: string): boolean {
  return compileWildcardPattern(pattern).matches(value);
}

describe('compileWildcardPattern', () => {
  it('matches everything, the empty string included, with a lone star', () => {
    expect(matches('*', '')).toBe(true);
    expect(matches('*', 'anything at all')).toBe(true);
    expect(matches('**', 'x')).toBe(true);
  });

  it('matches only the exact value when there is no star', () => {
    expect(matches('dash_alice', 'dash_alice')).toBe(true);
    expect(matches('dash_alice', 'dash_alice2')).toBe(false);
    expect(matches('dash_alice', 'dash_alic')).toBe(false);
    expect(matches('', '')).toBe(true);
    expect(matches('', 'a')).toBe(false);
  });

  it('anchors the text before the first star and after the last one', () => {
    expect(matches('dash_*', 'dash_')).toBe(true);
    expect(matches('dash_*', 'dash_bob')).toBe(true);
    expect(matches('dash_*', 'xdash_bob')).toBe(false);
    expect(matches('*-logs', 'web-logs')).toBe(true);
    expect(matches('*-logs', 'web-logs-2')).toBe(false);
  });

  it('finds the middle pieces of a*b*c in order', () => {
    expect(matches('a*b*c', 'abc')).toBe(true);
    expect(matches('a*b*c', 'aXbYc')).toBe(true);
    expect(matches('a*b*c', 'acbc')).toBe(true);
    expect(matches('a*b*c', 'acb')).toBe(false);
    expect(matches('a*b*c', 'ac')).toBe(false);
    expect(matches('a*b*c', 'bac')).toBe(false);
  });

  it('does not let the head and tail share characters', () => {
    expect(matches('ab*ba', 'aba')).toBe(false);
    expect(matches('ab*ba', 'abba')).toBe(true);
    expect(matches('a*a', 'a')).toBe(false);
    expect(matches('a*a', 'aa')).toBe(true);
  });

  it('does not let a middle piece overlap the tail', () => {
    expect(matches('*ab*b', 'ab')).toBe(false);
    expect(matches('*ab*b', 'abb')).toBe(true);
  });

  it('treats empty middle pieces (consecutive stars) as one star', () => {
    expect(matches('a**b', 'ab')).toBe(true);
    expect(matches('a***b', 'aXXb')).toBe(true);
    expect(matches('*a**b*', 'xaYbz')).toBe(true);
    expect(matches('*a**b*', 'xbYaz')).toBe(false);
  });

  it('treats regular-expression characters as literals', () => {
    expect(matches('a.c', 'abc')).toBe(false);
    expect(matches('a.c', 'a.c')).toBe(true);
    expect(matches('a?c', 'abc')).toBe(false);
    expect(matches('[x]*', '[x]y')).toBe(true);
  });

  it('reports the literal prefix length: up to the first star, or the whole pattern', () => {
    expect(compileWildcardPattern('*').literalPrefixLength).toBe(0);
    expect(compileWildcardPattern('*abc').literalPrefixLength).toBe(0);
    expect(compileWildcardPattern('dash_*').literalPrefixLength).toBe(5);
    expect(compileWildcardPattern('a*b*c').literalPrefixLength).toBe(1);
    expect(compileWildcardPattern('dash_alice').literalPrefixLength).toBe(10);
  });

  it('finishes pathological inputs in linear time', () => {
    const value = 'a'.repeat(1e5);
    const patterns = ['*a*a*a*b', '*a*a*a*b*', 'a*a*a*a*a*a*a*a*a*a*c*', '*aaaaaaaaab*'].map(
      compileWildcardPattern,
    );
    const started = performance.now();
    for (const pattern of patterns) expect(pattern.matches(value)).toBe(false);
    expect(compileWildcardPattern('*a*a*a*a').matches(value)).toBe(true);
    // A backtracking matcher needs minutes here; allow a slow CI machine a wide margin.
    expect(performance.now() - started).toBeLessThan(500);
  });
});
