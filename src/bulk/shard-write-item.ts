/**
 * A bulk item as one shard copy applies it, and what came of it: the shape the planner's items take
 * on their way to a primary (in this process or, as JSON, on a data node) and the result the primary
 * reports for each.
 */

/** One write for a shard copy, as the planner placed it. Plain JSON (it travels to data nodes). */
export interface ShardWriteItem {
  /** The item's place in the bulk request (its place in the response's `items`). */
  readonly position: number;
  readonly action: 'index' | 'create' | 'update' | 'delete';
  readonly id: string;
  /** The routing value stored with the document (`_routing`), if any. */
  readonly routing?: string | undefined;
  /** `index` / `create`: the document. */
  readonly source?: Readonly<Record<string, unknown>> | undefined;
  /** `update`: the partial document. */
  readonly doc?: Readonly<Record<string, unknown>> | undefined;
  /** `update`: the document to create when none exists. */
  readonly upsert?: Readonly<Record<string, unknown>> | undefined;
  /** `update`: create `doc` itself when none exists. @default false */
  readonly docAsUpsert?: boolean | undefined;
  /** `update`: skip writes that change nothing. @default true */
  readonly detectNoop?: boolean | undefined;
  /** Write only when the stored document has this sequence number (`if_seq_no`)... */
  readonly ifSeqNo?: number | undefined;
  /** ...and this primary term (`if_primary_term`; always 1 here). */
  readonly ifPrimaryTerm?: number | undefined;
}

/** What happened to one item on the primary. */
export interface ShardItemResult {
  readonly position: number;
  readonly status: number;
  readonly result?: 'created' | 'updated' | 'deleted' | 'not_found' | 'noop';
  readonly version?: number;
  readonly seqNo?: number;
  readonly error?: { readonly type: string; readonly reason: string };
}
