import { describe, expect, it } from 'vitest';
import { parseServeOptions } from '../../src/cli/serve-options.js';
import { admissionModeOf, enforcementModeOf } from '../../src/governor/node-mode.js';

describe('node modes at the edge', () => {
  it("takes enforced and OpenSearch's enabled for the governor and for admission control alike", () => {
    expect(['enforced', 'enabled', 'monitor_only', 'disabled'].map((w) => enforcementModeOf(w, 'm'))).toEqual(
      ['enabled', 'enabled', 'monitor_only', 'disabled'],
    );
    expect(['enforced', 'enabled', 'monitor_only', 'disabled'].map((w) => admissionModeOf(w, 'm'))).toEqual([
      'enforced',
      'enforced',
      'monitor_only',
      'disabled',
    ]);
    expect(() => enforcementModeOf('on', '--enforcement')).toThrow(
      '--enforcement must be one of enforced (or enabled), monitor_only, disabled; received "on"',
    );
  });

  it('takes the words in any case, as the sandbox modes and "never" are taken', () => {
    expect(enforcementModeOf('ENABLED', 'm')).toBe('enabled');
    expect(enforcementModeOf('Monitor_Only', 'm')).toBe('monitor_only');
    expect(admissionModeOf('Enforced', 'm')).toBe('enforced');
  });

  it('reads the flags with either word', () => {
    expect(parseServeOptions(['--enforcement', 'enforced'], {}).runtime.enforcement).toBe('enabled');
    const coordinator = parseServeOptions(
      ['--role', 'coordinator', '--data-nodes', '127.0.0.1:9201', '--admission-mode', 'enabled'],
      {},
    );
    expect(coordinator.coordinator?.admissionMode).toBe('enforced');
  });
});
