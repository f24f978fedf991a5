/**
 * A made-up product catalog, the same on every call for the same size: the example's data, so that
 * it runs anywhere without a download.
 */

export interface Product {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly category: string;
  readonly price: number;
}

const MATERIALS = ['brass', 'oak', 'walnut', 'steel', 'linen', 'wool', 'marble', 'bamboo', 'glass', 'leather'];
const KINDS = ['lamp', 'chair', 'table', 'shelf', 'rug', 'vase', 'clock', 'mirror', 'bench', 'desk', 'sofa', 'stool'];
const COLOURS = ['red', 'blue', 'green', 'black', 'white', 'amber', 'grey', 'teal', 'ivory', 'olive'];
const ROOMS = ['office', 'kitchen', 'bedroom', 'garden', 'hallway', 'studio', 'library', 'nursery'];
const STYLES = ['modern', 'rustic', 'nordic', 'vintage', 'industrial', 'minimal', 'classic', 'coastal'];
export const CATEGORIES = ['home', 'office', 'outdoor', 'kids'] as const;

/** A small deterministic generator (mulberry32), so that the catalog does not depend on Math.random. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(next: () => number, list: readonly T[]): T => list[Math.floor(next() * list.length)]!;

/** `count` products, ids `p0`.., the same for the same `count`. */
export function catalog(count: number): Product[] {
  const next = random(42);
  const out: Product[] = [];
  for (let i = 0; i < count; i++) {
    const kind = pick(next, KINDS);
    const material = pick(next, MATERIALS);
    const colour = pick(next, COLOURS);
    out.push({
      id: `p${i}`,
      name: `${pick(next, STYLES)} ${material} ${kind}`,
      description: `a ${colour} ${material} ${kind} for the ${pick(next, ROOMS)}, ${pick(next, STYLES)} and ${pick(next, STYLES)}, model ${i % 997}`,
      category: pick(next, CATEGORIES),
      price: Math.round(next() * 50_000) / 100,
    });
  }
  return out;
}
