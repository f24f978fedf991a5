import { InvalidSandboxError } from '../errors.js';
import { isPlainObject } from '../common/is-plain-object.js';
import type { SelectionAttributes } from './sandbox.js';

/** Attribute names a selection attribute entry may have. */
export const SELECTION_ATTRIBUTE_NAMES = ['userPattern', 'indicesPattern'] as const;
export type SelectionAttributeName = (typeof SELECTION_ATTRIBUTE_NAMES)[number];

/** At most this many patterns per attribute (all entries with that name together). */
export const MAX_PATTERNS_PER_ATTRIBUTE = 10;
/** A pattern is 1..100 characters. */
export const MAX_PATTERN_LENGTH = 100;

/**
 * Parses a `selectionAttributes` list: `[{ "name": "userPattern" | "indicesPattern", "value": string
 * | string[] }, ...]`. Entries with the same name are OR-ed together (their values are merged).
 * Patterns are wildcard patterns: `*` matches any run of characters, every other character is literal.
 *
 * @param value the raw list; `undefined` means the sandbox names no attribute.
 * @param path path of that value, e.g. `sandboxes[2].selectionAttributes`.
 * @returns frozen attributes; an attribute that is not named has `[]`.
 * @throws InvalidSandboxError naming the exact field: not a list, unknown entry key or name, a value
 *   that is not a string or list of strings, an empty or too long pattern, a repeated pattern, more
 *   than 10 patterns for one attribute.
 */
export function parseSelectionAttributes(value: unknown, path: string): SelectionAttributes {
  const patterns: Record<SelectionAttributeName, string[]> = { userPattern: [], indicesPattern: [] };
  if (value === undefined) return freeze(patterns);
  if (!Array.isArray(value)) throw new InvalidSandboxError(path, 'must be a list of { name, value }', value);
  value.forEach((entry: unknown, entryIndex) => {
    const entryPath = `${path}[${entryIndex}]`;
    if (!isPlainObject(entry))
      throw new InvalidSandboxError(entryPath, 'must be an object { name, value }', entry);
    for (const key of Object.keys(entry)) {
      if (key !== 'name' && key !== 'value') {
        throw new InvalidSandboxError(
          `${entryPath}.${key}`,
          'is not a known field (expected name, value)',
          entry[key],
        );
      }
    }
    const name = entry['name'];
    if (!isAttributeName(name)) {
      throw new InvalidSandboxError(
        `${entryPath}.name`,
        `must be one of ${SELECTION_ATTRIBUTE_NAMES.join(', ')}`,
        name,
      );
    }
    const target = patterns[name];
    const raw = entry['value'];
    if (typeof raw === 'string') {
      addPattern(target, raw, `${entryPath}.value`, name);
    } else if (Array.isArray(raw) && raw.length > 0) {
      raw.forEach((item: unknown, itemIndex) => {
        addPattern(target, item, `${entryPath}.value[${itemIndex}]`, name);
      });
    } else {
      throw new InvalidSandboxError(
        `${entryPath}.value`,
        'must be a pattern or a non-empty list of patterns',
        raw,
      );
    }
  });
  return freeze(patterns);
}

/**
 * A canonical key for comparing two sandboxes' attributes: equal keys mean the same patterns per
 * attribute, in any order. Empty for a sandbox that names no attribute.
 */
export function selectionAttributesKey(attributes: SelectionAttributes): string {
  if (attributes.userPattern.length === 0 && attributes.indicesPattern.length === 0) return '';
  return JSON.stringify([[...attributes.userPattern].sort(), [...attributes.indicesPattern].sort()]);
}

function addPattern(target: string[], pattern: unknown, path: string, name: SelectionAttributeName): void {
  if (typeof pattern !== 'string' || pattern.length === 0 || pattern.length > MAX_PATTERN_LENGTH) {
    throw new InvalidSandboxError(path, `must be a pattern of 1..${MAX_PATTERN_LENGTH} characters`, pattern);
  }
  if (target.includes(pattern)) {
    throw new InvalidSandboxError(path, `must not repeat a ${name} pattern`, pattern);
  }
  if (target.length >= MAX_PATTERNS_PER_ATTRIBUTE) {
    throw new InvalidSandboxError(
      path,
      `exceeds the limit of ${MAX_PATTERNS_PER_ATTRIBUTE} ${name} patterns`,
      pattern,
    );
  }
  target.push(pattern);
}

function isAttributeName(value: unknown): value is SelectionAttributeName {
  return (SELECTION_ATTRIBUTE_NAMES as readonly unknown[]).includes(value);
}

function freeze(patterns: Record<SelectionAttributeName, string[]>): SelectionAttributes {
  return Object.freeze({
    userPattern: Object.freeze(patterns.userPattern),
    indicesPattern: Object.freeze(patterns.indicesPattern),
  });
}
