// Issue 40, a fan-out into datasets that each run replaces (no {run} in the path or key): a run in
// which FR's key is refused publishes BE's new files and removes BE's superseded ones, while FR's
// files of the earlier run stay byte for byte (locally and on S3, s3rver); the next run that reads
// FR replaces them. A file dataset a failed region could not be told apart in (no region= and no
// {run}) is refused before any request.
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, jsonLines, readJson, runCli, runMain, workspace } from '../cli/cli-process.js';
import { startS3Server, S3RVER_CREDENTIALS, type S3TestServer } from '../helpers/s3-server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { listedIds } from './region-ids.js';

type Rec = Record<string, any>;

const PIPELINE = [
  'name: eu-keep',
  'connection:',
  '  regions:',
  '    - { region: be, baseUrl: "${BE_URL}" }',
  '    - { region: fr, baseUrl: "${FR_URL}" }',
  'source: { type: products.query, filter: { status: [active, inactive] } }',
  'sinks:',
  '  - { type: parquet, path: "lake/fixed/region={region}/products.parquet" }',
  '  - type: parquet',
  '    path: "lake/parts/region={region}/part-{part}.parquet"',
  '    maxRows: ${PART_ROWS}',
  '  - type: s3',
  '    format: parquet',
  '    bucket: lake',
  '    endpoint: ${S3_ENDPOINT}',
  '    region: us-east-1',
  '    key: "s3/region={region}/part-{part}.parquet"',
  '    maxRows: ${PART_ROWS}',
  '',
].join('\n');

let ws: { dir: string; remove(): Promise<void> };
let be: TestSandbox;
let fr: TestSandbox;
let s3: S3TestServer;
const ids: Record<string, string[]> = {};

beforeAll(async () => {
  ws = await workspace('catalog-streams-fanout-keep-');
  [be, fr, s3] = await Promise.all([
    startTestSandbox({ products: 50, seed: 40, profile: 'be' }),
    startTestSandbox({ products: 45, seed: 41, profile: 'fr' }),
    startS3Server({ bucket: 'lake' }),
  ]);
  Object.assign(ids, await listedIds({ be, fr }));
  await writeFile(join(ws.dir, 'eu.yml'), PIPELINE);
});
afterAll(async () => {
  await Promise.all([be?.close(), fr?.close(), s3?.stop()]);
  await ws?.remove();
});

function env(partRows: number, frSecret?: string): NodeJS.ProcessEnv {
  return cleanEnv({
    BE_URL: be.url,
    FR_URL: fr.url,
    CATALOG_BE_API_KEY: be.credentials.apiKey,
    CATALOG_BE_API_SECRET: be.credentials.apiSecret,
    CATALOG_FR_API_KEY: fr.credentials.apiKey,
    CATALOG_FR_API_SECRET: frSecret ?? fr.credentials.apiSecret,
    CATALOG_RATE_LIMIT: '0',
    PART_ROWS: String(partRows),
    AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
    S3_ENDPOINT: s3.endpoint,
  });
}

async function run(given: NodeJS.ProcessEnv, file = 'eu.yml') {
  const summaryFile = join(ws.dir, `summary-${Date.now()}-${Math.random()}.json`);
  // A process of its own: the AWS SDK takes the S3 credentials from the process's environment.
  const result = await runCli(['run', join(ws.dir, file), '--summary-file', summaryFile], { cwd: ws.dir, env: given });
  if (result.code === 2) throw new Error(result.stderr);
  return { ...result, summary: (await readJson(summaryFile)).pipelines[0] as Rec };
}

/** Every data file of the local datasets and object of the S3 one, by name, with its bytes. */
async function snapshot(): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  for (const dataset of ['lake/fixed', 'lake/parts'])
    for (const region of ['be', 'fr']) {
      const dir = join(ws.dir, dataset, `region=${region}`);
      for (const f of (await readdir(dir).catch(() => [])).filter((n) => n.endsWith('.parquet')).sort())
        out.set(`${dataset}/region=${region}/${f}`, await readFile(join(dir, f)));
    }
  const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: 'lake', Prefix: 's3/region=' }));
  for (const key of (listed.Contents ?? []).map((c) => c.Key!).sort()) {
    const body = await s3.client.send(new GetObjectCommand({ Bucket: 'lake', Key: key }));
    out.set(`s3:${key}`, Buffer.from(await body.Body!.transformToByteArray()));
  }
  return out;
}

const named = (files: Map<string, Buffer>, prefix: string) => [...files.keys()].filter((k) => k.startsWith(prefix));

async function idsOf(buffers: Buffer[]): Promise<string[]> {
  const rows: Rec[] = [];
  for (const b of buffers) {
    const file = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
    rows.push(...(await parquetReadObjects({ file })));
  }
  return rows.map((r) => r.id as string).sort();
}

const DATASETS = ['lake/fixed/region=', 'lake/parts/region=', 's3:s3/region='];

describe('a fan-out into datasets that each run replaces', () => {
  let first: Map<string, Buffer>;

  it('first run: every region partition holds its products', async () => {
    const { code, stderr } = await run(env(20));
    expect(code, stderr).toBe(0);
    first = await snapshot();
    for (const dataset of DATASETS)
      for (const region of ['be', 'fr']) {
        const files = named(first, `${dataset}${region}/`);
        // 20 rows a part: several parts (the fixed path: one file).
        expect(files.length).toBe(dataset.startsWith('lake/fixed') ? 1 : Math.ceil(ids[region]!.length / 20));
        expect(await idsOf(files.map((f) => first.get(f)!))).toEqual(ids[region]);
      }
  });

  it("a run whose FR key is refused replaces BE's files and leaves FR's byte for byte", async () => {
    // 100 rows a part now: BE writes one part, so its parts 00001 and 00002 are superseded.
    const { code, stderr, summary } = await run(env(100, 'not-the-secret'));
    expect(code, stderr).toBe(1);
    expect(summary.regions.map((r: Rec) => r.status)).toEqual(['succeeded', 'failed']);
    const now = await snapshot();
    for (const dataset of DATASETS) {
      const frFiles = named(first, `${dataset}fr/`);
      expect(named(now, `${dataset}fr/`)).toEqual(frFiles);
      for (const f of frFiles) expect(now.get(f)!.equals(first.get(f)!), f).toBe(true);
      const beFiles = named(now, `${dataset}be/`);
      expect(beFiles).toHaveLength(1);
      expect(await idsOf(beFiles.map((f) => now.get(f)!))).toEqual(ids.be);
    }
    // This run's BE objects on S3 (their names carry the run), its fixed file rewritten by it.
    expect(named(now, 's3:s3/region=be/')[0]).toContain(summary.runId);
    const written = summary.outputs.map((o: Rec) => o.path ?? o.location ?? o.key ?? '').join('\n');
    expect(written).toContain(join('lake/fixed/region=be/products.parquet'));
    // Each dataset says which of FR's files it kept.
    const kept = jsonLines(stderr).filter((l) => l.event === 'sink.region_kept');
    expect(kept.map((k) => k.message as string).sort()).toEqual([
      expect.stringContaining(`kept 1 earlier file(s) of region fr`),
      expect.stringContaining(`kept 3 earlier file(s) of region fr`),
      expect.stringContaining(`kept 3 earlier file(s) of region fr`),
    ]);
    expect(kept.map((k) => k.message).join('\n')).toContain(join(ws.dir, 'lake/fixed/region=fr/products.parquet'));
  });

  it('the next run that reads FR replaces its files', async () => {
    const { code, stderr } = await run(env(100));
    expect(code, stderr).toBe(0);
    const now = await snapshot();
    for (const dataset of DATASETS)
      for (const region of ['be', 'fr']) {
        const files = named(now, `${dataset}${region}/`);
        expect(files, `${dataset}${region}`).toHaveLength(1);
        expect(await idsOf(files.map((f) => now.get(f)!))).toEqual(ids[region]);
      }
  });

  it('a replaced dataset not partitioned by region is refused before any request', async () => {
    const yaml = PIPELINE.replace('lake/fixed/region={region}/products.parquet', 'lake/all/products.parquet');
    await writeFile(join(ws.dir, 'unpartitioned.yml'), yaml);
    be.resetStats();
    const { code, stderr } = await runMain(['run', join(ws.dir, 'unpartitioned.yml')], env(20));
    expect(code, stderr).toBe(2);
    const [error] = jsonLines(stderr).filter((l) => l.event === 'error');
    expect(error).toMatchObject({ code: 'config.region', path: 'sinks[0].path' });
    expect(error!.message).toContain('region={region}');
    expect(be.stats.requests).toBe(0);
  });
});

describe('a region that fails part-way', () => {
  const yaml = PIPELINE.replace('products.query', 'products.stream')
    .replace('name: eu-keep', 'name: eu-midway')
    .replace(/ {2}- type: s3\n[\s\S]*?maxRows: \$\{PART_ROWS\}\n/, '')
    .replace('lake/fixed/', 'mid/fixed/')
    .replace('lake/parts/', 'mid/parts/');
  const files = async () => {
    const out = new Map<string, Buffer>();
    for (const dataset of ['mid/fixed', 'mid/parts'])
      for (const region of ['be', 'fr']) {
        const dir = join(ws.dir, dataset, `region=${region}`);
        for (const f of (await readdir(dir)).filter((n) => n.endsWith('.parquet')).sort())
          out.set(`${dataset}/region=${region}/${f}`, await readFile(join(dir, f)));
      }
    return out;
  };

  it("publishes none of what it wrote: its earlier files stay byte for byte, BE's are replaced", async () => {
    await writeFile(join(ws.dir, 'midway.yml'), yaml);
    expect(yaml).not.toContain('type: s3');
    const first = await run(env(10), 'midway.yml');
    expect(first.code, first.stderr).toBe(0);
    const before = await files();
    expect(named(before, 'mid/parts/region=fr/')).toHaveLength(Math.ceil(ids.fr!.length / 10));

    // FR's stream breaks after 25 records: two full parts of 10 and the fixed file were written.
    fr.setFaults({ errorLine: { atIndex: 25, times: Infinity } });
    try {
      const { code, stderr, summary } = await run(env(10), 'midway.yml');
      expect(code, stderr).toBe(1);
      expect(summary.regions.map((r: Rec) => [r.region, r.status])).toEqual([
        ['be', 'succeeded'],
        ['fr', 'failed'],
      ]);
      expect(summary.regions[1].records).toBeGreaterThan(0);
      const now = await files();
      for (const dataset of ['mid/fixed/region=fr/', 'mid/parts/region=fr/']) {
        expect(named(now, dataset)).toEqual(named(before, dataset));
        for (const f of named(before, dataset)) expect(now.get(f)!.equals(before.get(f)!), f).toBe(true);
      }
      for (const dataset of ['mid/fixed/region=be/', 'mid/parts/region=be/'])
        expect(await idsOf(named(now, dataset).map((f) => now.get(f)!))).toEqual(ids.be);
      const withheld = jsonLines(stderr).filter(
        (l) => l.event === 'sink.region_kept' && /did not publish/.test(l.message),
      );
      expect(withheld).toHaveLength(2);
    } finally {
      fr.setFaults({});
    }
  });
});
