/**
 * Where the query-priority configuration lives between restarts. The runtime reads it once at start
 * (a stored document wins over `options.queryPriority`, which only seeds an empty store) and saves
 * every accepted change before applying it.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { writeFileAtomically } from '../common/durable-file.js';
import { InvalidArgumentError } from '../errors.js';
import { DEFAULT_QUERY_PRIORITY, parseQueryPriority, type QueryPriorityConfig } from './query-priority.js';
import { checkReservations, type ReservationLane } from './worker-reservations.js';

export interface QueryPriorityStore {
  /** Where it is kept, for logs; undefined in memory. */
  readonly location?: string;
  /** The stored document, or undefined when none was saved yet. */
  load(): Promise<unknown>;
  /** Replaces the stored document (already validated). Atomic: on failure the old one stays. */
  save(document: unknown): Promise<void>;
  /**
   * Optional, for a store shared by several nodes (etcd): calls `listener` with each document another
   * node saved, oldest first; the runtime applies it as if it had been set here (without saving it
   * again). @returns a function that unsubscribes.
   */
  watch?(listener: (document: unknown) => void): () => void;
}

/** Keeps the document in memory (the default when embedding: lost at exit). */
export class MemoryQueryPriorityStore implements QueryPriorityStore {
  #document: unknown;

  async load(): Promise<unknown> {
    return this.#document === undefined ? undefined : structuredClone(this.#document);
  }

  async save(document: unknown): Promise<void> {
    this.#document = structuredClone(document);
  }
}

/** One JSON file (pretty-printed, mode 0o600), replaced atomically on every save. */
export class FileQueryPriorityStore implements QueryPriorityStore {
  readonly location: string;

  constructor(filePath: string) {
    this.location = resolve(filePath);
  }

  /** @throws Error naming the file when it cannot be read or is not JSON (with JSON.parse's message). */
  async load(): Promise<unknown> {
    let text: string;
    try {
      text = await readFile(this.location, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new Error(
        `query-priority store ${this.location} is not valid JSON: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
  }

  save(document: unknown): Promise<void> {
    return writeFileAtomically(this.location, `${JSON.stringify(document, null, 2)}\n`);
  }
}

/** Where the configuration in force at start came from. */
export type QueryPrioritySource = 'store' | 'seed' | 'default';

/**
 * The configuration to start with: the stored one if the store holds one; else `seed` (the
 * `queryPriority` option or `--query-priority` file), which is then saved so that it seeds the store
 * once; else the defaults (not saved). A stored document whose reservations take the whole pool of
 * the lanes (saved with a larger pool) does not stop the start: the scheduler suspends them and
 * says so in its stats; `warning` tells the caller to log it.
 *
 * @throws InvalidArgumentError naming the store's location when it cannot be read, is not JSON, or
 *   holds an invalid document (with the field and the received value).
 */
export async function openQueryPriority(
  store: QueryPriorityStore,
  seed: QueryPriorityConfig | undefined,
  lanes: number | readonly ReservationLane[],
): Promise<{ config: QueryPriorityConfig; source: QueryPrioritySource; warning: string | undefined }> {
  const where = store.location ?? 'the query-priority store';
  let stored: unknown;
  try {
    stored = await store.load();
  } catch (error) {
    throw new InvalidArgumentError(where, `could not be loaded (${(error as Error).message})`, where);
  }
  if (stored === undefined) {
    if (seed === undefined) return { config: DEFAULT_QUERY_PRIORITY, source: 'default', warning: undefined };
    await store.save(seed.document);
    return { config: seed, source: 'seed', warning: undefined };
  }
  let config: QueryPriorityConfig;
  try {
    config = parseQueryPriority(stored);
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    throw new InvalidArgumentError(error.path, `${error.expectation} (in ${where})`, error.received);
  }
  let warning: string | undefined;
  try {
    checkReservations(config, lanes);
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    warning = `reservations in ${where} are suspended: ${error.message}`;
  }
  return { config, source: 'store', warning };
}
