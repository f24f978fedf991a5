/**
 * The document-routing hash of Elasticsearch: MurmurHash3 x86_32 with seed 0 over a string's UTF-16
 * code units, each code unit written as 2 bytes in little-endian order (`"hi"` hashes the 4 bytes
 * `68 00 69 00`). Source: Elasticsearch `org.elasticsearch.cluster.routing.Murmur3HashFunction.hash(String)`,
 * which fills a byte array that way and calls Lucene's `StringHelper.murmurhash3_x86_32(bytes, 0, len, 0)`.
 *
 * Unpaired surrogates are hashed as they are (a code unit is a code unit), exactly as Java's `charAt`
 * does; nothing is normalised or re-encoded.
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** One 32-bit block through the MurmurHash3 mixing of `k1` (multiply, rotate left 15, multiply). */
function mixK1(k: number): number {
  k = Math.imul(k, C1);
  k = (k << 15) | (k >>> 17);
  return Math.imul(k, C2);
}

/**
 * Murmur3 x86_32 (seed 0) of `value` as Elasticsearch routes with it.
 *
 * @param value any string, including `''` and strings with surrogate pairs or lone surrogates.
 * @returns the hash as a **signed** 32-bit integer (a Java `int`), in -2^31..2^31-1:
 *   `murmur3Hash('hello') === (0xd7c31989 | 0)`, that is -675079799. Use `>>> 0` for the unsigned view.
 *   `murmur3Hash('') === 0`.
 *
 * Allocates nothing: it reads two code units (one 4-byte block) at a time with `charCodeAt`.
 */
export function murmur3Hash(value: string): number {
  const units = value.length;
  const pairs = units >>> 1;
  let h1 = 0;
  for (let i = 0, j = 0; i < pairs; i++, j += 2) {
    // Two little-endian code units form one little-endian 32-bit block.
    const block = value.charCodeAt(j) | (value.charCodeAt(j + 1) << 16);
    h1 ^= mixK1(block);
    h1 = (h1 << 13) | (h1 >>> 19);
    h1 = (Math.imul(h1, 5) + 0xe6546b64) | 0;
  }
  if ((units & 1) !== 0) {
    // Tail of exactly 2 bytes: the last code unit.
    h1 ^= mixK1(value.charCodeAt(units - 1));
  }
  // Finalisation, with the length in bytes.
  h1 ^= units << 1;
  h1 ^= h1 >>> 16;
  h1 = Math.imul(h1, 0x85ebca6b);
  h1 ^= h1 >>> 13;
  h1 = Math.imul(h1, 0xc2b2ae35);
  h1 ^= h1 >>> 16;
  return h1;
}
