/**
 * A second engine for query-sandbox: Orama (https://docs.orama.com) over a product catalog, split
 * into shards. The module is what `createRuntime({ engine })` loads: `prepare` (main thread, once)
 * builds the shards and caches them as Orama snapshots, `init` (each worker) loads them, `validate`
 * and `queryAttributes` run on the request path, `handle` runs each task on a worker.
 *
 * Cancellation: Orama's `search` is synchronous, so the engine cannot be stopped inside one shard;
 * it checks between shards (`ctx.throwIfCancelled()`) and records memory there (`ctx.checkpoint()`),
 * so a cancelled query stops after the shard it is in. A sandbox whose queries must never lose a
 * worker (a hard cancellation re-runs `init`) gives itself a `cancellationGraceMs` above a shard's time.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { create, insertMultiple, load, type RawData, save, search } from '@orama/orama';
import type {
  EngineDescription,
  EngineInitContext,
  EnginePrepareContext,
  EngineRequest,
  QueryAttributes,
  TaskContext,
} from 'query-sandbox/engine';
import { CATEGORIES, catalog, type Product } from './catalog.js';

/** The request body this engine takes. */
export interface ProductQuery {
  /** Words to look for in the name and the description, 1..200 characters. */
  readonly q: string;
  /** Typos allowed per word (Orama's `tolerance`), 0..2. Default 0. Fuzzy queries cost far more. */
  readonly fuzzy?: 0 | 1 | 2;
  /** Hits to return, 1..50. Default 10. */
  readonly limit?: number;
  /** Only products of this category. */
  readonly category?: (typeof CATEGORIES)[number];
}

export interface ProductHit {
  readonly id: string;
  readonly name: string;
  readonly price: number;
  readonly score: number;
}

/** What a search returns. */
export interface ProductHits {
  /** Products that match, over every shard. */
  readonly total: number;
  /** The best `limit` of them, by Orama's score. */
  readonly hits: readonly ProductHit[];
  /** Shards searched (all of them unless cancelled, which throws instead). */
  readonly shards: number;
}

const SCHEMA = { name: 'string', description: 'string', category: 'enum', price: 'number' } as const;
const INDEX = 'products';

interface Options {
  readonly products: number;
  readonly shards: number;
}

function optionsOf(raw: Readonly<Record<string, unknown>>): Options {
  const products = raw['products'] ?? 20_000;
  const shards = raw['shards'] ?? 4;
  if (!Number.isInteger(products) || (products as number) < 1 || (products as number) > 1_000_000) {
    throw new RangeError(`engineOptions.products must be an integer in 1..1000000; received ${JSON.stringify(products)}`);
  }
  if (!Number.isInteger(shards) || (shards as number) < 1 || (shards as number) > 64) {
    throw new RangeError(`engineOptions.shards must be an integer in 1..64; received ${JSON.stringify(shards)}`);
  }
  return { products: products as number, shards: shards as number };
}

function newShard() {
  return create({ schema: SCHEMA });
}
type Shard = ReturnType<typeof newShard>;

const cacheFile = (cacheDir: string, o: Options) =>
  path.join(cacheDir, `orama-products-v1-${o.products}-${o.shards}.json`);

/** Main thread, once: build the shards unless a snapshot of them is cached. */
export async function prepare(context: EnginePrepareContext): Promise<EngineDescription> {
  const o = optionsOf(context.options);
  const file = cacheFile(context.cacheDir, o);
  if (existsSync(file)) return { indices: [INDEX] };
  const started = performance.now();
  const products = catalog(o.products);
  const snapshots: RawData[] = [];
  for (let s = 0; s < o.shards; s++) {
    const shard = newShard();
    await insertMultiple(shard, products.filter((_, i) => i % o.shards === s) as Product[], 1000);
    snapshots.push(save(shard));
  }
  mkdirSync(context.cacheDir, { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, JSON.stringify(snapshots));
  renameSync(temp, file); // atomic: another process never reads half a file
  context.log(`built ${o.products} products in ${o.shards} shards in ${Math.round(performance.now() - started)} ms`);
  return { indices: [INDEX] };
}

let shards: Shard[] = [];

/** Each worker, once: load the shards from the snapshot `prepare` wrote. */
export function init(context: EngineInitContext): void {
  const o = optionsOf(context.options);
  const snapshots = JSON.parse(readFileSync(cacheFile(context.cacheDir, o), 'utf8')) as RawData[];
  shards = snapshots.map((raw) => {
    const shard = newShard();
    load(shard, raw);
    return shard;
  });
}

function refuse(message: string): never {
  throw Object.assign(new Error(message), { statusCode: 400, type: 'parsing_exception' });
}

/** Main thread, on the request path: refuse a malformed body with a 400 naming the field. */
export function validate(request: EngineRequest<ProductQuery>): void {
  const body = request.body as Partial<Record<keyof ProductQuery, unknown>> | null;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) refuse(`body must be an object; received ${JSON.stringify(body)}`);
  for (const key of Object.keys(body)) {
    if (!['q', 'fuzzy', 'limit', 'category'].includes(key)) refuse(`[${key}] is not a field of the query (q, fuzzy, limit, category)`);
  }
  if (typeof body.q !== 'string' || body.q.length === 0 || body.q.length > 200) {
    refuse(`[q] must be a string of 1..200 characters; received ${JSON.stringify(body.q)}`);
  }
  if (body.fuzzy !== undefined && body.fuzzy !== 0 && body.fuzzy !== 1 && body.fuzzy !== 2) {
    refuse(`[fuzzy] must be 0, 1 or 2; received ${JSON.stringify(body.fuzzy)}`);
  }
  if (body.limit !== undefined && (!Number.isInteger(body.limit) || (body.limit as number) < 1 || (body.limit as number) > 50)) {
    refuse(`[limit] must be an integer in 1..50; received ${JSON.stringify(body.limit)}`);
  }
  if (body.category !== undefined && !(CATEGORIES as readonly unknown[]).includes(body.category)) {
    refuse(`[category] must be one of ${CATEGORIES.join(', ')}; received ${JSON.stringify(body.category)}`);
  }
}

/** What the query-priority rules match on: the words asked for. */
export function queryAttributes(request: EngineRequest<ProductQuery>): QueryAttributes {
  return { text: request.body.q };
}

/** One task: every shard in turn, a cancellation check between shards, the best hits merged. */
export async function handle(request: EngineRequest<ProductQuery>, ctx: TaskContext): Promise<ProductHits> {
  const { q, fuzzy = 0, limit = 10, category } = request.body;
  const hits: ProductHit[] = [];
  let total = 0;
  for (const shard of shards) {
    ctx.throwIfCancelled();
    const found = await search(shard, {
      term: q,
      properties: ['name', 'description'],
      tolerance: fuzzy,
      limit,
      ...(category !== undefined ? { where: { category: { eq: category } } } : {}),
    });
    total += found.count;
    for (const hit of found.hits) {
      hits.push({ id: hit.id, name: hit.document.name, price: hit.document.price, score: hit.score });
    }
    ctx.checkpoint();
  }
  hits.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
  return { total, hits: hits.slice(0, limit), shards: shards.length };
}
