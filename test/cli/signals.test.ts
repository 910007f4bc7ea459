// Stopping a run. The CLI process runs a slow incremental pipeline (pages of
// 10 against a sandbox in this process that answers with added latency):
// - SIGTERM / SIGINT / SIGHUP mid-run: exit 143 / 130 / 129 after the clean-up, no
//   output under a final name, no temp file, a summary, the state cursor unchanged;
// - the process model the README tells schedulers to use: a shell wrapper that
//   `exec`s node, so the scheduler's SIGTERM reaches the run itself;
// - SIGKILL mid-run (no clean-up possible): no output under a final name, the
//   cursor unchanged, and the rerun writes the complete output;
// - with --sandbox the process still exits promptly (the sandbox closes).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PRODUCT_STATUSES, productIdOf } from '../../src/sandbox/index.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import {
  CLI,
  type CliProcess,
  cleanEnv,
  jsonLines,
  listFiles,
  runCli,
  runPath,
  sandboxEnv,
  startCli,
  startCommand,
  summaryRunId,
  workspace,
} from './cli-process.js';

const PRODUCTS = 2500;
const CURSOR = 1_600_000_000;
const PIPELINE = `name: slow
source:
  type: products.query
  filter: { status: [active, replaced, inactive] }
  pageSize: 10
  concurrency: 1
transforms:
  - { type: validate }
sinks:
  - { type: parquet, path: "out/slow/dt={date}/products-{run}.parquet" }
  - { type: jsonl, path: "out/slow/products-{run}.jsonl.gz" }
state: { path: .state/slow.json }
`;
const STATE = `${JSON.stringify({ version: 1, pipeline: 'slow', cursor: CURSOR, updatedAt: '2026-01-01T00:00:00.000Z' }, null, 2)}\n`;

let sandbox: TestSandbox;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  sandbox = await startTestSandbox({ products: PRODUCTS });
  env = sandboxEnv(sandbox);
});
afterAll(() => sandbox?.close());

let ws: Awaited<ReturnType<typeof workspace>>;
beforeEach(async () => {
  ws = await workspace();
  await writeFile(join(ws.dir, 'slow.yml'), PIPELINE);
  await mkdir(join(ws.dir, '.state'));
  await writeFile(join(ws.dir, '.state/slow.json'), STATE);
  sandbox.setFaults({ latencyMs: 40 });
  sandbox.resetStats();
});
afterEach(async () => {
  sandbox.setFaults({});
  await ws.remove();
});

/** Starts the slow run and resolves once it is part-way (some pages fetched, the Parquet part open). */
async function startSlowRun(start: () => CliProcess = () => startCli(['run', 'slow.yml'], { cwd: ws.dir, env })) {
  const cli = start();
  const deadline = Date.now() + 20_000;
  while (sandbox.stats.requests < 15) {
    if (Date.now() > deadline) throw new Error(`the run did not get going: ${cli.stderr()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return cli;
}

const expectedIds = () =>
  Array.from({ length: PRODUCTS }, (_, i) => i)
    .filter(
      (i) =>
        sandbox.dataset.status[i] !== PRODUCT_STATUSES.indexOf('no_selection') &&
        sandbox.dataset.updatedAt[i]! >= CURSOR,
    )
    .map(productIdOf);

describe('stopping a run', () => {
  it.each([
    ['SIGTERM', 143],
    ['SIGINT', 130],
    ['SIGHUP', 129],
  ] as const)(
    '%s mid-run: exit %i after clean-up; nothing under a final name, no temp file, cursor unchanged',
    async (signal, code) => {
      const cli = await startSlowRun();
      // The Parquet part is open under its temp name by now (the inference sample is 50 records).
      expect((await listFiles(join(ws.dir, 'out'))).some((f) => f.endsWith('.tmp'))).toBe(true);
      cli.child.kill(signal);
      const result = await cli.done;
      expect({ code: result.code, signal: result.signal }).toEqual({ code, signal: null });
      expect(await listFiles(join(ws.dir, 'out'))).toEqual([]);
      expect(await readFile(join(ws.dir, '.state/slow.json'), 'utf8')).toBe(STATE);
      const lines = jsonLines(result.stderr);
      expect(lines.find((l) => l.event === 'signal')).toMatchObject({ level: 'warn', signal });
      const summary = lines.find((l) => l.event === 'summary');
      expect(summary).toMatchObject({
        status: 'aborted',
        outputs: [],
        cursor: { previous: CURSOR, stored: false },
        error: { code: 'aborted' },
      });
      expect(result.stdout).toBe('');
    },
  );

  it("a scheduler's shell wrapper that execs node: its SIGTERM reaches the run (exit 143 after clean-up, cursor unchanged)", async () => {
    const cli = await startSlowRun(() =>
      startCommand('/bin/sh', ['-c', `exec "${process.execPath}" "${CLI}" run slow.yml`], { cwd: ws.dir, env }),
    );
    cli.child.kill('SIGTERM');
    const result = await cli.done;
    expect({ code: result.code, signal: result.signal }).toEqual({ code: 143, signal: null });
    expect(await listFiles(join(ws.dir, 'out'))).toEqual([]);
    expect(await readFile(join(ws.dir, '.state/slow.json'), 'utf8')).toBe(STATE);
    expect(jsonLines(result.stderr).find((l) => l.event === 'summary')).toMatchObject({
      status: 'aborted',
      cursor: { stored: false },
    });
  });

  it('SIGKILL mid-run, then a rerun that loses nothing', async () => {
    const cli = await startSlowRun();
    cli.child.kill('SIGKILL');
    const killed = await cli.done;
    expect(killed.signal).toBe('SIGKILL');
    // A kill leaves at most hidden temp files and the {run} dataset's lock and journal (what the
    // next run removes its files by), never a file under its final name.
    const bookkeeping = /(^|\/)(\.[^/]+\.tmp|\.publish\.[0-9a-f]{8}\.lock|_journal\/[^/]+\.json)$/;
    const left = await listFiles(join(ws.dir, 'out'));
    expect(left.filter((f) => !bookkeeping.test(f))).toEqual([]);
    expect(await readFile(join(ws.dir, '.state/slow.json'), 'utf8')).toBe(STATE);

    sandbox.setFaults({});
    const rerun = await runCli(['run', 'slow.yml', '--quiet'], { cwd: ws.dir, env });
    expect(rerun.code, rerun.stderr).toBe(0);
    const expected = expectedIds();
    const summary = jsonLines(rerun.stderr).find((l) => l.event === 'summary')!;
    const runId = summaryRunId(rerun.stderr);
    const jsonl = gunzipSync(await readFile(join(ws.dir, runPath('out/slow/products-{run}.jsonl.gz', runId))))
      .toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).id as string);
    // Read by createdAt: the same ids, in createdAt order rather than id order.
    expect([...jsonl].sort()).toEqual([...expected].sort());
    const parquet = join(
      ws.dir,
      runPath(`out/slow/dt=${String(summary.startedAt).slice(0, 10)}/products-{run}.parquet`, runId),
    );
    const { rows } = await duckdbQuery(`SELECT id FROM read_parquet(${sqlString(parquet)}) ORDER BY id`);
    expect(rows.map((r) => r.id)).toEqual(expected);
    const state = JSON.parse(await readFile(join(ws.dir, '.state/slow.json'), 'utf8'));
    expect(state.cursor).toBeGreaterThan(CURSOR);
    // The rerun removed what the kill left, its bookkeeping included.
    expect((await listFiles(join(ws.dir, 'out'))).filter((f) => bookkeeping.test(f))).toEqual([]);
  });

  it('with --sandbox: SIGINT stops the run and the in-process sandbox, exit 130', async () => {
    // 30 requests per minute: the run would take minutes, longer than the test may, so an exit at all
    // (and the products pipeline 'aborted', not 'succeeded') shows the signal stopped it.
    const cli = startCli(
      [
        'run',
        'pipelines/demo.yml',
        '--sandbox',
        '--profile',
        'spec',
        '--sandbox-products',
        '3000',
        '--sandbox-rate-limit',
        '30',
      ],
      { cwd: ws.dir, env: cleanEnv() },
    );
    await cli.waitForStderr(/"event":"started"/);
    await new Promise((r) => setTimeout(r, 500));
    cli.child.kill('SIGINT');
    const result = await cli.done;
    expect({ code: result.code, signal: result.signal }).toEqual({ code: 130, signal: null });
    // The products pipeline (minutes at this rate) is stopped and discards its outputs; the media
    // stream (one request) may have committed before the signal, and then keeps its file.
    const summaries = jsonLines(result.stderr).filter((l) => l.event === 'summary');
    expect(Object.fromEntries(summaries.map((l) => [l.pipeline, l.status]))).toMatchObject({
      'demo-products': 'aborted',
    });
    expect(summaries.every((l) => ['aborted', 'succeeded'].includes(l.status))).toBe(true);
    const kept = summaries
      .filter((l) => l.status === 'succeeded')
      .flatMap((l) => l.outputs.map((o: { location: string }) => o.location));
    expect((await listFiles(join(ws.dir, 'out'))).map((f) => join(ws.dir, 'out', f)).sort()).toEqual(kept.sort());
  });
});
