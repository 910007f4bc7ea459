// The `table` sink's contract outside the 20-day simulation (table-history.test.ts): a full run
// that would delete more than deletes.maxRatio exits 1 and publishes nothing, `--allow-deletes`
// lets it through (both through the CLI); a stopped run publishes nothing; the s3rver variant
// of first / incremental / full-with-deletes / same-day rerun, read back with DuckDB.
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunFailedError } from '../../src/pipeline/runner.js';
import { runCli, sandboxEnv } from '../cli/cli-process.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { startS3Server, useS3rverEnvironment, type S3TestServer } from '../helpers/s3-server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { tempDir } from './records.js';
import { dayTime, pipelineYaml, TableDays } from './table-harness.js';

let sandbox: TestSandbox;
beforeAll(async () => {
  sandbox = await startTestSandbox({ products: 400, seed: 5 });
});
afterAll(async () => {
  await sandbox?.close();
});

async function listAll(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string, rel: string) => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      if (e.isDirectory()) await walk(join(d, e.name), `${rel}${e.name}/`);
      else out.push(`${rel}${e.name}`);
    }
  };
  await walk(dir, '');
  return out.sort();
}

describe('table sink: deletes above maxRatio (CLI)', () => {
  it('exits 1 and publishes nothing; --allow-deletes publishes the deletes', async () => {
    const dir = await tempDir('table-ratio-');
    await writeFile(join(dir, 'products-table.yml'), pipelineYaml('lake/products', { maxRatio: 0.05 }));
    const env = sandboxEnv(sandbox);
    const first = await runCli(['run', 'products-table.yml', '--quiet'], { cwd: dir, env });
    expect(first.code, first.stderr).toBe(0);
    const root = join(dir, 'lake/products');
    const manifestBefore = await readFile(join(root, '_table.json'), 'utf8');
    const stateBefore = await readFile(join(dir, '.state/products-table.json'), 'utf8');
    const filesBefore = await listAll(root);

    // 10 % of the catalog disappears: a full run must not take that as deletes unasked.
    const hidden = (await sandbox.post('/_sandbox/hide', { count: 40 })).json().products as string[];
    const refused = await runCli(['run', 'products-table.yml', '--full-refresh'], { cwd: dir, env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('table.deletes_refused');
    expect(refused.stderr).toContain('would delete 40 of 400 keys (10.0 %)');
    expect(refused.stderr).toContain('--allow-deletes');
    expect(await readFile(join(root, '_table.json'), 'utf8')).toBe(manifestBefore);
    expect(await readFile(join(dir, '.state/products-table.json'), 'utf8')).toBe(stateBefore);
    expect(await listAll(root)).toEqual(filesBefore);

    const allowed = await runCli(['run', 'products-table.yml', '--full-refresh', '--allow-deletes', '--quiet'], {
      cwd: dir,
      env,
    });
    expect(allowed.code, allowed.stderr).toBe(0);
    const manifest = JSON.parse(await readFile(join(root, '_table.json'), 'utf8'));
    const version = manifest.versions.at(-1);
    expect(version).toMatchObject({
      mode: 'full',
      rows: 360,
      counts: { inserted: 0, updated: 0, deleted: 40, unchanged: 360 },
    });
    const deletes = await duckdbQuery(
      `SELECT id FROM read_parquet(${sqlString(join(root, `changes/dt=${version.date}/*-${version.runId}.parquet`))}) WHERE _change = 'delete' ORDER BY id`,
    );
    expect(deletes.rows.map((r) => r.id)).toEqual([...hidden].sort());
    // The same day's earlier snapshot is gone; a glob over the day counts each live key once.
    const snapshot = await duckdbQuery(
      `SELECT count(*)::INTEGER AS n, count(DISTINCT id)::INTEGER AS k FROM read_parquet(${sqlString(join(root, 'snapshot/dt=*/*.parquet'))})`,
    );
    expect(snapshot.rows[0]).toEqual({ n: 360, k: 360 });
    // Back for the next tests, updated before any of their (simulated) run times.
    await sandbox.post('/_sandbox/reveal', { ids: hidden, at: Math.floor(dayTime(-5).getTime() / 1000) });
  }, 60_000);
});

describe('table sink: a stopped run', () => {
  it('publishes nothing and leaves no temp file', async () => {
    const dir = await tempDir('table-stop-');
    const days = new TableDays(sandbox, dir, pipelineYaml('lake/products'));
    await days.write();
    const root = join(dir, 'lake/products');
    await days.check(root, await days.run(dayTime(0)), dayTime(0), await days.expectedAfter('first'));
    const before = await listAll(root);
    const manifest = await readFile(join(root, '_table.json'), 'utf8');
    await sandbox.post('/_sandbox/faults', { latencyMs: 30 });
    const controller = new AbortController();
    const running = days.runWith(dayTime(1), { full: true, signal: controller.signal });
    setTimeout(() => controller.abort('SIGTERM'), 150);
    const err = await running.then(
      () => undefined,
      (e: unknown) => e,
    );
    await sandbox.post('/_sandbox/faults', {});
    expect(err).toBeInstanceOf(RunFailedError);
    expect((err as RunFailedError).summary.status).toBe('aborted');
    expect(await readFile(join(root, '_table.json'), 'utf8')).toBe(manifest);
    expect(await listAll(root)).toEqual(before);
    // A temp file of a killed run (a process of this host that is gone) goes with the next run; a live one stays.
    const tag = createHash('sha256').update(hostname()).digest('hex').slice(0, 6);
    const dead = join(root, `snapshot/dt=2026-01-01/.part-00000-x.parquet.${tag}-999999999-0123abcd.tmp`);
    const live = join(root, `_table/.state-y.v8.gz.${tag}-${process.pid}-0123abcd.tmp`);
    await mkdir(dirname(dead), { recursive: true });
    await writeFile(dead, 'x');
    await writeFile(live, 'x');
    // The killed run journaled the names before staging them (storage/write-journal.ts).
    const files = ['snapshot/dt=2026-01-01/part-00000-x.parquet', '_table/state-y.v8.gz'];
    await writeFile(
      join(root, '_journal/killed.json'),
      JSON.stringify({ format: 'catalog-streams.journal', version: 1, run: 'killed', files }),
    );
    await days.check(root, await days.run(dayTime(1)), dayTime(1), await days.expectedAfter('incremental'));
    expect(await listAll(join(root, 'snapshot/dt=2026-01-01'))).toEqual([]);
    expect(await readFile(live, 'utf8')).toBe('x');
  }, 60_000);
});

describe('table sink: two runs on one table at once', () => {
  it('the second fails publish.locked before publishing; the first publishes', async () => {
    const dir = await tempDir('table-lock-');
    const a = new TableDays(sandbox, dir, pipelineYaml('lake/products'));
    const b = new TableDays(
      sandbox,
      dir,
      pipelineYaml('lake/products').replace('.state/products-table.json', '.state/other.json'),
    );
    await sandbox.post('/_sandbox/faults', { latencyMs: 40 });
    try {
      const first = a.run(dayTime(0));
      await new Promise((resolve) => setTimeout(resolve, 100));
      const second = await b.run(dayTime(0)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((second as RunFailedError).code).toBe('publish.locked');
      expect((second as RunFailedError).message).toContain(join(dir, 'lake/products'));
      const summary = await first;
      expect(summary.status).toBe('succeeded');
    } finally {
      await sandbox.post('/_sandbox/faults', {});
    }
    const manifest = JSON.parse(await readFile(join(dir, 'lake/products/_table.json'), 'utf8'));
    expect(manifest.versions).toHaveLength(1);
    expect((await readdir(join(dir, 'lake/products'))).sort()).toEqual([
      '_journal',
      '_table',
      '_table.json',
      'changes',
      'snapshot',
    ]);
  }, 60_000);
});

describe('table sink on S3 (s3rver)', () => {
  let s3: S3TestServer;
  let restore: () => void;
  beforeAll(async () => {
    s3 = await startS3Server({ bucket: 'lake' });
    restore = useS3rverEnvironment(s3.endpoint);
  });
  afterAll(async () => {
    restore?.();
    await s3?.stop();
  });

  /** Copies every object under the table's prefix into `local` (emptied first), to read it as a folder. */
  async function mirror(local: string): Promise<string[]> {
    await rm(local, { recursive: true, force: true });
    const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: 'lake', Prefix: 'tables/products/' }));
    const keys = (listed.Contents ?? []).map((o) => o.Key!).sort();
    for (const key of keys) {
      const file = join(local, key.slice('tables/products/'.length));
      await mkdir(dirname(file), { recursive: true });
      const body = await s3.client.send(new GetObjectCommand({ Bucket: 'lake', Key: key }));
      await writeFile(file, await body.Body!.transformToByteArray());
    }
    return keys;
  }

  it('first, incremental, full with deletes, same-day rerun, refused run: exact versions', async () => {
    const dir = await tempDir('table-s3-');
    const days = new TableDays(sandbox, dir, pipelineYaml('s3://lake/tables/products', { maxRatio: 0.02 }));
    await days.write();
    const local = join(dir, 'mirror');
    const step = async (
      at: Date,
      mode: 'first' | 'full' | 'incremental',
      opts: { full?: boolean; allowDeletes?: boolean } = {},
    ) => {
      const next = await days.expectedAfter(mode);
      const summary = await days.run(at, opts);
      await mirror(local);
      await days.check(local, summary, at, next);
      expect(
        summary.outputs.every((o) => o.kind === 'object' && o.location.startsWith('s3://lake/tables/products/')),
      ).toBe(true);
    };
    await step(dayTime(0), 'first');
    await days.mutate('touch', { count: 5, at: Math.floor(dayTime(1, 1).getTime() / 1000) });
    await days.mutate('status', { count: 3, status: 'inactive', at: Math.floor(dayTime(1, 1).getTime() / 1000) });
    await step(dayTime(1), 'incremental');

    // 12 of 400 gone: above maxRatio 0.02, refused, nothing of the run left in the bucket.
    await days.mutate('hide', { count: 12, at: Math.floor(dayTime(2, 1).getTime() / 1000) });
    const keysBefore = await mirror(local);
    const refused = await days.run(dayTime(2), { full: true }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((refused as RunFailedError).code).toBe('table.deletes_refused');
    expect(await mirror(local)).toEqual(keysBefore);
    await step(dayTime(2), 'full', { full: true, allowDeletes: true });
    await days.mutate('reveal', { count: 3, at: Math.floor(dayTime(2, 4).getTime() / 1000) });
    // What a killed run uploaded (journaled, with its metadata) and no _table.json lists goes with the next run.
    await s3.client.send(
      new PutObjectCommand({
        Bucket: 'lake',
        Key: 'tables/products/_journal/killed.json',
        Body: JSON.stringify({
          format: 'catalog-streams.journal',
          version: 1,
          run: 'killed',
          files: ['snapshot/dt=2026-01-01/part-00000-killed.parquet'],
        }),
      }),
    );
    await s3.client.send(
      new PutObjectCommand({
        Bucket: 'lake',
        Key: 'tables/products/snapshot/dt=2026-01-01/part-00000-killed.parquet',
        Body: 'x',
        Metadata: { 'catalog-streams-run': 'killed' },
      }),
    );
    await step(dayTime(2, 5), 'incremental');
    const keys = await mirror(local);
    // The day's first snapshot is replaced; one state object; nothing unlisted.
    const manifest = JSON.parse(await readFile(join(local, '_table.json'), 'utf8'));
    const listed = manifest.versions.flatMap((v: any) =>
      [...v.snapshot, ...v.changes].map((f: any) => `tables/products/${f.path}`),
    );
    // One journal per run whose files the table still lists; the killed run's went with its part.
    const journals = manifest.versions.map((v: any) => `tables/products/_journal/${v.runId}.json`);
    expect(keys).toEqual(
      [...listed, `tables/products/${manifest.state}`, 'tables/products/_table.json', ...journals].sort(),
    );
    expect(await s3.listMultipartUploads()).toEqual([]);
  }, 90_000);
});
