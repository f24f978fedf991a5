/**
 * One vocabulary for node modes at the edge. The governor's switch (`--enforcement`,
 * `options.enforcement`, `setEnforcement`) and a coordinator's admission control
 * (`--admission-mode`, `AdmissionController`) both take `enforced` (act), `monitor_only` (count what
 * would be done) and `disabled`, and both take OpenSearch's `enabled` (`wlm.workload_group.mode`) as
 * `enforced`. In identifiers both call acting `ENFORCED` (`EnforcementMode.ENFORCED`,
 * `AdmissionMode.ENFORCED`); on the wire the governor prints `enabled` and admission control
 * `enforced`, as OpenSearch's settings do (the mapping: docs/governor.md); only the edge is lenient.
 */
import { optionChecks } from '../common/option-checks.js';
import { EnforcementMode } from './decide.js';

/** The words accepted for a node mode, in the order messages list them. */
export const NODE_MODE_WORDS = ['enforced', 'enabled', 'monitor_only', 'disabled'] as const;
export type NodeModeWord = (typeof NODE_MODE_WORDS)[number];

/** Any case (the rule of common/option-checks.ts for words). */
function check(value: unknown, path: string): NodeModeWord {
  return optionChecks.oneOf(
    path,
    value,
    NODE_MODE_WORDS,
    undefined,
    'must be one of enforced (or enabled), monitor_only, disabled',
  );
}

/** The governor's mode for a node-mode word. @throws InvalidArgumentError naming `path`. */
export function enforcementModeOf(value: unknown, path: string): EnforcementMode {
  const word = check(value, path);
  return word === 'enforced' || word === 'enabled' ? EnforcementMode.ENFORCED : word;
}

/** Admission control's mode for a node-mode word. @throws InvalidArgumentError naming `path`. */
export function admissionModeOf(value: unknown, path: string): 'enforced' | 'monitor_only' | 'disabled' {
  const word = check(value, path);
  return word === 'enforced' || word === 'enabled' ? 'enforced' : word;
}
