/**
 * The benches' shared argument check: a flag it does not know is one line on stderr and exit 2; a
 * flag's value is skipped, not taken for an unknown argument.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { refuseUnknownArguments } from '../../bench/harness.js';

const FLAGS = { '--full': false, '--rounds': true };

describe('refuseUnknownArguments', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  function check(args: string[]): { exit: number | undefined; error: string[] } {
    const error: string[] = [];
    let exit: number | undefined;
    vi.spyOn(console, 'error').mockImplementation((line: string) => {
      error.push(line);
    });
    vi.spyOn(process, 'exit').mockImplementation(((code?: number) => {
      exit = code;
      throw new Error('exit');
    }) as never);
    try {
      refuseUnknownArguments('demo-bench', FLAGS, args);
    } catch (e) {
      if ((e as Error).message !== 'exit') throw e;
    }
    return { exit, error };
  }

  it('takes known flags and skips the value after a flag that takes one', () => {
    expect(check(['--full', '--rounds', '--not-a-flag-but-a-value'])).toEqual({ exit: undefined, error: [] });
  });

  it('refuses an unknown argument in one line naming it and the flags it takes, exit 2', () => {
    const { exit, error } = check(['--rounds', '3', '--round', '2']);
    expect(exit).toBe(2);
    expect(error).toEqual(['demo-bench: unknown argument "--round"; it takes --full, --rounds']);
  });

  it('refuses a value given to a flag that takes none', () => {
    expect(check(['--full', 'yes']).exit).toBe(2);
  });
});
