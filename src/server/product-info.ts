/**
 * The product handshake the official clients check: the `x-elastic-product: Elasticsearch` header on
 * every answer (the Elasticsearch JavaScript clients 8.x and 9.x throw `ProductNotSupportedError` on a
 * 2xx answer without it), and `GET /` in Elasticsearch's shape (`name`, `cluster_name`, `cluster_uuid`,
 * `version.number`, `tagline`), with `HEAD /` answering 200.
 *
 * The announced version is `ANNOUNCED_VERSION` (9.3.0), for three reasons: the 9.x REST layer accepts
 * both the 8.x clients' `compatible-with=8` and the 9.x clients' `compatible-with=9` media types (REST
 * API compatibility covers the previous major), which is what this server does; the document routing
 * this project computes (`src/routing/`: `routing_num_shards` and the routing factor) is the one of
 * indices created before Elasticsearch 9.4.0, which routes new indices by `hash % number_of_shards`;
 * and the APIs served here have their 9.x shapes (`_index_template`, no mapping types).
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';

/** The Elasticsearch version `GET /` announces (see module doc). */
export const ANNOUNCED_VERSION = '9.3.0';

/** The header and value the Elasticsearch clients' product check reads. */
export const PRODUCT_HEADER = 'x-elastic-product';
export const PRODUCT_NAME = 'Elasticsearch';

/** The cluster name every node of this project reports (`cluster_name`). */
export const CLUSTER_NAME = 'query-sandbox';

/**
 * A stable cluster UUID (22 URL-safe base64 characters, the length of Elasticsearch's) derived from
 * what identifies the cluster: the single node's id, or the coordinator's data node ids.
 */
export function clusterUuidOf(members: readonly string[]): string {
  return createHash('sha256')
    .update(`${CLUSTER_NAME}\u0000${members.join('\u0000')}`)
    .digest('base64url')
    .slice(0, 22);
}

/** What `GET /` describes. */
export interface RootInfo {
  /** This node's name (its id). */
  readonly name: string;
  readonly clusterUuid: string;
  /** Fields of this project appended after Elasticsearch's (indices, roles, data nodes). */
  readonly extra?: Readonly<Record<string, unknown>> | undefined;
}

/** `GET /` in Elasticsearch's shape (see module doc), then `extra`. */
export function rootView(info: RootInfo): Record<string, unknown> {
  return {
    name: info.name,
    cluster_name: CLUSTER_NAME,
    cluster_uuid: info.clusterUuid,
    version: {
      number: ANNOUNCED_VERSION,
      build_flavor: 'default',
      build_type: 'query-sandbox',
      build_snapshot: false,
      minimum_wire_compatibility_version: '8.19.0',
      minimum_index_compatibility_version: '8.0.0',
    },
    tagline: 'query-sandbox: governed search execution',
    ...info.extra,
  };
}

/** Adds the product header to every answer of `app` (errors and 404s included). */
export function installProductHeader(app: FastifyInstance): void {
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header(PRODUCT_HEADER, PRODUCT_NAME);
    return payload;
  });
}

/** `GET /` (and `HEAD /`, which fastify derives from it: 200 without a body). `info` is read at each call. */
export function registerRootRoutes(app: FastifyInstance, info: () => RootInfo): void {
  app.get('/', { config: { auth: 'read' } }, async () => rootView(info()));
}
