/**
 * Where the query-priority configuration lives between restarts. The runtime reads it once at start
 * (a stored document wins over `options.queryPriority`, which only seeds an empty store) and saves
 * every accepted change before applying it.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { writeFileAtomically } from '../durable-file.js';

export interface QueryPriorityStore {
  /** Where it is kept, for logs; undefined in memory. */
  readonly location?: string;
  /** The stored document, or undefined when none was saved yet. */
  load(): Promise<unknown>;
  /** Replaces the stored document (already validated). Atomic: on failure the old one stays. */
  save(document: unknown): Promise<void>;
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
      throw new Error(`query-priority store ${this.location} is not valid JSON: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }

  save(document: unknown): Promise<void> {
    return writeFileAtomically(this.location, `${JSON.stringify(document, null, 2)}\n`);
  }
}
