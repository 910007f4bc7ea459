// Issue 11 end to end: every shipped pipeline, the demo script and the code-API
// examples run against every sandbox profile (spec and the live regions au, be,
// fr) with zero dead letters, every product exactly once (compared with the
// sandbox's own id list) and no value lost (test/helpers/lossless.ts on the raw
// records fetched from the sandbox vs what the outputs hold, given the
// pipeline's transforms; Parquet read back with DuckDB). Each profile serves 500 products past
// the last late field it has (productsOf), so the late sparse fields (replacement, float
// measures, bcfiCategory/acl13/snomedCtpp) appear after the first records a writer sees: 3,000 for
// the live profiles with a late regional field (LATE_FIELDS.regional, 2,500), 1,700 for de (none
// late: replacement, 1,200), 1,500 for spec (no late field; past the 1,000 records a sink made in
// code infers its columns from). Fewer than 3,000 everywhere would lose the late fields; more
// where none comes late would only cost time (issue 38 item 8).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LATE_FIELDS } from '../../src/sandbox/profiles.js';
import {
  Dataset,
  PRODUCT_STATUSES,
  SANDBOX_PROFILES,
  type SandboxProfile,
  productIdOf,
} from '../../src/sandbox/index.js';
import { parseAllDocuments } from 'yaml';
import { readIceberg, readIcebergMetadata } from '../helpers/iceberg-reader.js';
import { duckdbQuery, parquetColumnTypes, sqlString } from '../helpers/duckdb.js';
import { type LosslessOptions, type LostLeaf, type TransformSpec, lostLeaves } from '../helpers/lossless.js';
import { S3RVER_CREDENTIALS, startS3Server, type S3TestServer } from '../helpers/s3-server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { REPO, cleanEnv, jsonLines, listFiles, runCli, sandboxEnv, workspace } from './cli-process.js';

/** The products a profile serves: 500 past its last late field (see the header). */
function productsOf(profile: SandboxProfile): number {
  if (profile === 'spec') return 1_500;
  if (profile === 'de') return LATE_FIELDS.replacement + 500;
  return LATE_FIELDS.regional + 500;
}
/**
 * The products the demo script runs on: the script is checked here (it passes the profile, reads
 * the rows back); the demo pipeline itself runs over every product of the profile in the test
 * before it, so a full catalog here would only repeat that run.
 */
const DEMO_SCRIPT_PRODUCTS = 200;

/**
 * A test sandbox that draws each product once. The tests read the same products nine times (the
 * raw list, then one pipeline run each), and the sandbox draws a product from the seed on every
 * request (so a million products cost no memory): about a fifth of this file's CPU went there.
 * Nothing here changes a product, and a change would bump the dataset's version, which empties
 * the cache, so the text served is the sandbox's own, byte for byte.
 */
async function startDrawnOnceSandbox(products: number, profile: SandboxProfile): Promise<TestSandbox> {
  const dataset = new Dataset({ products, profile });
  const draw = dataset.productJson.bind(dataset);
  let texts: string[] = [];
  let version = dataset.version;
  dataset.productJson = (index: number) => {
    if (dataset.version !== version) [texts, version] = [[], dataset.version];
    return (texts[index] ??= draw(index));
  };
  const sandbox = await startTestSandbox({ products, profile, dataset });
  const close = sandbox.close.bind(sandbox);
  // The texts go with the sandbox: the next profile's tests should not carry them through every GC.
  return Object.assign(sandbox, { close: () => ((texts = []), close()) });
}
const today = () => new Date().toISOString().slice(0, 10);
type Rec = Record<string, any>;

/** DuckDB values as JSON would carry them: BIGINT as number, TIMESTAMP as unix seconds. */
function plain(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Date) return Math.floor(value.getTime() / 1000);
  if (Array.isArray(value)) return value.map(plain);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

/** Rows as a data engineer reads them: JSON columns (undeclared objects, `_extra`) parsed. */
async function parquetRows(files: string[]): Promise<Rec[]> {
  const { rows } = await duckdbQuery(
    `SELECT * FROM read_parquet([${files.map(sqlString).join(', ')}], hive_partitioning = false) ORDER BY id`,
  );
  // The reader reports JSON columns as VARCHAR; the file's logical types (DESCRIBE) say which are JSON.
  const types = files.length ? await parquetColumnTypes(files[0]!) : {};
  const json = Object.keys(types).filter((c) => types[c] === 'JSON');
  return rows.map((r) => {
    const row = plain(r) as Rec;
    for (const c of json) if (typeof row[c] === 'string') row[c] = JSON.parse(row[c]);
    return row;
  });
}

/** The transforms of pipeline `index` of a shipped file (custom stages left out: their code is the user's). */
async function transformsOf(file: string, index = 0): Promise<TransformSpec[]> {
  const docs = parseAllDocuments(await readFile(join(REPO, 'pipelines', file), 'utf8')).map((d) => d.toJS() as Rec);
  return ((docs[index]!.transforms ?? []) as TransformSpec[]).filter((t) => t.type !== 'custom');
}

/** The leaf values of the raw records that no output record of the same id holds (test/helpers/lossless.ts). */
function lost(
  inputs: Rec[],
  outputs: Rec[],
  transforms: TransformSpec[],
  resource: LosslessOptions['resource'] = 'product',
): LostLeaf[] {
  return lostLeaves(inputs, outputs, transforms, { resource });
}

async function runNode(
  script: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...args], {
      cwd: opts.cwd,
      env: opts.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe.each(SANDBOX_PROFILES.map((p) => [p]))(
  'profile %s: shipped pipelines, demo and examples',
  (profile: SandboxProfile) => {
    const PRODUCTS = productsOf(profile);
    let sandbox: TestSandbox;
    let ws: Awaited<ReturnType<typeof workspace>>;
    let s3: S3TestServer;
    /** Every product as products/stream serves it, in id order. */
    let raw: Rec[];
    let byId: Map<string, Rec>;
    /** The ids the pipelines' status filter selects (all but no_selection), from the sandbox's columns. */
    let selectable: string[];

    beforeAll(async () => {
      [sandbox, ws, s3] = await Promise.all([
        startDrawnOnceSandbox(PRODUCTS, profile),
        workspace(`catalog-streams-${profile}-`),
        startS3Server({ bucket: 'lake' }),
      ]);
      const { lines } = await sandbox.stream<Rec>('/v4/products/stream', {
        filter: { createdAt: 0 },
        sorting: { id: 'ASC' },
      });
      raw = lines.map((l) => l.result);
      byId = new Map(raw.map((r) => [r.id as string, r]));
      const noSelection = PRODUCT_STATUSES.indexOf('no_selection');
      selectable = Array.from({ length: PRODUCTS }, (_, i) => i)
        .filter((i) => sandbox.dataset.status[i] !== noSelection)
        .map(productIdOf);
    });
    afterAll(async () => {
      await Promise.all([sandbox?.close(), ws?.remove(), s3?.stop()]);
      // This profile's records are done with: the later profiles' GCs need not walk them.
      [raw, byId, selectable] = [[], new Map(), []];
    });

    it('serves every product once, in the profile`s shapes', () => {
      expect(raw.map((r) => r.id)).toEqual(Array.from({ length: PRODUCTS }, (_, i) => productIdOf(i)));
      const live = profile !== 'spec';
      expect(raw.some((r) => typeof r.ean?.[0] === 'string')).toBe(live);
      expect(raw.some((r) => typeof r.brands?.[0]?.name === 'string')).toBe(live);
      if (live) {
        const first = (has: (r: Rec) => boolean) => raw.findIndex(has);
        expect(first((r) => r.replacement !== undefined)).toBeGreaterThanOrEqual(LATE_FIELDS.replacement);
        expect(first((r) => !Number.isInteger(r.weightWithUnit?.value))).toBeGreaterThanOrEqual(
          LATE_FIELDS.floatMeasure,
        );
        // de has no late regional field (its pzn is on most products from the first).
        const late = ({ be: 'bcfiCategory', fr: 'acl13', au: 'snomedCtpp', us: 'ndc' } as Record<string, string>)[
          profile
        ];
        if (late) {
          expect(first((r) => r[late] !== undefined)).toBeGreaterThanOrEqual(LATE_FIELDS.regional);
          expect(first((r) => r[late] !== undefined)).toBeLessThan(PRODUCTS);
        }
      }
    });

    it('demo.yml with run --sandbox --profile: no dead letters, every selectable product once, values kept', async () => {
      const args = [
        'run',
        'pipelines/demo.yml',
        '--sandbox',
        '--profile',
        profile,
        '--sandbox-products',
        String(PRODUCTS),
        '--sandbox-rate-limit',
        '0',
      ];
      const { code, stderr } = await runCli(args, { cwd: ws.dir, env: cleanEnv() });
      expect(code, stderr).toBe(0);
      const summaries = jsonLines(stderr).filter((l) => l.event === 'summary');
      expect(summaries.map((s) => [s.pipeline, s.status, s.records.invalid ?? 0])).toEqual([
        ['demo-products', 'succeeded', 0],
        ['demo-media', 'succeeded', 0],
      ]);
      const rejected = join(ws.dir, 'out/demo/rejected-products.jsonl');
      expect(existsSync(rejected) ? (await readFile(rejected, 'utf8')).trim() : '').toBe('');
      const rows = await parquetRows([join(ws.dir, `out/demo/products/dt=${today()}/products.parquet`)]);
      expect(rows.map((r) => r.id)).toEqual(selectable);
      const media = gunzipSync(await readFile(join(ws.dir, 'out/demo/media.jsonl.gz')))
        .toString()
        .trim()
        .split('\n');
      expect(media).toHaveLength(sandbox.dataset.mediaCount);
      expect(
        lost(
          rows.map((r) => byId.get(r.id)!),
          rows,
          await transformsOf('demo.yml'),
        ),
      ).toEqual([]);
    });

    it('scripts/demo.mjs (CATALOG_SANDBOX_PROFILE) runs and shows the rows', async () => {
      const dir = join(ws.dir, 'demo-root');
      await mkdir(join(dir, 'scripts'), { recursive: true });
      await cp(join(REPO, 'scripts/demo.mjs'), join(dir, 'scripts/demo.mjs'));
      await cp(join(REPO, 'pipelines'), join(dir, 'pipelines'), { recursive: true });
      await symlink(join(REPO, 'dist'), join(dir, 'dist'));
      await symlink(join(REPO, 'node_modules'), join(dir, 'node_modules'));
      const { code, stdout, stderr } = await runNode(join(dir, 'scripts/demo.mjs'), [], {
        cwd: dir,
        env: cleanEnv({ CATALOG_SANDBOX_PROFILE: profile, DEMO_PRODUCTS: String(DEMO_SCRIPT_PRODUCTS) }),
      });
      expect(code, stderr).toBe(0);
      expect(stdout).toContain(`--sandbox-products ${DEMO_SCRIPT_PRODUCTS} (profile ${profile})`);
      expect(stdout).toContain('What the Parquet file holds');
      const summaries = jsonLines(stderr).filter((l) => l.event === 'summary');
      expect(summaries.map((s) => [s.pipeline, s.status, s.records.invalid ?? 0])).toEqual([
        ['demo-products', 'succeeded', 0],
        ['demo-media', 'succeeded', 0],
      ]);
      const rejected = join(dir, 'out/demo/rejected-products.jsonl');
      expect(existsSync(rejected) ? (await readFile(rejected, 'utf8')).trim() : '').toBe('');
    });

    it('products-nightly.yml: no dead letters, every selectable product once, values kept', async () => {
      const env = sandboxEnv(sandbox, { NIGHTLY_STATE: join(ws.dir, '.state/nightly.json') });
      const { code, stderr } = await runCli(['run', 'pipelines/products-nightly.yml'], { cwd: ws.dir, env });
      expect(code, stderr).toBe(0);
      expect(jsonLines(stderr).find((l) => l.event === 'summary')!.records).toMatchObject({
        read: selectable.length,
        invalid: 0,
      });
      const base = join(ws.dir, 'out/products-nightly');
      const all = (await listFiles(base)).map((f) => join(base, f));
      const files = all.filter((f) => f.endsWith('.parquet'));
      expect(files.filter((f) => f.includes('rejected'))).toEqual([]);
      const rejected = all.filter((f) => f.includes('rejected'));
      for (const f of rejected) expect((await readFile(f, 'utf8')).trim(), f).toBe('');
      const rows = await parquetRows(files);
      expect(rows.map((r) => r.id)).toEqual(selectable);
      expect(
        lost(
          rows.map((r) => byId.get(r.id)!),
          rows,
          await transformsOf('products-nightly.yml'),
        ),
      ).toEqual([]);
      // issue 24: hsCode a code with its zeros, weight a double, whatever the profile sent (the
      // shipped pipelines write snake_case: hs_code)
      expect(await parquetColumnTypes(files[0]!)).toMatchObject({ hs_code: 'VARCHAR', weight: 'DOUBLE' });
      if (profile !== 'spec') {
        expect(rows.filter((r) => byId.get(r.id)!.hsCode === 30211).map((r) => r.hs_code)).toContain('030211');
        expect(rows.some((r) => !Number.isInteger(r.weight ?? 0))).toBe(true);
      }
    });

    it('products-table.yml: the snapshot holds every selectable product once with its values; a rerun changes nothing', async () => {
      const env = sandboxEnv(sandbox, {
        TABLE_PATH: join(ws.dir, 'out/table'),
        TABLE_STATE: join(ws.dir, '.state/table.json'),
      });
      const { code, stderr } = await runCli(['run', 'pipelines/products-table.yml', '--quiet'], { cwd: ws.dir, env });
      expect(code, stderr).toBe(0);
      const base = join(ws.dir, 'out/table');
      const snapshot = (await listFiles(join(base, `snapshot/dt=${today()}`))).map((f) =>
        join(base, `snapshot/dt=${today()}`, f),
      );
      const rows = await parquetRows(snapshot);
      expect(rows.map((r) => r.id)).toEqual(selectable);
      expect(
        lost(
          rows.map((r) => byId.get(r.id)!),
          rows,
          await transformsOf('products-table.yml'),
        ),
      ).toEqual([]);
      // issue 24: a replaced product whose codes were nulled is kept with its status and successor
      const nulled = raw.filter((p) => p.status === 'replaced' && p.eanGtin13 === null);
      if (profile !== 'spec') expect(nulled.length).toBeGreaterThan(0);
      const rowOf = new Map(rows.map((r) => [r.id, r]));
      for (const p of nulled)
        expect(rowOf.get(p.id), p.id).toMatchObject({
          status: 'replaced',
          replacement: p.replacement,
          ean_gtin13: null,
        });
      const changes = await duckdbQuery(
        `SELECT _change, count(*)::INTEGER AS n FROM read_parquet(${sqlString(join(base, 'changes/dt=*/*.parquet'))}) GROUP BY ALL`,
      );
      expect(changes.rows).toEqual([{ _change: 'insert', n: selectable.length }]);
      // Incremental, nothing touched since: a new version with no change row.
      const again = await runCli(['run', 'pipelines/products-table.yml', '--quiet'], { cwd: ws.dir, env });
      expect(again.code, again.stderr).toBe(0);
      const manifest = JSON.parse(await readFile(join(base, '_table.json'), 'utf8'));
      expect(
        manifest.versions.map((v: Rec) => [
          v.mode,
          v.rows,
          v.counts.inserted,
          v.counts.updated,
          v.counts.deleted,
          v.changes.length,
        ]),
      ).toEqual([
        ['first', selectable.length, selectable.length, 0, 0, 1],
        ['incremental', selectable.length, 0, 0, 0, 0],
      ]);
    });

    it('products-iceberg.yml: current/ (read by icebird) holds every selectable product once with its codes; a rerun adds an empty change snapshot', async () => {
      const env = sandboxEnv(sandbox, {
        ICEBERG_PATH: join(ws.dir, 'out/iceberg'),
        ICEBERG_STATE: join(ws.dir, '.state/iceberg.json'),
      });
      const { code, stderr } = await runCli(['run', 'pipelines/products-iceberg.yml', '--quiet'], { cwd: ws.dir, env });
      expect(code, stderr).toBe(0);
      const base = join(ws.dir, 'out/iceberg');
      const rows = await readIceberg(join(base, 'current'));
      expect(rows.map((r) => String(r.id))).toEqual(selectable);
      const rowOf = new Map(rows.map((r) => [String(r.id), r]));
      for (const p of raw.filter((q) => selectable.includes(q.id))) {
        const row = rowOf.get(p.id)!;
        expect(row.status, p.id).toBe(p.status);
        // issue 24: a code keeps its leading zeros, whatever the profile sent
        if (p.hsCode === 30211) expect(row.hs_code, p.id).toBe('030211');
      }
      const changes = await readIceberg(join(base, 'changes'));
      expect(changes.map((r) => `${String(r._change)} ${String(r.id)}`).sort()).toEqual(
        selectable.map((id) => `insert ${id}`).sort(),
      );
      const again = await runCli(['run', 'pipelines/products-iceberg.yml', '--quiet'], { cwd: ws.dir, env });
      expect(again.code, again.stderr).toBe(0);
      const metadata = await readIcebergMetadata(join(base, 'changes'));
      expect(
        (metadata.snapshots as Array<{ summary: Rec }>).map((s) => [
          s.summary['catalog-streams.mode'],
          s.summary['added-records'] ?? '0',
        ]),
      ).toEqual([
        ['first', String(selectable.length)],
        ['incremental', '0'],
      ]);
      expect(await readIceberg(join(base, 'changes'))).toHaveLength(selectable.length);
    });

    it('products-lake-s3.yml into s3rver: no dead letters, every selectable product once, values kept', async () => {
      const env = sandboxEnv(sandbox, {
        AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
        AWS_REGION: 'us-east-1',
        S3_ENDPOINT: s3.endpoint,
        LAKE_BUCKET: 'lake',
        LAKE_PREFIX: 'catalog',
        LAKE_PART_ROWS: '1000',
      });
      const { code, stderr } = await runCli(['run', 'pipelines/products-lake-s3.yml'], { cwd: ws.dir, env });
      expect(code, stderr).toBe(0);
      expect(jsonLines(stderr).find((l) => l.event === 'summary')!.records).toMatchObject({
        read: selectable.length,
        invalid: 0,
      });
      const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: 'lake' }));
      const keys = (listed.Contents ?? []).map((c) => c.Key!);
      expect(keys.filter((k) => k.includes('/rejected/') && !k.endsWith('_manifest.json'))).toEqual([]);
      const parts = keys
        .filter((k) => k.startsWith(`catalog/products/dt=${today()}/`) && k.endsWith('.parquet'))
        .sort();
      const files = await Promise.all(
        parts.map(async (key, i) => {
          const file = join(ws.dir, `lake-part-${i}.parquet`);
          const body = await s3.client.send(new GetObjectCommand({ Bucket: 'lake', Key: key }));
          await writeFile(file, Buffer.from(await body.Body!.transformToByteArray()));
          return file;
        }),
      );
      const rows = await parquetRows(files);
      expect(rows.map((r) => r.id)).toEqual(selectable);
      expect(
        lost(
          rows.map((r) => byId.get(r.id)!),
          rows,
          await transformsOf('products-lake-s3.yml'),
        ),
      ).toEqual([]);
    });

    it('reference-data.yml: no dead letters, every reference record once, values kept', async () => {
      const { code, stderr } = await runCli(['run', 'pipelines/reference-data.yml', '--quiet'], {
        cwd: ws.dir,
        env: sandboxEnv(sandbox),
      });
      expect(code, stderr).toBe(0);
      for (const s of jsonLines(stderr).filter((l) => l.event === 'summary'))
        expect([s.pipeline, s.status, s.records.invalid]).toEqual([s.pipeline, 'succeeded', 0]);
      const outputs: [string, Rec[], Rec[]][] = [];
      for (const [name, path] of [
        ['organizations', '/v4/organizations/query'],
        ['brands', '/v4/brands/query'],
        ['catalog-categories', '/v4/catalog-categories/query'],
      ] as const) {
        const records: Rec[] = [];
        for (let no = 0; ; no++) {
          const sorting = name === 'catalog-categories' ? {} : { sorting: { id: 'ASC' } };
          const { results } = await sandbox.query<Rec>(path, { ...sorting, page: { no, size: 250 } });
          records.push(...results);
          if (results.length < 250) break;
        }
        const rows = await parquetRows([join(ws.dir, `out/reference/${name}/dt=${today()}/${name}.parquet`)]);
        const key = (r: Rec) => String(r.id);
        expect(rows.map(key).sort(), name).toEqual(records.map(key).sort());
        const rowById = new Map(rows.map((r) => [key(r), r]));
        outputs.push([name, records, records.map((r) => rowById.get(key(r))!)]);
      }
      const resources = {
        organizations: 'organization',
        brands: 'brand',
        'catalog-categories': 'catalog-category',
      } as const;
      for (const [k, [name, records, rows]] of outputs.entries()) {
        expect(
          lost(records, rows, await transformsOf('reference-data.yml', k), resources[name as keyof typeof resources]),
          name,
        ).toEqual([]);
      }
    });

    it('custom-transform.yml: exactly the active products with a photo, picked values kept', async () => {
      const { code, stderr } = await runCli(['run', 'pipelines/custom-transform.yml', '--quiet'], {
        cwd: ws.dir,
        env: sandboxEnv(sandbox),
      });
      expect(code, stderr).toBe(0);
      const expected = raw.filter((p) => p.status === 'active' && (p.photos?.length ?? 0) > 0);
      const rows = await parquetRows([join(ws.dir, 'out/price-bands/price-bands.parquet')]);
      expect(rows.map((r) => r.id)).toEqual(expected.map((p) => p.id));
      expect(lost(expected, rows, await transformsOf('custom-transform.yml'))).toEqual([]);
    });

    it('examples/compose-in-code.mjs: the active products, their brand names kept', async () => {
      const out = join(ws.dir, 'out/compose/active.parquet');
      const { code, stderr } = await runNode(join(REPO, 'examples/compose-in-code.mjs'), [out], {
        cwd: ws.dir,
        env: sandboxEnv(sandbox),
      });
      expect(code, stderr).toBe(0);
      const active = raw.filter((p) => p.status === 'active');
      const rows = await parquetRows([out]);
      expect(rows.map((r) => r.id)).toEqual(active.map((p) => p.id));
      for (const [i, r] of rows.entries()) {
        const name = active[i]!.brands?.[0]?.name;
        expect(r.brand, r.id).toBe(
          name === undefined ? null : typeof name === 'string' ? name : (name.en ?? Object.values(name)[0]),
        );
        const ean = active[i]!.eanGtin13;
        if (Array.isArray(ean)) {
          // a list of codes (one client) does not fit the string column: every code is in _extra
          expect(r.ean13, r.id).toBe(null);
          expect(r._extra.ean13, r.id).toEqual(ean);
        } else expect(r.ean13 === null ? null : Number(r.ean13), r.id).toBe(ean == null ? null : Number(ean));
      }
    });
  },
);
