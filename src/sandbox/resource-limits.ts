import { InvalidSandboxError } from '../errors.js';
import { isPlainObject } from '../common/is-plain-object.js';
import type { Resource, ResourceLimit } from './sandbox.js';

/** `low` when a definition gives only `high`: this fraction of `high`. */
export const DEFAULT_LOW_FRACTION_OF_HIGH = 0.8;

/**
 * Keys accepted under `resourceConsumptionLimits`, with the resource each one sets and its unit.
 * `cpu` / `memory` hold ratios in (0, 1]; the seed's `cpuUsageLimit` / `jvmUsageLimit` (jvm = memory)
 * hold percents in (0, 100].
 */
const LIMIT_KEYS = {
  cpu: { resource: 'cpu', percent: false },
  memory: { resource: 'memory', percent: false },
  cpuUsageLimit: { resource: 'cpu', percent: true },
  jvmUsageLimit: { resource: 'memory', percent: true },
} as const satisfies Record<string, { resource: Resource; percent: boolean }>;
type LimitKey = keyof typeof LIMIT_KEYS;

/** A parsed limit plus where it came from, so later checks (child within parent) name the same field. */
export interface ParsedResourceLimit extends ResourceLimit {
  /** Path of the limit in the file, e.g. `sandboxes[2].resourceConsumptionLimits.cpuUsageLimit`. */
  readonly path: string;
  /** True when the file wrote it in percent (`cpuUsageLimit`, `jvmUsageLimit`). */
  readonly percent: boolean;
  /** True when `low` was not written and defaulted to 80 % of `high`. */
  readonly lowDefaulted: boolean;
}

export type ParsedResourceLimits = Partial<Record<Resource, ParsedResourceLimit>>;

const NUMERIC_STRING = /^\s*\d+(\.\d+)?\s*$/;

/** Ratio with at most 6 decimals, so that 85 % reads 0.85 and 80 % of 0.9 reads 0.72. */
function roundRatio(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

/**
 * Parses a `resourceConsumptionLimits` object.
 *
 * Each entry is `{ "low": x, "high": y }` (`low` optional: 80 % of `high`), or a bare number meaning
 * `high`. Percent keys also take numeric strings (`"85"`, as the seed writes). Results are ratios.
 *
 * @param value the raw `resourceConsumptionLimits` value; `undefined` means no limits.
 * @param path path of that value, e.g. `sandboxes[2].resourceConsumptionLimits`.
 * @throws InvalidSandboxError naming the exact field: unknown key, both `cpu` and `cpuUsageLimit`,
 *   a value out of range, `low > high`.
 */
export function parseResourceLimits(value: unknown, path: string): ParsedResourceLimits {
  const result: ParsedResourceLimits = {};
  if (value === undefined) return result;
  if (!isPlainObject(value)) throw new InvalidSandboxError(path, 'must be an object', value);
  for (const [key, raw] of Object.entries(value)) {
    if (!Object.hasOwn(LIMIT_KEYS, key)) {
      throw new InvalidSandboxError(
        `${path}.${key}`,
        `is not a known limit (expected one of ${Object.keys(LIMIT_KEYS).join(', ')})`,
        raw,
      );
    }
    const { resource, percent } = LIMIT_KEYS[key as LimitKey];
    const previous = result[resource];
    if (previous !== undefined) {
      throw new InvalidSandboxError(`${path}.${key}`, `must not be set together with ${previous.path}`, raw);
    }
    result[resource] = parseLimit(raw, `${path}.${key}`, percent);
  }
  return result;
}

function parseLimit(raw: unknown, path: string, percent: boolean): ParsedResourceLimit {
  let high: number;
  let low: number;
  let lowDefaulted = false;
  if (isPlainObject(raw)) {
    for (const key of Object.keys(raw)) {
      if (key !== 'low' && key !== 'high') {
        throw new InvalidSandboxError(
          `${path}.${key}`,
          'is not a known field (expected low, high)',
          raw[key],
        );
      }
    }
    // A bad low is named as such, before the missing high it came without.
    if (raw['low'] !== undefined) parseAmount(raw['low'], `${path}.low`, percent);
    if (raw['high'] === undefined) throw new InvalidSandboxError(`${path}.high`, 'is required', undefined);
    high = parseAmount(raw['high'], `${path}.high`, percent);
    if (raw['low'] === undefined) {
      low = roundRatio(high * DEFAULT_LOW_FRACTION_OF_HIGH);
      lowDefaulted = true;
    } else {
      low = parseAmount(raw['low'], `${path}.low`, percent);
      if (low > high) {
        const shown = percent ? high * 100 : high;
        throw new InvalidSandboxError(
          `${path}.low`,
          `must be at most high (${roundRatio(shown)})`,
          raw['low'],
        );
      }
    }
  } else if (typeof raw === 'number' || typeof raw === 'string') {
    high = parseAmount(raw, path, percent);
    low = roundRatio(high * DEFAULT_LOW_FRACTION_OF_HIGH);
    lowDefaulted = true;
  } else {
    const shape = percent ? '{ low, high } in percent or a percent' : '{ low, high } as ratios or a ratio';
    throw new InvalidSandboxError(path, `must be ${shape}`, raw);
  }
  return Object.freeze({ low, high, path, percent, lowDefaulted });
}

/** Reads one limit figure and returns it as a ratio. */
function parseAmount(raw: unknown, path: string, percent: boolean): number {
  let amount: number | undefined;
  if (typeof raw === 'number' && Number.isFinite(raw)) amount = raw;
  else if (percent && typeof raw === 'string' && NUMERIC_STRING.test(raw)) amount = Number(raw);
  if (percent) {
    if (amount === undefined || amount <= 0 || amount > 100) {
      throw new InvalidSandboxError(path, 'must be a percent in (0, 100]', raw);
    }
    return roundRatio(amount / 100);
  }
  if (amount === undefined || amount <= 0 || amount > 1) {
    throw new InvalidSandboxError(path, 'must be a ratio in (0, 1]', raw);
  }
  return amount;
}
