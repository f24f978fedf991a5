/**
 * Where sandbox definitions live durably. The registry reads the whole set once at start and writes
 * every change with compare-and-swap on the set's version, so that concurrent changes (in this
 * process, or later on other nodes sharing a distributed store such as etcd) cannot both pass a check
 * and then both write: one wins, the other re-reads and re-checks.
 */

/** The stored set: a monotonically increasing version and the sandbox documents (file-entry shape). */
export interface StoredSandboxes {
  /** Integer >= 1; increases by one with every accepted change. */
  readonly version: number;
  /** Sandbox entries in the sandbox-file shape (see `parseSandboxDefinitions`), root entry included. */
  readonly sandboxes: readonly unknown[];
}

export interface SandboxStore {
  /** Where the store keeps the set, for messages (a file path, an etcd prefix). */
  readonly location?: string;
  /**
   * The stored set, or undefined when nothing was ever stored (first start: the caller seeds it).
   * @throws Error when what is stored cannot be read or parsed (never silently treated as empty).
   */
  load(): Promise<StoredSandboxes | undefined>;
  /**
   * Stores `next` if and only if the stored version is still `expectedVersion` (0: nothing stored
   * yet). `next.version` must be `expectedVersion + 1`. Atomic: after a crash at any moment the store
   * holds either the old or the new set, whole.
   * @returns true when stored, false when the stored version differs (someone else changed it).
   */
  compareAndSet(expectedVersion: number, next: StoredSandboxes): Promise<boolean>;
  /**
   * Optional, for a store shared by several nodes (etcd): calls `listener` with every set committed
   * by anyone (this node included), newest version last; the registry takes those newer than its own.
   * @returns a function that unsubscribes.
   */
  watch?(listener: (stored: StoredSandboxes) => void): () => void;
}

/** A store in memory only (the library default; nothing survives a restart). */
export class MemorySandboxStore implements SandboxStore {
  #stored: StoredSandboxes | undefined;

  async load(): Promise<StoredSandboxes | undefined> {
    return this.#stored;
  }

  async compareAndSet(expectedVersion: number, next: StoredSandboxes): Promise<boolean> {
    if ((this.#stored?.version ?? 0) !== expectedVersion) return false;
    this.#stored = structuredClone(next);
    return true;
  }
}
