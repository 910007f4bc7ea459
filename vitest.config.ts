import { defineConfig } from 'vitest/config';

// Two cores on CI: run test files in a couple of forks, and give loopback
// integration tests room without hiding hangs.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', './test/reporters/summary-line.ts'],
  },
});
