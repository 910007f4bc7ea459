import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

/**
 * The files that take minutes (fault matrices, end-to-end runs of every profile, the installed
 * package), longest first. Without a cache of earlier durations (CI) vitest starts the largest
 * files first, and the kill matrices are small files over a shared module: started last, one of
 * them would run alone at the end while the other worker idles. Starting the long ones first
 * (longest-processing-time scheduling) lets the many short files fill in behind them.
 */
const LONG_FILES = [
  'test/cli/profiles.test.ts',
  'test/faults/kill-every-step-iceberg-late.test.ts',
  'test/faults/kill-every-step-iceberg.test.ts',
  'test/faults/kill-every-step-s3.test.ts',
  'test/faults/kill-every-step.test.ts',
  'test/faults/kill-every-step-s3-sink.test.ts',
  'test/docs/readme-commands.test.ts',
  'test/cli/package.test.ts',
  'test/docs/orchestrators.test.ts',
  'test/docs/code-blocks.test.ts',
];

class LongFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = LONG_FILES.findIndex((file) => spec.moduleId.endsWith(file));
      return at < 0 ? LONG_FILES.length : at;
    };
    // Stable: the rest keep vitest's own order (failed first, then by duration or size).
    return sorted
      .map((spec, index) => ({ spec, index }))
      .sort((a, b) => rank(a.spec) - rank(b.spec) || a.index - b.index)
      .map(({ spec }) => spec);
  }
}

// Two cores on CI: run test files in a couple of forks (child processes: many tests change
// process.env or spawn the CLI, which threads would share), and give loopback integration tests
// room without hiding hangs.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    sequence: { sequencer: LongFilesFirst },
    reporters: ['default', './test/reporters/summary-line.ts'],
    // Stages made in code print their warnings on stderr (src/code-warnings.ts); the suite's own
    // would bury its output. Tests of that output ask for it explicitly.
    env: { CATALOG_STREAMS_WARNINGS: 'silent' },
  },
});
