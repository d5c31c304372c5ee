import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Most tests wait on child processes, simulated latency and backoff rather than
    // compute: three test files at a time keep two cores busy (the suite takes about
    // 6.5 minutes instead of 11 with one file per core). The timeouts are safety nets
    // for a loaded machine, not limits any test is meant to approach.
    maxWorkers: 3,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
