import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import {
  DOCUMENT_ID_LENGTH,
  DocumentIdGenerator,
  decodeDocumentId,
  idForShard,
} from '../../src/routing/document-id.js';
import { resolveShardRouting, shardId } from '../../src/routing/shard-routing.js';

const NODE = Uint8Array.of(0xde, 0xad, 0xbe, 0xef, 0x01, 0x02);

/** The 15 bytes of Elasticsearch's TimeBasedUUIDGenerator for one (sequence, timestamp, node). */
function expectedBytes(seq: number, ts: number, node: Uint8Array): Buffer {
  const hi = Math.floor(ts / 2 ** 32);
  return Buffer.from([
    seq & 0xff,
    (seq >>> 16) & 0xff,
    (ts >>> 16) & 0xff,
    (ts >>> 24) & 0xff,
    hi & 0xff,
    (hi >>> 8) & 0xff,
    ...node,
    (ts >>> 8) & 0xff,
    (seq >>> 8) & 0xff,
    ts & 0xff,
  ]);
}

describe('DocumentIdGenerator', () => {
  it('makes 20-character URL-safe base64 ids without padding', () => {
    const generator = new DocumentIdGenerator();
    for (let i = 0; i < 1000; i++) {
      const id = generator.next();
      expect(id).toHaveLength(DOCUMENT_ID_LENGTH);
      expect(id).toMatch(/^[A-Za-z0-9_-]{20}$/);
      expect(Buffer.from(id, 'base64url')).toHaveLength(15);
    }
  });

  it('lays the bytes out as Elasticsearch TimeBasedUUIDGenerator does', () => {
    const ts = 0x0123_4567_89ab; // a 48-bit ms timestamp with distinct bytes
    const generator = new DocumentIdGenerator({
      nowMs: () => ts,
      nodeBytes: NODE,
      initialSequence: 0x0a0b0b,
    });
    const id = generator.next(); // sequence 0x0a0b0c
    expect(Buffer.from(id, 'base64url')).toEqual(expectedBytes(0x0a0b0c, ts, NODE));
    expect(id).toBe(expectedBytes(0x0a0b0c, ts, NODE).toString('base64url'));
    expect(decodeDocumentId(id)).toEqual({ sequence: 0x0a0b0c, timestampMs: ts, nodeBytes: NODE });
  });

  it('never repeats an id over 100k ids', () => {
    const generator = new DocumentIdGenerator();
    const ids = new Set<string>();
    for (let i = 0; i < 100_000; i++) ids.add(generator.next());
    expect(ids.size).toBe(100_000);
  });

  it('never repeats an id when the clock stands still and the sequence wraps', () => {
    const generator = new DocumentIdGenerator({ nowMs: () => 1_700_000_000_000, initialSequence: 0xfffff0 });
    const ids = new Set<string>();
    for (let i = 0; i < 64; i++) ids.add(generator.next());
    expect(ids.size).toBe(64);
  });

  it('carries a timestamp that never goes backwards and steps forward when the sequence wraps to 0', () => {
    const clock = [1000, 1005, 990, 980, 1010];
    let i = 0;
    const generator = new DocumentIdGenerator({ nowMs: () => clock[i++]!, initialSequence: 0xfffffe });
    const decoded = clock.map(() => decodeDocumentId(generator.next()));
    expect(decoded.map((d) => d.sequence)).toEqual([0xffffff, 0, 1, 2, 3]);
    // 1000; 1005 + 1 (sequence wrapped to 0); then the clock is behind, so 1006 holds; then 1010.
    expect(decoded.map((d) => d.timestampMs)).toEqual([1000, 1006, 1006, 1006, 1010]);
  });

  it('is roughly time-ordered: decoded timestamps follow the real clock', () => {
    const generator = new DocumentIdGenerator();
    const before = Date.now();
    const first = decodeDocumentId(generator.next());
    const last = decodeDocumentId(generator.next());
    expect(first.timestampMs).toBeGreaterThanOrEqual(before);
    expect(last.timestampMs).toBeGreaterThanOrEqual(first.timestampMs);
    expect(last.timestampMs).toBeLessThanOrEqual(Date.now() + 1);
    expect(last.nodeBytes).toEqual(first.nodeBytes);
  });

  it('refuses bad options, naming the option', () => {
    expect(() => new DocumentIdGenerator({ nodeBytes: new Uint8Array(5) })).toThrow(
      /^nodeBytes must be 6 bytes/,
    );
    expect(() => new DocumentIdGenerator({ initialSequence: 2 ** 24 })).toThrow(
      'initialSequence must be an integer in 0..16777215; received 16777216',
    );
  });

  it('refuses to decode a string that is not a generated id', () => {
    expect(() => decodeDocumentId('short')).toThrow(InvalidArgumentError);
    expect(() => decodeDocumentId('AAAAAAAAAAAAAAAAAAA=')).toThrow(InvalidArgumentError);
  });
});

describe('idForShard', () => {
  for (const numberOfShards of [5, 150, 1000]) {
    it(`finds ids that route to the chosen shard of ${numberOfShards}, with about ${numberOfShards} tries each`, () => {
      const routing = resolveShardRouting({ numberOfShards });
      const generator = new DocumentIdGenerator();
      const docs = numberOfShards === 1000 ? 100 : 300;
      let tries = 0;
      for (let i = 0; i < docs; i++) {
        const shard = (i * 7919) % numberOfShards;
        const found = idForShard(shard, routing, generator);
        expect(found.tries).toBeGreaterThanOrEqual(1);
        expect(shardId(routing, found.id)).toBe(shard);
        tries += found.tries;
      }
      // Geometric with mean numberOfShards: the mean over `docs` draws is within about ±4.5 standard errors.
      const mean = tries / docs;
      const bound = 4.5 * (numberOfShards / Math.sqrt(docs));
      expect(mean).toBeGreaterThan(numberOfShards - bound);
      expect(mean).toBeLessThan(numberOfShards + bound);
    });
  }

  it('also finds ids for an explicit number of routing shards', () => {
    const routing = resolveShardRouting({ numberOfShards: 8, numberOfRoutingShards: 8 });
    const generator = new DocumentIdGenerator();
    for (let shard = 0; shard < 8; shard++) {
      expect(shardId(routing, idForShard(shard, routing, generator).id)).toBe(shard);
    }
  });

  it('refuses a shard out of range and a partitioned index', () => {
    const generator = new DocumentIdGenerator();
    const routing = resolveShardRouting({ numberOfShards: 5 });
    expect(() => idForShard(5, routing, generator)).toThrow('shard must be an integer in 0..4; received 5');
    expect(() => idForShard(-1, routing, generator)).toThrow(InvalidArgumentError);
    const partitioned = resolveShardRouting({ numberOfShards: 5, routingPartitionSize: 2 });
    expect(() => idForShard(0, partitioned, generator)).toThrow(/^routingPartitionSize must be 1/);
  });

  it('gives up after maxTries', () => {
    const options = { nowMs: () => 1_700_000_000_000, nodeBytes: NODE, initialSequence: 7 };
    const routing = resolveShardRouting({ numberOfShards: 1000 });
    const firstShard = shardId(routing, new DocumentIdGenerator(options).next());
    const other = (firstShard + 1) % 1000;
    expect(() => idForShard(other, routing, new DocumentIdGenerator(options), 1)).toThrow(
      `maxTries was reached without an id for shard ${other}; received 1`,
    );
    expect(idForShard(firstShard, routing, new DocumentIdGenerator(options), 1).tries).toBe(1);
  });
});
