// Issue 23, cases 1-3, as an operator met them: a table run killed while renaming its parts into
// place, one killed after `_table.json` was written and before the replaced same-day snapshot was
// removed, and a table beside an s3 sink whose manifest PUT fails after the table published. Each
// is followed by good runs; a glob over the table's folders (what a data engineer's query reads)
// must count each key once and each change once.
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { S3RVER_CREDENTIALS, startS3Server, type S3TestServer } from '../helpers/s3-server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { runCli, sandboxEnv, workspace } from '../cli/cli-process.js';

const PRODUCTS = 250;
let sandbox: TestSandbox;
let ids: string[];
beforeAll(async () => {
  sandbox = await startTestSandbox({ products: PRODUCTS, seed: 231 });
  const all = await sandbox.query<{ id: string }>('/v4/products/query', {
    filter: { createdAt: { from: 0 } },
    sorting: { id: 'ASC' },
    page: { no: 0, size: 250 },
  });
  ids = all.results.map((r) => r.id).sort();
}, 60_000);
afterAll(() => sandbox?.close());

// A filter on createdAt only: the run's window is on createdAt, so products touched just before a run are read.
const SOURCE = `source: { type: products.query, filter: { createdAt: { from: 0 } }, sorting: { id: ASC } }`;
const TABLE = `{ type: table, path: lake/products, key: id, maxRows: 100 }`;

async function globRows(dir: string, glob: string, select: string): Promise<string[]> {
  const { rows } = await duckdbQuery(`SELECT ${select} AS v FROM read_parquet(${sqlString(join(dir, glob))})`);
  return rows.map((r) => String(r.v)).sort();
}

async function setUp(name: string, sinks: string, env: NodeJS.ProcessEnv = sandboxEnv(sandbox)) {
  const ws = await workspace(`catalog-streams-${name}-`);
  const file = join(ws.dir, 'pipeline.yml');
  await writeFile(file, `name: ${name}\n${SOURCE}\nsinks:\n${sinks}`);
  const run = (extra: Record<string, string> = {}) =>
    runCli(['run', file, '--log-format', 'json'], { cwd: ws.dir, env: { ...env, ...extra } });
  return { ws, file, run };
}

/** Touches `count` products of the extract; returns their ids. */
function touch(offset: number, count: number): string[] {
  const chosen = Array.from({ length: count }, (_, i) => ids[(offset + i * 17) % ids.length]!);
  return sandbox.touch(chosen).products;
}

/**
 * A good run after the kill; then a glob over the table counts each key once, and the change rows
 * are the first run's inserts and the touched products' updates, each once.
 */
async function expectGoodRunExact(
  run: () => Promise<{ code: number | null; stderr: string }>,
  root: string,
  touched: string[],
): Promise<void> {
  const good = await run();
  expect(good.code, good.stderr).toBe(0);
  expect(await globRows(root, 'snapshot/*/*.parquet', 'id')).toEqual(ids);
  expect(await globRows(root, 'changes/*/*.parquet', `_change || ' ' || id`)).toEqual(
    [...ids.map((id) => `insert ${id}`), ...touched.map((id) => `update ${id}`)].sort(),
  );
}

describe('issue 23: kills during a table publication, and a failing sibling', () => {
  it('case 1: killed while renaming its parts into place; the next run removes the renamed parts', async () => {
    const { ws, run } = await setUp('case-1', `  - ${TABLE}\n`);
    try {
      expect((await run()).code).toBe(0);
      const touched = touch(3, 10);
      const killed = await run({ CATALOG_STREAMS_TEST_KILL_AT_STEP: 'rename:/snapshot/:2' });
      expect(killed.signal).toBe('SIGKILL');
      // One new part is under its final name, beside the earlier version's parts.
      const root = join(ws.dir, 'lake/products');
      expect((await globRows(root, 'snapshot/*/*.parquet', 'id')).length).toBeGreaterThan(ids.length);
      await expectGoodRunExact(run, root, touched);
    } finally {
      await ws.remove();
    }
  });

  it('case 2: killed after _table.json, before the replaced same-day snapshot was removed', async () => {
    const { ws, run } = await setUp('case-2', `  - ${TABLE}\n`);
    try {
      expect((await run()).code).toBe(0);
      const touched = touch(5, 10);
      const killed = await run({ CATALOG_STREAMS_TEST_KILL_AT_STEP: 'remove:/snapshot/:1' });
      expect(killed.signal).toBe('SIGKILL');
      const root = join(ws.dir, 'lake/products');
      const manifest = JSON.parse(await readFile(join(root, '_table.json'), 'utf8')) as {
        versions: Array<{ snapshot: unknown[]; replacedBy?: string; counts: { updated: number } }>;
      };
      // The killed run committed: its version is current, the first one marked replaced.
      expect(manifest.versions).toHaveLength(2);
      expect(manifest.versions[0]!.snapshot).toEqual([]);
      expect(manifest.versions[1]!.counts.updated).toBe(touched.length);
      await expectGoodRunExact(run, root, touched);
    } finally {
      await ws.remove();
    }
  });

  describe('case 3: a table beside an s3 sink whose manifest PUT answers 500', () => {
    let s3: S3TestServer;
    beforeAll(async () => {
      s3 = await startS3Server({ failPutObjectKey: '_manifest\\.json$' });
    });
    afterAll(() => s3?.stop());

    it('the run exits 1 with the earlier version whole, and every later run works', async () => {
      const env = sandboxEnv(sandbox, {
        AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
        AWS_REGION: 'us-east-1',
        S3_ENDPOINT: s3.endpoint,
      });
      const tableOnly = await setUp('case-3', `  - ${TABLE}\n`, env);
      try {
        expect((await tableOnly.run()).code).toBe(0);
        const root = join(tableOnly.ws.dir, 'lake/products');
        const before = await readFile(join(root, '_table.json'), 'utf8');
        const state = (JSON.parse(before) as { state: string }).state;
        touch(7, 10);
        // The same table, now beside an s3 sink whose manifest cannot be written.
        const both = join(tableOnly.ws.dir, 'both.yml');
        await writeFile(
          both,
          `name: case-3\n${SOURCE}\nsinks:\n  - ${TABLE}\n  - { type: s3, format: jsonl, bucket: ${s3.bucket}, key: "flat/part-{part}.jsonl" }\n`,
        );
        const failed = await runCli(['run', both, '--log-format', 'json'], { cwd: tableOnly.ws.dir, env });
        expect(failed.code, failed.stderr).toBe(1);
        expect(failed.stderr).toContain('_manifest.json');
        // Revoked to the earlier version, whose merge state is still there.
        expect(await readFile(join(root, '_table.json'), 'utf8')).toBe(before);
        expect(existsSync(join(root, state)), `${state} is still there`).toBe(true);
        expect(await globRows(root, 'snapshot/*/*.parquet', 'id')).toEqual(ids);
        // Healthy runs go on from it.
        for (let i = 0; i < 2; i++) {
          const good = await tableOnly.run();
          expect(good.code, good.stderr).toBe(0);
        }
        expect(await globRows(root, 'snapshot/*/*.parquet', 'id')).toEqual(ids);
      } finally {
        await tableOnly.ws.remove();
      }
    });
  });
});
