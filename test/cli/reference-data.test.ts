// The lake's reference tables (issue 17): the shipped demo.yml and
// reference-data.yml run by the real CLI against the sandbox; DuckDB then
// checks referential integrity between the products and every table their ids
// point into, and runs the README's category-path join exactly as printed.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { SANDBOX_PROFILES } from '../../src/sandbox/index.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { runCli, sandboxEnv, workspace } from './cli-process.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The SQL block that follows the README's "Each product's public category path" paragraph. */
function readmeJoinSql(): string {
  const at = readme.indexOf("Each product's public category path");
  expect(at, 'the README has the category-path example').toBeGreaterThan(0);
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
    ['publicCategories', 'public-categories'],
    ['dietaryRestrictions', 'dietary-restrictions'],
    ['colors', 'colors'],
    ['catalogCategories', 'catalog-categories'],
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

  it("the README's category-path join runs on the shipped pipelines' files and gives each product's path from the root", async () => {
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
