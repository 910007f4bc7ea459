// Fault matrix, publication: what a failed rerun, an overlapping run and a rerun with fewer
// parts leave for a reader. The data-lake pipeline (pipelines/products-lake-s3.yml) runs as
// the CLI against the sandbox and s3rver; local datasets run in-process. After every run:
// a plain glob over the dataset holds each selected product exactly once, and every object
// a manifest lists exists with the bytes the manifest says.
import { readdir, readFile } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { RunFailedError, runPipeline } from '../../src/pipeline/runner.js';
import { defineStage } from '../../src/core/stage.js';
import type { S3Manifest } from '../../src/sinks/index.js';
import { S3RVER_CREDENTIALS, startS3Server, type S3TestServer } from '../helpers/s3-server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { workspace as cliWorkspace } from '../cli/cli-process.js';
import {
  expectExactIds,
  jsonLines,
  leftBehind,
  parquetIds,
  productIdsWithStatus,
  runCli,
  sandboxEnv,
  sandboxFixture,
  startCli,
  workspace,
} from './support.js';

// Part counts, not rows, make the cases (three parts, then four, then two; a failure after two
// were uploaded): 900 products, about 850 selected, with parts of 250 to 500 rows do it as 9,000
// with parts of 2,500 to 5,000 did, for a tenth of the rows to serve, write and read back (issue 38).
const PRODUCTS = 900;
const date = () => new Date().toISOString().slice(0, 10);

describe('publication on S3: products-lake-s3.yml reruns', { timeout: 240_000 }, () => {
  let s3: S3TestServer;
  let sandbox: TestSandbox;
  let ws: { dir: string; remove(): Promise<void> };
  let expected: string[];
  beforeAll(async () => {
    [s3, sandbox] = await Promise.all([
      startS3Server({ bucket: 'lake' }),
      startTestSandbox({ products: PRODUCTS, seed: 15 }),
    ]);
    expected = productIdsWithStatus(sandbox, 'active', 'inactive', 'replaced');
  });
  afterAll(async () => {
    await Promise.all([s3?.stop(), sandbox?.close()]);
  });
  beforeEach(async () => {
    await ws?.remove();
    ws = await cliWorkspace();
    sandbox.setFaults({});
    // A fresh prefix per test: the bucket is shared.
    prefix = `t${++tests}`;
  });
  let prefix = '';
  let tests = 0;

  const env = (partRows: number) =>
    sandboxEnv(sandbox, {
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      S3_ENDPOINT: s3.endpoint,
      LAKE_BUCKET: 'lake',
      LAKE_PREFIX: prefix,
      LAKE_PART_ROWS: String(partRows),
    });
  const run = (partRows: number) =>
    runCli(['run', 'pipelines/products-lake-s3.yml'], { cwd: ws.dir, env: env(partRows) });
  const keys = async (under: string) =>
    ((await s3.client.send(new ListObjectsV2Command({ Bucket: 'lake', Prefix: under }))).Contents ?? [])
      .map((c) => c.Key!)
      .sort();
  const get = async (key: string) =>
    Buffer.from(
      await (await s3.client.send(new GetObjectCommand({ Bucket: 'lake', Key: key }))).Body!.transformToByteArray(),
    );
  const manifestKey = () => `${prefix}/products/dt=${date()}/_manifest.json`;
  const manifest = async () => JSON.parse((await get(manifestKey())).toString()) as S3Manifest;

  /** Every object the manifest lists exists with the listed size; returns the ids they hold. */
  async function listedIds(m: S3Manifest): Promise<string[]> {
    const local = await workspace();
    try {
      for (const [i, f] of m.files.entries()) {
        const head = await s3.client.send(new HeadObjectCommand({ Bucket: 'lake', Key: f.key }));
        expect(head.ContentLength, f.key).toBe(f.bytes);
        await local.write(`listed/${i}.parquet`, (await get(f.key)) as unknown as string);
      }
      return await parquetIds(local.path('listed/*.parquet'));
    } finally {
      await local.remove();
    }
  }

  /** The ids a plain glob over the dataset (`dt=*\/*.parquet`) reads. */
  async function globIds(): Promise<string[]> {
    const local = await workspace();
    try {
      const all = (await keys(`${prefix}/products/`)).filter((k) => /\/dt=[^/]+\/[^/]*\.parquet$/.test(k));
      for (const key of all) await local.write(key, (await get(key)) as unknown as string);
      return await parquetIds(local.path(`${prefix}/products/dt=*/*.parquet`));
    } finally {
      await local.remove();
    }
  }

  it('item 1: a failed same-day rerun leaves the published partition and its manifest intact', async () => {
    const first = await run(300);
    expect(first.code, first.stderr).toBe(0);
    const published = await manifest();
    expect(published.files).toHaveLength(3);
    const before = await keys(`${prefix}/products/`);

    sandbox.setFaults({ errorLine: { atIndex: 700 } });
    const second = await run(300);
    expect(second.code, second.stderr).toBe(1);
    expect(jsonLines(second.stderr).find((l) => l.event === 'summary')).toMatchObject({
      status: 'failed',
      error: { code: 'stream.error_line' },
    });

    expect(await manifest()).toEqual(published);
    expect(await keys(`${prefix}/products/`)).toEqual(before);
    expectExactIds(await listedIds(published), expected);
    expectExactIds(await globIds(), expected);
  });

  it('item 4: a same-day rerun with fewer parts replaces the partition; a glob counts each product once', async () => {
    const first = await run(250);
    expect(first.code, first.stderr).toBe(0);
    expect((await manifest()).files).toHaveLength(4);
    const second = await run(500);
    expect(second.code, second.stderr).toBe(0);
    const m = await manifest();
    expect(m.files).toHaveLength(2);
    // Part names carry the run id: no run ever overwrites another run's object.
    for (const f of m.files) expect(f.key).toContain(m.runId);
    expectExactIds(await listedIds(m), expected);
    expectExactIds(await globIds(), expected);
    // Only the second run's parts and its manifest are left.
    expect(await keys(`${prefix}/products/`)).toEqual([...m.files.map((f) => f.key), manifestKey()].sort());
  });

  it('item 2: a second run on the prefix while one runs exits 1 naming the holder; the manifest matches its objects', async () => {
    // Every API answer waits 2 s, so the first run holds the prefix while the second starts.
    // Every API answer waits 4 s, so whichever run takes the dataset first still holds it when
    // the other gets there (on a loaded machine either may be first).
    sandbox.setFaults({ latencyMs: 4000 });
    const a = startCli(['run', 'pipelines/products-lake-s3.yml'], { cwd: ws.dir, env: env(500) });
    await new Promise((r) => setTimeout(r, 800));
    const b = startCli(['run', 'pipelines/products-lake-s3.yml'], { cwd: ws.dir, env: env(300) });
    const results = [await a.done, await b.done];
    const winner = results.find((r) => r.code === 0);
    const loser = results.find((r) => r.code !== 0);
    expect(winner, results.map((r) => r.stderr).join('\n')).toBeDefined();
    expect(loser?.code, loser?.stderr).toBe(1);
    const failed = jsonLines(loser!.stderr).find((l) => l.event === 'summary');
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'publish.locked' }, outputs: [] });
    const winnerRun = jsonLines(winner!.stderr).find((l) => l.event === 'summary')!.runId as string;
    expect(failed!.error.message).toContain(winnerRun);
    const m = await manifest();
    expect(m.runId).toBe(winnerRun);
    const rows = winner === results[0] ? 500 : 300;
    expect(m.files.map((f) => f.rows)).toEqual(
      Array.from({ length: Math.ceil(expected.length / rows) }, (_, i) => Math.min(rows, expected.length - i * rows)),
    );
    expectExactIds(await listedIds(m), expected);
    expectExactIds(await globIds(), expected);
  });
});

describe('publication in local folders', () => {
  // About 255 selected: four parts of 80 rows, then two of 200 (issue 38: was 1,500 products).
  const f = sandboxFixture({ products: 300, seed: 16 });

  /**
   * A sink that takes every record, then fails when asked to finish: once a sibling has published
   * an output (an `output` event), or after 5 s if none does (a sibling held back until all finish).
   */
  const failingSink = defineStage({
    kind: 'sink',
    type: 'fails-at-end',
    description: 'test sink failing in its final step',
    options: z.strictObject({}),
    create: (_options, ctx) =>
      Object.assign(
        new Writable({
          objectMode: true,
          write: (_r, _e, cb) => cb(),
          final: (cb) => {
            const fail = () => {
              clearTimeout(timer);
              ctx.events.off('output', fail);
              cb(new Error('the second sink failed at its end'));
            };
            const timer = setTimeout(fail, 5000);
            ctx.events.on('output', fail);
          },
        }),
        { outputs: [] },
      ),
  });

  async function run(yaml: string) {
    const registry = createRegistry().register(failingSink);
    const file = await f.ws.write('p.yml', yaml);
    const [loaded] = parsePipelines(yaml, registry, { env: {}, file });
    const connection = { baseUrl: f.sandbox.url, ...f.sandbox.credentials, rateLimit: Infinity };
    try {
      return { ok: true as const, summary: await runPipeline(loaded!, { registry, connection, env: {} }) };
    } catch (err) {
      if (!(err instanceof RunFailedError)) throw err;
      return { ok: false as const, error: err };
    }
  }
  const source = `source: { type: products.query, filter: { status: [active, inactive, replaced] } }`;

  it('item 3: a failed run keeps the earlier file at the same path', async () => {
    const good = await run(
      `name: twosinks\n${source}\nsinks:\n  - { type: parquet, path: out/products.parquet }\n  - { type: jsonl, path: out/products.jsonl }\n`,
    );
    expect(good.ok).toBe(true);
    const earlier = await readFile(f.ws.path('out/products.parquet'));
    const bad = await run(
      `name: twosinks\n${source}\nsinks:\n  - { type: parquet, path: out/products.parquet }\n  - { type: fails-at-end }\n`,
    );
    expect(bad.ok).toBe(false);
    expect(bad.ok ? undefined : bad.error.message).toContain('the second sink failed at its end');
    expect(await readFile(f.ws.path('out/products.parquet'))).toEqual(earlier);
    expectExactIds(await parquetIds(f.ws.path('out/products.parquet')), f.expected);
    expect((await leftBehind(f.ws.dir)).temp).toEqual([]);
  });

  it('item 4: a same-day rerun with fewer parts leaves no earlier part; a glob counts each product once', async () => {
    const yaml = (rows: number) =>
      `name: parts\n${source}\nsinks:\n  - { type: parquet, path: "out/dt={date}/part-{part}.parquet", maxRows: ${rows} }\n`;
    // Beside the parts, the hidden record of the files the last run wrote (what the next run may remove).
    const parts = async () => (await readdir(f.ws.path(`out/dt=${date()}`))).filter((n) => !n.startsWith('.')).sort();
    expect((await run(yaml(80))).ok).toBe(true);
    expect(await parts()).toHaveLength(4);
    const second = await run(yaml(200));
    expect(second.ok).toBe(true);
    expect(await parts()).toEqual(['part-00000.parquet', 'part-00001.parquet']);
    const records = (await readdir(f.ws.path(`out/dt=${date()}`))).filter((n) => n.startsWith('.'));
    expect(records).toEqual([expect.stringMatching(/^\.catalog-streams\.[0-9a-f]{16}\.json$/)]);
    expectExactIds(await parquetIds(f.ws.path('out/dt=*/*.parquet')), f.expected);
  });
});
