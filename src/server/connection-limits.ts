/**
 * Connection hygiene of both servers (the node's and the coordinator's): a client that sends its
 * headers or its body slowly, or not at all, loses its connection instead of holding it.
 *
 * - `headersTimeoutMs`: the request line and headers must arrive within this time of the first byte
 *   of the request (of the connection, for a new one that sends nothing). Node's
 *   `server.headersTimeout`.
 * - `requestTimeoutMs`: the whole request, headers and body, must arrive within this time. Node's
 *   `server.requestTimeout`. It bounds receiving only: a search that runs longer once its body is in
 *   is not cut.
 * - Either time-out answers `408` (`request_timeout_exception`, `QS_REQUEST_TIMEOUT`) with
 *   `Connection: close` and closes the connection. Node checks the time-outs every
 *   `connectionsCheckingInterval`; it is set here to a quarter of the shorter time-out (at most 1 s),
 *   so a time-out fires within 25 % (or 1 s) of its value, not 30 s late as with Node's default.
 * - `maxConnections`: open connections at most; a connection beyond it is closed at once, before it
 *   is read (Node's `server.maxConnections`; dropped connections are counted and logged).
 *
 * A malformed request (HTTP parse error) answers 400 and a header block over Node's limit 431, both
 * with the usual error body, then close the connection.
 */
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { InvalidArgumentError, RequestTimeoutError } from '../errors.js';
import { toErrorResponse } from './error-body.js';
import { optionChecks } from '../common/option-checks.js';

/** Connection limits of a server; every field optional (defaults below). */
export interface ConnectionLimits {
  /** Time for the request line and headers, ms, 1..3600000. @default 30000 */
  readonly headersTimeoutMs?: number | undefined;
  /** Time for the whole request (headers and body), ms, 1..3600000, at least `headersTimeoutMs`. @default 30000 */
  readonly requestTimeoutMs?: number | undefined;
  /** Open connections at most, 1..1000000. @default 1024 */
  readonly maxConnections?: number | undefined;
}

export const DEFAULT_CONNECTION_LIMITS = Object.freeze({
  headersTimeoutMs: 30_000,
  requestTimeoutMs: 30_000,
  maxConnections: 1024,
});

export type ResolvedConnectionLimits = Readonly<Required<{ [K in keyof ConnectionLimits]: number }>>;

const intIn = optionChecks.integerIn;

/**
 * Checks `limits` and fills in the defaults.
 * @throws InvalidArgumentError naming the option (`headersTimeoutMs must be an integer in 1..3600000;
 *   received 0`), or `requestTimeoutMs` when it is shorter than `headersTimeoutMs`.
 */
export function resolveConnectionLimits(limits: ConnectionLimits = {}): ResolvedConnectionLimits {
  const headersTimeoutMs = intIn(
    'headersTimeoutMs',
    limits.headersTimeoutMs,
    1,
    3_600_000,
    DEFAULT_CONNECTION_LIMITS.headersTimeoutMs,
  );
  const requestTimeoutMs = intIn(
    'requestTimeoutMs',
    limits.requestTimeoutMs,
    1,
    3_600_000,
    Math.max(headersTimeoutMs, DEFAULT_CONNECTION_LIMITS.requestTimeoutMs),
  );
  if (requestTimeoutMs < headersTimeoutMs) {
    throw new InvalidArgumentError(
      'requestTimeoutMs',
      `must be at least headersTimeoutMs (${headersTimeoutMs}): the headers are part of the request`,
      requestTimeoutMs,
    );
  }
  const maxConnections = intIn(
    'maxConnections',
    limits.maxConnections,
    1,
    1_000_000,
    DEFAULT_CONNECTION_LIMITS.maxConnections,
  );
  return Object.freeze({ headersTimeoutMs, requestTimeoutMs, maxConnections });
}

/** How often Node checks the time-outs, ms: a quarter of the shorter one, between 10 ms and 1 s. */
export function checkingIntervalMs(limits: ResolvedConnectionLimits): number {
  return Math.max(
    10,
    Math.min(1000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4)),
  );
}

/** The fastify constructor options that apply `limits` (merge them into `Fastify({...})`). */
export function fastifyConnectionOptions(
  limits: ResolvedConnectionLimits,
  log: FastifyBaseLogger | undefined,
) {
  return {
    requestTimeout: limits.requestTimeoutMs,
    http: {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: checkingIntervalMs(limits),
    },
    clientErrorHandler: (error: Error & { code?: string }, socket: Socket) =>
      answerClientError(error, socket, limits, log),
  };
}

/** Applies what the constructor cannot: the connection bound, and a count and a log of dropped connections. */
export function applyConnectionLimits(
  app: FastifyInstance,
  limits: ResolvedConnectionLimits,
  log: FastifyBaseLogger | undefined,
): void {
  app.server.maxConnections = limits.maxConnections;
  let dropped = 0;
  let lastLogMs = Number.NEGATIVE_INFINITY;
  app.server.on('drop', () => {
    dropped++;
    const now = performance.now();
    if (now - lastLogMs < 10_000) return;
    lastLogMs = now;
    log?.warn(
      { maxConnections: limits.maxConnections, droppedSinceStart: dropped },
      'dropping new connections: the server holds its limit of open connections (--max-connections)',
    );
  });
}

/** Answers an HTTP-level failure on the raw socket in the usual error shape, then closes the connection. */
function answerClientError(
  error: Error & { code?: string },
  socket: Socket,
  limits: ResolvedConnectionLimits,
  log: FastifyBaseLogger | undefined,
): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  let failure: unknown;
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    failure = new RequestTimeoutError(
      limits.requestTimeoutMs,
      `the request was not received in time: headers within ${limits.headersTimeoutMs} ms (--headers-timeout-ms) ` +
        `and the whole request within ${limits.requestTimeoutMs} ms (--request-timeout-ms); the connection is closed`,
    );
  } else if (error.code === 'HPE_HEADER_OVERFLOW') {
    failure = Object.assign(
      new Error(`the request headers are larger than the server accepts; received ${error.code}`),
      { statusCode: 431 },
    );
  } else {
    failure = new InvalidArgumentError(
      'request',
      'is not a valid HTTP/1.1 request',
      error.code ?? error.message,
    );
  }
  const { status, body } = toErrorResponse(failure);
  log?.debug({ code: error.code, status }, 'client error: answered and closed the connection');
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const text = JSON.stringify(body);
  // Closed once the answer is flushed, and in any case within a second (a client that reads nothing).
  setTimeout(() => socket.destroy(), 1000).unref();
  socket.end(
    `HTTP/1.1 ${status} ${status === 408 ? 'Request Timeout' : status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
      `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
    () => socket.destroy(),
  );
}
