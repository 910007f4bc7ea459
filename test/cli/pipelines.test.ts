// The shipped pipelines (pipelines/*.yml) and examples/: each is validated by
// `catalog-streams validate` and run end to end by the real CLI process against
// the sandbox, from a copy in a temp folder (their `../out/...` paths land
// there), and the outputs are read back (Parquet with DuckDB) and compared with
// what the sandbox holds. products-lake-s3.yml and products-nightly.yml have
// their own files (S3, incremental state).
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Dataset } from '../../src/sandbox/index.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { REPO, cleanEnv, jsonLines, listFiles, runCli, sandboxEnv, workspace } from './cli-process.js';

const SHIPPED = [
  'demo.yml',
  'products-lake-s3.yml',
  'products-nightly.yml',
  'reference-data.yml',
  'custom-transform.yml',
  'products-table.yml',
  'products-csv.yml',
  'products-iceberg.yml',
];
const today = () => new Date().toISOString().slice(0, 10);

async function parquetIds(file: string): Promise<string[]> {
  const { rows } = await duckdbQuery(`SELECT id FROM read_parquet(${sqlString(file)}) ORDER BY id`);
  return rows.map((r) => String(r.id));
}

/** Every result of a paged query endpoint of the sandbox. */
async function allResults<T = any>(sb: TestSandbox, path: string, filter?: unknown): Promise<T[]> {
  const out: T[] = [];
  for (let no = 0; ; no++) {
    const sorting = path.includes('catalog-categories') ? {} : { sorting: { id: 'ASC' } };
    const { results } = await sb.query<T>(path, { ...(filter ? { filter } : {}), ...sorting, page: { no, size: 250 } });
    out.push(...results);
    if (results.length < 250) return out;
  }
}

describe('shipped pipelines: validate', () => {
  it.each(SHIPPED)('%s is valid', async (file) => {
    const { code, stdout, stderr } = await runCli(['validate', `pipelines/${file}`], {
      env: cleanEnv({ LAKE_BUCKET: 'my-lake' }),
    });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(new RegExp(`^✓ pipelines/${file.replace('.', '\\.')}: pipeline "`));
  });

  it('products-lake-s3.yml names the variable it needs when LAKE_BUCKET is not set', async () => {
    const { code, stderr } = await runCli(['validate', 'pipelines/products-lake-s3.yml', '--log-format', 'pretty'], {
      env: cleanEnv(),
    });
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /^catalog-streams validate: 2 problems:\n {2}pipelines\/products-lake-s3\.yml:\d+:\d+: transforms\[0\]\.deadLetter\.bucket: environment variable LAKE_BUCKET is not set.*\n {2}pipelines\/products-lake-s3\.yml:\d+:\d+: sinks\[0\]\.bucket: environment variable LAKE_BUCKET is not set/,
    );
  });
});

describe('shipped pipelines: run against the sandbox', () => {
  let ws: Awaited<ReturnType<typeof workspace>>;
  let sandbox: TestSandbox;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    ws = await workspace();
    sandbox = await startTestSandbox({ products: 2500 });
    env = sandboxEnv(sandbox);
  });
  afterAll(async () => {
    await sandbox?.close();
    await ws?.remove();
  });

  it('demo.yml with --sandbox: every selectable product into Parquet and every media record into JSONL.gz', async () => {
    // One line: test/docs/readme-commands.test.ts finds this argv here as the README's demo command.
    // prettier-ignore
    const { code, stderr } = await runCli(['run', 'pipelines/demo.yml', '--sandbox', '--profile', 'spec', '--sandbox-products', '2500', '--sandbox-rate-limit', '0'], { cwd: ws.dir, env: cleanEnv() });
    expect(code, stderr).toBe(0);
    // The CLI's sandbox has the default seed: the same data as this one.
    const dataset = new Dataset({ products: 2500, profile: 'spec' });
    const expected = Array.from({ length: 2500 }, (_, i) => i)
      .filter((i) => dataset.status[i] !== 3)
      .map((i) => `P${String(i + 1).padStart(7, '0')}`);
    const parquet = join(ws.dir, `out/demo/products/dt=${today()}/products.parquet`);
    expect(await parquetIds(parquet)).toEqual(expected);
    const { rows } = await duckdbQuery(
      `SELECT count(*) AS n, count(name) AS named, count(DISTINCT ean_gtin13) AS eans FROM read_parquet(${sqlString(parquet)})`,
    );
    expect(Number(rows[0]!.n)).toBe(expected.length);
    const media = gunzipSync(await readFile(join(ws.dir, 'out/demo/media.jsonl.gz')))
      .toString()
      .trim()
      .split('\n');
    expect(media).toHaveLength(dataset.mediaCount);
    const summaries = jsonLines(stderr).filter((l) => l.event === 'summary');
    expect(summaries.map((s) => [s.pipeline, s.status, s.records.read])).toEqual([
      ['demo-products', 'succeeded', expected.length],
      ['demo-media', 'succeeded', dataset.mediaCount],
    ]);
  });

  it('reference-data.yml: every reference table, six pipelines on one client', async () => {
    sandbox.resetStats();
    const { code, stderr } = await runCli(['run', 'pipelines/reference-data.yml', '--quiet'], { cwd: ws.dir, env });
    expect(code, stderr).toBe(0);
    for (const [name, path] of [
      ['organizations', '/v4/organizations/query'],
      ['brands', '/v4/brands/query'],
      ['catalog-categories', '/v4/catalog-categories/query'],
      ['public-categories', '/v4/public-categories/query'],
      ['dietary-restrictions', '/v4/dietary-restrictions/query'],
      ['colors', '/v4/colors/query'],
    ] as const) {
      const expected = (await allResults<{ id: string | number }>(sandbox, path)).map((r) => String(r.id)).sort();
      const file = join(ws.dir, `out/reference/${name}/dt=${today()}/${name}.parquet`);
      expect((await parquetIds(file)).sort(), name).toEqual(expected);
    }
    const { rows } = await duckdbQuery(
      `SELECT name_en, name FROM read_parquet(${sqlString(join(ws.dir, `out/reference/catalog-categories/dt=${today()}/catalog-categories.parquet`))}) LIMIT 1`,
    );
    expect(rows[0]!.name).toBe(rows[0]!.name_en);
    const summaries = jsonLines(stderr);
    expect(summaries.map((s) => [s.event, s.pipeline, s.status])).toEqual([
      ['summary', 'organizations', 'succeeded'],
      ['summary', 'brands', 'succeeded'],
      ['summary', 'catalog-categories', 'succeeded'],
      ['summary', 'public-categories', 'succeeded'],
      ['summary', 'dietary-restrictions', 'succeeded'],
      ['summary', 'colors', 'succeeded'],
    ]);
  });

  it('custom-transform.yml: the module`s filter and map run; outputs exactly the active products with a photo', async () => {
    const { code, stderr } = await runCli(['run', 'pipelines/custom-transform.yml', '--quiet'], { cwd: ws.dir, env });
    expect(code, stderr).toBe(0);
    const active = await allResults<{ id: string; photos?: unknown[]; publicPrice?: number }>(
      sandbox,
      '/v4/products/query',
      { status: 'active' },
    );
    const expected = active.filter((p) => (p.photos?.length ?? 0) > 0);
    expect(expected.length).toBeLessThan(active.length);
    const file = join(ws.dir, 'out/price-bands/price-bands.parquet');
    const { rows } = await duckdbQuery(
      `SELECT id, public_price, price_band, currency, name FROM read_parquet(${sqlString(file)}) ORDER BY id`,
    );
    expect(rows.map((r) => r.id)).toEqual(expected.map((p) => p.id));
    for (const [i, r] of rows.entries()) {
      const price = expected[i]!.publicPrice;
      expect(r.price_band).toBe(price === undefined ? null : price < 1000 ? 'low' : price < 5000 ? 'mid' : 'high');
      expect(r.currency).toBe('EUR');
    }
    const [summary] = jsonLines(stderr);
    expect(summary!.records).toMatchObject({
      read: active.length,
      written: { parquet: expected.length },
      dropped: active.length - expected.length,
      invalid: 0,
    });
  });

  it('examples/compose-in-code.mjs: the code API composed with stream.pipeline writes the active products', async () => {
    const out = join(ws.dir, 'out/compose/active.parquet');
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [join(REPO, 'examples/compose-in-code.mjs'), out], {
        cwd: ws.dir,
        env,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
      child.once('close', (code) => resolve({ code, stderr }));
    });
    expect(result.code, result.stderr).toBe(0);
    const active = await allResults<{ id: string }>(sandbox, '/v4/products/query', { status: 'active' });
    expect(await parquetIds(out)).toEqual(active.map((p) => p.id));
    const { types } = await duckdbQuery(`SELECT * FROM read_parquet(${sqlString(out)}) LIMIT 1`);
    expect(types).toMatchObject({
      id: 'VARCHAR',
      name: 'VARCHAR',
      ean13: 'VARCHAR',
      updated_at: 'TIMESTAMP WITH TIME ZONE',
    });
  });

  it('left nothing but the outputs: no temp files anywhere', async () => {
    const files = await listFiles(join(ws.dir, 'out'));
    expect(files.filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});
