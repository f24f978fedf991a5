/**
 * The on-disk cache of built shards: `<cacheDir>/minisearch-v<format>-<key>/` holding one file per
 * shard (`<index>.<shard>.json`, see shard-codec.ts) and a `manifest.json` written last. The key is a
 * hash of everything the shards depend on (engine options that change content, corpus version,
 * codec and format versions), so a stale cache is never used. Every file is written atomically
 * (temp file, fsync, rename), so concurrent builders are safe and a crash leaves no partial cache.
 */

import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type MiniSearch from 'minisearch';
import { writeFileAtomicallySync } from '../common/durable-file.js';
import type { MinisearchEngineOptions } from './engine-options.js';
import { buildShards, MAIL_INDEX_OPTIONS } from './mail-index.js';
import { decodeShard, encodeShard, SHARD_CODEC_VERSION } from './shard-codec.js';
import { corpusVersion, type MailDocument, readCorpus } from './spam-assassin-corpus.js';

/**
 * Version of what goes into an index (mail parsing, term processing, shard hash, layout). Bump it
 * whenever any of them changes.
 */
export const INDEX_FORMAT_VERSION = 2; // 2: shards by the Elasticsearch routing hash (1: FNV-1a)

/** `manifest.json`: what the cache holds. */
export interface CacheManifest {
  readonly formatVersion: number;
  readonly key: string;
  readonly shardsPerIndex: number;
  /** Index name to its document count. */
  readonly indices: Readonly<Record<string, number>>;
  /** Build time of the whole cache, ms. */
  readonly buildMs: number;
}

/**
 * Indices loaded in memory: per index, one entry per shard number (`shardsPerIndex` entries, in shard
 * order), the shard's MiniSearch, or `undefined` for a shard this node does not hold.
 */
export type LoadedIndices = ReadonlyMap<string, readonly (MiniSearch<MailDocument> | undefined)[]>;

let minisearchVersionText: string | undefined;

/** The installed MiniSearch version (from its package.json). */
function minisearchVersion(): string {
  if (minisearchVersionText === undefined) minisearchVersionText = readMinisearchVersion();
  return minisearchVersionText;
}

function readMinisearchVersion(): string {
  // package.json is not in MiniSearch's exports: walk up from its entry point.
  let dir = dirname(createRequire(import.meta.url).resolve('minisearch'));
  for (let i = 0; i < 6; i++, dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'minisearch' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // no package.json at this level
    }
  }
  return 'unknown';
}

/** The cache key for these options: 16 hex characters. Costs about a millisecond (reads the corpus file list). */
export function indexCacheKey(options: MinisearchEngineOptions): string {
  const material = JSON.stringify({
    format: INDEX_FORMAT_VERSION,
    codec: SHARD_CODEC_VERSION,
    corpus: corpusVersion(),
    // The codec stores MiniSearch's internal tree: a cache is valid only for the version that wrote it.
    minisearch: minisearchVersion(),
    shards: options.shardsPerIndex,
    max: Number.isFinite(options.maxDocumentsPerIndex) ? options.maxDocumentsPerIndex : null,
    indices: options.indices,
  });
  return createHash('sha256').update(material).digest('hex').slice(0, 16);
}

/** The cache directory for these options under `cacheDir`. */
export function indexCacheDir(cacheDir: string, options: MinisearchEngineOptions): string {
  return join(cacheDir, `minisearch-v${INDEX_FORMAT_VERSION}-${indexCacheKey(options)}`);
}

/** The manifest of a complete cache, or undefined when there is none (or it is unreadable). */
export function readManifest(dir: string): CacheManifest | undefined {
  try {
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as CacheManifest;
    return manifest.formatVersion === INDEX_FORMAT_VERSION ? manifest : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Make sure the cache for `options` exists under `cacheDir`: reuse it when its manifest is there,
 * otherwise read the corpus, build every shard and write it.
 *
 * @returns the cache directory, its manifest and whether it was built now.
 * @throws Error when the corpus cannot be read or the directory cannot be written.
 */
export function ensureIndexCache(
  cacheDir: string,
  options: MinisearchEngineOptions,
  log: (message: string) => void = () => {},
): { dir: string; manifest: CacheManifest; built: boolean } {
  const dir = indexCacheDir(cacheDir, options);
  const existing = readManifest(dir);
  if (existing) {
    log(`minisearch engine: reusing index cache ${dir}`);
    return { dir, manifest: existing, built: false };
  }
  const started = performance.now();
  mkdirSync(dir, { recursive: true });
  const corpus = readCorpus(options.indices, options.maxDocumentsPerIndex);
  const counts: Record<string, number> = {};
  for (const [name, docs] of corpus) {
    const shards = buildShards(docs, options.shardsPerIndex);
    for (const [i, shard] of shards.entries())
      writeFileAtomicallySync(join(dir, `${name}.${i}.json`), encodeShard(shard), 0o644);
    counts[name] = docs.length;
    corpus.delete(name);
  }
  const manifest: CacheManifest = {
    formatVersion: INDEX_FORMAT_VERSION,
    key: indexCacheKey(options),
    shardsPerIndex: options.shardsPerIndex,
    indices: counts,
    buildMs: Math.round(performance.now() - started),
  };
  writeFileAtomicallySync(join(dir, 'manifest.json'), JSON.stringify(manifest), 0o644);
  log(`minisearch engine: built index cache ${dir} in ${manifest.buildMs} ms`);
  return { dir, manifest, built: true };
}

/**
 * Load the shards of a cache written by `ensureIndexCache`: every shard, or only the held ones.
 *
 * @param heldShards index name to the shard numbers to load; `undefined` loads every shard. An index
 *   of the cache absent from it loads none (it is still listed, with only `undefined` entries).
 * @returns index name to its shards (see `LoadedIndices`).
 * @throws Error when a shard file is missing or unreadable.
 */
export function loadIndexCache(
  dir: string,
  manifest: CacheManifest,
  heldShards?: Readonly<Record<string, readonly number[]>>,
): LoadedIndices {
  const loaded = new Map<string, (MiniSearch<MailDocument> | undefined)[]>();
  for (const name of Object.keys(manifest.indices)) {
    const held = heldShards === undefined ? undefined : (heldShards[name] ?? []);
    const shards: (MiniSearch<MailDocument> | undefined)[] = [];
    for (let i = 0; i < manifest.shardsPerIndex; i++) {
      shards.push(
        held === undefined || held.includes(i)
          ? decodeShard(readFileSync(join(dir, `${name}.${i}.json`), 'utf8'), MAIL_INDEX_OPTIONS)
          : undefined,
      );
    }
    loaded.set(name, shards);
  }
  return loaded;
}
