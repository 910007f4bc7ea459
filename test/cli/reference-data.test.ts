// The lake's reference tables (issue 17; the regional ones of issue 24): the shipped demo.yml and
// reference-data.yml (and the regional tables file of docs/reference-data.md) run by the real CLI against the sandbox; DuckDB then
// checks referential integrity between the products and every table their ids
// point into, and runs the category-path join of docs/reference-data.md exactly as printed.
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { SANDBOX_PROFILES } from '../../src/sandbox/index.js';
import { REGIONAL_TABLES } from '../../src/sandbox/profiles.js';
import { lostLeaves } from '../helpers/lossless.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { runCli, sandboxEnv, workspace } from './cli-process.js';

const readme = readFileSync(new URL('../../docs/reference-data.md', import.meta.url), 'utf8');

/** The SQL block that follows docs/reference-data.md's "Each product's public category path" paragraph. */
function readmeJoinSql(): string {
  const at = readme.indexOf("Each product's public category path");
  expect(at, 'docs/reference-data.md has the category-path example').toBeGreaterThan(0);
  const m = /```sql\n([\s\S]*?)```/.exec(readme.slice(at));
  expect(m).not.toBeNull();
  return m![1]!;
}

// Every profile: the live shapes must keep every reference id resolvable too.
describe.each(SANDBOX_PROFILES)('reference data in the lake (%s profile)', (profile) => {
  let ws: Awaited<ReturnType<typeof workspace>>;
  let sandbox: TestSandbox;
  const file = (table: string) => join(ws.dir, `out/reference/${table}/*/${table}.parquet`);
  const products = () => join(ws.dir, 'out/demo/products/*/products.parquet');

  beforeAll(async () => {
    ws = await workspace('catalog-streams-lake-ref-');
    sandbox = await startTestSandbox({ products: 1500, profile });
    const env = sandboxEnv(sandbox);
    for (const pipeline of ['pipelines/demo.yml', 'pipelines/reference-data.yml']) {
      const { code, stderr } = await runCli(['run', pipeline, '--quiet'], { cwd: ws.dir, env });
      expect(code, stderr).toBe(0);
    }
  }, 120_000);
  afterAll(async () => {
    await sandbox?.close();
    await ws?.remove();
  });

  it.each([
    // the demo writes snake_case column names
    ['public_categories', 'public-categories'],
    ['dietary_restrictions', 'dietary-restrictions'],
    ['colors', 'colors'],
    ['catalog_categories', 'catalog-categories'],
    ['brands', 'brands'],
    ['organizations', 'organizations'],
  ])('every %s id on a product exists in %s', async (field, table) => {
    const referenced = `SELECT DISTINCT unnest(json_extract_string(${field}::JSON, '$[*].id')) AS id FROM read_parquet(${sqlString(products())})`;
    const { rows: used } = await duckdbQuery(`SELECT count(*) AS n FROM (${referenced})`);
    expect(Number(used[0]!.n), `products carry ${field} ids`).toBeGreaterThan(0);
    const { rows: missing } = await duckdbQuery(
      `${referenced} EXCEPT SELECT id::VARCHAR FROM read_parquet(${sqlString(file(table))}) ORDER BY id`,
    );
    expect(missing.map((r) => r.id)).toEqual([]);
  });

  it("the docs' category-path join runs on the shipped pipelines' files and gives each product's path from the root", async () => {
    const sql = readmeJoinSql().replaceAll("'out/", `'${ws.dir}/out/`);
    const { rows } = await duckdbQuery(sql);
    // Expected from the sandbox: each product's categories, named root first (name falls back to en).
    const ds = sandbox.dataset;
    const byId = new Map(ds.ref.publicCategories.map((c) => [c.id, c]));
    const pathOf = (id: number): string[] => {
      const c = byId.get(id)!;
      return c.parent === null ? [c.name.en!] : [...pathOf(c.parent), c.name.en!];
    };
    // The demo extracts the statuses its filter names; its Parquet file says which products those are.
    const { rows: extracted } = await duckdbQuery(`SELECT id FROM read_parquet(${sqlString(products())})`);
    const inLake = new Set(extracted.map((r) => r.id));
    const expected: { product_id: string; category_id: number; path: string; depth: number }[] = [];
    for (let i = 0; i < ds.productCount; i++) {
      const p = ds.product(i) as { id: string; publicCategories?: { id: number }[] };
      if (!inLake.has(p.id)) continue;
      for (const c of p.publicCategories ?? [])
        expected.push({
          product_id: p.id,
          category_id: c.id,
          path: pathOf(c.id).join(' > '),
          depth: pathOf(c.id).length,
        });
    }
    expected.sort((a, b) =>
      a.product_id < b.product_id
        ? -1
        : a.product_id > b.product_id
          ? 1
          : a.path < b.path
            ? -1
            : a.path > b.path
              ? 1
              : 0,
    );
    expect(expected.length).toBeGreaterThan(100);
    expect(
      rows.map((r) => ({
        product_id: r.product_id,
        category_id: Number(r.category_id),
        path: r.path,
        depth: Number(r.depth),
      })),
    ).toEqual(expected);
  });
});

/** The YAML block that follows the README's "regional reference tables" paragraph. */
function readmeRegionalYaml(): string {
  const at = readme.indexOf('The regional reference tables');
  expect(at, 'the README has the regional tables example').toBeGreaterThan(0);
  const m = /```yaml\n([\s\S]*?)```/.exec(readme.slice(at));
  expect(m).not.toBeNull();
  return m![1]!;
}

// Issue 24, fact 15: the regional reference tables through the CLI, from the README's pipeline
// file (the documents of the tables each region serves); ids as sent, parents as strings.
describe.each(['be', 'fr', 'au', 'us'] as const)('regional reference tables in the lake (%s profile)', (profile) => {
  let ws: Awaited<ReturnType<typeof workspace>>;
  let sandbox: TestSandbox;
  const served = REGIONAL_TABLES[profile].map((e) => e.replace(/\.query$/, ''));
  const file = (table: string) => join(ws.dir, `out/reference/${table}/*/${table}.parquet`);

  beforeAll(async () => {
    ws = await workspace('catalog-streams-lake-regional-');
    sandbox = await startTestSandbox({ products: 1500, profile });
    const docs = readmeRegionalYaml()
      .split(/^---$/m)
      .filter((d) => served.some((t) => d.includes(`type: ${t}.query`)));
    expect(docs).toHaveLength(served.length);
    await writeFile(join(ws.dir, 'regional.yml'), docs.join('---'));
    const env = sandboxEnv(sandbox);
    for (const pipeline of ['pipelines/demo.yml', 'regional.yml']) {
      const { code, stderr } = await runCli(['run', pipeline, '--quiet'], { cwd: ws.dir, env });
      expect(code, stderr).toBe(0);
    }
  }, 120_000);
  afterAll(async () => {
    await sandbox?.close();
    await ws?.remove();
  });

  it('every table the region serves is extracted whole, without dead letters and without losing a value', async () => {
    for (const table of served) {
      const { results } = await sandbox.query<Record<string, any>>(`/v4/${table}/query`, {});
      const { rows } = await duckdbQuery(`SELECT * FROM read_parquet(${sqlString(file(table))}) ORDER BY id`);
      const parsed = rows.map((r): Record<string, any> => ({
        ...r,
        ...(typeof r._extra === 'string' ? { _extra: JSON.parse(r._extra) } : {}),
      }));
      expect(parsed.map((r) => String(r.id)).sort(), table).toEqual(results.map((r) => String(r.id)).sort());
      const resource = {
        'active-ingredients': 'active-ingredient',
        'product-families': 'product-family',
        'atc-categories': 'atc-category',
        'osp-categories': 'osp-category',
      }[table] as 'atc-category';
      const byId = new Map(results.map((r) => [String(r.id), r]));
      const plain = parsed.map((r) =>
        Object.fromEntries(
          Object.entries(r).map(([k, v]) => [
            k,
            typeof v === 'bigint' ? Number(v) : v instanceof Date ? Math.floor(v.getTime() / 1000) : v,
          ]),
        ),
      );
      expect(
        lostLeaves(
          plain.map((r) => byId.get(String(r.id))!),
          plain,
          [{ type: 'flatten-locales', locales: ['en', 'nl', 'fr', 'de'], fallback: ['en', 'nl', 'fr', 'de'] }],
          { resource },
        ),
        table,
      ).toEqual([]);
    }
    expect(existsSync(join(ws.dir, 'out/reference/rejected'))).toBe(false);
  });

  it('string ids keep their zeros and letters; an OSP parent sent as an integer is the string of its digits', async () => {
    if (served.includes('atc-categories')) {
      const { rows, types } = await duckdbQuery(
        `SELECT id, parent FROM read_parquet(${sqlString(file('atc-categories'))}) WHERE id = 'N02BE01'`,
      );
      expect(types).toMatchObject({ id: 'VARCHAR', parent: 'VARCHAR' });
      expect(rows).toEqual([{ id: 'N02BE01', parent: 'N02BE' }]);
      // every ATC code a product carries is in the table
      const { rows: missing } = await duckdbQuery(
        `SELECT DISTINCT unnest(atc_category) AS code FROM read_parquet(${sqlString(join(ws.dir, 'out/demo/products/*/products.parquet'))})
         EXCEPT SELECT id FROM read_parquet(${sqlString(file('atc-categories'))})`,
      );
      expect(missing).toEqual([]);
    }
    if (served.includes('osp-categories')) {
      const { results } = await sandbox.query<Record<string, any>>('/v4/osp-categories/query', {});
      const { rows, types } = await duckdbQuery(
        `SELECT id, parent FROM read_parquet(${sqlString(file('osp-categories'))}) ORDER BY id`,
      );
      expect(types).toMatchObject({ id: 'VARCHAR', parent: 'VARCHAR' });
      expect(rows).toEqual(
        results
          .map((r) => ({ id: r.id, parent: r.parent === null ? null : String(r.parent) }))
          .sort((a, b) => (a.id < b.id ? -1 : 1)),
      );
      expect(rows.some((r) => String(r.id).startsWith('000'))).toBe(true);
      expect(results.some((r) => Number.isInteger(r.parent))).toBe(true);
    }
    for (const [field, table] of [
      ['active_ingredients', 'active-ingredients'],
      ['product_family', 'product-families'],
    ] as const) {
      const referenced = `SELECT DISTINCT unnest(json_extract_string(${field}::JSON, '$[*].id')) AS id FROM read_parquet(${sqlString(join(ws.dir, 'out/demo/products/*/products.parquet'))})`;
      const { rows: missing } = await duckdbQuery(
        `${referenced} EXCEPT SELECT id::VARCHAR FROM read_parquet(${sqlString(file(table))})`,
      );
      expect(missing, table).toEqual([]);
    }
  });
});
