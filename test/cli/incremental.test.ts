// pipelines/products-nightly.yml run by the CLI process twice in a row against
// one sandbox, with products touched in between: the second run asks only for
// what changed since the stored cursor (updatedSince, combined by `and`), its
// output holds exactly the products whose updatedAt is at or after that cursor
// (the touched ones, plus any the cursor's overlap includes), and the cursor
// advances; `--full-refresh` ignores it and extracts everything again.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunSummary } from '../../src/pipeline/runner.js';
import type { PipelineState } from '../../src/pipeline/state.js';
import { PRODUCT_STATUSES, productIdOf } from '../../src/sandbox/index.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { listFiles, readJson, runCli, sandboxEnv, workspace } from './cli-process.js';

const PRODUCTS = 2500;
const NO_SELECTION = PRODUCT_STATUSES.indexOf('no_selection');

describe('products-nightly.yml: incremental runs', () => {
  let ws: Awaited<ReturnType<typeof workspace>>;
  let sandbox: TestSandbox;
  let env: NodeJS.ProcessEnv;
  const stateFile = () => join(ws.dir, '.state/products-nightly.json');
  const run = async (n: number, ...flags: string[]) => {
    const summaryFile = join(ws.dir, `summary-${n}.json`);
    const result = await runCli(
      ['run', 'pipelines/products-nightly.yml', '--quiet', '--summary-file', summaryFile, ...flags],
      { cwd: ws.dir, env },
    );
    expect(result.code, result.stderr).toBe(0);
    const [summary] = (await readJson<{ pipelines: RunSummary[] }>(summaryFile)).pipelines as [RunSummary];
    expect(summary.outputs).toHaveLength(1);
    const { rows } = await duckdbQuery(
      `SELECT id FROM read_parquet(${sqlString(summary.outputs[0]!.location)}) ORDER BY id`,
    );
    return { summary, ids: rows.map((r) => String(r.id)), state: await readJson<PipelineState>(stateFile()) };
  };
  /** Products the nightly filter selects whose updatedAt is at or after `cursor`, by id. */
  const updatedSince = (cursor: number) =>
    Array.from({ length: PRODUCTS }, (_, i) => i)
      .filter((i) => sandbox.dataset.status[i] !== NO_SELECTION && sandbox.dataset.updatedAt[i]! >= cursor)
      .map(productIdOf);

  beforeAll(async () => {
    ws = await workspace();
    sandbox = await startTestSandbox({ products: PRODUCTS });
    env = sandboxEnv(sandbox);
  });
  afterAll(async () => {
    await sandbox?.close();
    await ws?.remove();
  });

  it('first a full extract, then only what changed, then --full-refresh everything again', async () => {
    // 1. No cursor yet: every product the filter selects.
    const first = await run(1);
    const all = updatedSince(0);
    expect(first.ids).toEqual(all);
    // With a state, every run reads a bounded window, up to the second before it started.
    const until = (summary: { startedAt: string }) => Math.floor(Date.parse(summary.startedAt) / 1000) - 1;
    expect(first.summary.sourceFilter).toEqual({
      and: [{ status: ['active', 'replaced', 'inactive'] }, { updatedSince: { until: until(first.summary) } }],
    });
    const cursor1 = first.state.cursor;
    expect(first.summary.cursor).toEqual({ next: cursor1, stored: true, location: stateFile() });
    // The newest updatedAt seen is older than the start minus the overlap: it is the safer cursor.
    const newest = Math.max(
      ...Array.from(sandbox.dataset.updatedAt).filter((_, i) => sandbox.dataset.status[i] !== NO_SELECTION),
    );
    expect(cursor1).toBe(newest);
    expect(first.state).toMatchObject({
      version: 1,
      pipeline: 'products-nightly',
      lastRun: { records: all.length, source: 'products.query' },
    });

    // 2. Touch a few products (one the filter never selects) and run again.
    const noSelection = productIdOf(Array.from(sandbox.dataset.status).indexOf(NO_SELECTION));
    const touched = ['P0000007', 'P0000150', 'P0001234', 'P0002500', noSelection];
    // A second back: the next run's window ends the second before it starts.
    sandbox.touch(touched, Math.floor(Date.now() / 1000) - 1);
    const second = await run(2);
    const expected = updatedSince(cursor1);
    expect(second.ids).toEqual(expected);
    expect(expected).toEqual(expect.arrayContaining(touched.filter((id) => id !== noSelection)));
    expect(expected).not.toContain(noSelection);
    expect(expected.length).toBeLessThan(touched.length + 5);
    expect(second.summary.sourceFilter).toEqual({
      and: [
        { status: ['active', 'replaced', 'inactive'] },
        { updatedSince: { from: cursor1, until: until(second.summary) } },
      ],
    });
    expect(second.summary.records.read).toBe(expected.length);
    // The cursor advanced to the run's start minus the 300 s overlap (the touches are newer than that), the start
    // taken on the API's clock where its Date headers (whole seconds) show it may be up to a second behind ours.
    const started2 = Math.floor(Date.parse(second.summary.startedAt) / 1000);
    expect(second.state.cursor).toBeGreaterThanOrEqual(started2 - 301);
    expect(second.state.cursor).toBeLessThanOrEqual(started2 - 300);
    expect(second.summary.cursor).toEqual({
      previous: cursor1,
      next: second.state.cursor,
      stored: true,
      location: stateFile(),
    });

    // 3. --full-refresh ignores the stored cursor.
    const third = await run(3, '--full-refresh');
    expect(third.ids).toEqual(updatedSince(0));
    expect(third.summary.sourceFilter).toEqual({
      and: [{ status: ['active', 'replaced', 'inactive'] }, { updatedSince: { until: until(third.summary) } }],
    });
    expect(third.summary.cursor).toMatchObject({ stored: true });
    expect(third.summary.cursor!.previous).toBeUndefined();

    // One Parquet file per run under its date folder, no temp files.
    const files = (await listFiles(join(ws.dir, 'out/products-nightly'))).filter((f) => f.endsWith('.parquet'));
    expect(files).toHaveLength(3);
    expect(files.every((f) => /^dt=\d{4}-\d{2}-\d{2}\/products-\d{8}T\d{6}Z-[0-9a-f]{6}\.parquet$/.test(f))).toBe(true);
    expect((await listFiles(ws.dir)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(JSON.parse(await readFile(stateFile(), 'utf8')).cursor).toBe(third.state.cursor);
  });
});
