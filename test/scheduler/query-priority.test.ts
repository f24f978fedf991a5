import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import {
  DEFAULT_QUERY_PRIORITY,
  type PriorityAttributes,
  parseDuration,
  parseQueryPriority,
  priorityOf,
} from '../../src/scheduler/query-priority.js';

const NOW = Date.UTC(2026, 10, 29, 12, 0, 0);
const HOUR = 3_600_000;

function attrs(over: Partial<PriorityAttributes> = {}): PriorityAttributes {
  return {
    text: '{"query":{"match_all":{}}}',
    timeRange: undefined,
    user: 'alice',
    indices: ['spam-1'],
    sandboxId: 'analysts',
    ...over,
  };
}

describe('parseQueryPriority', () => {
  it('defaults to enabled with no rules', () => {
    expect(DEFAULT_QUERY_PRIORITY.enabled).toBe(true);
    expect(DEFAULT_QUERY_PRIORITY.rules).toEqual([]);
    expect(DEFAULT_QUERY_PRIORITY.document).toEqual({
      enabled: true,
      default_priority: 0,
      lending: false,
      sandbox_queue_limits: {},
      priorities: [],
    });
  });

  it('accepts the seed-shaped document and keeps it for GET', () => {
    const doc = {
      enabled: true,
      default_priority: 0,
      priorities: [
        { priority: 3, reserved_workers: 1, query_attributes: [{ regex: 'special_query' }] },
        { priority: 2, query_attributes: [{ regex: 'max', time_window: { start: '2h', end: '0h' } }] },
        { priority: 1, query_attributes: [{ time_window: { start: '24h' } }] },
      ],
    };
    const config = parseQueryPriority(doc);
    expect(config.rules.map((r) => r.priority)).toEqual([3, 2, 1]);
    expect(config.rules[0]!.reservedWorkers).toBe(1);
    expect(config.document.priorities).toEqual(doc.priorities);
  });

  // Each bad document is refused naming the field and the received value.
  const bad: Array<[string, unknown, string]> = [
    ['not an object', [1], 'query_priority must be a JSON object; received [1]'],
    ['unknown key', { enable: true }, 'query_priority.enable is not a known field'],
    [
      'enabled not boolean',
      { enabled: 'yes' },
      'query_priority.enabled must be true or false; received "yes"',
    ],
    [
      'default not integer',
      { default_priority: 1.5 },
      'query_priority.default_priority must be an integer; received 1.5',
    ],
    [
      'aging negative',
      { aging_ms_per_priority: -1 },
      'query_priority.aging_ms_per_priority must be a number in 0..86400000',
    ],
    [
      'bound zero',
      { max_queued_per_sandbox: 0 },
      'query_priority.max_queued_per_sandbox must be an integer >= 1; received 0',
    ],
    [
      'sandbox bound',
      { sandbox_queue_limits: { a: 'x' } },
      'query_priority.sandbox_queue_limits.a must be an integer >= 1; received "x"',
    ],
    ['priorities not array', { priorities: {} }, 'query_priority.priorities must be an array; received {}'],
    [
      'priority missing',
      { priorities: [{}] },
      'query_priority.priorities[0].priority must be an integer; received undefined',
    ],
    [
      'duplicate priority',
      { priorities: [{ priority: 1 }, { priority: 1 }] },
      'query_priority.priorities[1].priority must differ',
    ],
    [
      'reserved 1.5',
      { priorities: [{ priority: 1, reserved_workers: 1.5 }] },
      'query_priority.priorities[0].reserved_workers must be a worker count',
    ],
    [
      'reserved 0',
      { priorities: [{ priority: 1, reserved_workers: 0 }] },
      'reserved_workers must be a worker count',
    ],
    [
      'empty attribute',
      { priorities: [{ priority: 1, query_attributes: [{}] }] },
      'query_priority.priorities[0].query_attributes[0] must set at least one of',
    ],
    [
      'unknown attribute key',
      { priorities: [{ priority: 1, query_attributes: [{ regexp: 'a' }] }] },
      'query_attributes[0].regexp is not a known field',
    ],
    [
      'backreference',
      { priorities: [{ priority: 1, query_attributes: [{ regex: '(a)\\1' }] }] },
      'query_attributes[0].regex must be an RE2 regular expression',
    ],
    [
      'lookahead',
      { priorities: [{ priority: 1, query_attributes: [{ regex: 'a(?=b)' }] }] },
      'must be an RE2 regular expression',
    ],
    [
      'regex too long',
      { priorities: [{ priority: 1, query_attributes: [{ regex: 'a'.repeat(1001) }] }] },
      'at most 1000 characters',
    ],
    [
      'bad duration',
      { priorities: [{ priority: 1, query_attributes: [{ time_window: { start: '2 hours' } }] }] },
      'time_window.start must be a duration',
    ],
    [
      'end before start',
      { priorities: [{ priority: 1, query_attributes: [{ time_window: { start: '1h', end: '2h' } }] }] },
      'time_window.end must not be further back than start',
    ],
    [
      'empty window',
      { priorities: [{ priority: 1, query_attributes: [{ time_window: {} }] }] },
      'time_window must set start, end or both',
    ],
    [
      'user pattern type',
      { priorities: [{ priority: 1, query_attributes: [{ user: 5 }] }] },
      'query_attributes[0].user must be a wildcard pattern',
    ],
    [
      'too many rules',
      { priorities: Array.from({ length: 65 }, (_, i) => ({ priority: i })) },
      'must have at most 64 entries',
    ],
    [
      'more than 32 regexes',
      {
        priorities: Array.from({ length: 3 }, (_, i) => ({
          priority: i,
          query_attributes: Array.from({ length: 11 }, () => ({ regex: 'a' })),
        })),
      },
      'query_priority.priorities[2].query_attributes[10].regex is one regex too many: at most 32',
    ],
    ['priorities null', { priorities: null }, 'query_priority.priorities must be an array; received null'],
    [
      'attributes null',
      { priorities: [{ priority: 1, query_attributes: null }] },
      'query_attributes must be an array; received null',
    ],
    [
      'aging too large',
      { aging_ms_per_priority: 1e308 },
      'aging_ms_per_priority must be a number in 0..86400000',
    ],
    [
      'sandbox limits null',
      { sandbox_queue_limits: null },
      'query_priority.sandbox_queue_limits must be an object',
    ],
    [
      'long sandbox id key',
      { sandbox_queue_limits: { ['x'.repeat(200)]: 1 } },
      'must have sandbox ids of 1 to 128 characters as keys',
    ],
  ];
  it('shows a long unknown key shortened, not whole', () => {
    expect(() => parseQueryPriority({ ['k'.repeat(100_000)]: 1 })).toThrow(
      /^query_priority\.k{61}\.\.\. is not a known field/,
    );
  });

  it.each(bad)('refuses %s', (_name, doc, message) => {
    let thrown: unknown;
    try {
      parseQueryPriority(doc);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidArgumentError);
    expect((thrown as Error).message).toContain(message);
  });
});

describe('priorityOf', () => {
  const config = parseQueryPriority({
    default_priority: -5,
    priorities: [
      { priority: 30, query_attributes: [{ regex: 'special' }, { user: 'dash_*', index: 'spam-*' }] },
      { priority: 20, query_attributes: [{ regex: 'match', time_window: { start: '2h', end: '0h' } }] },
      { priority: 10, query_attributes: [{ time_window: { start: '24h' } }] },
      { priority: 5, query_attributes: [{ sandbox: ['analysts', 'batch_*'] }] },
    ],
  });

  it('gives the first matching entry in list order, not the highest priority that matches', () => {
    const lowFirst = parseQueryPriority({
      priorities: [
        { priority: 1, query_attributes: [{ regex: 'fuzziness' }] },
        { priority: 50, query_attributes: [{ regex: 'match' }] },
      ],
    });
    expect(priorityOf(lowFirst, attrs({ text: '{"match":{"fuzziness":2}}' }), 0, false, NOW)).toEqual({
      priority: 1,
      rule: 0,
    });
    expect(priorityOf(lowFirst, attrs({ text: '{"match":"x"}' }), 0, false, NOW)).toEqual({
      priority: 50,
      rule: 1,
    });
  });

  it('gives the first matching entry, in list order', () => {
    // Matches both the first and the fourth entry: the first wins.
    expect(priorityOf(config, attrs({ text: 'a special query' }), 0, false, NOW)).toEqual({
      priority: 30,
      rule: 0,
    });
    expect(priorityOf(config, attrs({ user: 'dash_bob' }), 0, false, NOW)).toEqual({ priority: 30, rule: 0 });
    expect(priorityOf(config, attrs(), 0, false, NOW)).toEqual({ priority: 5, rule: 3 });
  });

  it('needs every field of one attribute to match', () => {
    // user matches, but one index does not.
    expect(
      priorityOf(
        config,
        attrs({ user: 'dash_bob', indices: ['spam-1', 'ham-1'], sandboxId: 'x' }),
        7,
        false,
        NOW,
      ).priority,
    ).toBe(7);
    // The regex matches but the query reads all time: the 2h window does not hold.
    expect(priorityOf(config, attrs({ text: 'match', sandboxId: 'x' }), 7, false, NOW).priority).toBe(7);
  });

  it('unmatched: the sandbox priority, or the default for the root', () => {
    const a = attrs({ sandboxId: 'other' });
    expect(priorityOf(config, a, 7, false, NOW)).toEqual({ priority: 7, rule: -1 });
    expect(priorityOf(config, a, 7, true, NOW)).toEqual({ priority: -5, rule: -1 });
  });

  it('disabled: always the sandbox priority', () => {
    const off = parseQueryPriority({ ...config.document, enabled: false });
    expect(priorityOf(off, attrs({ text: 'special' }), 7, true, NOW)).toEqual({ priority: 7, rule: -1 });
  });

  it('time window edges are inclusive', () => {
    const at = (fromMs: number, toMs: number) =>
      priorityOf(config, attrs({ text: 'match', sandboxId: 'x', timeRange: { fromMs, toMs } }), 0, false, NOW)
        .priority;
    expect(at(NOW - 2 * HOUR, NOW)).toBe(20); // exactly the window
    expect(at(NOW - 2 * HOUR - 1, NOW)).toBe(10); // 1 ms too far back: falls to the 24h entry
    expect(at(NOW - HOUR, NOW + 1)).toBe(10); // 1 ms past end 0h: only the 24h entry (no end) holds
    expect(at(NOW - 24 * HOUR, NOW - 23 * HOUR)).toBe(10);
    expect(at(NOW - 24 * HOUR - 1, NOW - 23 * HOUR)).toBe(0);
    expect(at(Number.NEGATIVE_INFINITY, NOW)).toBe(0);
  });

  it('matches the regex in linear time on a pathological input', () => {
    const c = parseQueryPriority({ priorities: [{ priority: 1, query_attributes: [{ regex: '(a+)+$' }] }] });
    const text = `${'a'.repeat(100_000)}!`;
    const started = performance.now();
    // No match (the text ends with '!'): a backtracking engine tries exponentially many splits of the a's.
    expect(priorityOf(c, attrs({ text }), 0, false, NOW).priority).toBe(0);
    expect(priorityOf(c, attrs({ text: 'aaa' }), 0, false, NOW).priority).toBe(1);
    const ms = performance.now() - started;
    // A backtracking engine takes exponential time here; RE2 stays linear (about 50 ms for 100k).
    expect(ms).toBeLessThan(2000);
  });
});

describe('parseDuration', () => {
  it.each([
    ['0s', 0],
    ['2h', 2 * HOUR],
    ['1h30m', 90 * 60_000],
    ['7d', 7 * 24 * HOUR],
    ['1w', 7 * 24 * HOUR],
    ['250ms', 250],
  ])('%s', (text, ms) => expect(parseDuration(text, 'd')).toBe(ms));
  it.each(['', '2', 'h', '2hours', '-1h', '1.5h', 5])('refuses %j', (text) =>
    expect(() => parseDuration(text, 'd')).toThrow('d must be a duration'),
  );
});

describe('the shipped example', () => {
  it('config/query-priority.example.json is valid and fits a pool of 2 workers', async () => {
    const { readFileSync } = await import('node:fs');
    const { checkReservations } = await import('../../src/scheduler/worker-reservations.js');
    const doc = JSON.parse(
      readFileSync(new URL('../../config/query-priority.example.json', import.meta.url), 'utf8'),
    );
    const config = parseQueryPriority(doc);
    expect(() => checkReservations(config, 2)).not.toThrow();
    // A fuzzy dashboard query matches the first entry (fuzziness) before the dashboards' entry.
    const fuzzy = '{"query":{"match":{"body":{"query":"x","fuzziness":2}}}}';
    expect(priorityOf(config, attrs({ text: fuzzy, user: 'dash_a' }), 20, false, NOW).priority).toBe(0);
    expect(
      priorityOf(config, attrs({ text: '{"query":{"match":{"body":"x"}}}', user: 'dash_a' }), 20, false, NOW)
        .priority,
    ).toBe(30);
  });
});
