/**
 * The MiniSearch index definition shared by building (main thread) and loading (workers): the same
 * options must be used for both, so they live in one place.
 */

import MiniSearch, { type Options } from 'minisearch';
import { shardOf } from './shard-of.js';
import type { MailDocument } from './spam-assassin-corpus.js';

/** The searchable fields. */
export const SEARCH_FIELDS = ['subject', 'from', 'body'] as const;
export type SearchField = (typeof SEARCH_FIELDS)[number];

/** The stored fields returned as `_source`. */
export const STORED_FIELDS = ['subject', 'from', 'date'] as const;

/** Terms longer than this (base64 runs, URLs with tracking tokens) are not indexed nor searched. */
export const MAX_TERM_LENGTH = 40;

/** What a search hit carries from the index: the id, the score and the stored fields. */
export interface StoredMail {
  readonly subject: string;
  readonly from: string;
  readonly date: number | null;
}

const NON_WORD = /[^\p{L}\p{N}]+/u;

/**
 * Split text into terms at every run of characters that are not letters or digits (so `<money>`,
 * `a@b.com` and URLs split into words, as OpenSearch's standard analyzer mostly does).
 */
export function tokenizeMail(text: string): string[] {
  return text.split(NON_WORD).filter((term) => term.length > 0);
}

/** MiniSearch options for every shard (fields, stored fields, tokenizer, term processing). */
export const MAIL_INDEX_OPTIONS: Options<MailDocument> = {
  idField: 'id',
  fields: [...SEARCH_FIELDS],
  storeFields: [...STORED_FIELDS],
  tokenize: tokenizeMail,
  processTerm: (term) => (term.length > MAX_TERM_LENGTH ? null : term.toLowerCase()),
};

/**
 * Build the shards of one index.
 *
 * @param docs the index's documents (ids unique within the index).
 * @param shards the number of shards, 1..1024; a document goes to `shardOf(id, shards)` (the
 *   Elasticsearch routing of its `_id`).
 * @returns one MiniSearch per shard, in shard order (a shard may be empty).
 */
export function buildShards(docs: readonly MailDocument[], shards: number): MiniSearch<MailDocument>[] {
  const result = Array.from({ length: shards }, () => new MiniSearch<MailDocument>(MAIL_INDEX_OPTIONS));
  for (const doc of docs) result[shardOf(doc.id, shards)]!.add(doc);
  return result;
}
