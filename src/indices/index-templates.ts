/**
 * Composable index templates (`PUT /_index_template/{name}`): which settings a new index gets from the
 * templates whose `index_patterns` match its name.
 *
 * Behaviour follows Elasticsearch (`MetadataIndexTemplateService`, `ComposableIndexTemplate`,
 * `TransportPutComposableIndexTemplateAction.Request.validate`):
 * - Body: `{index_patterns (string or non-empty array), template?: {settings?, mappings?, aliases?},
 *   priority?: integer >= 0, version?: integer, _meta?: object}`; other keys are refused
 *   ("[index_template] unknown field [x]"). `composed_of` is accepted only empty (no component templates
 *   here).
 * - Name: no space, `,`, `#`, `*`, no leading `_`, lowercase (`validate(...)`: "name must not contain a
 *   space", ...); and, stricter than Elasticsearch, which checks only those, the rest of the index-name
 *   rules (`common/index-name.ts`): none of `\ / ? " < > |` or `:`, no leading `-` or `+`, not `.` or `..`, at
 *   most 255 UTF-8 bytes, so that a template name is as safe in a path or a URL as an index name.
 *   Patterns: no space, `,`, `#`, `:`, no leading `_`, none of `\ / ? " < > |` (`*` is the
 *   wildcard).
 * - Two templates whose patterns can match a common index name may not have the same priority
 *   (`v2TemplateOverlaps`: "index template [b] has index patterns [..] matching patterns from existing
 *   templates [a] with patterns (a => [..]) that have the same priority [0], multiple index templates may
 *   not match during index creation, please use a different priority"). Overlap is decided exactly
 *   (Elasticsearch intersects automatons): two patterns overlap when some string matches both.
 * - A new index takes the one matching template with the highest priority (`findV2Template`); its
 *   `template.settings` are overlaid by the create request's explicit settings
 *   (`MetadataCreateIndexService.aggregateIndexSettings`), then defaults apply.
 * - A missing priority counts as 0 (`priorityOrZero`).
 */
import { compileWildcardPattern, type WildcardPattern } from '../classify/wildcard-pattern.js';
import { isPlainObject } from '../common/is-plain-object.js';
import { InvalidArgumentError } from '../errors.js';
import {
  INVALID_FILENAME_CHARS,
  INVALID_FILENAME_CHARS_TEXT,
  MAX_INDEX_NAME_BYTES,
} from '../common/index-name.js';
import {
  type IndexSettings,
  type IndexSettingValues,
  parseSettingValues,
  type ResolveIndexSettingsOptions,
  resolveIndexSettings,
} from './index-settings.js';

/** A checked template. */
export interface IndexTemplate {
  readonly name: string;
  readonly indexPatterns: readonly string[];
  /** 0 when the body gave none. */
  readonly priority: number;
  readonly version: number | undefined;
  /** `template.settings`, each checked. */
  readonly settings: IndexSettingValues;
  /** `template.mappings`, kept as given. */
  readonly mappings: Readonly<Record<string, unknown>> | undefined;
  readonly meta: Readonly<Record<string, unknown>> | undefined;
}

const TEMPLATE_KEYS = new Set(['index_patterns', 'template', 'priority', 'version', '_meta', 'composed_of']);
const MAX_LONG = Number.MAX_SAFE_INTEGER;

/** Problems of a template name, in Elasticsearch's words. */
function nameProblems(name: string): string[] {
  const problems: string[] = [];
  if (name.length === 0) problems.push('name must not be empty');
  if (name.includes(' ')) problems.push('name must not contain a space');
  if (name.includes(',')) problems.push("name must not contain a ','");
  if (name.includes('#')) problems.push("name must not contain a '#'");
  if (name.includes('*')) problems.push("name must not contain a '*'");
  if (name.startsWith('_')) problems.push("name must not start with '_'");
  if (name.toLowerCase() !== name) problems.push('name must be lower cased');
  // The index-name rules Elasticsearch does not apply to template names (see the module doc).
  if (INVALID_FILENAME_CHARS.some((c) => c !== ' ' && c !== ',' && c !== '*' && name.includes(c))) {
    problems.push(`name must not contain the following characters ${INVALID_FILENAME_CHARS_TEXT}`);
  }
  if (name.includes(':')) problems.push("name must not contain ':'");
  if (name.startsWith('-') || name.startsWith('+')) problems.push("name must not start with '-' or '+'");
  if (name === '.' || name === '..') problems.push("name must not be '.' or '..'");
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes > MAX_INDEX_NAME_BYTES) problems.push(`name is too long, (${bytes} > ${MAX_INDEX_NAME_BYTES})`);
  return problems;
}

/** Problems of an index pattern, in Elasticsearch's words (`*` is allowed). */
function patternProblems(pattern: string): string[] {
  const problems: string[] = [];
  if (pattern.length === 0) problems.push('index_pattern [] must not be empty');
  if (pattern.includes(' ')) problems.push(`index_patterns [${pattern}] must not contain a space`);
  if (pattern.includes(',')) problems.push(`index_pattern [${pattern}] must not contain a ','`);
  if (pattern.includes('#')) problems.push(`index_pattern [${pattern}] must not contain a '#'`);
  if (pattern.includes(':')) problems.push(`index_pattern [${pattern}] must not contain a ':'`);
  if (pattern.startsWith('_')) problems.push(`index_pattern [${pattern}] must not start with '_'`);
  if (/[\\/?"<>|]/.test(pattern)) {
    problems.push(
      `index_pattern [${pattern}] must not contain the following characters ${INVALID_FILENAME_CHARS_TEXT}`,
    );
  }
  return problems;
}

/**
 * Checks a `PUT /_index_template/{name}` body.
 *
 * @param name the template name from the URL.
 * @param body the parsed JSON body.
 * @param options used to check the template's settings together (with defaults), as Elasticsearch
 *   validates a template's settings with their dependencies.
 * @throws InvalidArgumentError naming the field and the received value: a bad name (path `name`), a
 *   body that is not an object, an unknown key, missing or empty `index_patterns`, a bad pattern
 *   (`index_patterns[i]`), a negative or non-integer `priority` ("index template priority must be >=
 *   0"), non-empty `composed_of`, unsupported `template.aliases`, or invalid `template.settings`.
 */
export function parseIndexTemplate(
  name: string,
  body: unknown,
  options: ResolveIndexSettingsOptions = {},
): IndexTemplate {
  const problems = nameProblems(name);
  if (problems.length > 0) {
    throw new InvalidArgumentError(
      'name',
      `is not a valid index template name (${problems.join('; ')})`,
      name,
    );
  }
  if (!isPlainObject(body)) throw new InvalidArgumentError('body', 'must be an object', body);
  for (const key of Object.keys(body)) {
    if (!TEMPLATE_KEYS.has(key)) {
      throw new InvalidArgumentError(
        key,
        `is not an index template field ([index_template] unknown field [${key}])`,
        body[key],
      );
    }
  }
  const rawPatterns = body['index_patterns'];
  const indexPatterns = typeof rawPatterns === 'string' ? [rawPatterns] : rawPatterns;
  if (!Array.isArray(indexPatterns) || indexPatterns.length === 0) {
    throw new InvalidArgumentError(
      'index_patterns',
      'is required: a pattern or a non-empty array of patterns',
      rawPatterns,
    );
  }
  indexPatterns.forEach((pattern, i) => {
    if (typeof pattern !== 'string') {
      throw new InvalidArgumentError(`index_patterns[${i}]`, 'must be a string', pattern);
    }
    const found = patternProblems(pattern);
    if (found.length > 0) {
      throw new InvalidArgumentError(
        `index_patterns[${i}]`,
        `is not a valid index pattern (${found.join('; ')})`,
        pattern,
      );
    }
  });
  const rawPriority = body['priority'];
  let priority = 0;
  if (rawPriority !== undefined && rawPriority !== null) {
    const n =
      typeof rawPriority === 'string' && /^[+-]?\d+$/.test(rawPriority) ? Number(rawPriority) : rawPriority;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > MAX_LONG) {
      throw new InvalidArgumentError(
        'priority',
        'must be an integer >= 0 (index template priority must be >= 0)',
        rawPriority,
      );
    }
    priority = n;
  }
  const rawVersion = body['version'];
  if (rawVersion !== undefined && rawVersion !== null && !Number.isInteger(rawVersion)) {
    throw new InvalidArgumentError('version', 'must be an integer', rawVersion);
  }
  const meta = body['_meta'];
  if (meta !== undefined && meta !== null && !isPlainObject(meta)) {
    throw new InvalidArgumentError('_meta', 'must be an object', meta);
  }
  const composedOf = body['composed_of'];
  if (
    composedOf !== undefined &&
    composedOf !== null &&
    !(Array.isArray(composedOf) && composedOf.length === 0)
  ) {
    throw new InvalidArgumentError(
      'composed_of',
      'is not supported (no component templates); only [] is accepted',
      composedOf,
    );
  }
  let settings: IndexSettingValues = {};
  let mappings: Record<string, unknown> | undefined;
  const template = body['template'];
  if (template !== undefined && template !== null) {
    if (!isPlainObject(template)) throw new InvalidArgumentError('template', 'must be an object', template);
    for (const [key, value] of Object.entries(template)) {
      if (key === 'settings') {
        if (value !== null) settings = parseSettingValues(value, 'template.settings');
      } else if (key === 'mappings') {
        if (value !== null && !isPlainObject(value)) {
          throw new InvalidArgumentError('template.mappings', 'must be an object', value);
        }
        mappings = value ?? undefined;
      } else if (key === 'aliases') {
        if (value !== null && (!isPlainObject(value) || Object.keys(value).length > 0)) {
          throw new InvalidArgumentError(
            'template.aliases',
            'is not supported (only an empty object is accepted)',
            value,
          );
        }
      } else {
        throw new InvalidArgumentError(
          `template.${key}`,
          `is not a template field ([template] unknown field [${key}])`,
          value,
        );
      }
    }
  }
  // Check the settings together, with defaults under them (dependencies such as routing shards).
  resolveIndexSettings(settings, { ...options, path: 'template.settings' });
  return Object.freeze({
    name,
    indexPatterns: Object.freeze([...(indexPatterns as string[])]),
    priority,
    version: (rawVersion as number | null | undefined) ?? undefined,
    settings,
    mappings,
    meta: (meta as Record<string, unknown> | null | undefined) ?? undefined,
  });
}

/**
 * True when some string matches both wildcard patterns (`*` matches any run, also empty). Dynamic
 * programming over the two patterns' positions: O(|a| × |b|) time and memory.
 */
export function wildcardPatternsOverlap(a: string, b: string): boolean {
  const n = a.length;
  const m = b.length;
  // can[i][j]: the suffixes a[i..] and b[j..] have a common match.
  const can: Uint8Array[] = Array.from({ length: n + 1 }, () => new Uint8Array(m + 1));
  can[n]![m] = 1;
  for (let i = n; i >= 0; i--) {
    for (let j = m; j >= 0; j--) {
      if (i === n && j === m) continue;
      const ca = i < n ? a[i] : undefined;
      const cb = j < m ? b[j] : undefined;
      let ok = false;
      if (ca === '*') {
        // The star matches nothing, or swallows b's next symbol (a literal, or b's star's share).
        ok = can[i + 1]![j] === 1 || (cb !== undefined && can[i]![j + 1] === 1);
      } else if (cb === '*') {
        ok = can[i]![j + 1] === 1 || (ca !== undefined && can[i + 1]![j] === 1);
      } else if (ca !== undefined && ca === cb) {
        ok = can[i + 1]![j + 1] === 1;
      }
      can[i]![j] = ok ? 1 : 0;
    }
  }
  return can[0]![0] === 1;
}

interface StoredTemplate {
  readonly template: IndexTemplate;
  readonly patterns: readonly WildcardPattern[];
}

/** Where a new index's settings came from. */
export interface ResolvedIndexCreation {
  /** The template that applied, if any. */
  readonly template: IndexTemplate | undefined;
  readonly settings: IndexSettings;
  /** The request's mappings, else the template's. */
  readonly mappings: Readonly<Record<string, unknown>> | undefined;
}

/**
 * The composable templates of one node or cluster: put, delete, and the settings of a new index.
 * Not thread-safe across processes; the cluster state holder owns one.
 */
export class IndexTemplateRegistry {
  readonly #templates = new Map<string, StoredTemplate>();
  readonly #options: ResolveIndexSettingsOptions;

  /** @param options defaults for resolving settings (see `resolveIndexSettings`). */
  constructor(options: ResolveIndexSettingsOptions = {}) {
    this.#options = options;
  }

  /**
   * Adds or replaces a template.
   *
   * @param create refuse to replace an existing template (`?create=true`).
   * @throws InvalidArgumentError (path `name`) when `create` is set and the name is taken ("index
   *   template [x] already exists"); (path `index_patterns`) when a pattern overlaps a pattern of
   *   another template with the same priority, with Elasticsearch's message as the expectation.
   */
  put(template: IndexTemplate, create = false): void {
    if (create && this.#templates.has(template.name)) {
      throw new InvalidArgumentError(
        'name',
        `must be new (index template [${template.name}] already exists)`,
        template.name,
      );
    }
    const conflicts: IndexTemplate[] = [];
    for (const { template: other } of this.#templates.values()) {
      if (other.name === template.name || other.priority !== template.priority) continue;
      const overlaps = template.indexPatterns.some((p) =>
        other.indexPatterns.some((q) => wildcardPatternsOverlap(p, q)),
      );
      if (overlaps) conflicts.push(other);
    }
    if (conflicts.length > 0) {
      conflicts.sort((x, y) => (x.name < y.name ? -1 : 1));
      throw new InvalidArgumentError(
        'index_patterns',
        `must not overlap a template of the same priority: index template [${template.name}] has index patterns [${template.indexPatterns.join(', ')}] matching patterns from existing templates [${conflicts.map((c) => c.name).join(',')}] with patterns (${conflicts.map((c) => `${c.name} => [${c.indexPatterns.join(', ')}]`).join(',')}) that have the same priority [${template.priority}], multiple index templates may not match during index creation, please use a different priority`,
        template.indexPatterns,
      );
    }
    this.#templates.set(template.name, {
      template,
      patterns: template.indexPatterns.map(compileWildcardPattern),
    });
  }

  /** Removes a template; false when there was none of that name. */
  delete(name: string): boolean {
    return this.#templates.delete(name);
  }

  get(name: string): IndexTemplate | undefined {
    return this.#templates.get(name)?.template;
  }

  /** All templates, by name. */
  list(): IndexTemplate[] {
    return [...this.#templates.values()].map((s) => s.template).sort((x, y) => (x.name < y.name ? -1 : 1));
  }

  /**
   * The template a new index named `indexName` takes: the matching one with the highest priority
   * (ties, which `put` prevents, go to the smaller name).
   */
  findTemplate(indexName: string): IndexTemplate | undefined {
    let best: IndexTemplate | undefined;
    for (const { template, patterns } of this.#templates.values()) {
      if (!patterns.some((p) => p.matches(indexName))) continue;
      if (
        best === undefined ||
        template.priority > best.priority ||
        (template.priority === best.priority && template.name < best.name)
      ) {
        best = template;
      }
    }
    return best;
  }

  /**
   * The settings of a new index: the matching template's settings, overlaid by the request's explicit
   * settings, then defaults, checked together.
   *
   * @throws InvalidArgumentError from `resolveIndexSettings` when the combination is invalid (e.g. the
   *   template's routing shards are not a multiple of the request's shards).
   */
  resolveNewIndex(
    indexName: string,
    request: {
      readonly settings: IndexSettingValues;
      readonly mappings?: Readonly<Record<string, unknown>> | undefined;
    },
  ): ResolvedIndexCreation {
    const template = this.findTemplate(indexName);
    const settings = resolveIndexSettings({ ...template?.settings, ...request.settings }, this.#options);
    return { template, settings, mappings: request.mappings ?? template?.mappings };
  }
}
