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
    // Stages made in code print their warnings on stderr (src/code-warnings.ts); the suite's own
    // would bury its output. Tests of that output ask for it explicitly.
    env: { CATALOG_STREAMS_WARNINGS: 'silent' },
  },
});
