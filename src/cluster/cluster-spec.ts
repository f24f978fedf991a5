/**
 * The cluster file that the nodes of a loopback cluster share (`--cluster FILE`), and the
 * `--data-nodes host:port,...` list. JSON:
 *
 * ```json
 * { "shards_per_index": 3, "replicas": 1,
 *   "data_nodes": [ { "id": "data-1", "url": "http://127.0.0.1:9201" }, ... ] }
 * ```
 *
 * - `shards_per_index`: integer 1..64 (the engine's range), default 3.
 * - `replicas`: integer 0..16, default 1; more than `data_nodes.length − 1` are left unassigned.
 * - `data_nodes`: 1..64 entries; `id` is 1..64 characters of `[A-Za-z0-9_.-]`, unique; `url` is
 *   `http://host:port` (no path), unique.
 *
 * A data node finds itself by `--node-id` and holds the copies `shard-layout.ts` assigns it; the
 * coordinator calls every listed node and checks that each answers with the listed id.
 */
import { readFile } from 'node:fs/promises';
import { InvalidArgumentError } from '../errors.js';
import { describeJsonError } from '../common/json-error-position.js';
import { optionChecks } from '../common/option-checks.js';

/** One data node of the cluster file. */
export interface DataNodeAddress {
  /** The node's id; `undefined` when only its address is known (`--data-nodes`): learnt on discovery. */
  readonly id: string | undefined;
  /** `http://host:port`, no trailing slash. */
  readonly url: string;
}

/** A checked cluster file (frozen). */
export interface ClusterSpec {
  readonly shardsPerIndex: number;
  readonly replicas: number;
  readonly dataNodes: readonly (DataNodeAddress & { readonly id: string })[];
}

const NODE_ID = /^[A-Za-z0-9_.-]{1,64}$/;
const KEYS = ['shards_per_index', 'replicas', 'data_nodes'];

/** `http://host:port` from a URL or `host:port`. @throws InvalidArgumentError naming `path`. */
export function normalizeNodeUrl(text: unknown, path: string): string {
  if (typeof text !== 'string' || text.length === 0) {
    throw new InvalidArgumentError(path, 'must be http://host:port or host:port', text);
  }
  let url: URL;
  try {
    url = new URL(text.includes('://') ? text : `http://${text}`);
  } catch {
    throw new InvalidArgumentError(path, 'must be http://host:port or host:port', text);
  }
  if (url.protocol !== 'http:' || url.port === '' || (url.pathname !== '/' && url.pathname !== '')) {
    throw new InvalidArgumentError(
      path,
      'must be http://host:port or host:port (with a port, no path)',
      text,
    );
  }
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new InvalidArgumentError(
      path,
      'must be http://host:port or host:port (with a port, no path)',
      text,
    );
  }
  return `http://${url.host}`;
}

function integerField(
  doc: Record<string, unknown>,
  key: string,
  min: number,
  max: number,
  fallback: number,
  where: string,
): number {
  return optionChecks.integerIn(`${where}.${key}`, doc[key], min, max, fallback);
}

/**
 * Checks a parsed cluster file.
 * @param where the path messages start with. @default 'cluster'
 * @throws InvalidArgumentError naming the field and the value (`cluster.data_nodes[1].url must be ...`).
 */
export function parseClusterSpec(document: unknown, where = 'cluster'): ClusterSpec {
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    throw new InvalidArgumentError(where, 'must be a JSON object', document);
  }
  const doc = document as Record<string, unknown>;
  for (const key of Object.keys(doc)) {
    if (!KEYS.includes(key)) {
      throw new InvalidArgumentError(
        `${where}.${key}`,
        `is not a cluster setting (known: ${KEYS.join(', ')})`,
        doc[key],
      );
    }
  }
  const shardsPerIndex = integerField(doc, 'shards_per_index', 1, 64, 3, where);
  const replicas = integerField(doc, 'replicas', 0, 16, 1, where);
  const list = doc['data_nodes'];
  if (!Array.isArray(list) || list.length === 0 || list.length > 64) {
    throw new InvalidArgumentError(`${where}.data_nodes`, 'must be an array of 1..64 data nodes', list);
  }
  const ids = new Set<string>();
  const urls = new Set<string>();
  const dataNodes = list.map((entry: unknown, i) => {
    const path = `${where}.data_nodes[${i}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw new InvalidArgumentError(path, 'must be an object with id and url', entry);
    }
    const { id, url, ...rest } = entry as Record<string, unknown>;
    const extra = Object.keys(rest)[0];
    if (extra !== undefined) {
      throw new InvalidArgumentError(
        `${path}.${extra}`,
        'is not a data node field (known: id, url)',
        rest[extra],
      );
    }
    if (typeof id !== 'string' || !NODE_ID.test(id)) {
      throw new InvalidArgumentError(`${path}.id`, 'must be 1..64 characters of [A-Za-z0-9_.-]', id);
    }
    if (ids.has(id)) throw new InvalidArgumentError(`${path}.id`, 'must be unique', id);
    const normalized = normalizeNodeUrl(url, `${path}.url`);
    if (urls.has(normalized)) throw new InvalidArgumentError(`${path}.url`, 'must be unique', url);
    ids.add(id);
    urls.add(normalized);
    return Object.freeze({ id, url: normalized });
  });
  return Object.freeze({ shardsPerIndex, replicas, dataNodes: Object.freeze(dataNodes) });
}

/**
 * Reads and checks a cluster file.
 * @throws InvalidArgumentError naming `--cluster` (unreadable, not JSON with the position) or the
 *   field and value, with the file named.
 */
export async function readClusterFile(file: string): Promise<ClusterSpec> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new InvalidArgumentError(
      '--cluster',
      `cannot be read (${(error as NodeJS.ErrnoException).code})`,
      file,
    );
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new InvalidArgumentError(
      '--cluster',
      `is not valid JSON (${describeJsonError(error as Error, text)})`,
      file,
    );
  }
  try {
    return parseClusterSpec(document);
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    throw new InvalidArgumentError(error.path, `${error.expectation} (in ${file})`, error.received);
  }
}

/** The cluster file's JSON text for `spec` (what `readClusterFile` reads back). */
export function formatClusterSpec(spec: ClusterSpec): string {
  return `${JSON.stringify(
    {
      shards_per_index: spec.shardsPerIndex,
      replicas: spec.replicas,
      data_nodes: spec.dataNodes.map((n) => ({ id: n.id, url: n.url })),
    },
    null,
    2,
  )}\n`;
}

/**
 * `--data-nodes host:port,http://host:port,...`: addresses without ids (learnt on discovery).
 * @throws InvalidArgumentError naming `flag` and the bad entry.
 */
export function parseDataNodeList(text: string, flag = '--data-nodes'): DataNodeAddress[] {
  const parts = text.split(',').map((p) => p.trim());
  if (parts.length > 64) throw new InvalidArgumentError(flag, 'must list at most 64 data nodes', text);
  const urls = new Set<string>();
  return parts.map((part) => {
    const url = normalizeNodeUrl(part, flag);
    if (urls.has(url)) throw new InvalidArgumentError(flag, `must not repeat a data node (${url})`, text);
    urls.add(url);
    return { id: undefined, url };
  });
}
