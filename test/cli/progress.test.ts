// What a run shows while it works. On a TTY a live display (renderProgress);
// off a TTY JSON log lines, every few seconds and at each notable event, and
// the summary as JSON; --quiet keeps warnings, errors and the summary only.
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachProgress, formatDuration, renderProgress } from '../../src/cli/progress.js';
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
  it('records of the total with a bar and ETA, then pages, requests against the budget, retries, 429s, rate, elapsed', () => {
    const events = new RunEvents();
    const stats = statsWith(events);
    events.emit('total', { endpoint: 'products.query', total: 4000, capped: false });
    for (let i = 0; i < 4; i++) {
      events.emit('request', { endpoint: 'products.query', status: 200, durationMs: 5, attempt: 1 });
      events.emit('page', { endpoint: 'products.query', records: 250 });
    }
    events.emit('retry', { endpoint: 'products.query', attempt: 1, reason: '503', delayMs: 500 });
    events.emit('throttle', { endpoint: 'products.query', delayMs: 1000, retryAfter: false });
    events.emit('invalid', { stage: 'validate', action: 'skip', message: 'bad' });
    const now = 1_000_000 + 20_000;
    expect(renderProgress(stats, 'nightly', 100, now)).toBe(
      'nightly ██████░░░░░░░░░░░░░░░░░░ 1,000 / 4,000 records 25%  ETA 1:00\n' +
        'pages 4 · requests 4 (4/min of 100) · retries 1 · 429s 1 · invalid 1 · 50 rec/s · 0:20',
    );
  });

  it('a capped total shows as "≥", several sources add up, no budget when unlimited', () => {
    const events = new RunEvents();
    const stats = statsWith(events);
    events.emit('total', { endpoint: 'products.query', total: 10_000, capped: true });
    events.emit('total', { endpoint: 'media.stream', total: 500, capped: false });
    events.emit('page', { endpoint: 'media.stream', records: 500 });
    expect(renderProgress(stats, 'demo', Infinity, 1_000_000 + 10_000).split('\n')[0]).toBe('demo █░░░░░░░░░░░░░░░░░░░░░░░ 500 / ≥10,500 records 4%  ETA 3:20');
    expect(renderProgress(stats, 'demo', Infinity, 1_000_000 + 10_000).split('\n')[1]).toBe('pages 1 · requests 0 · retries 0 · 429s 0 · invalid 0 · 50 rec/s · 0:10');
    // Before any total: the count alone.
    expect(renderProgress(statsWith(new RunEvents()), 'x', 100, 1_000_000)).toBe('x 0 records\npages 0 · requests 0 (0/min of 100) · retries 0 · 429s 0 · invalid 0 · 0 rec/s · 0:00');
  });

  it('formats durations as m:ss and h:mm:ss', () => {
    expect([formatDuration(0), formatDuration(59.6), formatDuration(61), formatDuration(3_725)]).toEqual(['0:00', '1:00', '1:01', '1:02:05']);
  });
});

describe('attachProgress off a TTY', () => {
  it('writes JSON lines: a progress line every interval, one per notable event, secrets redacted', async () => {
    const stream = new PassThrough();
    let text = '';
    stream.on('data', (c: Buffer) => (text += c.toString()));
    const events = new RunEvents();
    const stats = new RunStats(events);
    const redactor = new Redactor();
    redactor.add('hush-hush-secret');
    const progress = attachProgress(events, stats, { name: 'p', stream: stream as unknown as NodeJS.WriteStream, tty: false, quiet: false, redactor, rateLimit: 100, logIntervalSeconds: 0.05 });
    events.emit('page', { endpoint: 'products.query', records: 10 });
    events.emit('retry', { endpoint: 'products.query', attempt: 1, reason: 'hush-hush-secret', delayMs: 100 });
    events.emit('output', { kind: 'file', location: '/tmp/x.parquet', rows: 10, bytes: 99, sink: 'parquet' });
    events.emit('info', { code: 'sink.parquet.schema', message: 'locked', schema: { big: 'object' } });
    await sleep(130);
    progress.stop();
    const lines = jsonLines(text);
    expect(lines.every((l) => typeof l.time === 'string' && l.pipeline === 'p')).toBe(true);
    expect(lines.find((l) => l.event === 'retry')).toMatchObject({ level: 'warn', reason: '***', message: 'products.query attempt 1 failed (***); retrying in 0:00' });
    expect(lines.find((l) => l.event === 'committed')).toMatchObject({ level: 'info', location: '/tmp/x.parquet', rows: 10 });
    expect(lines.find((l) => l.event === 'sink.parquet.schema')).toEqual(expect.not.objectContaining({ schema: expect.anything() }));
    expect(lines.filter((l) => l.event === 'progress').length).toBeGreaterThanOrEqual(1);
    expect(lines.find((l) => l.event === 'progress')).toMatchObject({ records: 10, pages: 1, requests: 0, retries: 1 });
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
    expect(lines[0]).toMatchObject({ level: 'info', event: 'started', pipelines: ['organizations', 'brands', 'catalog-categories', 'public-categories', 'dietary-restrictions', 'colors'], rateLimit: null });
    expect(lines.filter((l) => l.event === 'committed')).toHaveLength(6);
    const summaries = lines.filter((l) => l.event === 'summary');
    expect(summaries.map((s) => s.pipeline)).toEqual(['organizations', 'brands', 'catalog-categories', 'public-categories', 'dietary-restrictions', 'colors']);
    expect(lines.slice(-6)).toEqual(summaries);
    for (const s of summaries) {
      expect(Object.keys(s)).toEqual(expect.arrayContaining(['records', 'requests', 'retries', 'throttles', 'pages', 'bytes', 'files', 'objects', 'outputs', 'durationMs', 'recordsPerSecond']));
    }
  });

  it('--quiet: no info lines, only the summary (and warnings or errors)', async () => {
    const { code, stderr } = await runCli(['run', 'pipelines/reference-data.yml', '--quiet'], { cwd: ws.dir, env });
    expect(code).toBe(0);
    const lines = jsonLines(stderr);
    expect(lines.map((l) => l.event)).toEqual(Array(6).fill('summary'));
  });
});
