import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Several suites start worker pools; running files one at a time keeps CPU-measuring tests honest on 2 cores.
    fileParallelism: false,
  },
});
