/**
 * JSON views of the runtime for the REST API: sandboxes in the seed-000 shape, sandbox stats shaped
 * like OpenSearch's `_wlm/stats`, node stats. Usage is a ratio in 0..1.
 */
import type { Runtime } from '../runtime.js';
import type { Sandbox } from '../sandbox/sandbox.js';

/** A sandbox as the API shows it (seed 000 field names; limits as ratios). */
export function sandboxView(s: Sandbox): Record<string, unknown> {
  const selectionAttributes: { name: string; value: readonly string[] }[] = [];
  if (s.selectionAttributes.userPattern.length > 0) {
    selectionAttributes.push({ name: 'userPattern', value: s.selectionAttributes.userPattern });
  }
  if (s.selectionAttributes.indicesPattern.length > 0) {
    selectionAttributes.push({ name: 'indicesPattern', value: s.selectionAttributes.indicesPattern });
  }
  return {
    _id: s.id,
    name: s.name,
    parent_id: s.parentId,
    priority: s.priority,
    mode: s.mode,
    resourceConsumptionLimits: { ...s.limits },
    selectionAttributes,
    tags: s.tags,
  };
}

/** `GET /_sandbox`: `{ "<id>": {...} }`, root first. */
export function sandboxesView(runtime: Runtime): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const s of runtime.sandboxes()) out[s.id] = sandboxView(s);
  return out;
}

/** `GET /_sandbox/_stats`: `{ "<nodeId>": { "sandboxes": { "<id>": {...} } } }`. */
export function sandboxStatsView(runtime: Runtime): Record<string, unknown> {
  const sandboxes: Record<string, unknown> = {};
  for (const [id, s] of runtime.sandboxStats()) {
    const c = s.counters;
    sandboxes[id] = {
      state: s.state,
      running: s.running,
      queued: s.queued,
      total_completions: c.completions,
      total_rejections: c.rejections,
      total_cancellations: c.cancellations,
      hard_cancellations: c.hardCancellations,
      failures: c.failures,
      cpu: {
        current_usage: s.usage.cpu,
        rejections: c.cpu.rejections,
        cancellations: c.cpu.cancellations,
        would_reject: c.cpu.wouldReject,
        would_cancel: c.cpu.wouldCancel,
      },
      memory: {
        current_usage: s.usage.memory,
        rejections: c.memory.rejections,
        cancellations: c.memory.cancellations,
        would_reject: c.memory.wouldReject,
        would_cancel: c.memory.wouldCancel,
      },
    };
  }
  return { [runtime.options.nodeId]: { sandboxes } };
}

/** `GET /_nodes/stats`. */
export function nodeStatsView(runtime: Runtime): Record<string, unknown> {
  const n = runtime.nodeStats();
  const mem = process.memoryUsage();
  return {
    _nodes: { total: 1, successful: 1, failed: 0 },
    nodes: {
      [n.nodeId]: {
        name: n.nodeId,
        cores: n.cores,
        duress: n.duress,
        enforcement: n.enforcement,
        cpu: { usage: n.usage.cpu },
        heap: { usage: n.usage.memory, main_thread_heap_used_bytes: mem.heapUsed, rss_bytes: mem.rss },
        workers: {
          threads: n.threads,
          live: n.liveWorkers,
          running: n.running,
          queued: n.queued,
          started_total: n.workersStarted,
          startup_ms: n.workerStartupMs.map((ms) => Math.round(ms)),
          last_replacement_startup_ms:
            n.lastReplacementStartupMs === undefined ? null : Math.round(n.lastReplacementStartupMs),
        },
        governor: { ticks: n.governorTicks, interval_ms: runtime.options.intervalMs },
        indices: n.engineIndices ?? null,
      },
    },
  };
}
