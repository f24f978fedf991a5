import { describe, expect, it } from 'vitest';
import {
  argumentsError,
  optionChecks as c,
  joinNegativeValues,
  sandboxChecks,
} from '../../src/common/option-checks.js';
import { ErrorCode, InvalidArgumentError, InvalidSandboxError } from '../../src/errors.js';

/** The error a check threw, for assertions on its path, expectation and received value. */
function refusal(check: () => unknown): InvalidArgumentError {
  try {
    check();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidArgumentError);
    return error as InvalidArgumentError;
  }
  throw new Error('the check accepted the value');
}

describe('integerIn', () => {
  it('accepts an integer in the range, both ends included, and gives the fallback for an absent value', () => {
    expect(c.integerIn('options.n', 1, 1, 64)).toBe(1);
    expect(c.integerIn('options.n', 64, 1, 64)).toBe(64);
    expect(c.integerIn('options.n', undefined, 1, 64, 8)).toBe(8);
  });

  it('refuses with the path and the value: out of range, a fraction, NaN, Infinity, a string, absent without fallback', () => {
    expect(refusal(() => c.integerIn('options.n', 65, 1, 64)).message).toBe(
      'options.n must be an integer in 1..64; received 65',
    );
    for (const bad of [0, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '1', null, undefined]) {
      const e = refusal(() => c.integerIn('lanes[1].workers', bad, 1, 64));
      expect(e.path).toBe('lanes[1].workers');
      expect(e.received).toBe(bad);
      expect(e.expectation).toBe('must be an integer in 1..64');
    }
  });

  it('hands back -0 as 0', () => {
    expect(Object.is(c.integerIn('n', -0, 0, 5), 0)).toBe(true);
  });
});

describe('integerAtLeast', () => {
  it('accepts from min up to the largest safe integer, refuses below and beyond', () => {
    expect(c.integerAtLeast('p', 1, 1)).toBe(1);
    expect(c.integerAtLeast('p', Number.MAX_SAFE_INTEGER, 1)).toBe(Number.MAX_SAFE_INTEGER);
    expect(refusal(() => c.integerAtLeast('p', 0, 1)).message).toBe('p must be an integer >= 1; received 0');
    expect(refusal(() => c.integerAtLeast('p', 2 ** 53, 1)).received).toBe(2 ** 53);
  });
});

describe('numberIn, positiveNumber, nonNegativeNumber', () => {
  it('accepts finite numbers in the range', () => {
    expect(c.numberIn('x', 0.5, 0, 1)).toBe(0.5);
    expect(c.positiveNumber('x', 1e-9)).toBe(1e-9);
    expect(c.nonNegativeNumber('x', 0)).toBe(0);
    expect(Object.is(c.nonNegativeNumber('x', -0), 0)).toBe(true);
    expect(c.positiveNumber('x', undefined, 3)).toBe(3);
  });

  it('refuses NaN, Infinity, a string and out-of-range values, naming the path and the value', () => {
    expect(refusal(() => c.numberIn('o.x', 2, 0, 1)).message).toBe(
      'o.x must be a number in 0..1; received 2',
    );
    expect(refusal(() => c.numberIn('o.x', Number.NaN, 0, 1)).message).toBe(
      'o.x must be a number in 0..1; received NaN',
    );
    expect(refusal(() => c.positiveNumber('o.x', 0)).message).toBe(
      'o.x must be a positive finite number; received 0',
    );
    expect(refusal(() => c.positiveNumber('o.x', Number.POSITIVE_INFINITY)).message).toBe(
      'o.x must be a positive finite number; received Infinity',
    );
    expect(refusal(() => c.nonNegativeNumber('o.x', -1)).message).toBe(
      'o.x must be a non-negative finite number; received -1',
    );
    expect(refusal(() => c.nonNegativeNumber('o.x', '1')).message).toBe(
      'o.x must be a non-negative finite number; received "1"',
    );
  });
});

describe('ratio and ratioOrZero', () => {
  it('accepts (0, 1] and [0, 1]', () => {
    expect(c.ratio('r', 1)).toBe(1);
    expect(c.ratio('r', 0.01)).toBe(0.01);
    expect(c.ratioOrZero('r', 0)).toBe(0);
    expect(c.ratio('r', undefined, 0.9)).toBe(0.9);
  });

  it('refuses 0 (ratio), above 1, NaN and strings', () => {
    expect(refusal(() => c.ratio('limits.cpu.high', 1.5)).message).toBe(
      'limits.cpu.high must be a ratio in (0, 1]; received 1.5',
    );
    expect(refusal(() => c.ratio('r', 0)).received).toBe(0);
    expect(refusal(() => c.ratio('r', Number.NaN)).received).toBeNaN();
    expect(refusal(() => c.ratioOrZero('r', -0.1)).message).toBe(
      'r must be a ratio in [0, 1]; received -0.1',
    );
    expect(refusal(() => c.ratioOrZero('r', '0.5')).received).toBe('0.5');
  });
});

describe('boolean', () => {
  it('accepts true and false only, with the fallback for absent', () => {
    expect(c.boolean('b', false)).toBe(false);
    expect(c.boolean('b', undefined, true)).toBe(true);
    expect(refusal(() => c.boolean('b', 'true')).message).toBe('b must be true or false; received "true"');
    expect(refusal(() => c.boolean('b', 1, undefined, 'must be a boolean')).message).toBe(
      'b must be a boolean; received 1',
    );
  });
});

describe('oneOf', () => {
  const MODES = ['enforced', 'soft', 'monitor'] as const;

  it('accepts a word of the set in any case and gives it in the set spelling', () => {
    expect(c.oneOf('mode', 'soft', MODES)).toBe('soft');
    expect(c.oneOf('mode', 'MONITOR', MODES)).toBe('monitor');
    expect(c.oneOf('mode', 'Enforced', MODES)).toBe('enforced');
    expect(c.oneOf('mode', undefined, MODES, 'enforced')).toBe('enforced');
  });

  it('refuses another word, a non-string and an empty one, listing the words', () => {
    expect(refusal(() => c.oneOf('mode', 'strict', MODES)).message).toBe(
      'mode must be one of enforced, soft, monitor; received "strict"',
    );
    expect(refusal(() => c.oneOf('mode', 1, MODES)).received).toBe(1);
    expect(refusal(() => c.oneOf('mode', '', MODES, undefined, 'must be a mode')).message).toBe(
      'mode must be a mode; received ""',
    );
  });
});

describe('string, timeValueMs', () => {
  it('checks strings, non-empty when asked', () => {
    expect(c.string('s', '')).toBe('');
    expect(refusal(() => c.string('s', '', { nonEmpty: true })).message).toBe(
      's must be a non-empty string; received ""',
    );
    expect(refusal(() => c.string('s', 1)).message).toBe('s must be a string; received 1');
    expect(c.string('s', undefined, { fallback: 'x' })).toBe('x');
  });

  it('reads Elasticsearch time values and refuses one without a unit, naming the path', () => {
    expect(c.timeValueMs('timeout', '1s')).toBe(1000);
    expect(c.timeValueMs('timeout', '-1')).toBe(-1);
    expect(refusal(() => c.timeValueMs('timeout', '10')).path).toBe('timeout');
  });
});

describe('integerText and ratioText (CLI flags)', () => {
  it('reads the text of a flag', () => {
    expect(c.integerText('--interval-ms', '100', 10, 60_000)).toBe(100);
    expect(c.integerText('--interval-ms', undefined, 10, 60_000)).toBeUndefined();
    expect(c.ratioText('--cpu', '0.5')).toBe(0.5);
    expect(c.ratioText('--cpu', '.5')).toBe(0.5);
  });

  it('refuses text that is not such a number, naming the flag and the text', () => {
    expect(refusal(() => c.integerText('--interval-ms', '1e2', 10, 60_000)).message).toBe(
      '--interval-ms must be an integer in 10..60000; received "1e2"',
    );
    expect(refusal(() => c.integerText('--n', '5', 10, 60_000)).received).toBe('5');
    expect(refusal(() => c.ratioText('--cpu', '1.5')).message).toBe(
      '--cpu must be a ratio in (0, 1]; received "1.5"',
    );
    expect(refusal(() => c.ratioText('--cpu', 'NaN')).received).toBe('NaN');
  });
});

describe('sandboxChecks', () => {
  it('throws InvalidSandboxError (QS_INVALID_SANDBOX) with the same message', () => {
    const e = refusal(() => sandboxChecks.ratio('limits.cpu.low', 2));
    expect(e).toBeInstanceOf(InvalidSandboxError);
    expect(e.code).toBe(ErrorCode.INVALID_SANDBOX);
    expect(e.message).toBe('limits.cpu.low must be a ratio in (0, 1]; received 2');
  });
});

describe('joinNegativeValues', () => {
  it('joins a flag and a negative number after it, so that the flag range check reports the value', () => {
    expect(joinNegativeValues(['--spare-workers', '-1', '--port', '9200'])).toEqual([
      '--spare-workers=-1',
      '--port',
      '9200',
    ]);
    expect(joinNegativeValues(['--ratio', '-0.5'])).toEqual(['--ratio=-0.5']);
    // Not a number, already joined, or a short flag: left for parseArgs to judge.
    expect(joinNegativeValues(['--port', '--host', 'x', '--a=-1', '-p', '-1', '--b', '-1x'])).toEqual([
      '--port',
      '--host',
      'x',
      '--a=-1',
      '-p',
      '-1',
      '--b',
      '-1x',
    ]);
  });

  it('with the flags given, joins only after string flags (a negative positional after a boolean stays one)', () => {
    const flags = { dry: { type: 'boolean' }, count: { type: 'string' } } as const;
    expect(joinNegativeValues(['--dry', '-3', '--count', '-2'], flags)).toEqual([
      '--dry',
      '-3',
      '--count=-2',
    ]);
  });
});

describe('argumentsError', () => {
  it('names what parseArgs refused and suggests the flag a misspelt one meant', () => {
    const flags = { port: { type: 'string' }, host: { type: 'string' } };
    const unknown = Object.assign(new TypeError("Unknown option '--pot'"), {
      code: 'ERR_PARSE_ARGS_UNKNOWN_OPTION',
    });
    expect(argumentsError(unknown, ['--pot', '1'], flags).message).toBe(
      `arguments are invalid (Unknown option '--pot'; did you mean --port?); received "--pot 1"`,
    );
    const far = Object.assign(new TypeError("Unknown option '--colour'"), {
      code: 'ERR_PARSE_ARGS_UNKNOWN_OPTION',
    });
    expect(argumentsError(far, ['--colour'], flags).message).toBe(
      `arguments are invalid (Unknown option '--colour'); received "--colour"`,
    );
  });
});
