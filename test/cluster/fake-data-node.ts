/**
 * A stand-in data node for coordinator tests: speaks the internal protocol over real HTTP (fastify on
 * a free loopback port) with synthetic documents, and can be told to report any resource usage, to
 * fail, or to be slow. Counts what it was asked.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { encodeStatsHeader, STATS_HEADER_NAME } from '../../src/admission/stats-header.js';
import { NODE_INFO_PATH, type NodeInfoCopy, SHARD_SEARCH_PATH } from '../../src/cluster/internal-protocol.js';
import { shardOf } from '../../src/engine/shard-of.js';

export const FAKE_INDICES = ['alpha', 'beta'] as const;
export const FAKE_SHARDS = 3;
export const FAKE_DOCS_PER_INDEX = 40;

export interface FakeHit {
  readonly _index: string;
  readonly _id: string;
  readonly _score: number;
  readonly _source: { readonly n: number };
}

/** Every document of the fake corpus with its score (scores repeat, so ties are exercised). */
export function fakeHits(index: string, shard: number | undefined): FakeHit[] {
  const hits: FakeHit[] = [];
  for (let n = 0; n < FAKE_DOCS_PER_INDEX; n++) {
    const id = `d${String(n).padStart(2, '0')}`;
    if (shard !== undefined && shardOf(id, FAKE_SHARDS) !== shard) continue;
    hits.push({ _index: index, _id: id, _score: ((n * 7) % 5) + 1, _source: { n } });
  }
  return hits;
}

export function sortHits(hits: FakeHit[]): FakeHit[] {
  return hits.sort((a, b) =>
    a._score !== b._score
      ? b._score - a._score
      : a._index !== b._index
        ? a._index < b._index
          ? -1
          : 1
        : a._id < b._id
          ? -1
          : a._id > b._id
            ? 1
            : 0,
  );
}

export interface FakeDataNode {
  readonly id: string;
  readonly url: string;
  readonly app: FastifyInstance;
  /** Shard-search requests received. */
  searches: number;
  /** Shards asked for, per request. */
  readonly asked: Array<Record<string, number[]>>;
  /** Headers of the last shard search (user and sandbox forwarding). */
  lastHeaders: Record<string, unknown>;
  /** The last shard-search request's body (its `body` and `cancel_after_time_interval`). */
  lastRequest: Record<string, unknown>;
  /** Shard searches being answered now, and the most at once. */
  inFlight: number;
  maxInFlight: number;
  /** Answer `timed_out: true` (a data node whose search timeout stopped it). */
  timedOut: boolean;
  /** Reported usage (ratios); `undefined`: no stats header. */
  usage: { cpu: number; heap: number } | undefined;
  /** Answer shard searches with this status and an error body (0: destroy the connection). */
  failWith: { status: number; type: string } | undefined;
  delayMs: number;
  /** Shard searches whose caller closed the connection while they were being answered (a delay cut short). */
  gone: number;
}

/** Starts a fake data node holding `copies`. */
export async function startFakeDataNode(id: string, copies: readonly NodeInfoCopy[]): Promise<FakeDataNode> {
  const app = Fastify();
  const node: FakeDataNode = {
    id,
    url: '',
    app,
    searches: 0,
    asked: [],
    lastHeaders: {},
    lastRequest: {},
    inFlight: 0,
    maxInFlight: 0,
    timedOut: false,
    usage: undefined,
    failWith: undefined,
    delayMs: 0,
    gone: 0,
  };
  app.addHook('onSend', async (_request, reply, payload) => {
    if (node.usage !== undefined) {
      reply.header(
        STATS_HEADER_NAME,
        encodeStatsHeader([{ nodeId: id, ...node.usage, io: undefined, timestampMs: Date.now() }]).value,
      );
    }
    return payload;
  });
  app.get(NODE_INFO_PATH, async () => ({
    node_id: id,
    roles: ['data'],
    indices: FAKE_INDICES,
    shards_per_index: FAKE_SHARDS,
    copies,
  }));
  app.post(SHARD_SEARCH_PATH, async (request, reply) => {
    const arrived = performance.now();
    node.searches++;
    node.lastHeaders = { ...request.headers };
    node.lastRequest = request.body as Record<string, unknown>;
    const { shards, body } = request.body as { shards: Record<string, number[]>; body: { size: number } };
    node.asked.push(shards);
    node.inFlight++;
    node.maxInFlight = Math.max(node.maxInFlight, node.inFlight);
    // The caller closing the connection cuts the delay short (as a data node gives up its task).
    let cut: () => void = () => undefined;
    const socket = request.raw.socket;
    const onClose = () => {
      node.gone++;
      cut();
    };
    socket.once('close', onClose);
    try {
      if (node.delayMs > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, node.delayMs);
          cut = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    } finally {
      socket.off('close', onClose);
      node.inFlight--;
    }
    if (socket.destroyed) return reply;
    if (node.failWith !== undefined) {
      if (node.failWith.status === 0) {
        request.raw.socket.destroy();
        return reply;
      }
      return reply.code(node.failWith.status).send({
        error: { type: node.failWith.type, reason: `${id} says no` },
        status: node.failWith.status,
      });
    }
    const hits: FakeHit[] = [];
    for (const [index, list] of Object.entries(shards)) {
      for (const shard of list) hits.push(...fakeHits(index, shard));
    }
    sortHits(hits);
    return {
      node_id: id,
      service_time_ns: Math.round((performance.now() - arrived) * 1e6),
      queue_size: 0,
      response: {
        took: 1,
        timed_out: node.timedOut,
        hits: {
          total: { value: hits.length, relation: 'eq' },
          max_score: hits[0]?._score ?? null,
          hits: hits.slice(0, body.size),
        },
      },
    };
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return Object.assign(node, { url: `http://127.0.0.1:${port}` });
}
