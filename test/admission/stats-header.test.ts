import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  encodeStatsHeader,
  isStatsHeaderName,
  type NodeResourceStats,
  nodeIdsOf,
  parseStatsHeader,
  peekNodeId,
  STATS_HEADER_KEY,
  STATS_HEADER_NAME,
  statsEntryOf,
  stripStatsHeader,
} from '../../src/admission/stats-header.js';
import { InvalidArgumentError } from '../../src/errors.js';

const n1: NodeResourceStats = {
  nodeId: 'node1id',
  cpu: 0.926,
  heap: 0.846,
  io: 0.825,
  timestampMs: 1_700_031_452_000,
};
const n2: NodeResourceStats = {
  nodeId: 'node2id',
  cpu: 0.556,
  heap: 0.456,
  io: undefined,
  timestampMs: 1_700_031_489_000,
};

function entry(i: number): NodeResourceStats {
  return { nodeId: `n${i}`, cpu: 0.5, heap: 0.25, io: 0.1, timestampMs: 1_700_000_000_000 + i };
}

describe('stats header codec', () => {
  it("uses the seed's header name", () => {
    expect(STATS_HEADER_NAME).toBe('Resource_Usage_Stats');
    expect(STATS_HEADER_KEY).toBe('resource_usage_stats');
    expect(isStatsHeaderName('RESOURCE_USAGE_STATS')).toBe(true);
    expect(isStatsHeaderName('resource-usage-stats')).toBe(false);
  });

  it('writes percent with one decimal after a v1 marker, and reads back the same ratios', () => {
    const { value, dropped } = encodeStatsHeader([n1, n2]);
    expect(value).toBe('v1|node1id:92.6,84.6,82.5,1700031452000;node2id:55.6,45.6,,1700031489000');
    expect(dropped).toBe(0);
    const parsed = parseStatsHeader(value);
    expect(parsed).toEqual({
      version: 1,
      unknownVersion: false,
      entries: [n1, n2],
      malformed: 0,
      dropped: 0,
      skipped: 0,
    });
  });

  it('rounds to one decimal and clamps ratios to 0..1 when writing', () => {
    const { value } = encodeStatsHeader([
      { nodeId: 'a', cpu: 1.07, heap: -0.2, io: 0.12345, timestampMs: 5 },
    ]);
    expect(value).toBe('v1|a:100.0,0.0,12.3,5');
    expect(parseStatsHeader(value).entries[0]).toEqual({
      nodeId: 'a',
      cpu: 1,
      heap: 0,
      io: 0.123,
      timestampMs: 5,
    });
  });

  it('reads integer percents and ignores fields appended after the timestamp (growth within v1)', () => {
    const parsed = parseStatsHeader('v1|a:95,90,0,1000,77.5,newStat_2');
    expect(parsed.entries).toEqual([{ nodeId: 'a', cpu: 0.95, heap: 0.9, io: 0, timestampMs: 1000 }]);
    expect(parsed.malformed).toBe(0);
  });

  it('skips a value of an unknown version without counting it malformed', () => {
    const parsed = parseStatsHeader('v2|a:1,2,3,4;anything:else');
    expect(parsed).toMatchObject({ version: 2, unknownVersion: true, entries: [], malformed: 0 });
    expect(nodeIdsOf('v2|a:1,2,3,4')).toEqual([]);
  });

  it('treats no header as nothing and an empty v1 value as no entries', () => {
    expect(parseStatsHeader(undefined)).toMatchObject({ entries: [], malformed: 0, version: undefined });
    expect(parseStatsHeader('v1|')).toMatchObject({ entries: [], malformed: 0, version: 1 });
    expect(encodeStatsHeader([])).toEqual({ value: 'v1|', dropped: 0 });
  });

  it('reads node ids without parsing the figures', () => {
    expect(peekNodeId('node1id:92.6,84.6,82.5,1700031452000')).toBe('node1id');
    expect(peekNodeId('node1id:garbage')).toBe('node1id');
    expect(peekNodeId('no colon')).toBeUndefined();
    expect(peekNodeId('bad id:1,2,3,4')).toBeUndefined();
    expect(nodeIdsOf('v1|a:x;b:1,2,3,4;bad id:1;c:')).toEqual(['a', 'b', 'c']);
  });

  it('calls accept with each node id before parsing its figures, and counts what it turns down', () => {
    const seen: string[] = [];
    const parsed = parseStatsHeader('v1|a:not,numbers;b:10,20,30,40', {
      accept: (id) => {
        seen.push(id);
        return id === 'b';
      },
    });
    expect(seen).toEqual(['a', 'b']);
    expect(parsed).toMatchObject({ skipped: 1, malformed: 0 });
    expect(parsed.entries.map((e) => e.nodeId)).toEqual(['b']);
  });

  describe('bounds', () => {
    it('parses at most 64 entries and counts the rest as dropped', () => {
      const value = `v1|${Array.from({ length: 70 }, (_, i) => `n${i}:1,2,3,4`).join(';')}`;
      const parsed = parseStatsHeader(value);
      expect(parsed.entries).toHaveLength(64);
      expect(parsed.entries.at(-1)!.nodeId).toBe('n63');
      expect(parsed.dropped).toBe(6);
      expect(parsed.malformed).toBe(0);
    });

    it('parses no entry that ends past 8 KiB and counts those as dropped', () => {
      const id = 'x'.repeat(60);
      const entries = Array.from({ length: 200 }, (_, i) => `${id}${String(i).padStart(3, '0')}:1,2,3,4`);
      const value = `v1|${entries.join(';')}`;
      const parsed = parseStatsHeader(value, { maxEntries: 1000 });
      const perEntry = entries[0]!.length + 1; // 71 characters and a separator
      const fit = Math.floor((8192 - 3 + 1) / perEntry); // entry k ends at 3 + perEntry * (k + 1) - 1
      expect(fit).toBe(113);
      expect(parsed.entries).toHaveLength(fit);
      expect(parsed.dropped).toBe(200 - fit);
    });

    it('honours smaller limits', () => {
      const parsed = parseStatsHeader('v1|a:1,2,3,4;b:1,2,3,4;c:1,2,3,4', { maxEntries: 2 });
      expect(parsed.entries.map((e) => e.nodeId)).toEqual(['a', 'b']);
      expect(parsed.dropped).toBe(1);
      expect(parseStatsHeader('v1|a:1,2,3,4;b:1,2,3,4', { maxBytes: 14 })).toMatchObject({ dropped: 1 });
    });

    it('writes at most 64 entries and at most 8 KiB, counting what it leaves out', () => {
      const many = Array.from({ length: 100 }, (_, i) => entry(i));
      const { value, dropped } = encodeStatsHeader(many);
      expect(dropped).toBe(36);
      expect(parseStatsHeader(value).entries).toHaveLength(64);
      const big = Array.from({ length: 64 }, (_, i) => ({ ...entry(i), nodeId: `${'y'.repeat(60)}${i}` }));
      const bounded = encodeStatsHeader(big, { maxBytes: 1000 });
      expect(bounded.value.length).toBeLessThanOrEqual(1000);
      const written = parseStatsHeader(bounded.value).entries.length;
      expect(written).toBeGreaterThan(0);
      expect(written + bounded.dropped).toBe(64);
    });
  });

  it('writes one entry per node, the newest', () => {
    const older = { ...n1, cpu: 0.1, timestampMs: n1.timestampMs - 1 };
    const { value } = encodeStatsHeader([older, n2, n1]);
    expect(parseStatsHeader(value).entries).toEqual([n1, n2]);
  });

  it.each([
    [{ ...n1, nodeId: 'bad id' }, 'entries[0].nodeId must be 1..64 characters of [A-Za-z0-9_.-]; received'],
    [{ ...n1, nodeId: 'x'.repeat(65) }, 'entries[0].nodeId must be'],
    [{ ...n1, cpu: Number.NaN }, 'entries[0].cpu must be a finite ratio; received'],
    [{ ...n1, io: Number.POSITIVE_INFINITY }, 'entries[0].io must be a finite ratio or undefined'],
    [{ ...n1, timestampMs: 1.5 }, 'entries[0].timestampMs must be an integer epoch ms'],
  ])('refuses to write %j', (bad, message) => {
    expect(() => encodeStatsHeader([bad])).toThrow(InvalidArgumentError);
    expect(() => encodeStatsHeader([bad])).toThrow(message);
  });

  it('builds an entry from a tracker snapshot, with no IO figure when the source is none', () => {
    const snapshot = { cpu: 0.5, heap: 0.25, io: 0, ioSource: 'none', timestampMs: 1234.4 };
    expect(statsEntryOf('me', snapshot)).toEqual({
      nodeId: 'me',
      cpu: 0.5,
      heap: 0.25,
      io: undefined,
      timestampMs: 1234,
    });
    expect(statsEntryOf('me', { ...snapshot, ioSource: 'psi-system', io: 0.3 }).io).toBe(0.3);
  });

  describe('malformed input: skipped and counted, never thrown', () => {
    const ok = 'good:1.0,2.0,3.0,1000';
    it.each<[string, unknown, { entries: number; malformed: number; dropped?: number }]>([
      ['empty string', '', { entries: 0, malformed: 1 }],
      ["the seed's unversioned example", 'node1id:92.6,84.6,82.5,1700031452', { entries: 0, malformed: 1 }],
      ['upper-case version marker', 'V1|a:1,2,3,4', { entries: 0, malformed: 1 }],
      ['leading space', ' v1|a:1,2,3,4', { entries: 0, malformed: 1 }],
      ['not a string', 42, { entries: 0, malformed: 1 }],
      ['an array', ['v1|a:1,2,3,4'], { entries: 0, malformed: 1 }],
      ['missing colon', `v1|node1 92.6,1,2,3;${ok}`, { entries: 1, malformed: 1 }],
      ['empty node id', `v1|:1,2,3,4;${ok}`, { entries: 1, malformed: 1 }],
      ['bad node id characters', `v1|no de:1,2,3,4;${ok}`, { entries: 1, malformed: 1 }],
      ['non-ASCII node id', `v1|nöde:1,2,3,4;${ok}`, { entries: 1, malformed: 1 }],
      ['node id over 64 characters', `v1|${'a'.repeat(65)}:1,2,3,4;${ok}`, { entries: 1, malformed: 1 }],
      ['non-numeric figure', `v1|a:abc,1,2,3;${ok}`, { entries: 1, malformed: 1 }],
      ['negative figure', `v1|a:-1.0,1,2,3;${ok}`, { entries: 1, malformed: 1 }],
      ['NaN figure', `v1|a:NaN,1,2,3;${ok}`, { entries: 1, malformed: 1 }],
      ['Infinity figure', `v1|a:1,Infinity,2,3;${ok}`, { entries: 1, malformed: 1 }],
      ['exponent notation', `v1|a:1e2,1,2,3;${ok}`, { entries: 1, malformed: 1 }],
      ['over 100 percent', `v1|a:100.1,1,2,3;${ok}`, { entries: 1, malformed: 1 }],
      ['two decimals', `v1|a:92.65,1,2,3;${ok}`, { entries: 1, malformed: 1 }],
      ['empty CPU field', `v1|a:,1,2,3;${ok}`, { entries: 1, malformed: 1 }],
      ['too few fields', `v1|a:1,2,3;${ok}`, { entries: 1, malformed: 1 }],
      ['empty timestamp', `v1|a:1,2,3,;${ok}`, { entries: 1, malformed: 1 }],
      ['negative timestamp', `v1|a:1,2,3,-4;${ok}`, { entries: 1, malformed: 1 }],
      ['fractional timestamp', `v1|a:1,2,3,4.5;${ok}`, { entries: 1, malformed: 1 }],
      ['16-digit timestamp', `v1|a:1,2,3,1234567890123456;${ok}`, { entries: 1, malformed: 1 }],
      ['trailing comma', `v1|a:1,2,3,4,;${ok}`, { entries: 1, malformed: 1 }],
      ['trailing semicolon', `v1|${ok};`, { entries: 1, malformed: 1 }],
      ['empty entry in the middle', `v1|a:1,2,3,4;;${ok}`, { entries: 2, malformed: 1 }],
      ['duplicate node id (the first is kept)', `v1|good:5,5,5,5;${ok}`, { entries: 1, malformed: 1 }],
      ['two values joined by a proxy', `v1|${ok}, v1|b:1,2,3,4`, { entries: 0, malformed: 1 }],
      [
        'too many entries',
        `v1|${Array(65)
          .fill(0)
          .map((_, i) => `n${i}:1,2,3,4`)
          .join(';')}`,
        { entries: 64, malformed: 0, dropped: 1 },
      ],
      ['too long', `v1|${ok};x:${'1'.repeat(9000)}`, { entries: 1, malformed: 0, dropped: 1 }],
    ])('%s', (_name, input, expected) => {
      let parsed: ReturnType<typeof parseStatsHeader> | undefined;
      expect(() => {
        parsed = parseStatsHeader(input);
      }).not.toThrow();
      expect(parsed!.entries).toHaveLength(expected.entries);
      expect(parsed!.malformed).toBe(expected.malformed);
      expect(parsed!.dropped).toBe(expected.dropped ?? 0);
      expect(() => nodeIdsOf(input)).not.toThrow();
    });

    it('keeps the first of duplicate node ids', () => {
      expect(parseStatsHeader('v1|a:5,5,5,5;a:9,9,9,9').entries).toEqual([
        { nodeId: 'a', cpu: 0.05, heap: 0.05, io: 0.05, timestampMs: 5 },
      ]);
    });
  });

  describe('stripStatsHeader', () => {
    it('removes the header in any letter case from a header record', () => {
      const headers: Record<string, unknown> = {
        'content-type': 'application/json',
        resource_usage_stats: 'v1|a:1,2,3,4',
        Resource_Usage_Stats: 'v1|b:1,2,3,4',
      };
      expect(stripStatsHeader(headers)).toBe(2);
      expect(headers).toEqual({ 'content-type': 'application/json' });
      expect(stripStatsHeader(headers)).toBe(0);
    });

    it('removes it from a Node ServerResponse before it reaches the client', () => {
      const res = new ServerResponse(new IncomingMessage(new Socket()));
      res.setHeader('Resource_Usage_Stats', 'v1|a:1,2,3,4');
      res.setHeader('x-other', '1');
      expect(stripStatsHeader(res)).toBe(1);
      expect(res.hasHeader(STATS_HEADER_NAME)).toBe(false);
      expect(res.getHeader('x-other')).toBe('1');
      expect(stripStatsHeader(res)).toBe(0);
    });
  });
});
