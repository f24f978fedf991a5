import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import { assertIndexName, indexNameProblem, invalidIndexNameReason } from '../../src/common/index-name.js';

const CHARS = 'must not contain the following characters [ , ", *, \\, <, |, ,, >, /, ?]';

describe('indexNameProblem (MetadataCreateIndexService.validateIndexName)', () => {
  it.each([
    ['logs-2024.01.01', undefined],
    ['.hidden', undefined],
    ['a', undefined],
    ['é', undefined],
    ['', 'must not be empty'],
    ['Logs', 'must be lowercase'],
    ['a\\b', CHARS],
    ['a/b', CHARS],
    ['a*', CHARS],
    ['a?', CHARS],
    ['a"b', CHARS],
    ['a<b', CHARS],
    ['a>b', CHARS],
    ['a|b', CHARS],
    ['a b', CHARS],
    ['a,b', CHARS],
    ['a#b', "must not contain '#'"],
    ['remote:logs', "must not contain ':'"],
    ['_logs', "must not start with '_', '-', or '+'"],
    ['-logs', "must not start with '_', '-', or '+'"],
    ['+logs', "must not start with '_', '-', or '+'"],
    ['.', "must not be '.' or '..'"],
    ['..', "must not be '.' or '..'"],
    ['a'.repeat(255), undefined],
    ['a'.repeat(256), 'index name is too long, (256 > 255)'],
    ['é'.repeat(128), 'index name is too long, (256 > 255)'],
  ])('%j -> %s', (name, problem) => {
    expect(indexNameProblem(name)).toBe(problem);
  });

  it('checks in Elasticsearch order: characters before case', () => {
    expect(indexNameProblem('A*')).toBe(CHARS);
    expect(invalidIndexNameReason('A', 'must be lowercase')).toBe(
      'Invalid index name [A], must be lowercase',
    );
  });
});

describe('assertIndexName', () => {
  it('returns a valid name and names the path and value of an invalid one', () => {
    expect(assertIndexName('logs')).toBe('logs');
    expect(() => assertIndexName('Logs', 'path.index')).toThrow(
      'path.index is not a valid index name: Invalid index name [Logs], must be lowercase; received "Logs"',
    );
    expect(() => assertIndexName(3)).toThrow(InvalidArgumentError);
  });
});
