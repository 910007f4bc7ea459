// Fault matrix: NDJSON streams (products.stream) breaking in each way ARCHITECTURE.md
// (API rules) names, through the built CLI (real exit codes and JSON log lines) against
// a sandbox in this process. A cut stream is resumed and the run succeeds with
// every id exactly once; a malformed line, an `{"error":...}` line or fewer
// lines than `total` on every request (a stream short once is resumed, see
// truncation.test.ts) fail the run (exit 1, the error names the index), with
// nothing under a final name, no temp file and the cursor left as it was.
import { describe, expect, it } from 'vitest';
import type { SandboxFaults } from '../../src/sandbox/index.js';
import {
  expectExactIds,
  faultFixture,
  jsonLines,
  jsonlIds,
  leftBehind,
  parquetIds,
  runCli,
  runPath,
  sandboxEnv,
  summaryRunId,
} from './support.js';

const PIPELINE = `name: streamed
source:
  type: products.stream
  filter: { status: [active, inactive, replaced] }
transforms:
  - { type: validate }
sinks:
  - { type: parquet, path: "out/products-{run}.parquet" }
  - { type: jsonl, path: "out/products-{run}.jsonl.gz" }
state: { path: .state/streamed.json }
`;
const f = faultFixture('streamed', PIPELINE, { products: 2500, seed: 41 });

async function run(faults: SandboxFaults) {
  f.sandbox.setFaults(faults);
  const result = await runCli(['run', f.ws.file], { cwd: f.ws.dir, env: sandboxEnv(f.sandbox) });
  return { ...result, lines: jsonLines(result.stderr) };
}

describe('NDJSON stream faults', () => {
  it('cut mid-way (twice): resumed where it broke off; every id once; exit 0', async () => {
    const result = await run({ streamCut: { afterLines: 700, times: 2 } });
    expect(result.code, result.stderr).toBe(0);
    expect(f.sandbox.stats.faults.streamCuts).toBe(2);
    expect(result.lines.filter((l) => l.code === 'source.stream_resumed')).toHaveLength(2);
    const runId = summaryRunId(result.stderr);
    expectExactIds(await parquetIds(f.ws.path(runPath('out/products-{run}.parquet', runId))), f.expected);
    expectExactIds(await jsonlIds(f.ws.path(runPath('out/products-{run}.jsonl.gz', runId))), f.expected);
    expect(await leftBehind(f.ws.path('out'))).toEqual({
      final: [`products-${runId}.jsonl.gz`, `products-${runId}.parquet`],
      temp: [],
    });
    expect((await f.ws.readState()).cursor).toBeGreaterThan(1);
    expect(result.lines.find((l) => l.event === 'summary')).toMatchObject({
      status: 'succeeded',
      records: { read: f.expected.length },
    });
  });

  it.each([
    ['a malformed line', { malformedLine: { atIndex: 500 } }, 'stream.malformed_line', 500],
    ['an {"error":...} line', { errorLine: { atIndex: 300 } }, 'stream.error_line', 300],
    ['fewer lines than total, on every request', { shortStream: { dropLast: 3, times: Infinity } }, 'stream.short', -3],
  ] as const)(
    '%s: exit 1 naming the index; nothing published; cursor unchanged',
    async (_name, faults, code, index) => {
      const result = await run(faults);
      expect(result.code, result.stderr).toBe(1);
      const at = index < 0 ? f.expected.length + index : index;
      const failed = result.lines.find((l) => l.event === 'failed');
      expect(failed, result.stderr).toMatchObject({
        level: 'error',
        code,
        message: expect.stringContaining(`index ${at}`),
      });
      expect(result.lines.find((l) => l.event === 'summary')).toMatchObject({
        status: 'failed',
        outputs: [],
        cursor: { previous: 1, stored: false },
      });
      expect(await leftBehind(f.ws.path('out'))).toEqual({ final: [], temp: [] });
      expect(await f.ws.read('.state/streamed.json')).toBe(f.ws.state);
      expect(result.stdout).toBe('');
    },
  );
});
