// The commit point (issue 15 item 11): the exit code, the summary status, the
// outputs and the cursor tell one story. A run commits when every sink has
// committed its outputs; the cursor is stored right after. A signal before that
// point discards everything (exit 143, summary aborted, no output, cursor as it
// was); a signal after it is logged and changes nothing (exit 0, summary
// succeeded, outputs kept, cursor advanced). CLI-side write targets
// (--summary-file) are checked before the first request: a summary that cannot
// be written must not turn a committed run into a failure.
//
// The CLI runs in-process (`main`) with its own signal emitter: the signal is
// sent from inside the log line that marks the moment under test, so the timing
// is exact.
import { EventEmitter } from 'node:events';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { CliIO } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';
import {
  expectExactIds,
  faultFixture,
  jsonLines,
  leftBehind,
  parquetIds,
  runPath,
  sandboxEnv,
  summaryRunId,
} from './support.js';

const PIPELINE = `name: commit
source:
  type: products.query
  filter: { status: [active, replaced, inactive] }
  pageSize: 100
sinks:
  - { type: parquet, path: "out/products-{run}.parquet" }
state: { path: .state/commit.json }
`;

const f = faultFixture('commit', PIPELINE, { products: 600 });

/** Runs `catalog-streams run` in-process; `signalWhen` sends SIGTERM from inside the first log line it matches. */
async function runWithSignal(
  args: string[],
  signalWhen?: RegExp,
): Promise<{ code: number; stderr: string; signalled: boolean }> {
  const signals = new EventEmitter();
  let err = '';
  let signalled = false;
  const stderr = new Writable({
    write(chunk, _encoding, callback) {
      const text = String(chunk);
      err += text;
      if (signalWhen && !signalled && signalWhen.test(text)) {
        signalled = true;
        signals.emit('SIGTERM');
      }
      callback();
    },
  });
  const stdout = new Writable({ write: (_c, _e, cb) => cb() });
  const io: CliIO = { stdout, stderr, env: sandboxEnv(f.sandbox), signals };
  const code = await main(['run', f.ws.path(f.ws.file), ...args], io);
  return { code, stderr: err, signalled };
}

describe('the commit point', () => {
  it('SIGTERM after the cursor is stored: exit 0, summary succeeded, file kept, cursor advanced, the log says so', async () => {
    const r = await runWithSignal([], /"event":"state_saved"/);
    expect(r.signalled).toBe(true);
    expect(r.code, r.stderr).toBe(0);
    const lines = jsonLines(r.stderr);
    const signal = lines.find((l) => l.event === 'signal');
    expect(signal).toMatchObject({ level: 'warn', signal: 'SIGTERM' });
    expect(signal!.message).toMatch(/after .*committed/);
    expect(signal!.message).not.toMatch(/discarding/);
    expect(lines.find((l) => l.event === 'summary')).toMatchObject({ status: 'succeeded', cursor: { stored: true } });
    expectExactIds(
      await parquetIds(f.ws.path(runPath('out/products-{run}.parquet', summaryRunId(r.stderr)))),
      f.expected,
    );
    expect((await f.ws.readState()).cursor).toBeGreaterThan(1);
    expect((await leftBehind(f.ws.dir)).temp).toEqual([]);
  });

  it('SIGTERM at the commit point (outputs committed, cursor not yet stored): the cursor is stored, exit 0', async () => {
    const r = await runWithSignal([], /"event":"outputs_committed"/);
    expect(r.signalled).toBe(true);
    expect(r.code, r.stderr).toBe(0);
    const lines = jsonLines(r.stderr);
    expect(lines.findIndex((l) => l.event === 'signal')).toBeLessThan(
      lines.findIndex((l) => l.event === 'state_saved'),
    );
    expect(lines.find((l) => l.event === 'signal')!.message).toMatch(/after the run committed its outputs/);
    expect(lines.find((l) => l.event === 'summary')).toMatchObject({ status: 'succeeded', cursor: { stored: true } });
    expectExactIds(
      await parquetIds(f.ws.path(runPath('out/products-{run}.parquet', summaryRunId(r.stderr)))),
      f.expected,
    );
    expect((await f.ws.readState()).cursor).toBeGreaterThan(1);
  });

  it('SIGTERM while the sink commits (renamed, the run not yet past its commit point): exit 143, the file taken back, cursor unchanged', async () => {
    const r = await runWithSignal([], /"event":"committed"/);
    expect(r.signalled).toBe(true);
    expect(r.code, r.stderr).toBe(143);
    const lines = jsonLines(r.stderr);
    expect(lines.find((l) => l.event === 'summary')).toMatchObject({
      status: 'aborted',
      outputs: [],
      cursor: { stored: false },
    });
    expect(await leftBehind(f.ws.path('out'))).toEqual({ final: [], temp: [] });
    expect(await f.ws.read('.state/commit.json')).toBe(f.ws.state);
  });

  it('SIGTERM before the commit point: exit 143, summary aborted, nothing under a final name, cursor unchanged', async () => {
    const r = await runWithSignal([], /"event":"(page|total|progress)"|"event":"incremental"/);
    expect(r.signalled).toBe(true);
    expect(r.code, r.stderr).toBe(143);
    const lines = jsonLines(r.stderr);
    expect(lines.find((l) => l.event === 'signal')!.message).toMatch(/discarding partial outputs/);
    expect(lines.find((l) => l.event === 'summary')).toMatchObject({
      status: 'aborted',
      outputs: [],
      cursor: { stored: false },
    });
    expect(await leftBehind(f.ws.path('out'))).toEqual({ final: [], temp: [] });
    expect(await f.ws.read('.state/commit.json')).toBe(f.ws.state);
  });

  it('two pipelines in one file, SIGTERM once the first committed: it keeps its outputs and cursor, the other is discarded; exit 143', async () => {
    const quick = PIPELINE.replace('name: commit', 'name: quick')
      .replace('.state/commit.json', '.state/quick.json')
      .replace('out/products-{run}.parquet', 'out/quick-{run}.parquet');
    const slow = PIPELINE.replace('name: commit', 'name: slow')
      .replace('.state/commit.json', '.state/slow.json')
      .replace('out/products-{run}.parquet', 'out/slow-{run}.parquet')
      .replace('pageSize: 100', 'pageSize: 10\n  concurrency: 1');
    await f.ws.write(f.ws.file, `${quick}---\n${slow}`);
    await f.ws.write('.state/quick.json', f.ws.state.replace('"commit"', '"quick"'));
    await f.ws.write('.state/slow.json', f.ws.state.replace('"commit"', '"slow"'));
    const slowState = await f.ws.read('.state/slow.json');
    const r = await runWithSignal([], /"event":"outputs_committed"/);
    expect(r.signalled).toBe(true);
    expect(r.code, r.stderr).toBe(143);
    const lines = jsonLines(r.stderr);
    expect(lines.find((l) => l.event === 'signal')!.message).toMatch(
      /discarding partial outputs.*quick had already committed and keeps its outputs and cursor/,
    );
    const summaries = Object.fromEntries(lines.filter((l) => l.event === 'summary').map((l) => [l.pipeline, l]));
    expect(summaries.quick).toMatchObject({ status: 'succeeded', cursor: { stored: true } });
    expect(summaries.slow).toMatchObject({ status: 'aborted', outputs: [], cursor: { stored: false } });
    const quickRun = summaryRunId(r.stderr, 'quick');
    expectExactIds(await parquetIds(f.ws.path(runPath('out/quick-{run}.parquet', quickRun))), f.expected);
    expect(await leftBehind(f.ws.path('out'))).toEqual({ final: [`quick-${quickRun}.parquet`], temp: [] });
    expect(JSON.parse(await f.ws.read('.state/quick.json')).cursor).toBeGreaterThan(1);
    expect(await f.ws.read('.state/slow.json')).toBe(slowState);
  });

  it('--summary-file in a missing folder: exit 2 before the first request, naming the folder; nothing written, cursor unchanged', async () => {
    const r = await runWithSignal(['--summary-file', f.ws.path('no-such-folder/summary.json')]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(
      `--summary-file ${f.ws.path('no-such-folder/summary.json')}: the folder ${f.ws.path('no-such-folder')} does not exist`,
    );
    expect(f.sandbox.stats.requests).toBe(0);
    expect(await leftBehind(f.ws.path('out'))).toEqual({ final: [], temp: [] });
    expect(await f.ws.read('.state/commit.json')).toBe(f.ws.state);
  });

  it('--summary-file naming a folder: exit 2 before the first request', async () => {
    await mkdir(f.ws.path('a-folder'));
    const r = await runWithSignal(['--summary-file', f.ws.path('a-folder')]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`--summary-file ${f.ws.path('a-folder')}: is a folder`);
    expect(f.sandbox.stats.requests).toBe(0);
  });

  it('--summary-file written whole after a committed run, the same story as the log summary', async () => {
    await writeFile(f.ws.path('summary.json'), 'an old summary');
    const r = await runWithSignal(['--summary-file', f.ws.path('summary.json')]);
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(await readFile(f.ws.path('summary.json'), 'utf8'));
    expect(summary).toMatchObject({ exitCode: 0, pipelines: [{ status: 'succeeded', cursor: { stored: true } }] });
    expect((await leftBehind(f.ws.dir)).temp).toEqual([]);
  });
});
