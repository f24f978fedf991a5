import { readdir, readFile, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { writeFileAtomically } from '../common/durable-file.js';
import { isPlainObject } from '../common/is-plain-object.js';
import type { SandboxStore, StoredSandboxes } from './sandbox-store.js';

/**
 * The in-process mutex: per absolute file path, a promise that settles when the last operation queued
 * on that file has finished. Shared by all instances, so two stores on one path cannot interleave.
 */
const queues = new Map<string, Promise<void>>();

/**
 * A {@link SandboxStore} in one JSON file: `{ "version": n, "sandboxes": [...] }`, pretty-printed
 * (2-space indent) with a trailing newline, mode 0o600.
 *
 * Writes are atomic: the new set goes to `<file>.tmp-<pid>-<random>`, is fsynced, renamed over the
 * file, and the directory is fsynced; a crash at any moment leaves the old set or the new one, whole.
 * A crash can leave a temp file behind; {@link load} removes those.
 *
 * Compare-and-swap is exact within one process: a promise-chain mutex, shared by every instance on
 * the same absolute path, runs {@link compareAndSet} and {@link load} calls strictly one after
 * another, and each re-reads the version from the file rather than from memory. (Two different paths
 * to one file, e.g. through a symlink, get separate mutexes.) Across processes it is only as safe as that
 * read-then-rename: two processes writing the same file at the same moment could both pass the check,
 * and one process's {@link load} could remove another's in-flight temp file (that write then fails).
 * A lock file or a distributed store such as etcd is the fix; that is out of scope here.
 */
export class FileSandboxStore implements SandboxStore {
  readonly #path: string;

  /**
   * @param filePath The store file (resolved against the working directory now); its directory is
   *   created on the first write if missing.
   */
  constructor(filePath: string) {
    this.#path = resolve(filePath);
  }

  /** The store file's absolute path. */
  get location(): string {
    return this.#path;
  }

  /**
   * The stored set, or undefined when the file does not exist. First removes temp files a crashed
   * write left behind (`<file>.tmp-*` in the file's directory; nothing else).
   * @throws Error naming the file when it cannot be read, is not JSON (with JSON.parse's message), or
   *   is not `{ version: safe integer >= 1, sandboxes: array }`.
   */
  load(): Promise<StoredSandboxes | undefined> {
    return this.#exclusive(async () => {
      await this.#removeStaleTempFiles();
      return this.#read();
    });
  }

  /**
   * Writes `next` atomically if the file's version is still `expectedVersion` (0: no file).
   * @param expectedVersion Safe integer >= 0.
   * @param next The new set; `next.version` must be `expectedVersion + 1`.
   * @returns true when written; false when the file holds another version.
   * @throws RangeError when the versions do not fit; TypeError when `next.sandboxes` is not an array;
   *   Error when the current file is unreadable or corrupt (it is never overwritten then), or when the
   *   write fails (the file then still holds the old set, unless only the final directory fsync failed).
   */
  async compareAndSet(expectedVersion: number, next: StoredSandboxes): Promise<boolean> {
    if (!Number.isSafeInteger(expectedVersion) || expectedVersion < 0) {
      throw new RangeError(`expectedVersion must be an integer >= 0; received ${expectedVersion}`);
    }
    if (next.version !== expectedVersion + 1) {
      throw new RangeError(
        `next.version must be expectedVersion + 1 = ${expectedVersion + 1}; received ${next.version}`,
      );
    }
    if (!Array.isArray(next.sandboxes)) throw new TypeError('next.sandboxes must be an array');
    const text = `${JSON.stringify({ version: next.version, sandboxes: next.sandboxes }, null, 2)}\n`;
    return this.#exclusive(async () => {
      const current = await this.#read();
      if ((current?.version ?? 0) !== expectedVersion) return false;
      await this.#writeAtomically(text);
      return true;
    });
  }

  /**
   * Runs `task` after every operation queued before it on the same file (by any instance in this
   * process) has settled; a failure does not block later ones.
   */
  #exclusive<T>(task: () => Promise<T>): Promise<T> {
    const result = (queues.get(this.#path) ?? Promise.resolve()).then(task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    queues.set(this.#path, tail);
    void tail.then(() => {
      if (queues.get(this.#path) === tail) queues.delete(this.#path);
    });
    return result;
  }

  async #read(): Promise<StoredSandboxes | undefined> {
    let text: string;
    try {
      text = await readFile(this.#path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(`cannot read sandbox store ${this.#path}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new Error(`sandbox store ${this.#path} is not valid JSON: ${(error as Error).message}`, {
        cause: error,
      });
    }
    if (!isPlainObject(parsed)) {
      throw new Error(`sandbox store ${this.#path} must hold an object { version, sandboxes }`);
    }
    const { version, sandboxes } = parsed;
    if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1) {
      throw new Error(
        `sandbox store ${this.#path}: "version" must be an integer >= 1; found ${JSON.stringify(version)}`,
      );
    }
    if (!Array.isArray(sandboxes)) {
      throw new Error(`sandbox store ${this.#path}: "sandboxes" must be an array`);
    }
    return { version, sandboxes };
  }

  #writeAtomically(text: string): Promise<void> {
    return writeFileAtomically(this.#path, text);
  }

  async #removeStaleTempFiles(): Promise<void> {
    const directory = dirname(this.#path);
    const prefix = `${basename(this.#path)}.tmp-`;
    let names: string[];
    try {
      names = await readdir(directory);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    for (const name of names) {
      if (!name.startsWith(prefix)) continue;
      await unlink(join(directory, name)).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
    }
  }
}
