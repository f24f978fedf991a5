/**
 * The HTTP entry (`query-sandbox/server`): the Elasticsearch/OpenSearch-style API over a runtime
 * (fastify), the coordinator's server and the data-node routes. Loads fastify and pino.
 */
export { buildHttpServer, type HttpServerOptions } from './http-server.js';
export { buildCoordinatorServer } from './coordinator-server.js';
export { registerDataNodeRoutes } from './data-node-routes.js';
