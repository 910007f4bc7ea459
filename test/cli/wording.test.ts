// The numbers in what a person reads: singular nouns for one ("1 request", never "1 requests")
// and thousands separators, in the summary lines, the dry-run plan and the progress display.
import { describe, expect, it } from 'vitest';
import { formatPlanText, type PlanReport } from '../../src/cli/plan-output.js';
import { formatSummaryText } from '../../src/cli/summary.js';
import type { RunSummary } from '../../src/pipeline/runner.js';

const summary = (n: number, one: boolean): RunSummary => ({
  pipeline: 'p',
  runId: 'r',
  status: 'succeeded',
  startedAt: '2026-11-23T00:00:00.000Z',
  finishedAt: '2026-11-23T00:01:00.000Z',
  durationMs: 60_000,
  source: 'products.query',
  records: { read: n, written: { parquet: n }, invalid: n, deadLettered: n, skipped: 0, dropped: n },
  requests: one ? 1 : 12_345,
  retries: one ? 1 : 2_000,
  throttles: one ? 1 : 1_500,
  pages: one ? 1 : 12_000,
  bytes: n,
  files: 1,
  objects: 0,
  outputs: [
    {
      sink: 'parquet',
      location: 'out/p.parquet',
      rows: n,
      bytes: one ? 1 : 3_088_867,
    } as RunSummary['outputs'][number],
  ],
  recordsPerSecond: n,
  warnings: [],
  warningCounts: {},
});

describe('wording of counts', () => {
  it('summary: one of each in the singular; large counts with separators', () => {
    const one = formatSummaryText(summary(1, true)).split('\n');
    expect(one[1]).toBe('  read 1 record from products.query · 1 rec/s · 1 page · 1 request · 1 retry · 1 × 429');
    expect(one.at(-1)).toBe('  wrote out/p.parquet (parquet: 1 row, 1 byte)');
    const many = formatSummaryText(summary(1_234_567, false)).split('\n');
    expect(many[1]).toBe(
      '  read 1,234,567 records from products.query · 1,234,567 rec/s · 12,000 pages · 12,345 requests · 2,000 retries · 1,500 × 429',
    );
    expect(many[2]).toBe('  invalid 1,234,567 (dead-lettered 1,234,567, skipped 0) · dropped by transforms 1,234,567');
    expect(many.at(-1)).toBe('  wrote out/p.parquet (parquet: 1,234,567 rows, 3,088,867 bytes)');
  });

  it('a failed run names the cursor it left, and claims none when it never read one (a full refresh keeps the stored one)', () => {
    const failed = { ...summary(1, true), status: 'failed' as const };
    const incremental = formatSummaryText({ ...failed, cursor: { previous: 1700, stored: false, location: 's.json' } });
    expect(incremental).toContain('  cursor left at 1700 in s.json: the next run redoes this work');
    const fullRefresh = formatSummaryText({ ...failed, cursor: { stored: false, location: 's.json' } });
    expect(fullRefresh).toContain('  state s.json left as it was: the next run redoes this work');
    expect(fullRefresh).not.toContain('(none)');
  });

  it('the dry-run plan: singular for one slice and one request, separators, rates with their noun', () => {
    const report: PlanReport = {
      pipelines: [
        {
          pipeline: 'a',
          source: 'brands.query',
          total: 1,
          slices: [{ total: 1, requests: 1 }],
          requests: 1,
          estimatedSeconds: 1,
          planRequests: 1,
          rateLimit: 1,
          keys: 1,
          transforms: [],
          outputs: [],
        },
        {
          pipeline: 'b',
          source: 'products.query',
          total: 1_234_567,
          slices: [{ label: 'createdAt 1..2', total: 12_000, requests: 1_200 }],
          requests: 4_939,
          estimatedSeconds: 2_963,
          planRequests: 12,
          rateLimit: 6_000,
          keys: 1,
          transforms: [],
          outputs: [],
        },
      ],
      all: { requests: 4_940, estimatedSeconds: 2_964, rateLimit: 6_000, keys: 1 },
    };
    const lines = formatPlanText(report).split('\n');
    expect(lines).toContain('  1 record in 1 slice; ~1 request, ~0:01 at 1 request/min (planning used 1 request)');
    expect(lines).toContain('    whole query: 1 record, 1 request');
    expect(lines).toContain(
      '  1,234,567 records in 1 slice; ~4,939 requests, ~49:23 at 6,000 requests/min (planning used 12 requests)',
    );
    expect(lines).toContain('    createdAt 1970-01-01T00:00:01Z..1970-01-01T00:00:02Z: 12,000 records, 1,200 requests');
    expect(lines).toContain('all 2 pipelines share one request budget: ~4,940 requests, ~49:24 at 6,000 requests/min');
  });

  it('the dry-run plan with several keys: the keys, the rate of each and of all together', () => {
    const report: PlanReport = {
      pipelines: [
        {
          pipeline: 'p',
          source: 'products.query',
          total: 12_000,
          slices: [{ total: 12_000, requests: 48 }],
          requests: 49,
          estimatedSeconds: 8,
          planRequests: 1,
          rateLimit: 120,
          keys: 3,
          transforms: [],
          outputs: [],
        },
      ],
      all: { requests: 49, estimatedSeconds: 8, rateLimit: 120, keys: 3 },
    };
    expect(formatPlanText(report).split('\n')).toContain(
      '  12,000 records in 1 slice; ~49 requests, ~0:08 at 3 keys × 120 requests/min (360/min) (planning used 1 request)',
    );
  });
});
