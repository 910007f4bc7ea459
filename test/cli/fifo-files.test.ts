// A FIFO where the run reads one of its own files is refused, not waited on. Before, a FIFO at
// `_table.json` blocked the run in preflight for good (SIGTERM wrote the summary but the process
// never exited, and its lock's heartbeat kept every other run out), and one at the history file
// hung `catalog-streams history`. The shipped table pipeline, run by the built CLI.
import { execFileSync } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunSummary } from '../../src/pipeline/runner.js';
import { readJson, runCli, sandboxEnv, useSandboxWorkspace } from './cli-process.js';

describe('a FIFO at a file the run reads back', () => {
  const shared = useSandboxWorkspace({ products: 40 });

  it('fails the run at once with storage.not_regular_file, and the next run gets the lock', async () => {
    const table = join(shared.ws.dir, 'fifo-table');
    const env = { ...sandboxEnv(shared.sandbox), TABLE_PATH: table };
    await mkdir(table, { recursive: true });
    execFileSync('mkfifo', [join(table, '_table.json')]);
    const summaryFile = join(shared.ws.dir, 'summary-fifo.json');
    const run = (file: string) =>
      runCli(['run', 'pipelines/products-table.yml', '--quiet', '--summary-file', file], { cwd: shared.ws.dir, env });

    const refused = await run(summaryFile);
    expect(refused.code, refused.stderr).toBe(1);
    const summary = (await readJson<{ pipelines: RunSummary[] }>(summaryFile)).pipelines[0]!;
    expect(summary.error).toMatchObject({
      code: 'storage.not_regular_file',
      message: expect.stringContaining(`${join(table, '_table.json')}: it is a FIFO`),
    });

    // The FIFO removed, the next run is not kept out by a lock nobody holds.
    await rm(join(table, '_table.json'));
    const next = await run(join(shared.ws.dir, 'summary-next.json'));
    expect(next.code, next.stderr).toBe(0);
  }, 60_000);

  it('refuses a FIFO at the history file in catalog-streams history', async () => {
    const history = join(shared.ws.dir, '.state', 'history');
    await mkdir(history, { recursive: true });
    execFileSync('mkfifo', [join(history, 'products-table.jsonl')]);
    const result = await runCli(['history', 'pipelines/products-table.yml'], {
      cwd: shared.ws.dir,
      env: { ...sandboxEnv(shared.sandbox), TABLE_PATH: join(shared.ws.dir, 'fifo-table') },
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('storage.not_regular_file');
    await rm(join(history, 'products-table.jsonl'));
  }, 60_000);
});
