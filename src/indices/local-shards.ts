/**
 * The writable shard copies one node holds, on its main thread: each copy's `ShardCopy` (log + live
 * documents), its slot on the refresh board, the per-index refresh schedule, and `?refresh=wait_for`
 * listeners.
 *
 * Refresh (Elasticsearch `index.refresh_interval`, default 1 s): publishing a copy's log size on the
 * board makes every operation written so far visible to searches; each pool worker applies them at the
 * start of its next task (`engine/writable-shards.ts`). A scheduled refresh runs every interval for each
 * index that has one (`-1`: never; `0`: after every write); `refresh()` runs one now (`?refresh=true`,
 * `POST /{index}/_refresh`). At open, everything recovered from the logs is published at once.
 *
 * Files: `<dir>/<index uuid>/<shard>/translog.qslog` per copy.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { RuntimeLogger } from '../runtime-logger.js';
import { InvalidArgumentError } from '../errors.js';
import { type BoardCatalogEntry, IndexBoard, MAX_BOARD_SLOTS } from './index-board.js';
import type { IndexMetadata } from './index-metadata-store.js';
import { ShardCopy } from './shard-copy.js';
import type { ShardLogDurability } from './shard-log.js';

/** Options of `LocalShards`. */
export interface LocalShardsOptions {
  /** Directory of the shard logs (`<dataDir>/indices`). */
  readonly dir: string;
  /** This node's id: it holds the copies whose layout names it. */
  readonly nodeId: string;
  /**
   * Hold every shard as a primary whatever the layout says (a single node: its default id changes with
   * its pid, and it is the only node anyway). @default false
   */
  readonly holdsEveryShard?: boolean;
  /** Shard-log durability: `request` fsyncs before a write is acknowledged (default); `async` every `syncIntervalMs`. */
  readonly durability: ShardLogDurability;
  /** fsync period of `async` durability, ms. */
  readonly syncIntervalMs: number;
  readonly log: RuntimeLogger;
}

/** A copy this node holds. */
export interface LocalCopy {
  /** The index's metadata (replaced when its settings change). */
  meta: IndexMetadata;
  readonly shard: number;
  /** Changes when the shard table promotes this copy (or demotes it: it is then reset). */
  primary: boolean;
  /** Replaced when the copy is reset (emptied to recover from its primary anew). */
  copy: ShardCopy;
  slot: number;
  /** The shard's primary term this copy follows (1 without tracked terms). */
  term: number;
  /** The log offset published on the board (what searches see). */
  published: number;
  /**
   * `INITIALIZING`: a replica reopened at a data node's start that has not yet caught up with its
   * primary (peer recovery); it refuses searches until then. `STARTED` otherwise.
   */
  state: 'STARTED' | 'INITIALIZING';
}

interface IndexEntry {
  meta: IndexMetadata;
  readonly copies: LocalCopy[];
  timer: NodeJS.Timeout | undefined;
}

interface RefreshWaiter {
  readonly target: number;
  readonly resolve: () => void;
}

/** The copies of one node (see module doc). */
export class LocalShards {
  readonly board = new IndexBoard();
  readonly #options: LocalShardsOptions;
  readonly #indices = new Map<string, IndexEntry>();
  readonly #waiters = new Map<LocalCopy, RefreshWaiter[]>();
  readonly #freeSlots: number[] = [];
  #nextSlot = 0;
  #closed = false;

  constructor(options: LocalShardsOptions) {
    this.#options = options;
    this.board.writeCatalog([]);
  }

  /** The log file of a copy. */
  logPath(meta: IndexMetadata, shard: number): string {
    return path.join(this.#options.dir, meta.uuid, String(shard), 'translog.qslog');
  }

  /**
   * Opens this node's copies of an index (creating their logs, or replaying them), publishes what they
   * hold and starts the index's refresh schedule. A no-op for an index already open with that uuid.
   * `replicasInitializing`: replicas start `INITIALIZING` (reopened after a restart: they may lack
   * operations their primary acknowledged while this node was down).
   * @throws the errors of `ShardCopy.open`; InvalidArgumentError when the board has no free slot.
   */
  async addIndex(
    meta: IndexMetadata,
    options: {
      readonly replicasInitializing?: boolean;
      /** Replicas to empty before opening (their logs may diverge from the primary's), by shard. */
      readonly resetReplica?: (shard: number) => boolean;
      /** Replicas that may serve at once (they hold every acknowledged write), by shard. */
      readonly replicaStarted?: (shard: number) => boolean;
    } = {},
  ): Promise<void> {
    const existing = this.#indices.get(meta.name);
    if (existing !== undefined && existing.meta.uuid === meta.uuid) return;
    if (existing !== undefined) await this.removeIndex(meta.name, false);
    const copies: LocalCopy[] = [];
    try {
      for (let shard = 0; shard < meta.layout.length; shard++) {
        const placement = meta.layout[shard]!;
        const primary = this.#options.holdsEveryShard === true || placement.primary === this.#options.nodeId;
        if (!primary && !placement.replicas.includes(this.#options.nodeId)) continue;
        if (!primary && options.resetReplica?.(shard) === true) {
          await rm(this.logPath(meta, shard), { force: true });
          this.#options.log.info(
            { index: meta.name, shard },
            'replica emptied: it recovers from its primary anew',
          );
        }
        const opened = await ShardCopy.open({
          index: meta.name,
          shard,
          logPath: this.logPath(meta, shard),
          durability: this.#options.durability,
          syncIntervalMs: this.#options.syncIntervalMs,
        });
        if (opened.replayed > 0 || opened.truncatedBytes > 0) {
          this.#options.log.info(
            {
              index: meta.name,
              shard,
              replayed: opened.replayed,
              docs: opened.copy.docCount,
              truncatedBytes: opened.truncatedBytes,
            },
            'shard copy recovered from its log',
          );
        }
        const slot = this.#allocateSlot();
        const local: LocalCopy = {
          meta,
          shard,
          primary,
          copy: opened.copy,
          slot,
          published: 0,
          state:
            !primary && options.replicasInitializing === true && options.replicaStarted?.(shard) !== true
              ? 'INITIALIZING'
              : 'STARTED',
          term: placement.primaryTerm ?? 1,
        };
        copies.push(local);
        local.published = opened.copy.log.sizeBytes;
        this.board.publish(slot, local.published);
      }
    } catch (error) {
      for (const c of copies) {
        await c.copy.close().catch(() => undefined);
        this.#freeSlot(c.slot);
      }
      throw error;
    }
    const entry: IndexEntry = { meta, copies, timer: undefined };
    this.#indices.set(meta.name, entry);
    this.#writeCatalog();
    this.board.bumpRefreshes();
    this.#schedule(entry);
  }

  /**
   * Closes and forgets an index's copies; with `deleteFiles`, removes their logs too.
   * Pending `wait_for` listeners resolve.
   */
  async removeIndex(name: string, deleteFiles: boolean): Promise<void> {
    const entry = this.#indices.get(name);
    if (entry === undefined) return;
    this.#indices.delete(name);
    if (entry.timer !== undefined) clearInterval(entry.timer);
    this.#writeCatalog();
    for (const c of entry.copies) {
      for (const w of this.#waiters.get(c) ?? []) w.resolve();
      this.#waiters.delete(c);
      await c.copy.close().catch(() => undefined);
      this.board.publish(c.slot, 0);
      this.#freeSlot(c.slot);
    }
    if (deleteFiles)
      await rm(path.join(this.#options.dir, entry.meta.uuid), { recursive: true, force: true });
  }

  /** Takes new settings of an open index (a changed refresh interval is rescheduled). */
  updateIndex(meta: IndexMetadata): void {
    const entry = this.#indices.get(meta.name);
    if (entry === undefined || entry.meta.uuid !== meta.uuid) return;
    const before = entry.meta.settings.refreshIntervalMs;
    entry.meta = meta;
    for (const c of entry.copies) c.meta = meta;
    if (before !== meta.settings.refreshIntervalMs) this.#schedule(entry);
  }

  /**
   * Takes a new shard table of an open index (cluster state in etcd): a promoted replica becomes the
   * primary; a copy demoted to replica, or a replica whose shard got a new primary term, is reset (it
   * may hold operations the new primary never had) and recovers from the primary anew
   * (`INITIALIZING`); a replica listed in sync starts serving. Copies added to or removed from this
   * node by the table are not handled (the cluster does not move shards).
   * @returns what changed, for the log.
   */
  async applyLayout(meta: IndexMetadata): Promise<string[]> {
    const entry = this.#indices.get(meta.name);
    if (entry === undefined || entry.meta.uuid !== meta.uuid) return [];
    this.updateIndex(meta);
    const me = this.#options.nodeId;
    const changes: string[] = [];
    for (const c of entry.copies) {
      const p = meta.layout[c.shard];
      if (p === undefined) continue;
      const term = p.primaryTerm ?? 1;
      if (p.primary === me) {
        if (!c.primary) {
          c.primary = true;
          c.state = 'STARTED';
          changes.push(`[${meta.name}][${c.shard}] promoted to primary (term ${term})`);
        }
        c.term = term;
        continue;
      }
      if (!p.replicas.includes(me)) continue;
      if (c.primary || term > c.term) {
        await this.resetCopy(c);
        changes.push(
          `[${meta.name}][${c.shard}] ${c.primary ? 'demoted' : 'follows term ' + term}: reset to recover from [${p.primary}]`,
        );
        c.primary = false;
        c.state = 'INITIALIZING';
        c.term = term;
        continue;
      }
      const inSync = p.inSync === undefined || p.inSync.includes(me);
      if (inSync && c.state === 'INITIALIZING') {
        c.state = 'STARTED';
        changes.push(`[${meta.name}][${c.shard}] replica in sync: serving`);
      }
    }
    return changes;
  }

  /**
   * Empties a copy: closes its log, deletes it and opens an empty one on a new board slot (so that
   * workers drop what they had applied). Pending `wait_for` listeners resolve.
   */
  async resetCopy(c: LocalCopy): Promise<void> {
    const entry = this.#indices.get(c.meta.name);
    await c.copy.close().catch(() => undefined);
    for (const w of this.#waiters.get(c) ?? []) w.resolve();
    this.#waiters.delete(c);
    const path = this.logPath(c.meta, c.shard);
    await rm(path, { force: true });
    const opened = await ShardCopy.open({
      index: c.meta.name,
      shard: c.shard,
      logPath: path,
      durability: this.#options.durability,
      syncIntervalMs: this.#options.syncIntervalMs,
    });
    // A new slot before the old one is freed: a worker must not mistake the new copy for the old.
    const slot = this.#allocateSlot();
    const old = c.slot;
    c.copy = opened.copy;
    c.slot = slot;
    c.published = opened.copy.log.sizeBytes;
    this.board.publish(slot, c.published);
    this.board.publish(old, 0);
    this.#freeSlot(old);
    if (entry !== undefined) this.#writeCatalog();
    this.board.bumpRefreshes();
  }

  /** This node's copy of a shard, or undefined. */
  copy(index: string, shard: number): LocalCopy | undefined {
    return this.#indices.get(index)?.copies.find((c) => c.shard === shard);
  }

  /** This node's copies of an index (shard order). */
  copiesOf(index: string): readonly LocalCopy[] {
    return this.#indices.get(index)?.copies ?? [];
  }

  /** Every copy, index by index. */
  all(): LocalCopy[] {
    return [...this.#indices.values()].flatMap((e) => e.copies);
  }

  /**
   * Refreshes the copies of the named indices (all when `names` is omitted): publishes their written
   * log bytes. @returns how many copies had something new.
   */
  refresh(names?: readonly string[]): number {
    let moved = 0;
    for (const name of names ?? [...this.#indices.keys()]) {
      const entry = this.#indices.get(name);
      if (entry === undefined) continue;
      for (const c of entry.copies) if (this.#publish(c)) moved++;
    }
    if (moved > 0) this.board.bumpRefreshes();
    return moved;
  }

  /** Refreshes one copy now. */
  refreshCopy(c: LocalCopy): void {
    if (this.#publish(c)) this.board.bumpRefreshes();
  }

  /**
   * `?refresh=wait_for`: resolves once a refresh has published the copy's log up to `targetOffset`
   * (at the next scheduled refresh; at once when it already has; a refresh is forced when the index
   * has no schedule, as Elasticsearch forces one when its refresh listeners run out).
   */
  waitForRefresh(c: LocalCopy, targetOffset: number): Promise<void> {
    if (c.published >= targetOffset || this.#closed) return Promise.resolve();
    if (c.meta.settings.refreshIntervalMs <= 0) {
      this.refreshCopy(c);
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const list = this.#waiters.get(c);
      const waiter = { target: targetOffset, resolve };
      if (list === undefined) this.#waiters.set(c, [waiter]);
      else list.push(waiter);
    });
  }

  /** After a write to `c`: an index refreshed after every write (`refresh_interval: 0`) refreshes now. */
  afterWrite(c: LocalCopy): void {
    if (c.meta.settings.refreshIntervalMs === 0) this.refreshCopy(c);
  }

  /** Stops the schedules and closes every copy (pending appends are flushed and fsynced). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const entry of this.#indices.values()) if (entry.timer !== undefined) clearInterval(entry.timer);
    for (const list of this.#waiters.values()) for (const w of list) w.resolve();
    this.#waiters.clear();
    await Promise.all(this.all().map((c) => c.copy.close().catch(() => undefined)));
  }

  #publish(c: LocalCopy): boolean {
    const size = c.copy.log.sizeBytes;
    if (size <= c.published) return false;
    c.published = size;
    this.board.publish(c.slot, size);
    const list = this.#waiters.get(c);
    if (list !== undefined) {
      const still = list.filter((w) => {
        if (w.target > size) return true;
        w.resolve();
        return false;
      });
      if (still.length === 0) this.#waiters.delete(c);
      else this.#waiters.set(c, still);
    }
    return true;
  }

  #schedule(entry: IndexEntry): void {
    if (entry.timer !== undefined) clearInterval(entry.timer);
    entry.timer = undefined;
    const ms = entry.meta.settings.refreshIntervalMs;
    if (ms <= 0 || this.#closed) return;
    entry.timer = setInterval(() => this.refresh([entry.meta.name]), Math.max(1, ms));
    entry.timer.unref();
  }

  #allocateSlot(): number {
    const slot = this.#freeSlots.pop() ?? this.#nextSlot++;
    if (slot >= MAX_BOARD_SLOTS) {
      this.#nextSlot = MAX_BOARD_SLOTS;
      throw new InvalidArgumentError(
        'settings.index.number_of_shards',
        `must keep this node's shard copies at most ${MAX_BOARD_SLOTS}`,
        slot + 1,
      );
    }
    return slot;
  }

  #freeSlot(slot: number): void {
    this.#freeSlots.push(slot);
  }

  #writeCatalog(): void {
    const entries: BoardCatalogEntry[] = [];
    for (const entry of this.#indices.values()) {
      for (const c of entry.copies) {
        entries.push({
          slot: c.slot,
          index: entry.meta.name,
          uuid: entry.meta.uuid,
          shard: c.shard,
          numberOfShards: entry.meta.settings.numberOfShards,
          logPath: this.logPath(entry.meta, c.shard),
        });
      }
    }
    this.board.writeCatalog(entries);
  }
}
