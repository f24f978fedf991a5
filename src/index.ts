/**
 * The runtime entry (`query-sandbox`): `createRuntime`, its options, stats, errors and events, the
 * sandbox and query-priority stores. It loads neither fastify, pino nor etcd3 (`npm run
 * bench:import` lists what it loads and times it). Other entries: `query-sandbox/engine` (types for
 * engine authors), `query-sandbox/server` (the HTTP API over a runtime), `query-sandbox/cluster`
 * (the coordinator and the etcd stores); the CLI is the `query-sandbox` command.
 */
export {
  createRuntime,
  type CloseOptions,
  type LaneStats,
  type SearchCallOptions,
  type NodeStats,
  type Runtime,
  type SandboxStats,
  type SearchRequest,
} from './runtime.js';
export type { SearchHit, SearchResponse, SearchService, SearchTotal } from './execution/search-service.js';
export type { ResolvedRuntimeOptions, RuntimeOptions, TaskEndEvent } from './runtime-options.js';
export type { RuntimeLogger } from './runtime-logger.js';
export * from './errors.js';
export type {
  EngineBody,
  EngineDescription,
  EngineInitContext,
  EngineModule,
  EnginePrepareContext,
  EngineRequest,
  EngineResult,
  EngineShape,
  QueryAttributes,
  TaskContext,
} from './pool/engine-module.js';
export {
  type CancellationReason,
  ChannelName,
  type RejectionReason,
  type RuntimeEvent,
  type SandboxStateEvent,
  type TaskCancellingEvent,
  type TaskEndedEvent,
  type TaskEndOutcome,
  type TaskQueuedEvent,
  type TaskRejectedEvent,
  type TaskStartedEvent,
  type WorkerReplacedEvent,
} from './diagnostics.js';
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
export type {
  PercentLimitInput,
  ResourceLimitInput,
  ResourceLimitsInput,
  RootSandboxFileEntry,
  SandboxFileDocument,
  SandboxFileEntry,
  SandboxInput,
  SandboxPatch,
  SelectionAttributeInput,
} from './sandbox/sandbox-input.js';
export { type CancellationGrace, MAX_CANCELLATION_GRACE_MS } from './sandbox/cancellation-grace.js';
export { loadSandboxFile, parseSandboxDefinitions } from './sandbox/sandbox-file.js';
export { SandboxRegistry, type SandboxRegistryOptions } from './sandbox/sandbox-registry.js';
export { MemorySandboxStore, type SandboxStore, type StoredSandboxes } from './sandbox/sandbox-store.js';
export { FileSandboxStore } from './sandbox/file-sandbox-store.js';
export { toSandboxDocument } from './sandbox/sandbox-document.js';
export {
  DEFAULT_QUERY_PRIORITY,
  parseQueryPriority,
  type QueryAttributeInput,
  type QueryPriorityConfig,
  type QueryPriorityDocument,
  type QueryPriorityInput,
  type QueryPriorityRuleInput,
} from './scheduler/query-priority.js';
export {
  FileQueryPriorityStore,
  MemoryQueryPriorityStore,
  type QueryPriorityStore,
} from './scheduler/query-priority-store.js';
export type { SchedulerStats } from './scheduler/task-scheduler.js';
export { WritableIndices } from './indices/writable-indices.js';
export { murmur3Hash } from './routing/murmur3.js';
export { resolveShardRouting, shardId } from './routing/shard-routing.js';
export { RuntimeFeed, type RuntimeSnapshot, withTaskEnds } from './observability/runtime-feed.js';
// Prometheus metrics (prom-client) are in the `query-sandbox/metrics` entry (observability/index.ts).
