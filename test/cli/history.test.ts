// `catalog-streams history`: the shipped nightly pipeline run three times by the built CLI
// (products touched between the runs, the sandbox's rate limit tight enough to answer 429s),
// then `history` shows three runs whose figures are the runs' own summaries, as a table and as
// --json; and the shipped table pipeline's `_table.json` versions appear with their counts.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunSummary } from '../../src/pipeline/runner.js';
import type { TableManifest } from '../../src/sinks/index.js';
import { MAX_HISTORY_RUNS } from '../../src/pipeline/run-history.js';
import { sparkline } from '../../src/cli/history-command.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { cleanEnv, listFiles, readJson, runCli, runMain, sandboxEnv, workspace } from './cli-process.js';

const PRODUCTS = 1200;

describe('catalog-streams history', () => {
  let ws: Awaited<ReturnType<typeof workspace>>;
  let sandbox: TestSandbox;
  let env: NodeJS.ProcessEnv;
  const run = async (file: string, n: number, ...flags: string[]): Promise<RunSummary> => {
    const summaryFile = join(ws.dir, `summary-${n}.json`);
    const result = await runCli(['run', file, '--quiet', '--summary-file', summaryFile, ...flags], {
      cwd: ws.dir,
      env,
    });
    expect(result.code, result.stderr).toBe(0);
    return (await readJson<{ pipelines: RunSummary[] }>(summaryFile)).pipelines[0]!;
  };
  const history = (file: string, ...flags: string[]) =>
    runCli(['history', file, ...flags], { cwd: ws.dir, env: { ...env, CATALOG_BASE_URL: undefined } });

  beforeAll(async () => {
    ws = await workspace();
    // One request per short window: the client (not pacing, CATALOG_RATE_LIMIT=0) meets 429s and retries.
    sandbox = await startTestSandbox({ products: PRODUCTS, rateLimit: 1, rateLimitWindowMs: 300 });
    env = sandboxEnv(sandbox);
  });
  afterAll(async () => {
    await sandbox?.close();
    await ws?.remove();
  });

  it('shows the three runs of the nightly pipeline with the figures of their summaries', async () => {
    const summaries: RunSummary[] = [];
    summaries.push(await run('pipelines/products-nightly.yml', 1));
    sandbox.touch(['P0000007', 'P0000150', 'P0001000'], Math.floor(Date.now() / 1000) - 1);
    summaries.push(await run('pipelines/products-nightly.yml', 2));
    summaries.push(await run('pipelines/products-nightly.yml', 3, '--full-refresh'));
    expect(summaries.map((s) => s.records.read)).toEqual([
      summaries[0]!.records.read,
      expect.any(Number),
      summaries[0]!.records.read,
    ]);
    expect(summaries[1]!.records.read).toBeLessThan(summaries[0]!.records.read);
    expect(
      summaries.some((s) => s.throttles > 0),
      'a run met 429s',
    ).toBe(true);

    const json = await history('pipelines/products-nightly.yml', '--json');
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(
      summaries.map((s) => ({
        pipeline: 'products-nightly',
        runId: s.runId,
        startedAt: s.startedAt,
        status: 'succeeded',
        error: null,
        records: s.records.read,
        durationMs: s.durationMs,
        requests: s.requests,
        throttles: s.throttles,
        invalid: s.records.invalid,
        inserted: null,
        updated: null,
        deleted: null,
        unchanged: null,
        objects: null,
        objectRows: null,
      })),
    );

    const text = await history('pipelines/products-nightly.yml');
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.split('\n');
    expect(lines[0]).toBe(
      `products-nightly: 3 runs (history ${join(ws.dir, '.state/history/products-nightly.jsonl')})`,
    );
    expect(lines[1]!.trim().split(/\s{2,}/)).toEqual([
      'date (UTC)',
      'run',
      'status',
      'records',
      'duration',
      'requests',
      '429s',
      'invalid',
    ]);
    const fmt = new Intl.NumberFormat('en-US');
    for (const [i, s] of summaries.entries()) {
      expect(lines[2 + i]!.trim().split(/\s+/)).toEqual([
        s.startedAt.slice(0, 10),
        s.startedAt.slice(11, 16),
        s.runId,
        'succeeded',
        fmt.format(s.records.read),
        `${(s.durationMs / 1000).toFixed(1)}s`,
        fmt.format(s.requests),
        fmt.format(s.throttles),
        fmt.format(s.records.invalid),
      ]);
    }
    // A sparkline per numeric column, one character per run.
    const records = lines.find((l) => l.trim().startsWith('records '))!;
    expect(records).toContain(sparkline(summaries.map((s) => s.records.read)));
    expect(records).toMatch(/^ {2}records +[▁-█]{3} {2}min /);

    const lastTwo = await history('pipelines/products-nightly.yml', '--json', '--last', '2');
    expect(JSON.parse(lastTwo.stdout).map((r: { runId: string }) => r.runId)).toEqual(
      summaries.slice(1).map((s) => s.runId),
    );
  });

  it("shows a table pipeline's versions with their inserted, updated and deleted counts", async () => {
    const first = await run('pipelines/products-table.yml', 11);
    sandbox.touch(['P0000003', 'P0000500'], Math.floor(Date.now() / 1000) - 1);
    const second = await run('pipelines/products-table.yml', 12);
    const manifest = await readJson<TableManifest>(join(ws.dir, 'out/products-table/_table.json'));
    const rows = JSON.parse((await history('pipelines/products-table.yml', '--json')).stdout);
    expect(rows).toHaveLength(2);
    for (const [i, s] of [first, second].entries()) {
      const version = manifest.versions.find((v) => v.runId === s.runId)!;
      expect(rows[i]).toMatchObject({ runId: s.runId, records: s.records.read, ...version.counts });
    }
    expect(rows[0].inserted).toBe(first.records.read);
    expect(rows[1].updated).toBeGreaterThan(0);

    const text = (await history('pipelines/products-table.yml')).stdout;
    expect(
      text
        .split('\n')[1]!
        .trim()
        .split(/\s{2,}/),
    ).toEqual([
      'date (UTC)',
      'run',
      'status',
      'records',
      'duration',
      'requests',
      '429s',
      'invalid',
      'inserted',
      'updated',
      'deleted',
    ]);
    expect(text).toMatch(/^ {2}inserted +[▁-█]{2} {2}min /m);
  });

  it('says so when a pipeline has no runs yet, and refuses a bad --last', async () => {
    const none = await runCli(['history', 'pipelines/demo.yml'], {
      cwd: ws.dir,
      env: { ...env, CATALOG_STREAMS_STATE_DIR: '' },
    });
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toContain(
      `: 0 runs (history ${join(ws.dir, '.catalog-streams/history/demo-products.jsonl')})\n  no runs recorded yet:`,
    );
    const bad = await runMain(['history', join(ws.dir, 'pipelines/demo.yml'), '--last', '0']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--last must be an integer from 1 to/);
  });

  it('keeps the runs of a pipeline without a state in the working directory, not beside the pipeline file', async () => {
    // The pipeline files' folder is a package's or a checkout's: run state there was packed and committed.
    const file = 'pipelines/custom-transform.yml';
    const flags = ['--sandbox', '--sandbox-products', '60', '--sandbox-rate-limit', '0'];
    const byDefault = cleanEnv({ CATALOG_STREAMS_STATE_DIR: '' });
    const ran = await runCli(['run', file, '--quiet', ...flags], { cwd: ws.dir, env: byDefault });
    expect(ran.code, ran.stderr).toBe(0);
    expect(await listFiles(join(ws.dir, 'pipelines'))).not.toContainEqual(expect.stringContaining('.catalog-streams'));
    const runFile = /^products-price-bands\/\d{8}T\d{6}Z-[0-9a-f]{6}\.json$/;
    expect(await listFiles(join(ws.dir, '.catalog-streams/history'))).toEqual([expect.stringMatching(runFile)]);
    const shown = await runCli(['history', file], { cwd: ws.dir, env: byDefault });
    expect(shown.stdout).toContain(
      `: 1 run (history ${join(ws.dir, '.catalog-streams/history/products-price-bands.jsonl')})`,
    );
    // CATALOG_STREAMS_STATE_DIR moves it (relative to the working directory).
    const moved = cleanEnv({ CATALOG_STREAMS_STATE_DIR: 'run-state' });
    expect((await runCli(['run', file, '--quiet', ...flags], { cwd: ws.dir, env: moved })).code).toBe(0);
    expect(await listFiles(join(ws.dir, 'run-state/history'))).toEqual([expect.stringMatching(runFile)]);
    expect((await runCli(['history', file], { cwd: ws.dir, env: moved })).stdout).toContain(': 1 run (history ');
  });

  it('draws a sparkline between the min and max of known values', () => {
    expect(sparkline([0, 7, 14])).toBe('▁▅█');
    expect(sparkline([5, 5])).toBe('▄▄');
    expect(sparkline([1, null, 2])).toBe('▁ █');
    expect(MAX_HISTORY_RUNS).toBeGreaterThan(100);
  });
});
