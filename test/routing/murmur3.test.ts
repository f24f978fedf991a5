import { describe, expect, it } from 'vitest';
import { murmur3Hash } from '../../src/routing/murmur3.js';

/**
 * A plain byte-at-a-time MurmurHash3 x86_32 (seed 0) written from the algorithm's description, used
 * as an independent reference over `Buffer.from(s, 'utf16le')`.
 */
function referenceMurmur3(bytes: Uint8Array): number {
  const mul = (a: number, b: number) => Number((BigInt(a >>> 0) * BigInt(b >>> 0)) & 0xffffffffn);
  const rotl = (x: number, r: number) => ((x << r) | (x >>> (32 - r))) >>> 0;
  const mixK = (k: number) => mul(rotl(mul(k, 0xcc9e2d51), 15), 0x1b873593);
  let h = 0;
  const blocks = bytes.length - (bytes.length % 4);
  for (let i = 0; i < blocks; i += 4) {
    const k = (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24)) >>> 0;
    h = (h ^ mixK(k)) >>> 0;
    h = (mul(rotl(h, 13), 5) + 0xe6546b64) >>> 0;
  }
  let k = 0;
  for (let i = bytes.length - 1; i >= blocks; i--) k = ((k << 8) | bytes[i]!) >>> 0;
  if (bytes.length > blocks) h = (h ^ mixK(k)) >>> 0;
  h = (h ^ bytes.length) >>> 0;
  h = mul(h ^ (h >>> 16), 0x85ebca6b);
  h = mul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) | 0;
}

describe('murmur3Hash', () => {
  it('gives the published values, as signed 32-bit integers', () => {
    expect(murmur3Hash('hello')).toBe(0xd7c31989 | 0);
    expect(murmur3Hash('hello')).toBe(-675079799);
    expect(murmur3Hash('hello world')).toBe(0x64b256a4);
    expect(murmur3Hash('')).toBe(0);
  });

  it("matches Elasticsearch's Murmur3HashFunctionTests known values (odd and even lengths)", () => {
    const known: [string, number][] = [
      ['hell', 0x5a0cb7c3],
      ['hello', 0xd7c31989],
      ['hello w', 0x22ab2984],
      ['hello wo', 0xdf0ca123],
      ['hello wor', 0xe7744d61],
      ['The quick brown fox jumps over the lazy dog', 0xe07db09c],
      ['The quick brown fox jumps over the lazy cog', 0x4e63d2ad],
    ];
    for (const [text, hash] of known) expect(murmur3Hash(text), text).toBe(hash | 0);
  });

  it('hashes non-ASCII text and surrogate pairs as UTF-16 code units, little-endian', () => {
    // Cross-checked with Python mmh3.hash(s.encode('utf-16-le', 'surrogatepass'), 0, signed=True).
    const known: [string, number][] = [
      ['é', 1105794559],
      ['Ω', 202742556],
      ['Zürich', -1975622730],
      ['日本語', 1004281861],
      ['😀', 1443257913], // one code point, two code units: one 4-byte block
      ['a😀b', 2145382652],
      ['Ünïcödé routing', -602671741],
      ['\ud800x', -2019632336], // a lone surrogate is hashed as it is, as Java's charAt gives it
    ];
    for (const [text, hash] of known) expect(murmur3Hash(text), text).toBe(hash);
  });

  it('does not hash UTF-8: a non-ASCII string differs from the hash of its UTF-8 bytes', () => {
    expect(murmur3Hash('é')).not.toBe(referenceMurmur3(Buffer.from('é', 'utf8')));
  });

  it('agrees with a byte-wise reference over the UTF-16LE bytes of random strings', () => {
    let seed = 12345;
    const random = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    for (let n = 0; n < 500; n++) {
      const units = Array.from({ length: Math.floor(random() * 40) }, () =>
        random() < 0.5 ? 32 + Math.floor(random() * 95) : Math.floor(random() * 0x10000),
      );
      const text = String.fromCharCode(...units);
      expect(murmur3Hash(text), JSON.stringify(text)).toBe(referenceMurmur3(Buffer.from(text, 'utf16le')));
    }
  });

  it('returns an integer in the signed 32-bit range', () => {
    for (const text of ['a', 'sEERfFzPSI', 'x'.repeat(1000)]) {
      const h = murmur3Hash(text);
      expect(h).toBe(h | 0);
    }
  });
});
