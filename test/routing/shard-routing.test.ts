import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import { murmur3Hash } from '../../src/routing/murmur3.js';
import {
  defaultRoutingNumShards,
  hashToShardId,
  resolveShardRouting,
  searchShards,
  shardId,
} from '../../src/routing/shard-routing.js';

// Elasticsearch OperationRoutingTests.testBWC: 8 shards, 8 routing shards; the key routes alike as
// the id and as the routing value.
const BWC: Record<string, number> = {
  sEERfFzPSI: 1,
  cNRiIrjzYd: 7,
  BgfLBXUyWT: 5,
  cnepjZhQnb: 3,
  OKCmuYkeCK: 6,
  OutXGRQUja: 5,
  yCdyocKWou: 1,
  KXuNWWNgVj: 2,
  DGJOYrpESx: 4,
  upLDybdTGs: 5,
  yhZhzCPQby: 1,
  EyCVeiCouA: 1,
  tFyVdQauWR: 6,
  nyeRYDnDQr: 6,
  hswhrppvDH: 0,
  BSiWvDOsNE: 5,
  YHicpFBSaY: 1,
  EquPtdKaBZ: 4,
  rSjLZHCDfT: 5,
  qoZALVcite: 7,
  yDCCPVBiCm: 7,
  ngizYtQgGK: 5,
  FYQRIBcNqz: 0,
  EBzEDAPODe: 2,
  YePigbXgKb: 1,
  PeGJjomyik: 3,
  cyQIvDmyYD: 7,
  yIEfZrYfRk: 5,
  kblouyFUbu: 7,
  xvIGbRiGJF: 3,
  KWimwsREPf: 4,
  wsNavvIcdk: 7,
  xkWaPcCmpT: 0,
  FKKTOnJMDy: 7,
  RuLzobYixn: 2,
  mFohLeFRvF: 4,
  aAMXnamRJg: 7,
  zKBMYJDmBI: 0,
  ElSVuJQQuw: 7,
  pezPtTQAAm: 7,
  zBjjNEjAex: 2,
  PGgHcLNPYX: 7,
  hOkpeQqTDF: 3,
  chZXraUPBH: 7,
  FAIcSmmNXq: 5,
  EZmDicyayC: 0,
  GRIueBeIyL: 7,
  qCChjGZYLp: 3,
  IsSZQwwnUT: 3,
  MGlxLFyyCK: 3,
  YmscwrKSpB: 0,
  czSljcjMop: 5,
  XhfGWwNlng: 1,
  cWpKJjlzgj: 7,
  eDzIfMKbvk: 1,
  WFFWYBfnTb: 0,
  oDdHJxGxja: 7,
  PDOQQqgIKE: 1,
  bGEIEBLATe: 6,
  xpRkJPWVpu: 2,
  kTwZnPEeIi: 2,
  DifcuqSsKk: 1,
  CEmLmljpXe: 5,
  cuNKtLtyJQ: 7,
  yNjiAnxAmt: 5,
  bVDJDCeaFm: 2,
  vdnUhGLFtl: 0,
  LnqSYezXbr: 5,
  EzHgydDCSR: 3,
  ZSKjhJlcpn: 1,
  WRjUoZwtUz: 3,
  RiBbcCdIgk: 4,
  yizTqyjuDn: 4,
  QnFjcpcZUT: 4,
  agYhXYUUpl: 7,
  UOjiTugjNC: 7,
  nICGuWTdfV: 0,
  NrnSmcnUVF: 2,
  ZSzFcbpDqP: 3,
  YOhahLSzzE: 5,
  iWswCilUaT: 1,
  zXAamKsRwj: 2,
  aqGsrUPHFq: 5,
  eDItImYWTS: 1,
  JAYDZMRcpW: 4,
  lmvAaEPflK: 7,
  IKuOwPjKCx: 5,
  schsINzlYB: 1,
  OqbFNxrKrF: 2,
  QrklDfvEJU: 6,
  VLxKRKdLbx: 4,
  imoydNTZhV: 1,
  uFZyTyOMRO: 4,
  nVAZVMPNNx: 3,
  rPIdESYaAO: 5,
  nbZWPWJsIM: 0,
  wRZXPSoEgd: 3,
  nGzpgwsSBc: 4,
  AITyyoyLLs: 4,
};

describe('defaultRoutingNumShards', () => {
  it('is number_of_shards << max(1, 10 - ceil(log2(number_of_shards)))', () => {
    const table: [number, number][] = [
      [1, 1024],
      [2, 1024],
      [3, 768],
      [5, 640],
      [8, 1024],
      [30, 960],
      [150, 600],
      [512, 1024],
      [513, 1026],
      [1000, 2000],
      [1024, 2048],
    ];
    for (const [shards, routingShards] of table)
      expect(defaultRoutingNumShards(shards), `${shards}`).toBe(routingShards);
  });

  it('is used when numberOfRoutingShards is not given, and lets every index split at least once', () => {
    for (let n = 1; n <= 1024; n++) {
      const r = resolveShardRouting({ numberOfShards: n });
      expect(r.routingNumShards).toBe(defaultRoutingNumShards(n));
      expect(r.routingFactor).toBeGreaterThanOrEqual(2);
      expect(Number.isInteger(r.routingFactor)).toBe(true);
    }
  });
});

describe('shardId', () => {
  it('gives the published shards for 8 shards and 8 routing shards, by id and by routing value', () => {
    const routing = resolveShardRouting({ numberOfShards: 8, numberOfRoutingShards: 8 });
    expect(shardId(routing, 'sEERfFzPSI')).toBe(1);
    expect(shardId(routing, 'cNRiIrjzYd')).toBe(7);
    expect(shardId(routing, 'BgfLBXUyWT')).toBe(5);
    expect(Object.keys(BWC)).toHaveLength(99);
    for (const [key, shard] of Object.entries(BWC)) {
      expect(shardId(routing, key), key).toBe(shard);
      expect(shardId(routing, 'foobar', key), key).toBe(shard);
    }
  });

  it('is floorMod(hash, routing_num_shards) / routing_factor, also for negative hashes', () => {
    const five = resolveShardRouting({ numberOfShards: 5 }); // 640 routing shards, factor 128
    expect(hashToShardId(five, 0)).toBe(0);
    expect(hashToShardId(five, 127)).toBe(0);
    expect(hashToShardId(five, 128)).toBe(1);
    expect(hashToShardId(five, -1)).toBe(4); // floorMod(-1, 640) = 639
    expect(hashToShardId(five, -(2 ** 31))).toBe(4); // floorMod = 512
    expect(hashToShardId(five, 2 ** 31 - 1)).toBe(0); // 2147483647 mod 640 = 127
    const six = resolveShardRouting({ numberOfShards: 6, numberOfRoutingShards: 6 });
    expect(hashToShardId(six, -(2 ** 31))).toBe(4); // Math.floorMod(Integer.MIN_VALUE, 6)
    const id = 'hello';
    expect(shardId(five, id)).toBe(Math.floor((((murmur3Hash(id) % 640) + 640) % 640) / 128));
  });

  it('keeps every document on the shard it splits from (split and shrink consistency)', () => {
    // One index of 2 shards split to 4 and 8 over 8 routing shards: shard(8) / 4 = shard(2).
    const two = resolveShardRouting({ numberOfShards: 2, numberOfRoutingShards: 8 });
    const four = resolveShardRouting({ numberOfShards: 4, numberOfRoutingShards: 8 });
    const eight = resolveShardRouting({ numberOfShards: 8, numberOfRoutingShards: 8 });
    for (let i = 0; i < 1000; i++) {
      const id = `doc-${i}`;
      expect(Math.floor(shardId(eight, id) / 4)).toBe(shardId(two, id));
      expect(Math.floor(shardId(eight, id) / 2)).toBe(shardId(four, id));
    }
  });

  it('routes a partitioned index as Elasticsearch testPartitionedIndexBWC (6 shards, partition 2)', () => {
    const routing = resolveShardRouting({
      numberOfShards: 6,
      numberOfRoutingShards: 6,
      routingPartitionSize: 2,
    });
    const table: Record<string, Record<string, number>> = {
      a: { a_0: 3, a_1: 2, a_2: 2, a_3: 3 },
      b: { b_0: 5, b_1: 0, b_2: 0, b_3: 0 },
      c: { c_0: 4, c_1: 4, c_2: 3, c_3: 4 },
      d: { d_0: 3, d_1: 4, d_2: 4, d_3: 4 },
    };
    for (const [value, ids] of Object.entries(table)) {
      for (const [id, shard] of Object.entries(ids)) expect(shardId(routing, id, value), id).toBe(shard);
    }
  });

  it('routes a shrunk partitioned index as Elasticsearch testPartitionedIndexShrunk (4 of 8, partition 3)', () => {
    const routing = resolveShardRouting({
      numberOfShards: 4,
      numberOfRoutingShards: 8,
      routingPartitionSize: 3,
    });
    const table: Record<string, Record<string, number>> = {
      a: { a_0: 1, a_1: 2, a_2: 2, a_3: 2, a_4: 1, a_5: 2 },
      b: { b_0: 0, b_1: 0, b_2: 0, b_3: 0, b_4: 3, b_5: 3 },
      c: { c_0: 1, c_1: 1, c_2: 0, c_3: 0, c_4: 0, c_5: 1 },
      d: { d_0: 2, d_1: 2, d_2: 3, d_3: 3, d_4: 3, d_5: 3 },
    };
    for (const [value, ids] of Object.entries(table)) {
      for (const [id, shard] of Object.entries(ids)) expect(shardId(routing, id, value), id).toBe(shard);
    }
  });

  // With a routing factor above 1 the p consecutive routing shards of one value often fall in one
  // shard (5 shards, 640 routing shards, p 3: mostly 1 shard), as in Elasticsearch.
  it('puts all ids of one routing value within at most p shards, the ones searchShards names', () => {
    for (const [numberOfShards, numberOfRoutingShards, p] of [
      [4, 4, 3],
      [5, undefined, 3],
      [30, undefined, 7],
      [150, undefined, 10],
    ] as const) {
      const routing = resolveShardRouting({ numberOfShards, numberOfRoutingShards, routingPartitionSize: p });
      for (let r = 0; r < 20; r++) {
        const value = `user-${r}`;
        const seen = new Set<number>();
        for (let i = 0; i < 300; i++) seen.add(shardId(routing, `doc-${r}-${i}`, value));
        const allowed = searchShards(routing, value);
        expect(allowed.length).toBeLessThanOrEqual(p);
        expect([...seen].sort((x, y) => x - y)).toEqual([...allowed].sort((x, y) => x - y));
      }
    }
  });

  it('hits exactly p shards per routing value when routing shards equal shards (Elasticsearch testPartitionedIndex)', () => {
    for (let shards = 2; shards < 5; shards++) {
      for (let p = 1; p < shards; p++) {
        const routing = resolveShardRouting({
          numberOfShards: shards,
          numberOfRoutingShards: shards,
          routingPartitionSize: p,
        });
        for (let r = 0; r < 20; r++) {
          const seen = new Set<number>();
          for (let i = 0; i < 150; i++) seen.add(shardId(routing, `id${i}`, `routing${r}`));
          expect(seen.size).toBe(p);
        }
      }
    }
  });

  it('adds the partition offset with 32-bit wraparound, as Java int addition does', () => {
    // hash('r3700249') = 2147483104 and floorMod(hash('id16'), 639) = 606: the sum wraps to -2147483586.
    const routing = resolveShardRouting({ numberOfShards: 5, routingPartitionSize: 639 });
    expect(murmur3Hash('r3700249')).toBe(2147483104);
    expect(((murmur3Hash('id16') % 639) + 639) % 639).toBe(606);
    expect(shardId(routing, 'id16', 'r3700249')).toBe(4); // floorMod(-2147483586, 640) = 574; 574 / 128
    // Without wraparound it would be floorMod(2147483710, 640) = 190, shard 1.
  });

  it('refuses a partitioned index without a routing value', () => {
    const routing = resolveShardRouting({ numberOfShards: 6, routingPartitionSize: 2 });
    expect(() => shardId(routing, 'a_0')).toThrow(InvalidArgumentError);
    expect(() => shardId(routing, 'a_0')).toThrow('routing is required for a partitioned index');
  });
});

describe('resolveShardRouting', () => {
  it('returns frozen settings with the routing factor', () => {
    const r = resolveShardRouting({ numberOfShards: 4, numberOfRoutingShards: 8 });
    expect(r).toEqual({ numberOfShards: 4, routingNumShards: 8, routingFactor: 2, routingPartitionSize: 1 });
    expect(Object.isFrozen(r)).toBe(true);
  });

  it('refuses a number of shards outside 1..1024, naming the field and the value', () => {
    for (const n of [0, -1, 1025, 2.5, Number.NaN]) {
      expect(() => resolveShardRouting({ numberOfShards: n })).toThrow(InvalidArgumentError);
    }
    expect(() => resolveShardRouting({ numberOfShards: 1025 })).toThrow(
      'numberOfShards must be an integer in 1..1024; received 1025',
    );
  });

  it('refuses routing shards that the number of shards does not divide, or fewer than the shards', () => {
    expect(() => resolveShardRouting({ numberOfShards: 8, numberOfRoutingShards: 12 })).toThrow(
      'numberOfRoutingShards must be a multiple of the number of shards (8); received 12',
    );
    expect(() => resolveShardRouting({ numberOfShards: 8, numberOfRoutingShards: 4 })).toThrow(
      'numberOfRoutingShards must be >= the number of shards (8); received 4',
    );
    expect(() => resolveShardRouting({ numberOfShards: 3, numberOfRoutingShards: 7.5 })).toThrow(
      /^numberOfRoutingShards must be an integer in 1\.\.2147483647; received 7\.5$/,
    );
    expect(() => resolveShardRouting({ numberOfShards: 3, numberOfRoutingShards: 2 ** 31 })).toThrow(
      InvalidArgumentError,
    );
    expect(resolveShardRouting({ numberOfShards: 3, numberOfRoutingShards: 3 }).routingFactor).toBe(1);
  });

  it('refuses a partition size of 0 or not below the routing shards, as IndexMetadata does', () => {
    expect(() =>
      resolveShardRouting({ numberOfShards: 4, numberOfRoutingShards: 4, routingPartitionSize: 0 }),
    ).toThrow(
      'routingPartitionSize must be 1 or an integer in 2..3 (below the number of routing shards); received 0',
    );
    expect(() =>
      resolveShardRouting({ numberOfShards: 4, numberOfRoutingShards: 4, routingPartitionSize: 4 }),
    ).toThrow(InvalidArgumentError);
    expect(() =>
      resolveShardRouting({ numberOfShards: 1, numberOfRoutingShards: 1, routingPartitionSize: 1 }),
    ).not.toThrow();
    expect(() => resolveShardRouting({ numberOfShards: 4, routingPartitionSize: 1.5 })).toThrow(
      InvalidArgumentError,
    );
  });
});
