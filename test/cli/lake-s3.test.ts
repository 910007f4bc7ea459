// pipelines/products-lake-s3.yml end to end: the CLI process extracts the
// sandbox's products (products.stream) into a real S3-compatible server
// (s3rver, found through S3_ENDPOINT with fake AWS credentials in the
// environment): date-partitioned Parquet parts of LAKE_PART_ROWS rows, the
// _manifest.json written last listing them, invalid records dead-lettered to
// their own gzipped JSONL objects. Read back with DuckDB: every product is in
// exactly one place.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { S3Manifest } from '../../src/sinks/index.js';
import { PRODUCT_STATUSES, productIdOf } from '../../src/sandbox/index.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { startS3Server, S3RVER_CREDENTIALS, type S3TestServer } from '../helpers/s3-server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { jsonLines, runCli, sandboxEnv, workspace } from './cli-process.js';

const PRODUCTS = 2500;

describe('products-lake-s3.yml into S3 (s3rver)', () => {
  let s3: S3TestServer;
  let sandbox: TestSandbox;
  let ws: Awaited<ReturnType<typeof workspace>>;
  beforeAll(async () => {
    [s3, sandbox, ws] = await Promise.all([
      startS3Server({ bucket: 'lake' }),
      // A few records break the product schema: they must land in the dead-letter objects.
      startTestSandbox({ products: PRODUCTS, faults: { invalidRecordRate: 0.004 } }),
      workspace(),
    ]);
  });
  afterAll(async () => {
    await Promise.all([s3?.stop(), sandbox?.close(), ws?.remove()]);
  });

  const get = async (key: string) =>
    Buffer.from(
      await (await s3.client.send(new GetObjectCommand({ Bucket: 'lake', Key: key }))).Body!.transformToByteArray(),
    );

  const lakeEnv = () =>
    sandboxEnv(sandbox, {
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      S3_ENDPOINT: s3.endpoint,
      LAKE_BUCKET: 'lake',
      LAKE_PREFIX: 'catalog',
      LAKE_PART_ROWS: '1000',
    });

  it('writes Parquet parts, a manifest listing them, and dead letters; every product exactly once', async () => {
    const env = lakeEnv();
    const { code, stderr, stdout } = await runCli(
      ['run', 'pipelines/products-lake-s3.yml', '--summary-file', 'summary.json'],
      { cwd: ws.dir, env },
    );
    expect(code, stderr).toBe(0);
    expect(stdout).toBe('');
    const date = new Date().toISOString().slice(0, 10);
    const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: 'lake' }));
    const keys = (listed.Contents ?? []).map((c) => c.Key!).sort();
    const rejected = keys.filter(
      (k) => k.startsWith(`catalog/rejected/products/dt=${date}/rejected-`) && k.endsWith('.jsonl.gz'),
    );
    expect(rejected).toHaveLength(1);
    // Part names carry the run id (the key template has no {run}): no run overwrites another's objects.
    const runId = jsonLines(stderr).find((l) => l.event === 'summary')!.runId as string;
    expect(keys).toEqual(
      [
        `catalog/products/dt=${date}/_manifest.json`,
        `catalog/products/dt=${date}/part-00000-${runId}.parquet`,
        `catalog/products/dt=${date}/part-00001-${runId}.parquet`,
        `catalog/products/dt=${date}/part-00002-${runId}.parquet`,
        `catalog/rejected/products/dt=${date}/_manifest.json`,
        ...rejected,
      ].sort(),
    );
    // The manifest was written after every part and lists them with their rows.
    const log = await s3.requestLog();
    const lastPart = Math.max(
      ...log.flatMap((r, i) =>
        r.op === 'CompleteMultipartUpload' || (r.op === 'PutObject' && r.key.endsWith('.parquet')) ? [i] : [],
      ),
    );
    expect(
      log.findIndex((r) => r.op === 'PutObject' && r.key === `catalog/products/dt=${date}/_manifest.json`),
    ).toBeGreaterThan(lastPart);
    const manifest = JSON.parse((await get(`catalog/products/dt=${date}/_manifest.json`)).toString()) as S3Manifest;
    expect(manifest).toMatchObject({
      version: 1,
      name: 'products-lake',
      format: 'parquet',
      bucket: 'lake',
      source: { type: 'products.stream', filter: { status: ['active', 'replaced', 'inactive'] } },
    });
    expect(manifest.files.map((f) => f.key)).toEqual(
      [0, 1, 2].map((p) => `catalog/products/dt=${date}/part-0000${p}-${runId}.parquet`),
    );
    expect(manifest.files.map((f) => f.rows).slice(0, 2)).toEqual([1000, 1000]);

    // Read the parts back as a data engineer would.
    const partFiles = await Promise.all(
      manifest.files.map(async (f, i) => {
        const file = join(ws.dir, `part-${i}.parquet`);
        await writeFile(file, await get(f.key));
        return file;
      }),
    );
    const { rows } = await duckdbQuery(
      `SELECT id, status FROM read_parquet([${partFiles.map(sqlString).join(', ')}]) ORDER BY id`,
    );
    expect(rows.length).toBe(manifest.rows);
    const deadLetters = gunzipSync(await get(rejected[0]!))
      .toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { record: { id: string }; issues?: unknown });
    const noSelection = PRODUCT_STATUSES.indexOf('no_selection');
    const expected = Array.from({ length: PRODUCTS }, (_, i) => i)
      .filter((i) => sandbox.dataset.status[i] !== noSelection)
      .map(productIdOf);
    const written = rows.map((r) => String(r.id));
    const dead = deadLetters.map((d) => d.record?.id ?? (d as unknown as { id: string }).id);
    expect(dead.length).toBeGreaterThan(0);
    expect([...written, ...dead].sort()).toEqual(expected);
    expect(new Set(written).size).toBe(written.length);
    expect(rows.every((r) => ['active', 'replaced', 'inactive'].includes(String(r.status)))).toBe(true);

    const summary = jsonLines(stderr).find((l) => l.event === 'summary')!;
    expect(summary.records).toMatchObject({
      read: expected.length,
      invalid: dead.length,
      deadLettered: dead.length,
      written: { s3: manifest.rows },
    });
    expect(summary.objects).toBe(summary.outputs.length);
    expect(summary.requests).toBe(1);
  });

  it('products-nightly.yml keeps its cursor in S3 (NIGHTLY_STATE=s3://...): stored after the run, used by the next', async () => {
    sandbox.setFaults({});
    const env = { ...lakeEnv(), NIGHTLY_STATE: 's3://lake/state/products-nightly.json', CATALOG_RATE_LIMIT: '0' };
    const first = await runCli(['run', 'pipelines/products-nightly.yml', '--quiet'], { cwd: ws.dir, env });
    expect(first.code, first.stderr).toBe(0);
    const state = JSON.parse((await get('state/products-nightly.json')).toString());
    expect(state).toMatchObject({ version: 1, pipeline: 'products-nightly' });
    const second = await runCli(['run', 'pipelines/products-nightly.yml', '--quiet'], { cwd: ws.dir, env });
    expect(second.code, second.stderr).toBe(0);
    const summary = jsonLines(second.stderr).find((l) => l.event === 'summary')!;
    expect(summary.sourceFilter).toEqual({
      and: [
        { status: ['active', 'replaced', 'inactive'] },
        { updatedSince: { from: state.cursor, until: expect.any(Number) } },
      ],
    });
    expect(summary.cursor).toMatchObject({
      previous: state.cursor,
      stored: true,
      location: 's3://lake/state/products-nightly.json',
    });
  });
});
