import { defineConfig } from 'vitest/config';

/**
 * Test files whose assertions read real CPU or wall time: engines that spin, usage the governor or the
 * samplers measure, lanes and thread priorities, timing bounds, processes of a whole cluster. They run
 * in the `cpu` project, one file at a time and after the others, so that no other test file competes
 * with them for the cores; their bounds are tolerant of a machine busy with other work.
 */
export const CPU_BOUND_TESTS = [
  'test/runtime.test.ts',
  'test/runtime-lifecycle.test.ts',
  'test/runtime-workload-management.test.ts',
  'test/runtime-overload.test.ts',
  'test/server/client-disconnect.test.ts',
  'test/examples/orama-products.test.ts',
  'test/diagnostics.test.ts',
  'test/pool/cancellation-contract.test.ts',
  'test/pool/lane-pool.test.ts',
  'test/native-shim/thread-cpu-clock.test.ts',
  'test/native-shim/thread-priority.test.ts',
  'test/native-shim/worker-heap-probe.test.ts',
  'test/tracking/node-usage-sampler.test.ts',
  'test/admission/node-usage-averages.test.ts',
  'test/runtime-node-usage.test.ts',
  'test/observability/runtime-metrics.test.ts',
  'test/server/connection-limits.test.ts',
  'test/engine/minisearch-engine-full-corpus.test.ts',
  'test/cli/cluster.test.ts',
  'test/cluster/failover-e2e.test.ts',
  'test/bench/thread-time.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'parallel',
          include: ['test/**/*.test.ts'],
          exclude: CPU_BOUND_TESTS,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'cpu',
          include: CPU_BOUND_TESTS,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
