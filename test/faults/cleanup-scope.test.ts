// Fault matrix, clean-up scope (issue 23, cases 4 and 5): what a run removes after it published is
// only what runs of its own dataset wrote (its naming, its run ids, under its root) and no published
// manifest lists; nothing else, whatever a name pattern or a manifest entry says. Locally and on
// s3rver: another pipeline's parts in the same folder, a `_table.json` entry climbing out of the
// table's root, a README under an S3 table's `changes/` prefix.
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { newRunId } from '../../src/core/run-id.js';
import type { SinkStream } from '../../src/core/stage.js';
import { jsonlSink, s3Sink, tableSink } from '../../src/sinks/index.js';
import { s3ServerForFile } from '../helpers/s3-server.js';
import { testContext, type TestContext } from '../helpers/stage-context.js';
import { tempDir } from '../sinks/records.js';

const s3 = s3ServerForFile();

type Warning = { code: string; message: string };

/** A context for one run: its own run id and start time, its warnings collected. */
function runContext(dir: string, startedAt: string): { ctx: TestContext; warnings: Warning[] } {
  const ctx = testContext({ baseDir: dir });
  ctx.run.id = newRunId(new Date(startedAt));
  ctx.run.startedAt = new Date(startedAt);
  const warnings: Warning[] = [];
  ctx.events.on('warning', (w) => warnings.push(w));
  return { ctx, warnings };
}

const records = (count: number) => Array.from({ length: count }, (_, i) => ({ id: `P${i}`, price: i }));

async function feed(sink: SinkStream, count: number): Promise<void> {
  await pipeline(Readable.from(records(count)), sink);
}

async function keys(prefix: string): Promise<string[]> {
  const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }));
  return (listed.Contents ?? []).map((c) => c.Key!).sort();
}

async function put(key: string, body: string): Promise<void> {
  await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body }));
}

async function get(key: string): Promise<string> {
  const res = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
  return res.Body!.transformToString('utf8');
}

describe('superseded parts: out/p{part}.jsonl beside another pipeline writing out/p2{part}.jsonl', () => {
  it("locally: the other pipeline's p200000.jsonl survives; this dataset's superseded parts go", async () => {
    const dir = await tempDir('cleanup-local-');
    const other = runContext(dir, '2026-05-01T01:00:00Z');
    await feed(jsonlSink({ path: 'out/p2{part}.jsonl', maxRows: 10 }, other.ctx), 5);
    const visible = async () => (await readdir(join(dir, 'out'))).filter((f) => !f.startsWith('.')).sort();
    expect(await visible()).toEqual(['p200000.jsonl']);

    const first = runContext(dir, '2026-05-01T02:00:00Z');
    await feed(jsonlSink({ path: 'out/p{part}.jsonl', maxRows: 2 }, first.ctx), 5);
    expect(await visible()).toEqual(['p00000.jsonl', 'p00001.jsonl', 'p00002.jsonl', 'p200000.jsonl']);
    const unlisted = first.warnings.find((w) => w.code === 'sink.cleanup_unlisted');
    expect(unlisted?.message).toContain(join(dir, 'out/p200000.jsonl'));

    // A rerun with fewer parts: the earlier run's p00001 and p00002 go, the other pipeline's file stays.
    const rerun = runContext(dir, '2026-05-01T03:00:00Z');
    await feed(jsonlSink({ path: 'out/p{part}.jsonl', maxRows: 2 }, rerun.ctx), 2);
    expect(await visible()).toEqual(['p00000.jsonl', 'p200000.jsonl']);
    expect((await readFile(join(dir, 'out/p200000.jsonl'), 'utf8')).split('\n')).toHaveLength(6);
  });

  it("on S3: the other pipeline's p200000-<run>.jsonl survives; this dataset's superseded objects go", async () => {
    const dir = await tempDir('cleanup-s3-');
    const prefix = 'parts/out/';
    const other = runContext(dir, '2026-05-01T01:00:00Z');
    await feed(
      s3Sink({ format: 'jsonl', bucket: s3.bucket, key: `${prefix}p2{part}.jsonl`, maxRows: 10 }, other.ctx),
      5,
    );
    const otherKey = `${prefix}p200000-${other.ctx.run.id}.jsonl`;
    expect(await keys(prefix)).toEqual([`${prefix}_manifest.json`, otherKey]);

    const first = runContext(dir, '2026-05-01T02:00:00Z');
    await feed(s3Sink({ format: 'jsonl', bucket: s3.bucket, key: `${prefix}p{part}.jsonl`, maxRows: 2 }, first.ctx), 5);
    const firstKeys = [0, 1, 2].map((p) => `${prefix}p0000${p}-${first.ctx.run.id}.jsonl`);
    expect(await keys(prefix)).toEqual([`${prefix}_manifest.json`, ...firstKeys, otherKey].sort());
    expect(first.warnings.find((w) => w.code === 'sink.cleanup_unlisted')?.message).toContain(otherKey);

    const rerun = runContext(dir, '2026-05-01T03:00:00Z');
    await feed(s3Sink({ format: 'jsonl', bucket: s3.bucket, key: `${prefix}p{part}.jsonl`, maxRows: 2 }, rerun.ctx), 2);
    expect(await keys(prefix)).toEqual(
      [`${prefix}_manifest.json`, `${prefix}p00000-${rerun.ctx.run.id}.jsonl`, otherKey].sort(),
    );
    expect((await get(otherKey)).split('\n')).toHaveLength(6);
  });
});

const columns = { id: 'string', price: 'int64' } as const;

describe("table: a same-day rerun removes only the table's own files that _table.json stops listing", () => {
  /** Adds `entry` to the snapshot files of the current version of the table's `_table.json` (`read`/`write` its text). */
  async function plant(read: () => Promise<string>, write: (text: string) => Promise<void>, entry: string) {
    const manifest = JSON.parse(await read());
    manifest.versions.at(-1).snapshot.push({ path: entry, rows: 0, bytes: 0 });
    await write(`${JSON.stringify(manifest, null, 2)}\n`);
  }

  it('locally: an entry ../../outside/victim.txt is not removed, a warning names it', async () => {
    const dir = await tempDir('cleanup-table-');
    const root = join(dir, 'lake/table');
    const first = runContext(dir, '2026-05-01T02:00:00Z');
    await feed(tableSink({ path: 'lake/table', columns }, first.ctx), 5);
    const victim = join(dir, 'outside/victim.txt');
    await mkdir(join(dir, 'outside'));
    await writeFile(victim, "not the table's");
    const manifestFile = join(root, '_table.json');
    await plant(
      () => readFile(manifestFile, 'utf8'),
      (text) => writeFile(manifestFile, text),
      '../../outside/victim.txt',
    );

    const rerun = runContext(dir, '2026-05-01T05:00:00Z');
    await feed(tableSink({ path: 'lake/table', columns }, rerun.ctx), 5);
    expect(await readFile(victim, 'utf8')).toBe("not the table's");
    const refused = rerun.warnings.filter((w) => w.code === 'table.cleanup_refused');
    expect(refused).toHaveLength(1);
    expect(refused[0]!.message).toContain('"../../outside/victim.txt"');
    // The table's own replaced snapshot still goes: one snapshot file for the day, the rerun's.
    expect(await readdir(join(root, 'snapshot/dt=2026-05-01'))).toEqual([`part-00000-${rerun.ctx.run.id}.parquet`]);
  });

  it('on S3: an entry ../../outside/victim.txt leaves the object outside the prefix alone', async () => {
    const dir = await tempDir('cleanup-table-s3-');
    const path = `s3://${s3.bucket}/victim/lake/table`;
    const first = runContext(dir, '2026-05-01T02:00:00Z');
    await feed(tableSink({ path, columns }, first.ctx), 5);
    await put('victim/outside/victim.txt', "not the table's");
    await plant(
      () => get('victim/lake/table/_table.json'),
      (text) => put('victim/lake/table/_table.json', text),
      '../../outside/victim.txt',
    );

    const rerun = runContext(dir, '2026-05-01T05:00:00Z');
    await feed(tableSink({ path, columns }, rerun.ctx), 5);
    expect(await get('victim/outside/victim.txt')).toBe("not the table's");
    expect(rerun.warnings.find((w) => w.code === 'table.cleanup_refused')?.message).toContain(
      '"../../outside/victim.txt"',
    );
    expect(await keys('victim/lake/table/snapshot/')).toEqual([
      `victim/lake/table/snapshot/dt=2026-05-01/part-00000-${rerun.ctx.run.id}.parquet`,
    ]);
  });

  it("on S3: a first run leaves a README under changes/ and removes a killed run's objects", async () => {
    const dir = await tempDir('cleanup-table-readme-');
    const prefix = 'readme/table/';
    await put(`${prefix}changes/README.txt`, 'change rows of the products table');
    // A killed run journals a part's name before uploading it with its run id as metadata
    // (storage/write-journal.ts): that is what proves the object the table's.
    const killedRun = newRunId(new Date('2026-04-30T02:00:00Z'));
    const killedRel = `snapshot/dt=2026-04-30/part-00000-${killedRun}.parquet`;
    const killed = `${prefix}${killedRel}`;
    await put(
      `${prefix}_journal/${killedRun}.json`,
      JSON.stringify({ format: 'catalog-streams.journal', version: 1, run: killedRun, files: [killedRel] }),
    );
    await s3.client.send(
      new PutObjectCommand({
        Bucket: s3.bucket,
        Key: killed,
        Body: 'PAR1 partial',
        Metadata: { 'catalog-streams-run': killedRun },
      }),
    );
    const run = runContext(dir, '2026-05-01T02:00:00Z');
    const info: string[] = [];
    run.ctx.events.on('info', (i) => info.push(`${i.code}: ${i.message}`));
    await feed(tableSink({ path: `s3://${s3.bucket}/${prefix}`, columns }, run.ctx), 5);
    expect(await get(`${prefix}changes/README.txt`)).toBe('change rows of the products table');
    const all = await keys(prefix);
    expect(all).not.toContain(killed);
    expect(info.find((m) => m.startsWith('stale_temp_removed'))).toContain(killed);
    expect(info.find((m) => m.startsWith('stale_temp_removed'))).not.toContain('README');
  });
});
