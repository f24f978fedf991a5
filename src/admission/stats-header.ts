/**
 * The `Resource_Usage_Stats` response header: node resource usage piggy-backed on responses from
 * data nodes to the coordinator (seed 001, OpenSearch RFC "Using threadcontext to collect resource
 * usage stats"; never merged upstream, so the rules below are this project's).
 *
 * Format, version 1 (ASCII only):
 *
 * ```
 * value   = "v" version "|" [ entry *( ";" entry ) ]
 * entry   = nodeId ":" cpu "," heap "," io "," timestampMs *( "," extra )
 * nodeId  = 1*64( ALPHA / DIGIT / "_" / "." / "-" )
 * cpu, heap = percent                 ; 0..100, at most one decimal: "92.6"
 * io      = percent / ""              ; empty: the node has no IO figure (ioSource 'none')
 * timestampMs = 1*15DIGIT             ; data node's wall clock, epoch ms
 * extra   = 1*32( ALPHA / DIGIT / "_" / "." / "-" )  ; ignored by v1 parsers
 * ```
 *
 * Example: `Resource_Usage_Stats: v1|node1id:92.6,84.6,82.5,1700031452000;node2id:55.6,45.6,,1700031489000`
 *
 * Versioning and growth:
 * - New figures are appended after `timestampMs` (the seed's "parse each value by index"): a v1
 *   parser reads the first four and ignores the rest, so adding one needs no new version.
 * - A change a v1 parser would misread (reordering, new units) takes a new version number. A parser
 *   skips a value whose version it does not know: no entries, `unknownVersion: true`, nothing counted
 *   as malformed; the coordinator then treats those nodes as unknown, which is safe (unknown nodes are
 *   never refused and not preferred). During a rolling upgrade, senders keep writing v1 until every
 *   coordinator reads the new version.
 * - The seed's unversioned example (`node1id:92.6,...,1700031452`) is not accepted: its timestamp is
 *   in seconds and nothing in the value says so; the `v1|` marker fixes milliseconds.
 *
 * Bounds: at most `maxEntries` (default 64) entries and `maxBytes` (default 8 KiB) characters;
 * entries past either bound are dropped and counted, on parsing and on encoding. Parsing is total:
 * it never throws; a malformed entry is skipped and counted. The header never reaches an end client
 * (`stripStatsHeader`), and the node id of an entry can be read without parsing its figures
 * (`peekNodeId`, `nodeIdsOf`, the `accept` hook of `parseStatsHeader`).
 *
 * Header names with underscores are dropped by some proxies (nginx without `underscores_in_headers`);
 * the name is the seed's, and the header only travels between nodes of the cluster.
 */
import { InvalidArgumentError } from '../errors.js';

/** The header name as the seed writes it (HTTP header names are case-insensitive). */
export const STATS_HEADER_NAME = 'Resource_Usage_Stats';
/** The name as Node's `http` (and fastify) present it in `headers`: lower-case. */
export const STATS_HEADER_KEY = 'resource_usage_stats';
/** The format version this module writes and reads. */
export const STATS_HEADER_VERSION = 1;
/** Default bound on entries per header value. */
export const STATS_HEADER_MAX_ENTRIES = 64;
/** Default bound on the header value's length, bytes (the value is ASCII). */
export const STATS_HEADER_MAX_BYTES = 8192;

const NODE_ID = /^[A-Za-z0-9_.-]{1,64}$/;
const PERCENT = /^(\d{1,3})(?:\.(\d))?$/;
const TIMESTAMP = /^\d{1,15}$/;
const EXTRA = /^[A-Za-z0-9_.-]{1,32}$/;
const VERSION_PREFIX = /^v(\d{1,4})\|/;

/** One node's usage as carried in the header; ratios in 0..1 (the header writes percent). */
export interface NodeResourceStats {
  /** 1..64 characters of `[A-Za-z0-9_.-]`. */
  readonly nodeId: string;
  /** CPU usage, ratio 0..1. */
  readonly cpu: number;
  /** Heap used / heap limit, ratio 0..1. */
  readonly heap: number;
  /** IO usage, ratio 0..1; `undefined` when the node has no IO figure. */
  readonly io: number | undefined;
  /** When the node measured it: its wall clock, epoch ms (integer >= 0). */
  readonly timestampMs: number;
}

/** Bounds for parsing and encoding. */
export interface StatsHeaderLimits {
  /** Entries kept, integer >= 0. @default 64 */
  readonly maxEntries?: number;
  /** Characters of the value read or written, integer >= 0. @default 8192 */
  readonly maxBytes?: number;
}

export interface ParseStatsHeaderOptions extends StatsHeaderLimits {
  /**
   * Called with each well-formed node id before the entry's figures are parsed; `false` skips the
   * entry (counted in `skipped`, not in `malformed`). Lets the coordinator discard foreign or
   * throttled entries cheaply, as the seed asks.
   */
  readonly accept?: (nodeId: string) => boolean;
}

/** What `parseStatsHeader` found. */
export interface ParsedStatsHeader {
  /** The value's version; `undefined` when it has no version marker. */
  readonly version: number | undefined;
  /** True when the version is not one this parser reads (the value was skipped, see module doc). */
  readonly unknownVersion: boolean;
  /** Well-formed, accepted entries, in header order, at most one per node id. */
  readonly entries: readonly NodeResourceStats[];
  /**
   * Malformed things skipped: each bad entry (and each later duplicate of a node id); a value that is
   * not a string or has no version marker counts 1.
   */
  readonly malformed: number;
  /** Entries past `maxEntries` or `maxBytes`, not looked at. */
  readonly dropped: number;
  /** Entries the `accept` hook turned down. */
  readonly skipped: number;
}

const NOTHING: ParsedStatsHeader = Object.freeze({
  version: undefined,
  unknownVersion: false,
  entries: Object.freeze([]) as readonly NodeResourceStats[],
  malformed: 0,
  dropped: 0,
  skipped: 0,
});

function limitsOf(limits: StatsHeaderLimits | undefined): { maxEntries: number; maxBytes: number } {
  const maxEntries = limits?.maxEntries ?? STATS_HEADER_MAX_ENTRIES;
  const maxBytes = limits?.maxBytes ?? STATS_HEADER_MAX_BYTES;
  return {
    maxEntries: Number.isInteger(maxEntries) && maxEntries >= 0 ? maxEntries : STATS_HEADER_MAX_ENTRIES,
    maxBytes: Number.isInteger(maxBytes) && maxBytes >= 0 ? maxBytes : STATS_HEADER_MAX_BYTES,
  };
}

/** A percent field (`"92.6"`, `"100"`) as a ratio, exactly from tenths; `undefined` if malformed or > 100. */
function parsePercent(field: string): number | undefined {
  const match = PERCENT.exec(field);
  if (match === null) return undefined;
  const tenths = Number(match[1]) * 10 + (match[2] === undefined ? 0 : Number(match[2]));
  return tenths <= 1000 ? tenths / 1000 : undefined;
}

/**
 * The node id of one entry (`"node1:92.6,..."` -> `"node1"`) without parsing its figures; `undefined`
 * when there is no colon or the id is not 1..64 characters of `[A-Za-z0-9_.-]`. Never throws.
 */
export function peekNodeId(entry: string): string | undefined {
  const colon = entry.indexOf(':');
  if (colon <= 0 || colon > 64) return undefined;
  const nodeId = entry.slice(0, colon);
  return NODE_ID.test(nodeId) ? nodeId : undefined;
}

/** Parses one entry's figures after its node id; `undefined` when malformed. */
function parseEntry(nodeId: string, entry: string, colon: number): NodeResourceStats | undefined {
  const fields = entry.slice(colon + 1).split(',');
  if (fields.length < 4) return undefined;
  const cpu = parsePercent(fields[0]!);
  const heap = parsePercent(fields[1]!);
  const ioField = fields[2]!;
  const io = ioField === '' ? undefined : parsePercent(ioField);
  const timestampField = fields[3]!;
  if (cpu === undefined || heap === undefined || (ioField !== '' && io === undefined)) return undefined;
  if (!TIMESTAMP.test(timestampField)) return undefined;
  for (let i = 4; i < fields.length; i++) if (!EXTRA.test(fields[i]!)) return undefined;
  return { nodeId, cpu, heap, io, timestampMs: Number(timestampField) };
}

function countEntriesFrom(value: string, from: number): number {
  let count = 1;
  for (let i = value.indexOf(';', from); i !== -1; i = value.indexOf(';', i + 1)) count++;
  return count;
}

/**
 * Parses a header value (see module doc for the format). Total: never throws, whatever `value` is.
 * `undefined` (no header) gives no entries and counts nothing; any other non-string counts one
 * malformed. Entries past `maxEntries` or `maxBytes` are not parsed, only counted in `dropped` (a
 * scan for `;` over the rest, which the HTTP layer's header size limit bounds).
 */
export function parseStatsHeader(value: unknown, options?: ParseStatsHeaderOptions): ParsedStatsHeader {
  if (value === undefined) return NOTHING;
  if (typeof value !== 'string') return { ...NOTHING, malformed: 1 };
  const prefix = VERSION_PREFIX.exec(value);
  if (prefix === null) return { ...NOTHING, malformed: 1 };
  const version = Number(prefix[1]);
  if (version !== STATS_HEADER_VERSION) return { ...NOTHING, version, unknownVersion: true };
  const { maxEntries, maxBytes } = limitsOf(options);
  const accept = options?.accept;
  const entries: NodeResourceStats[] = [];
  const seen = new Set<string>();
  let malformed = 0;
  let dropped = 0;
  let skipped = 0;
  let start = prefix[0].length;
  if (start === value.length) return { ...NOTHING, version };
  for (let index = 0; ; index++) {
    const separator = value.indexOf(';', start);
    const end = separator === -1 ? value.length : separator;
    if (index >= maxEntries || end > maxBytes) {
      dropped = countEntriesFrom(value, start);
      break;
    }
    const entry = value.slice(start, end);
    const nodeId = peekNodeId(entry);
    if (nodeId === undefined) {
      malformed++;
    } else if (seen.has(nodeId)) {
      malformed++;
    } else {
      seen.add(nodeId);
      if (accept !== undefined && !accept(nodeId)) {
        skipped++;
      } else {
        const parsed = parseEntry(nodeId, entry, nodeId.length);
        if (parsed === undefined) malformed++;
        else entries.push(parsed);
      }
    }
    if (separator === -1) break;
    start = separator + 1;
  }
  return { version, unknownVersion: false, entries, malformed, dropped, skipped };
}

/**
 * The node ids of a v1 value's entries, in order, without parsing their figures; malformed ids are
 * left out, and so is everything past the bounds. `[]` for a value of another version. Never throws.
 */
export function nodeIdsOf(value: unknown, limits?: StatsHeaderLimits): string[] {
  const ids: string[] = [];
  parseStatsHeader(value, {
    ...limits,
    accept: (nodeId) => {
      ids.push(nodeId);
      return false;
    },
  });
  return ids;
}

function formatPercent(ratio: number): string {
  return (Math.min(1, Math.max(0, ratio)) * 100).toFixed(1);
}

/** Throws for an entry the encoder must not write (a programmer error in the caller). */
function checkEntry(entry: NodeResourceStats, path: string): void {
  if (typeof entry.nodeId !== 'string' || !NODE_ID.test(entry.nodeId)) {
    throw new InvalidArgumentError(
      `${path}.nodeId`,
      'must be 1..64 characters of [A-Za-z0-9_.-]',
      entry.nodeId,
    );
  }
  for (const key of ['cpu', 'heap'] as const) {
    if (typeof entry[key] !== 'number' || !Number.isFinite(entry[key])) {
      throw new InvalidArgumentError(`${path}.${key}`, 'must be a finite ratio', entry[key]);
    }
  }
  if (entry.io !== undefined && (typeof entry.io !== 'number' || !Number.isFinite(entry.io))) {
    throw new InvalidArgumentError(`${path}.io`, 'must be a finite ratio or undefined', entry.io);
  }
  const ts = entry.timestampMs;
  if (typeof ts !== 'number' || !Number.isInteger(ts) || ts < 0 || ts > 999_999_999_999_999) {
    throw new InvalidArgumentError(`${path}.timestampMs`, 'must be an integer epoch ms in 0..10^15-1', ts);
  }
}

/** One entry as written in the header (ratios clamped to 0..1 and written as percent with one decimal). */
export function formatStatsEntry(entry: NodeResourceStats): string {
  const io = entry.io === undefined ? '' : formatPercent(entry.io);
  return `${entry.nodeId}:${formatPercent(entry.cpu)},${formatPercent(entry.heap)},${io},${entry.timestampMs}`;
}

/**
 * Encodes entries as a v1 header value. One entry per node: of several with the same node id the
 * newest (largest `timestampMs`, the first among equals) is kept, in the position of the node's
 * first entry. Entries that would pass `maxEntries` or `maxBytes` are left out and counted in
 * `dropped`; the value is never longer than `maxBytes` (or than the `v1|` marker, if smaller).
 * @throws InvalidArgumentError for an entry with an invalid node id, a non-finite ratio or a timestamp
 *   that is not an integer in 0..10^15-1 (`entries[2].cpu must be a finite ratio; received NaN`).
 */
export function encodeStatsHeader(
  entries: readonly NodeResourceStats[],
  limits?: StatsHeaderLimits,
): { readonly value: string; readonly dropped: number } {
  const { maxEntries, maxBytes } = limitsOf(limits);
  const newest = new Map<string, NodeResourceStats>();
  entries.forEach((entry, i) => {
    checkEntry(entry, `entries[${i}]`);
    const kept = newest.get(entry.nodeId);
    if (kept === undefined || entry.timestampMs > kept.timestampMs) newest.set(entry.nodeId, entry);
  });
  let value = `v${STATS_HEADER_VERSION}|`;
  let written = 0;
  let dropped = 0;
  for (const entry of newest.values()) {
    const text = formatStatsEntry(entry);
    const added = written === 0 ? text.length : text.length + 1;
    if (written >= maxEntries || value.length + added > maxBytes) {
      dropped++;
      continue;
    }
    value += written === 0 ? text : `;${text}`;
    written++;
  }
  return { value, dropped };
}

/** True for the stats header's name in any letter case. */
export function isStatsHeaderName(name: string): boolean {
  return name.length === STATS_HEADER_KEY.length && name.toLowerCase() === STATS_HEADER_KEY;
}

/** Something that holds headers: a plain record (`request.headers`) or a response with `removeHeader`. */
export type HeaderHolder = Record<string, unknown> | { removeHeader(name: string): unknown };

/**
 * Removes the stats header, in any letter case, from outgoing response headers (before they reach an
 * end client) or from an end client's request headers (so they are never ingested). Works on a plain
 * record and on anything with `removeHeader` (Node's `ServerResponse`, fastify's `reply`). Returns
 * the number of keys removed from a record, or 1 after calling `removeHeader` when it was present
 * (`hasHeader`) or presence cannot be told.
 */
export function stripStatsHeader(headers: HeaderHolder): number {
  const holder = headers as { removeHeader?: unknown; hasHeader?: unknown };
  if (typeof holder.removeHeader === 'function') {
    const present =
      typeof holder.hasHeader === 'function'
        ? Boolean((holder.hasHeader as (name: string) => unknown).call(headers, STATS_HEADER_NAME))
        : true;
    (holder.removeHeader as (name: string) => unknown).call(headers, STATS_HEADER_NAME);
    return present ? 1 : 0;
  }
  let removed = 0;
  const record = headers as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (isStatsHeaderName(key)) {
      delete record[key];
      removed++;
    }
  }
  return removed;
}

/** The fields of a `NodeUsageAverages` snapshot that go into the header. */
export interface UsageSnapshotLike {
  readonly cpu: number;
  readonly heap: number;
  readonly io: number;
  readonly ioSource: string;
  readonly timestampMs: number;
}

/** The header entry for a node from a `NodeUsageAverages` snapshot; `io` is left empty when `ioSource` is `'none'`. */
export function statsEntryOf(nodeId: string, snapshot: UsageSnapshotLike): NodeResourceStats {
  return {
    nodeId,
    cpu: snapshot.cpu,
    heap: snapshot.heap,
    io: snapshot.ioSource === 'none' ? undefined : snapshot.io,
    timestampMs: Math.round(snapshot.timestampMs),
  };
}
