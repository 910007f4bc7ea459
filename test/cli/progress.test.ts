// What a run shows while it works. On a TTY a live display (renderProgress);
// off a TTY JSON log lines, every few seconds and at each notable event, and
// the summary as JSON; --quiet keeps warnings, errors and the summary only.
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachProgress, formatDuration, progressFigures, renderProgress } from '../../src/cli/progress.js';
import { RunEvents } from '../../src/events.js';
import { Redactor } from '../../src/pipeline/env.js';
import { RunStats } from '../../src/pipeline/run-stats.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { jsonLines, runCli, sandboxEnv, workspace } from './cli-process.js';

function statsWith(events: RunEvents): RunStats {
  const stats = new RunStats(events);
  (stats as { startedAt: number }).startedAt = 1_000_000;
  return stats;
}

describe('renderProgress (TTY)', () => {
  it('a line per pipeline: records of the planned total with a bar and ETA, requests, retries, 429s, invalid; then the budget', () => {
    const events = new RunEvents();
    const stats = statsWith(events);
    // The source announces only its current slice: the plan's total is what counts.
    events.emit('total', { endpoint: 'products.query', total: 1_200, capped: true });
    for (let i = 0; i < 4; i++) {
      events.emit('request', { endpoint: 'products.query', status: 200, durationMs: 5, attempt: 1 });
      events.emit('page', { endpoint: 'products.query', records: 250 });
    }
    events.emit('retry', { endpoint: 'products.query', attempt: 1, reason: '503', delayMs: 500 });
    events.emit('throttle', { endpoint: 'products.query', delayMs: 1000, retryAfter: false });
    events.emit('invalid', { stage: 'validate', action: 'skip', message: 'bad' });
    const now = 1_000_000 + 20_000;
    const nightly = { name: 'nightly', stats, plan: { total: 4_000, requests: 16 } };
    // 4 of 16 requests in 20 s: 5 s each (slower than the budget's 0.6 s), 12 left: 60 s.
    expect(renderProgress([nightly], 100, 1_000_000, now)).toBe(
      'nightly ██████░░░░░░░░░░░░░░░░░░ 1,000 / 4,000 records 25%  ETA 1:00 · 4 requests · 1 retry · 1 × 429 · 1 invalid · 50 rec/s\n' +
        'budget 4/min of 100 requests · 0:20 elapsed',
    );
    // Early on, the budget bounds the pace: 12 requests left at 100/min are at least 7.2 s.
    expect(progressFigures(nightly, 100, 1_000_000 + 1_000).etaSeconds).toBeCloseTo(7.2, 5);
    expect(progressFigures({ ...nightly, finished: true }, 100, now)).toEqual({
      records: 1_000,
      total: 4_000,
      capped: false,
      percent: 25,
    });
  });

  it('without a plan: the announced total ("≥" when capped) and the record rate; singular nouns; thousands separators', () => {
    const events = new RunEvents();
    const stats = statsWith(events);
    events.emit('total', { endpoint: 'media.stream', total: 10_500, capped: true });
    events.emit('request', { endpoint: 'media.stream', status: 200, durationMs: 5, attempt: 1 });
    events.emit('page', { endpoint: 'media.stream', records: 500 });
    for (let i = 0; i < 1_234; i++) events.emit('invalid', { stage: 'validate', action: 'skip', message: 'bad' });
    const lines = renderProgress([{ name: 'demo', stats }], Infinity, 1_000_000, 1_000_000 + 10_000).split('\n');
    expect(lines[0]).toBe(
      'demo █░░░░░░░░░░░░░░░░░░░░░░░ 500 / ≥10,500 records 4%  ETA 3:20 · 1 request · 0 retries · 0 × 429 · 1,234 invalid · 50 rec/s',
    );
    expect(lines[1]).toBe('budget 1 request/min (no rate limit) · 0:10 elapsed');
    // Before any total: the count alone.
    expect(renderProgress([{ name: 'x', stats: statsWith(new RunEvents()) }], 100, 1_000_000, 1_000_000)).toBe(
      'x 0 records · 0 requests · 0 retries · 0 × 429 · 0 invalid · 0 rec/s\nbudget 0/min of 100 requests · 0:00 elapsed',
    );
  });

  it('formats durations as m:ss and h:mm:ss', () => {
    expect([formatDuration(0), formatDuration(59.6), formatDuration(61), formatDuration(3_725)]).toEqual([
      '0:00',
      '1:00',
      '1:01',
      '1:02:05',
    ]);
  });
});

describe('attachProgress with the json format', () => {
  it('writes JSON lines: a progress line per pipeline every interval, one per notable event naming its pipeline, secrets redacted', async () => {
    const stream = new PassThrough();
    let text = '';
    stream.on('data', (c: Buffer) => (text += c.toString()));
    const runEvents = new RunEvents();
    const redactor = new Redactor();
    redactor.add('hush-hush-secret');
    const progress = attachProgress(runEvents, {
      stream: stream as unknown as NodeJS.WriteStream,
      format: 'json',
      level: 'info',
      live: false,
      redactor,
      rateLimit: 100,
      logIntervalSeconds: 0.05,
    });
    const events = new RunEvents();
    progress.add({ name: 'p', stats: new RunStats(events), plan: { total: 40, requests: 4 } }, events);
    const other = new RunEvents();
    progress.add({ name: 'q', stats: new RunStats(other) }, other);
    events.emit('request', { endpoint: 'products.query', status: 200, durationMs: 5, attempt: 1 });
    events.emit('page', { endpoint: 'products.query', records: 10 });
    events.emit('retry', { endpoint: 'products.query', attempt: 1, reason: 'hush-hush-secret', delayMs: 100 });
    events.emit('output', { kind: 'file', location: '/tmp/x.parquet', rows: 1, bytes: 1_099, sink: 'parquet' });
    events.emit('info', { code: 'sink.parquet.schema', message: 'locked', schema: { big: 'object' } });
    progress.log('info', 'started', { pipelines: ['p', 'q'] });
    await sleep(130);
    progress.stop();
    const lines = jsonLines(text);
    expect(
      lines.every((l) => typeof l.time === 'string' && (typeof l.pipeline === 'string' || Array.isArray(l.pipelines))),
    ).toBe(true);
    expect(lines.find((l) => l.event === 'retry')).toMatchObject({
      level: 'warn',
      pipeline: 'p',
      reason: '***',
      message: 'products.query attempt 1 failed (***); retrying in 0:00',
    });
    expect(lines.find((l) => l.event === 'committed')).toMatchObject({
      level: 'info',
      pipeline: 'p',
      location: '/tmp/x.parquet',
      rows: 1,
      message: 'parquet wrote /tmp/x.parquet (1 row, 1,099 bytes)',
    });
    expect(lines.find((l) => l.event === 'sink.parquet.schema')).toEqual(
      expect.not.objectContaining({ schema: expect.anything() }),
    );
    expect(lines.find((l) => l.event === 'progress' && l.pipeline === 'p')).toMatchObject({
      records: 10,
      total: 40,
      percent: 25,
      pages: 1,
      requests: 1,
      plannedRequests: 4,
      retries: 1,
    });
    expect(lines.find((l) => l.event === 'progress' && l.pipeline === 'q')).toMatchObject({ records: 0, requests: 0 });
    expect(lines.some((l) => l.event === 'request')).toBe(false); // debug only
    expect(text).not.toContain('hush-hush-secret');
  });
});

describe('the CLI off a TTY', () => {
  let sandbox: TestSandbox;
  let ws: Awaited<ReturnType<typeof workspace>>;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    sandbox = await startTestSandbox({ products: 1500 });
    ws = await workspace();
    env = sandboxEnv(sandbox);
  });
  afterAll(async () => {
    await sandbox?.close();
    await ws?.remove();
  });

  it('every stderr line is JSON: started, notable events, the summary last; stdout stays empty', async () => {
    const { code, stdout, stderr } = await runCli(['run', 'pipelines/reference-data.yml'], { cwd: ws.dir, env });
    expect(code, stderr).toBe(0);
    expect(stdout).toBe('');
    const lines = jsonLines(stderr);
    expect(lines[0]).toMatchObject({
      level: 'info',
      event: 'started',
      pipelines: [
        'organizations',
        'brands',
        'catalog-categories',
        'public-categories',
        'dietary-restrictions',
        'colors',
      ],
      rateLimit: null,
    });
    expect(lines.filter((l) => l.event === 'committed')).toHaveLength(6);
    const summaries = lines.filter((l) => l.event === 'summary');
    expect(summaries.map((s) => s.pipeline)).toEqual([
      'organizations',
      'brands',
      'catalog-categories',
      'public-categories',
      'dietary-restrictions',
      'colors',
    ]);
    expect(lines.slice(-6)).toEqual(summaries);
    for (const s of summaries) {
      expect(Object.keys(s)).toEqual(
        expect.arrayContaining([
          'records',
          'requests',
          'retries',
          'throttles',
          'pages',
          'bytes',
          'files',
          'objects',
          'outputs',
          'durationMs',
          'recordsPerSecond',
        ]),
      );
    }
  });

  it('--quiet: no info lines, only the summary (and warnings or errors)', async () => {
    const { code, stderr } = await runCli(['run', 'pipelines/reference-data.yml', '--quiet'], { cwd: ws.dir, env });
    expect(code).toBe(0);
    const lines = jsonLines(stderr);
    expect(lines.map((l) => l.event)).toEqual(Array(6).fill('summary'));
  });
});
