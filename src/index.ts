/** Public exports of query-sandbox. */
export {
  createRuntime,
  type Runtime,
  type SearchRequest,
  type SearchCallOptions,
  type SandboxStats,
  type NodeStats,
} from './runtime.js';
export type { RuntimeOptions, ResolvedRuntimeOptions, TaskEndEvent } from './runtime-options.js';
export * from './errors.js';
export type {
  EngineModule,
  EngineRequest,
  EngineDescription,
  EnginePrepareContext,
  EngineInitContext,
  TaskContext,
} from './pool/engine-module.js';
export { EnforcementMode, type SandboxState } from './governor/decide.js';
export type { GovernorSnapshot, GovernorStats } from './governor/governor.js';
export {
  ROOT_SANDBOX_ID,
  SandboxMode,
  RESOURCES,
  type Resource,
  type ResourceLimit,
  type Sandbox,
  type SelectionAttributes,
} from './sandbox/sandbox.js';
export { loadSandboxFile, parseSandboxDefinitions } from './sandbox/sandbox-file.js';
export { buildHttpServer, type HttpServerOptions } from './server/http-server.js';
export { SandboxRegistry, type SandboxRegistryOptions } from './sandbox/sandbox-registry.js';
export { MemorySandboxStore, type SandboxStore, type StoredSandboxes } from './sandbox/sandbox-store.js';
export { FileSandboxStore } from './sandbox/file-sandbox-store.js';
export { toSandboxDocument } from './sandbox/sandbox-document.js';
export {
  DEFAULT_QUERY_PRIORITY,
  parseQueryPriority,
  type QueryPriorityConfig,
  type QueryPriorityDocument,
} from './scheduler/query-priority.js';
export {
  FileQueryPriorityStore,
  MemoryQueryPriorityStore,
  type QueryPriorityStore,
} from './scheduler/query-priority-store.js';
export type { SchedulerStats } from './scheduler/task-scheduler.js';
export { Coordinator } from './cluster/coordinator.js';
export { buildCoordinatorServer } from './server/coordinator-server.js';
export { registerDataNodeRoutes } from './server/data-node-routes.js';
export { WritableIndices } from './indices/writable-indices.js';
export { murmur3Hash } from './routing/murmur3.js';
export { resolveShardRouting, shardId } from './routing/shard-routing.js';
export { RuntimeFeed, type RuntimeSnapshot, withTaskEnds } from './observability/runtime-feed.js';
export { type MetricsOptions, RuntimeMetrics } from './observability/runtime-metrics.js';
export { CoordinatorFeed, CoordinatorMetrics } from './observability/coordinator-metrics.js';
