import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import { parseCreateIndexBody } from '../../src/indices/index-settings.js';
import {
  IndexTemplateRegistry,
  parseIndexTemplate,
  wildcardPatternsOverlap,
} from '../../src/indices/index-templates.js';

function registry(...templates: [string, unknown][]): IndexTemplateRegistry {
  const r = new IndexTemplateRegistry();
  for (const [name, body] of templates) r.put(parseIndexTemplate(name, body));
  return r;
}

describe('parseIndexTemplate', () => {
  it('reads patterns, priority, version, _meta and template settings in any settings form', () => {
    const t = parseIndexTemplate('bulk', {
      index_patterns: ['logs-*', 'metrics-*'],
      priority: 10,
      version: 3,
      _meta: { owner: 'ops' },
      template: {
        settings: { index: { number_of_shards: 6, bulk_routing: { enabled: true } } },
        mappings: {},
      },
    });
    expect(t).toEqual({
      name: 'bulk',
      indexPatterns: ['logs-*', 'metrics-*'],
      priority: 10,
      version: 3,
      settings: { numberOfShards: 6, bulkRoutingEnabled: true },
      mappings: {},
      meta: { owner: 'ops' },
    });
    expect(parseIndexTemplate('one', { index_patterns: 'x-*' })).toMatchObject({
      indexPatterns: ['x-*'],
      priority: 0,
    });
  });

  it.each([
    [
      'Bad',
      { index_patterns: ['a*'] },
      'name is not a valid index template name (name must be lower cased); received "Bad"',
    ],
    [
      'a b',
      { index_patterns: ['a*'] },
      'name is not a valid index template name (name must not contain a space); received "a b"',
    ],
    [
      '_t',
      { index_patterns: ['a*'] },
      'name is not a valid index template name (name must not start with \'_\'); received "_t"',
    ],
    ['t', {}, 'index_patterns is required: a pattern or a non-empty array of patterns; received undefined'],
    [
      't',
      { index_patterns: [] },
      'index_patterns is required: a pattern or a non-empty array of patterns; received []',
    ],
    [
      't',
      { index_patterns: ['ok-*', '_bad*'] },
      'index_patterns[1] is not a valid index pattern (index_pattern [_bad*] must not start with \'_\'); received "_bad*"',
    ],
    [
      't',
      { index_patterns: ['a?b'] },
      'index_patterns[0] is not a valid index pattern (index_pattern [a?b] must not contain the following characters [ , ", *, \\, <, |, ,, >, /, ?]); received "a?b"',
    ],
    [
      't',
      { index_patterns: ['a*'], priority: -1 },
      'priority must be an integer >= 0 (index template priority must be >= 0); received -1',
    ],
    [
      't',
      { index_patterns: ['a*'], order: 1 },
      'order is not an index template field ([index_template] unknown field [order]); received 1',
    ],
    [
      't',
      { index_patterns: ['a*'], composed_of: ['base'] },
      'composed_of is not supported (no component templates); only [] is accepted; received ["base"]',
    ],
    [
      't',
      { index_patterns: ['a*'], template: { settings: { number_of_shards: 0 } } },
      'template.settings.index.number_of_shards must be an integer in 1..1024; received 0',
    ],
    [
      't',
      {
        index_patterns: ['a*'],
        template: { settings: { number_of_shards: 4, number_of_routing_shards: 6 } },
      },
      'template.settings.index.number_of_routing_shards must be a multiple of index.number_of_shards (the number of source shards [4] must be a factor of [6]); received 6',
    ],
    [
      't',
      { index_patterns: ['a*'], template: { lifecycle: {} } },
      'template.lifecycle is not a template field ([template] unknown field [lifecycle]); received {}',
    ],
  ])('refuses %j %j', (name, body, message) => {
    expect(() => parseIndexTemplate(name, body)).toThrow(InvalidArgumentError);
    expect(() => parseIndexTemplate(name, body)).toThrow(message);
  });
});

describe('wildcardPatternsOverlap', () => {
  it.each([
    ['logs-*', 'logs-*', true],
    ['logs-*', 'logs-web-*', true],
    ['logs-*', '*-2024', true],
    ['logs-*', 'metrics-*', false],
    ['*', 'anything', true],
    ['abc', 'abc', true],
    ['abc', 'abd', false],
    ['a*c', 'ab*', true],
    ['a*c', '*b', false],
    ['egg*', 'baz*', false],
    ['baz', 'baz*', true],
    ['*x*', '*y*', true],
    ['x*', '*y', true],
    ['ab*', '*ba', true],
    ['a', 'a*b', false],
  ])('%s and %s: %s', (a, b, expected) => {
    expect(wildcardPatternsOverlap(a, b)).toBe(expected);
    expect(wildcardPatternsOverlap(b, a)).toBe(expected);
  });
});

describe('template names are checked like index names', () => {
  it.each([
    ['..', "name must not be '.' or '..'"],
    ['.', "name must not be '.' or '..'"],
    ['a/b', 'name must not contain the following characters [ , ", *, \\, <, |, ,, >, /, ?]'],
    ['a\\b', 'name must not contain the following characters'],
    ['a?b', 'name must not contain the following characters'],
    ['a:b', "name must not contain ':'"],
    ['-t', "name must not start with '-' or '+'"],
    ['+t', "name must not start with '-' or '+'"],
    ['x'.repeat(256), 'name is too long, (256 > 255)'],
  ])('refuses %j, naming the rule and the name', (name, rule) => {
    const error = (() => {
      try {
        parseIndexTemplate(name, { index_patterns: ['a*'] });
      } catch (e) {
        return e as InvalidArgumentError;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error!.path).toBe('name');
    expect(error!.message).toContain(rule);
    expect(error!.message).toContain(`received ${JSON.stringify(name).slice(0, 60)}`);
  });

  it('still takes names with dots and dashes inside', () => {
    expect(parseIndexTemplate('.logs-v1.2', { index_patterns: ['a*'] }).name).toBe('.logs-v1.2');
  });
});

describe('IndexTemplateRegistry', () => {
  it('refuses overlapping patterns at the same priority with Elasticsearch’s message', () => {
    const r = registry(['foo', { index_patterns: ['egg*', 'baz'], priority: 1 }]);
    expect(() => r.put(parseIndexTemplate('foo2', { index_patterns: ['abc', 'baz*'], priority: 1 }))).toThrow(
      'index_patterns must not overlap a template of the same priority: index template [foo2] has index patterns [abc, baz*] matching patterns from existing templates [foo] with patterns (foo => [egg*, baz]) that have the same priority [1], multiple index templates may not match during index creation, please use a different priority; received ["abc","baz*"]',
    );
    // A missing priority is 0 and overlaps an explicit 0.
    const zero = registry(['foo', { index_patterns: ['egg*', 'baz'] }]);
    expect(() => zero.put(parseIndexTemplate('foo2', { index_patterns: ['baz*'], priority: 0 }))).toThrow(
      'that have the same priority [0]',
    );
  });

  it('accepts overlapping patterns at different priorities, disjoint ones at the same, and replacing a template', () => {
    const r = registry(
      ['all', { index_patterns: ['*'], priority: 0 }],
      ['logs', { index_patterns: ['logs-*'], priority: 10 }],
      ['metrics', { index_patterns: ['metrics-*'], priority: 10 }],
    );
    r.put(parseIndexTemplate('logs', { index_patterns: ['logs-*', 'app-*'], priority: 10 }));
    expect(r.list().map((t) => t.name)).toEqual(['all', 'logs', 'metrics']);
    expect(() =>
      r.put(parseIndexTemplate('logs', { index_patterns: ['logs-*'], priority: 10 }), true),
    ).toThrow('name must be new (index template [logs] already exists); received "logs"');
  });

  it('picks the matching template with the highest priority', () => {
    const r = registry(
      ['all', { index_patterns: ['*'], template: { settings: { number_of_replicas: 0 } } }],
      ['logs', { index_patterns: ['logs-*'], priority: 5, template: { settings: { number_of_shards: 4 } } }],
      [
        'web',
        { index_patterns: ['logs-web-*'], priority: 9, template: { settings: { number_of_shards: 8 } } },
      ],
    );
    expect(r.findTemplate('logs-web-1')?.name).toBe('web');
    expect(r.findTemplate('logs-db-1')?.name).toBe('logs');
    expect(r.findTemplate('other')?.name).toBe('all');
    expect(new IndexTemplateRegistry().findTemplate('x')).toBeUndefined();
  });

  it('resolves a new index: template settings overlaid by the request, then defaults', () => {
    const r = registry([
      'bulk',
      {
        index_patterns: ['indices-prefix*'],
        template: {
          settings: { number_of_shards: 6, 'bulk_routing.enabled': true, refresh_interval: '5s' },
          mappings: { a: 1 },
        },
      },
    ]);
    const request = parseCreateIndexBody({ settings: { index: { number_of_shards: 3 } } });
    const resolved = r.resolveNewIndex('indices-prefix-1', request);
    expect(resolved.template?.name).toBe('bulk');
    expect(resolved.settings).toMatchObject({
      numberOfShards: 3,
      numberOfRoutingShards: 768,
      bulkRoutingEnabled: true,
      refreshIntervalMs: 5000,
      numberOfReplicas: 1,
    });
    expect(resolved.mappings).toEqual({ a: 1 });
    const plain = r.resolveNewIndex('other', request);
    expect(plain.template).toBeUndefined();
    expect(plain.settings).toMatchObject({ numberOfShards: 3, bulkRoutingEnabled: false });
  });

  it('checks the combined settings: a template’s routing shards against the request’s shards', () => {
    const r = registry([
      'rs',
      { index_patterns: ['r-*'], template: { settings: { number_of_routing_shards: 12 } } },
    ]);
    expect(
      r.resolveNewIndex('r-1', parseCreateIndexBody({ settings: { number_of_shards: 4 } })).settings
        .numberOfRoutingShards,
    ).toBe(12);
    expect(() =>
      r.resolveNewIndex('r-2', parseCreateIndexBody({ settings: { number_of_shards: 5 } })),
    ).toThrow('the number of source shards [5] must be a factor of [12]');
  });

  it('deletes templates', () => {
    const r = registry(['a', { index_patterns: ['a*'] }]);
    expect(r.delete('a')).toBe(true);
    expect(r.delete('a')).toBe(false);
    expect(r.get('a')).toBeUndefined();
  });
});
