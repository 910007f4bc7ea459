// Issue 37 items 6 and 9 in the text summary: a warning written above as it happened is counted,
// not repeated; fields kept in `_extra` are said once with their record counts; a table's
// metadata and state files say what they are and their size, never "0 rows, 0 bytes".
import { describe, expect, it } from 'vitest';
import { formatSummaryText } from '../../src/cli/summary.js';
import type { RunSummary } from '../../src/pipeline/runner.js';

const base: RunSummary = {
  pipeline: 'p',
  runId: 'r',
  status: 'succeeded',
  startedAt: '2026-11-23T00:00:00.000Z',
  finishedAt: '2026-11-23T00:01:00.000Z',
  durationMs: 60_000,
  source: 'products.query',
  records: { read: 10, written: { table: 10 }, invalid: 0, deadLettered: 0, skipped: 0, dropped: 0 },
  requests: 1,
  retries: 0,
  throttles: 0,
  pages: 1,
  bytes: 0,
  files: 3,
  objects: 0,
  outputs: [],
  recordsPerSecond: 10,
  warnings: [],
  warningCounts: {},
};

const warning = 'parquet: field "cnk" (integer 12345) is not in the Parquet schema; kept in the _extra JSON column';

describe('the text summary (issue 37)', () => {
  it('warnings written above are counted once; _extra fields get their record counts', () => {
    const text = formatSummaryText(
      { ...base, warnings: [warning, 'drop: fields[0] "x" was in none of the run\'s 10 records'] },
      { warningsShown: true, extraFields: { cnk: 548, 'brands[].logo': 1 } },
    );
    expect(text).not.toContain(warning);
    expect(text.split('\n').filter((l) => l.startsWith('  !'))).toEqual([
      '  ! 2 warnings (written above); kept in _extra: cnk (548 records), brands[].logo (1 record)',
    ]);
  });

  it('warnings not shown during the run (--log-level error) are listed, each once', () => {
    const text = formatSummaryText({ ...base, warnings: [warning] }, { warningsShown: false, extraFields: { cnk: 3 } });
    expect(text.split('\n').filter((l) => l.startsWith('  !'))).toEqual([
      `  ! ${warning}`,
      '  ! kept in _extra: cnk (3 records)',
    ]);
    expect(formatSummaryText(base, { warningsShown: true })).not.toContain('!');
  });

  it("a table's metadata and state files: what they are and their size, not rows", () => {
    const text = formatSummaryText({
      ...base,
      outputs: [
        { kind: 'file', location: 't/dt=x/part-0.parquet', rows: 10, bytes: 2_048, sink: 'table' },
        { kind: 'file', location: 't/_table/state.gz', rows: 0, bytes: 512, sink: 'table', role: 'state' },
        { kind: 'file', location: 't/_table.json', rows: 0, bytes: 15_377, sink: 'table', role: 'metadata' },
        { kind: 'object', location: 's3://b/t/metadata/v2.json', rows: 0, bytes: 0, sink: 'table', role: 'metadata' },
      ],
    });
    expect(text).toContain('wrote t/dt=x/part-0.parquet (table: 10 rows, 2,048 bytes)');
    expect(text).toContain('wrote t/_table/state.gz (table state, 512 bytes)');
    expect(text).toContain('wrote t/_table.json (table metadata, 15,377 bytes)');
    expect(text).toContain('wrote s3://b/t/metadata/v2.json (table metadata)');
    expect(text).not.toMatch(/[^\d,]0 rows/);
  });

  it('a run its stdout reader stopped (exit 0) is no failure', () => {
    const stopped: RunSummary = {
      ...base,
      status: 'aborted',
      error: { code: 'stdout.closed', message: 'stdout was closed by its reader' },
    } as RunSummary;
    const text = formatSummaryText(stopped, { readerStopped: true });
    expect(text.split('\n')[0]).toMatch(/^✓ p stopped when its reader closed stdout in /);
    expect(text).not.toMatch(/aborted|error \[/);
    expect(formatSummaryText(stopped).split('\n')[0]).toMatch(/^✗ p aborted/);
  });
});
