/**
 * Who may call which route: one check at the HTTP edge, in a fastify `onRequest` hook, so a refused
 * request is answered before its body is read or parsed.
 *
 * Each route declares its role in its `config` as `auth`:
 * - `read`: anyone (searches, GETs, stats, `_cat`);
 * - `write`: the writer token or the admin token (documents, `_bulk`, refresh);
 * - `admin`: the admin token only (index management, templates, settings, sandboxes, query priority);
 * - `internal`: the cluster secret only (a data node's `/_internal/*` routes, called by other nodes).
 *
 * A route that declares nothing is `read` for GET and HEAD and `admin` for every other method, so a
 * write route added without a declaration is closed, not open. A route under `/_internal/` is
 * `internal` whatever it declares. Unknown routes are not checked (they answer 404).
 *
 * Tokens travel as `Authorization: Bearer <token>` (RFC 6750). 401 (`QS_UNAUTHORIZED`, with a
 * `WWW-Authenticate: Bearer` challenge as RFC 9110 §11.6.1 asks) without a token or with a header of
 * another shape; 403 (`QS_ADMIN_FORBIDDEN`) with a token that is wrong or whose role does not cover
 * the route. Tokens are compared in constant time (SHA-256 of both sides, then `timingSafeEqual`),
 * every configured token every time, so neither the length nor which token came close shows in the
 * timing. `insecureSkipAuth` opens `read`, `write` and `admin` routes to everyone (local experiments
 * only); `internal` routes always need the cluster secret.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AdminForbiddenError, UnauthorizedError } from '../errors.js';

/** The role a route needs (see module doc). */
export type RouteAuth = 'read' | 'write' | 'admin' | 'internal';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The role this route needs; see `server/route-auth.ts`. Default: `read` for GET/HEAD, else `admin`. */
    auth?: RouteAuth;
  }
}

/** The credentials a server accepts. */
export interface AuthOptions {
  /** Allows every route but `internal` ones. Without it, `write` and `admin` routes answer 401. */
  readonly adminToken?: string | undefined;
  /** Allows `read` and `write` routes (documents and `_bulk`). @default none */
  readonly writerToken?: string | undefined;
  /** Allows `internal` routes (node-to-node calls). Without it they answer 401. @default none */
  readonly clusterSecret?: string | undefined;
  /** Opens `read`, `write` and `admin` routes to everyone: for local experiments only. @default false */
  readonly insecureSkipAuth?: boolean | undefined;
}

/** URL prefix of the node-to-node routes (as `cluster/internal-protocol.ts` names it). */
const INTERNAL_PREFIX = '/_internal/';

/** Requests that presented the cluster secret: only their answers may carry node stats. */
const internalCallers = new WeakSet<FastifyRequest>();

/** True when `request` was authenticated as a node-to-node call (it presented the cluster secret). */
export function isInternalCaller(request: FastifyRequest): boolean {
  return internalCallers.has(request);
}

/** The role a route needs: its declaration, else the safe default of its method (see module doc). */
export function routeAuthOf(method: string, url: string, declared: RouteAuth | undefined): RouteAuth {
  if (url.startsWith(INTERNAL_PREFIX)) return 'internal';
  if (declared !== undefined) return declared;
  return method === 'GET' || method === 'HEAD' ? 'read' : 'admin';
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Constant-time equality of `presented` and `expected` (false when `expected` is not set). */
function sameToken(presented: Buffer, expected: Buffer | undefined): boolean {
  // Compared even when unset (against itself, then discarded), so the work does not depend on it.
  const equal = timingSafeEqual(presented, expected ?? presented);
  return expected !== undefined && equal;
}

const ROLE_WORDS: Record<RouteAuth, string> = {
  read: 'anyone',
  write: 'the writer or the admin token',
  admin: 'the admin token',
  internal: 'the cluster secret',
};

/**
 * The compiled check of `options`: throws for a request that may not call a route needing `role`.
 * @param route how to name the route in messages, e.g. `DELETE /:index`.
 * @returns whether the caller presented the cluster secret.
 * @throws UnauthorizedError (401) without a usable `Authorization` header or credentials configured;
 *   AdminForbiddenError (403) with a wrong token or one whose role does not cover `role`.
 */
export function createTokenCheck(
  options: AuthOptions,
): (role: RouteAuth, header: string | undefined, route: string) => boolean {
  const admin = options.adminToken === undefined ? undefined : digest(options.adminToken);
  const writer = options.writerToken === undefined ? undefined : digest(options.writerToken);
  const secret = options.clusterSecret === undefined ? undefined : digest(options.clusterSecret);
  const open = options.insecureSkipAuth === true;
  return (role, header, route) => {
    if (role === 'read' || (open && role !== 'internal')) return false;
    const needs = `${route} needs ${ROLE_WORDS[role]}`;
    if (role === 'internal' ? secret === undefined : admin === undefined && writer === undefined) {
      throw new UnauthorizedError(
        role === 'internal'
          ? `${needs}, and this node has no cluster secret configured (QUERY_SANDBOX_CLUSTER_SECRET)`
          : `${needs}, and this server has no token configured: writes are disabled (QUERY_SANDBOX_ADMIN_TOKEN)`,
      );
    }
    if (header === undefined || header.length === 0) {
      throw new UnauthorizedError(
        `Authorization is required: ${needs} (Authorization: Bearer <token>); received nothing`,
      );
    }
    const match = /^Bearer +(\S+) *$/i.exec(header);
    if (match === null) {
      const scheme = /^\S*/.exec(header)![0];
      throw new UnauthorizedError(
        `Authorization must read Bearer <token>: ${needs}; received a header of ${header.length} characters` +
          (scheme.length > 0 && scheme.length < header.length
            ? ` with scheme ${JSON.stringify(scheme.slice(0, 20))}`
            : ''),
      );
    }
    const presented = digest(match[1]!);
    const isAdmin = sameToken(presented, admin);
    const isWriter = sameToken(presented, writer);
    const isSecret = sameToken(presented, secret);
    if (role === 'internal') {
      if (isSecret) return true;
      throw new AdminForbiddenError(
        `Authorization must carry the cluster secret: ${needs}; received ${isAdmin || isWriter ? 'a client token' : 'a wrong token'} (${match[1]!.length} characters)`,
      );
    }
    if (isAdmin || (isWriter && role === 'write')) return false;
    throw new AdminForbiddenError(
      isWriter
        ? `Authorization carries the writer token, which allows documents and _bulk only: ${needs}; received the writer token`
        : `Authorization carries a token that is neither the admin nor the writer token: ${needs}; received a wrong token (${match[1]!.length} characters)`,
    );
  };
}

/**
 * Adds the one authorisation hook to `app` (before its routes are registered or after: hooks apply to
 * all). `sendFailure` answers a refusal in the server's error shape.
 */
export function installRouteAuth(
  app: FastifyInstance,
  options: AuthOptions,
  sendFailure: (reply: FastifyReply, error: unknown) => FastifyReply,
): void {
  const check = createTokenCheck(options);
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404) return;
    const url = request.routeOptions.url ?? request.url;
    const role = routeAuthOf(request.method, url, request.routeOptions.config?.auth);
    try {
      if (check(role, headerOf(request), `${request.method} ${url}`)) internalCallers.add(request);
    } catch (error) {
      if (error instanceof UnauthorizedError)
        reply.header('www-authenticate', 'Bearer realm="query-sandbox"');
      return sendFailure(reply, error);
    }
  });
}

function headerOf(request: FastifyRequest): string | undefined {
  const value = request.headers.authorization;
  return Array.isArray(value) ? value[0] : value;
}
