/**
 * The metrics entry (`query-sandbox/metrics`): Prometheus metrics over a runtime or a coordinator
 * (prom-client). Kept apart from the runtime entry so that an embedding app that does not export
 * metrics does not load prom-client; `RuntimeFeed`, which needs nothing, stays in the runtime entry.
 */
export { type MetricsOptions, RuntimeMetrics } from './runtime-metrics.js';
export { CoordinatorFeed, CoordinatorMetrics } from './coordinator-metrics.js';
