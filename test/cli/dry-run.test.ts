// `run --dry-run`: the plan (slices past the 10000 cap, estimated requests and
// duration at the rate limit, the outputs that would be written, the
// incremental cursor) and nothing written; the estimate matches what the run
// then does.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunSummary } from '../../src/pipeline/runner.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { listFiles, readJson, runCli, sandboxEnv, workspace } from './cli-process.js';

describe('run --dry-run', () => {
  let sandbox: TestSandbox;
  let ws: Awaited<ReturnType<typeof workspace>>;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    // 12000 products: past the 10000 cap, so products.query slices by createdAt.
    sandbox = await startTestSandbox({ products: 12_000 });
    ws = await workspace();
    // The client's default budget (100 requests/minute) is what the plan estimates with.
    env = sandboxEnv(sandbox, { CATALOG_RATE_LIMIT: undefined });
  });
  afterAll(async () => {
    await sandbox?.close();
    await ws?.remove();
  });

  it('lists the slices, the requests and their duration at the rate limit, and the outputs; writes nothing', async () => {
    sandbox.resetStats();
    const { code, stdout, stderr } = await runCli(
      ['run', 'pipelines/demo.yml', '--dry-run', '--log-format', 'pretty'],
      { cwd: ws.dir, env },
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const lines = stdout.trim().split('\n');
    const today = new Date().toISOString().slice(0, 10);
    expect(lines[0]).toBe('pipeline demo-products: products.query');
    const estimate =
      /^ {2}([\d,]+) records in (\d+) slices?; ~([\d,]+) requests?, ~(\d+:\d\d) at 100 requests\/min \(planning used (\d+) requests?\)$/.exec(
        lines[1]!,
      );
    expect(estimate, lines[1]).not.toBeNull();
    const slices = lines.filter((l) =>
      /^ {4}createdAt \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\.\.\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: [\d,]+ records, [\d,]+ requests?$/.test(
        l,
      ),
    );
    expect(slices.length).toBe(Number(estimate![2]));
    expect(slices.length).toBeGreaterThan(1);
    expect(stdout).toContain(
      `  would write (parquet): ${join(ws.dir, `out/demo/products/dt=${today}/products.parquet`)}\n`,
    );
    expect(stdout).toContain('pipeline demo-media: media.stream\n');
    expect(stdout).toContain(`  would write (jsonl): ${join(ws.dir, 'out/demo/media.jsonl.gz')}\n`);
    expect(lines.at(-2)).toMatch(
      /^all 2 pipelines share one request budget: ~[\d,]+ requests, ~\d+:\d\d at 100 requests\/min$/,
    );
    expect(lines.at(-1)).toBe('dry run: nothing was written');
    // Planning asked for totals only: small probes, no extract.
    expect(sandbox.stats.requests).toBe(Number(estimate![5]));
    expect(await listFiles(join(ws.dir, 'out'))).toEqual([]);

    // The estimate is what the run does (the data did not change in between).
    const run = await runCli(['run', 'pipelines/demo.yml', '--quiet', '--summary-file', 'summary.json'], {
      cwd: ws.dir,
      env: sandboxEnv(sandbox),
    });
    expect(run.code, run.stderr).toBe(0);
    const [products] = (await readJson<{ pipelines: RunSummary[] }>(join(ws.dir, 'summary.json'))).pipelines;
    // The planned pages, and a few more: one request of 10 records past the cap to find where the matches
    // end, and each lane's last page that is not full (createdat-query.ts). A retry would add one too: say so.
    const planned = Number(estimate![3]!.replace(/,/g, ''));
    expect(products!.requests, `retries ${products!.retries}, pages ${products!.pages}`).toBeGreaterThanOrEqual(
      planned,
    );
    expect(products!.requests, `retries ${products!.retries}, pages ${products!.pages}`).toBeLessThanOrEqual(
      Math.ceil(planned * 1.1) + 1,
    );
    expect(products!.records.read).toBe(Number(estimate![1]!.replace(/,/g, '')));
  });

  it('an incremental pipeline shows the cursor it would start from', async () => {
    await mkdir(join(ws.dir, '.state'), { recursive: true });
    await writeFile(
      join(ws.dir, '.state/products-nightly.json'),
      JSON.stringify({
        version: 1,
        pipeline: 'products-nightly',
        cursor: 1_750_000_000,
        updatedAt: '2026-01-01T00:00:00Z',
      }),
    );
    const { code, stdout } = await runCli(
      ['run', 'pipelines/products-nightly.yml', '--dry-run', '--log-format', 'pretty'],
      { cwd: ws.dir, env },
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(
      /^pipeline products-nightly: products\.query \(incremental: updatedSince 2025-06-15T15:06:40Z, unix 1750000000\)\n {2}[\d,]+ records in 1 slice;/,
    );
    expect(stdout).toContain(
      `  state: ${join(ws.dir, '.state/products-nightly.json')} (cursor 2025-06-15T15:06:40Z, unix 1750000000; stored after the sinks commit)`,
    );
    const full = await runCli(
      ['run', 'pipelines/products-nightly.yml', '--dry-run', '--full-refresh', '--log-format', 'pretty'],
      { cwd: ws.dir, env },
    );
    expect(full.stdout).toMatch(
      /^pipeline products-nightly: products\.query \(full extract: no cursor yet, or --full-refresh\)\n/,
    );
    expect((await listFiles(ws.dir)).filter((f) => f.startsWith('out/'))).toEqual(
      expect.not.arrayContaining([expect.stringContaining('products-nightly')]),
    );
  });
});
