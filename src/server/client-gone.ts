/**
 * A request's client going away, as an `AbortSignal`: HTTP/1.1 has no other way to cancel a request
 * than closing its connection, so the connection closing before the answer is sent means the client is
 * gone. Used by the search routes (a single node's and a coordinator's) and by a data node's shard
 * search, whose client is the coordinator: a search nobody waits for is given up at every hop.
 */
import type { FastifyRequest } from 'fastify';

/** An `AbortSignal` that aborts when the request's connection closes; `dispose` once answered. */
export interface ClientGone {
  readonly signal: AbortSignal;
  /** Stops watching (keep-alive sockets carry later requests). */
  dispose(): void;
}

/** Watches the request's socket until `dispose`; aborts at once if it is already closed. */
export function clientGoneSignal(request: FastifyRequest): ClientGone {
  const gone = new AbortController();
  const socket = request.raw.socket;
  const onClose = () => gone.abort(new Error('the client closed its connection before the answer'));
  socket.once('close', onClose);
  if (socket.destroyed) onClose();
  return { signal: gone.signal, dispose: () => socket.off('close', onClose) };
}
