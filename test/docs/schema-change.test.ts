// The schema-change workflow of docs/lake-contract.md (issue 37 item 10): after a field is promoted
// with `columns:`, old and new files differ, so every documented DuckDB glob query reads with
// `union_by_name = true`, and the documented backfill from `_extra` gives the older rows their value.
// Checked here on two small files DuckDB writes, one from before the promotion and one after.
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { allBlocks, at, docFiles } from './doc-blocks.js';

const READS = /read_(parquet|csv)\(\s*'([^']+)'[^;]*?\)/g;

describe('schema changes in a file lake', () => {
  const dir = join(tmpdir(), `catalog-streams-schema-change-${process.pid}`);
  const glob = join(dir, 'out/demo/products/dt=*/products.parquet');
  beforeAll(async () => {
    await rm(dir, { recursive: true, force: true });
    for (const dt of ['2026-11-01', '2026-11-02'])
      await mkdir(join(dir, `out/demo/products/dt=${dt}`), { recursive: true });
    // Before the promotion the field was kept in _extra (under its record path); after it, it has its
    // column, named as the demo names columns (snake_case).
    await duckdbQuery(
      `COPY (SELECT * FROM (VALUES ('1', '{"routeOfAdministration":"oral"}'), ('2', NULL)) t(id, _extra))
         TO ${sqlString(join(dir, 'out/demo/products/dt=2026-11-01/products.parquet'))} (FORMAT parquet);
       COPY (SELECT * FROM (VALUES ('1', 'cutaneous', NULL::VARCHAR), ('3', 'nasal', NULL)) t(id, route_of_administration, _extra))
         TO ${sqlString(join(dir, 'out/demo/products/dt=2026-11-02/products.parquet'))} (FORMAT parquet);`,
    );
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('every DuckDB query over a glob in the README and docs/ reads with union_by_name = true', () => {
    const globs = allBlocks()
      .filter((b) => b.lang === 'sql')
      .flatMap((b) => [...b.body.matchAll(READS)].map((m) => ({ b, call: m[0], path: m[2]! })))
      .filter((r) => r.path.includes('*'));
    expect(globs.length).toBeGreaterThanOrEqual(5);
    for (const { b, call } of globs) expect(call, at(b)).toMatch(/union_by_name = true/);
  });

  it('a plain glob over old and new files fails on the promoted column; union_by_name reads it, NULL in older files', async () => {
    await expect(
      duckdbQuery(`SELECT id, route_of_administration FROM read_parquet(${sqlString(glob)}, hive_partitioning = true)`),
    ).rejects.toThrow(/route_of_administration/);
    const { rows } = await duckdbQuery(
      `SELECT count(*) AS n, count(route_of_administration) AS typed FROM read_parquet(${sqlString(glob)}, hive_partitioning = true, union_by_name = true)`,
    );
    expect(rows[0]).toEqual({ n: 4n, typed: 2n });
  });

  it("the lake contract's backfill query takes the column where it is and _extra where it is not", async () => {
    const contract = docFiles().find((d) => d.file === 'docs/lake-contract.md')!;
    expect(contract.text).toContain('## Changing the schema of a file lake');
    const block = allBlocks().find(
      (b) => b.file === 'docs/lake-contract.md' && b.lang === 'sql' && b.body.includes('_extra'),
    )!;
    expect(block, 'a sql block with the backfill').toBeDefined();
    const sql = block.body.replace(/'out\//g, `'${dir}/out/`);
    const { rows } = await duckdbQuery(`SELECT * FROM (${sql.trim().replace(/;$/, '')}) ORDER BY dt, id`);
    expect(rows.map((r) => [r.id, (r.dt as Date).toISOString().slice(0, 10), r.route_of_administration])).toEqual([
      ['1', '2026-11-01', 'oral'],
      ['2', '2026-11-01', null],
      ['1', '2026-11-02', 'cutaneous'],
      ['3', '2026-11-02', 'nasal'],
    ]);
  });
});
