/**
 * Index-name rules of Elasticsearch, with its messages.
 *
 * Source: Elasticsearch `MetadataCreateIndexService.validateIndexOrAliasName` (the static rules, in this
 * order) and `validateIndexName` (adds "must be lowercase"); the error is `InvalidIndexNameException`,
 * whose message is `Invalid index name [<name>], <reason>` and whose REST type is
 * `invalid_index_name_exception`. `Strings.INVALID_FILENAME_CHARS` prints as
 * `[ , ", *, \, <, |, ,, >, /, ?]` (a Java `HashSet`'s order, as Elasticsearch's messages show it).
 * Names starting with `.` are allowed (Elasticsearch only logs a deprecation for them).
 */
import { InvalidArgumentError } from '../errors.js';

/** The longest index name in UTF-8 bytes (`MetadataCreateIndexService.MAX_INDEX_NAME_BYTES`). */
export const MAX_INDEX_NAME_BYTES = 255;

/** `Strings.INVALID_FILENAME_CHARS`: characters no index name (nor, except `*`, index pattern) may hold. */
export const INVALID_FILENAME_CHARS: readonly string[] = ['\\', '/', '*', '?', '"', '<', '>', '|', ' ', ','];

/** How Elasticsearch prints `INVALID_FILENAME_CHARS` in its messages. */
export const INVALID_FILENAME_CHARS_TEXT = '[ , ", *, \\, <, |, ,, >, /, ?]';

/**
 * Why `name` is not a valid index name, as the text after `Invalid index name [<name>], `; `undefined`
 * when it is valid. Checks, in Elasticsearch's order: empty; a character of `\ / * ? " < > |`, space or
 * `,`; `#`; `:`; a leading `_`, `-` or `+`; more than 255 UTF-8 bytes; `.` or `..`; not lowercase.
 */
export function indexNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'must not be empty';
  for (const c of INVALID_FILENAME_CHARS) {
    if (name.includes(c)) return `must not contain the following characters ${INVALID_FILENAME_CHARS_TEXT}`;
  }
  if (name.includes('#')) return "must not contain '#'";
  if (name.includes(':')) return "must not contain ':'";
  const first = name.charCodeAt(0);
  if (first === 0x5f || first === 0x2d || first === 0x2b) return "must not start with '_', '-', or '+'";
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes > MAX_INDEX_NAME_BYTES) return `index name is too long, (${bytes} > ${MAX_INDEX_NAME_BYTES})`;
  if (name === '.' || name === '..') return "must not be '.' or '..'";
  if (name.toLowerCase() !== name) return 'must be lowercase';
  return undefined;
}

/** The Elasticsearch reason for an invalid name: `Invalid index name [<name>], <problem>`. */
export function invalidIndexNameReason(name: string, problem: string): string {
  return `Invalid index name [${name}], ${problem}`;
}

/**
 * Checks an index name (from a URL or a body).
 *
 * @param path what to name in the error, e.g. `index` or `items[3]._index`.
 * @returns `name`, when it is a valid index name.
 * @throws InvalidArgumentError naming `path` whose expectation holds Elasticsearch's reason
 *   (`Invalid index name [Foo], must be lowercase`), for a name that is not a string or breaks a rule.
 */
export function assertIndexName(name: unknown, path = 'index'): string {
  if (typeof name !== 'string') {
    throw new InvalidArgumentError(path, 'must be a string (an index name)', name);
  }
  const problem = indexNameProblem(name);
  if (problem !== undefined) {
    throw new InvalidArgumentError(
      path,
      `is not a valid index name: ${invalidIndexNameReason(name, problem)}`,
      name,
    );
  }
  return name;
}
