// `catalog-streams schema` as a lake user reads it (issue 37, items 10 and 11): a `dt={date}` folder
// is a DATE column in every DDL it prints, as every reader's hive partitioning gives it, and the
// INSERT it prints loads the run's files with that type.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { cleanEnv, runMain, sandboxEnv, workspace } from './cli-process.js';

interface SchemaDoc {
  sink: string;
  table: string;
  layout: { location: string; partitions: string[]; glob: string; dates: string[] };
  ddl: { duckdb: string; spark: string; athena: string };
}

describe('catalog-streams schema over a lake', () => {
  let sandbox: TestSandbox;
  let ws: Awaited<ReturnType<typeof workspace>>;
  beforeAll(async () => {
    [sandbox, ws] = await Promise.all([startTestSandbox({ products: 40 }), workspace()]);
  });
  afterAll(async () => {
    await Promise.all([sandbox?.close(), ws?.remove()]);
  });

  it('a dt={date} folder is a DATE column (a run={run} folder stays text), and the printed INSERT loads it so', async () => {
    const file = join(ws.dir, 'dated.yml');
    await writeFile(
      file,
      [
        'name: dated',
        'source: { type: products.query, filter: { status: active } }',
        'sinks:',
        '  - { type: parquet, path: "out/dated/dt={date}/run={run}/products.parquet", columnNames: snake_case }',
        '',
      ].join('\n'),
    );
    const doc = (
      JSON.parse((await runMain(['schema', file, '--format', 'json'], cleanEnv())).stdout) as SchemaDoc[]
    )[0]!;
    expect(doc.layout).toMatchObject({ partitions: ['dt', 'run'], dates: ['dt'] });
    expect(doc.ddl.duckdb).toContain('\n  dt DATE,\n  run VARCHAR\n);');
    expect(doc.ddl.spark).toContain('\n  dt DATE,\n  run STRING\n)');
    expect(doc.ddl.athena).toContain('PARTITIONED BY (dt date, run string)');

    const run = await runMain(['run', file], sandboxEnv(sandbox, { CATALOG_STREAMS_STATE_DIR: join(ws.dir, 'state') }));
    expect(run.code, run.stderr).toBe(0);
    // The INSERT the DDL ends with, as printed, run as a user runs it.
    const insert = doc.ddl.duckdb.split('\n-- ')[1]!;
    expect(insert).toContain("hive_types = {'dt': DATE}");
    const today = new Date().toISOString().slice(0, 10);
    const { rows } = await duckdbQuery(
      `${doc.ddl.duckdb.split('\n-- ')[0]}
       ${insert}
       SELECT count(*) AS n, count(*) FILTER (WHERE dt = DATE '${today}' OR dt = DATE '${today}' - 1) AS dated,
              min(typeof(dt)) AS dt_type, min(typeof(run)) AS run_type,
              (SELECT min(typeof(dt)) FROM read_parquet(${sqlString(doc.layout.glob)}, hive_partitioning = true)) AS reader_type
       FROM ${doc.table}`,
    );
    expect(rows[0]!.n).toBeGreaterThan(0n);
    expect(rows[0]).toMatchObject({ dated: rows[0]!.n, dt_type: 'DATE', run_type: 'VARCHAR', reader_type: 'DATE' });
  });

  it('prints with ${LAKE_BUCKET} where the unset variable goes, says so once on stderr, and exits 0; run and validate still refuse', async () => {
    const file = 'pipelines/products-lake-s3.yml';
    const text = await runMain(['schema', file], cleanEnv());
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("LOCATION 's3://${LAKE_BUCKET}/catalog/products/';");
    expect(text.stdout).toContain("read_parquet('s3://${LAKE_BUCKET}/catalog/products/dt=*/part-*.parquet'");
    expect(text.stdout).not.toMatch(/placeholder/);
    const said = text.stderr.split('\n').filter((l) => l.includes('LAKE_BUCKET'));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain('LAKE_BUCKET is not set: printed as ${LAKE_BUCKET}');

    const json = await runMain(['schema', file, '--format', 'json'], cleanEnv());
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as SchemaDoc[])[0]!.layout.location).toBe('s3://${LAKE_BUCKET}/catalog/products/');
    // Set, it is used and nothing is said.
    const set = await runMain(['schema', file], cleanEnv({ LAKE_BUCKET: 'my-lake' }));
    expect(set.stdout).toContain("LOCATION 's3://my-lake/catalog/products/';");
    expect(set.stderr).not.toContain('LAKE_BUCKET');
    // Only `schema` prints without it: the commands that write still refuse.
    const validate = await runMain(['validate', file], cleanEnv());
    expect(validate.code).toBe(2);
    expect(validate.stderr).toContain('config.missing_env');
  });

  it("a CSV sink: the DuckDB read_csv it prints reads the run's files with the writer's column types", async () => {
    const file = join(ws.dir, 'csv.yml');
    await writeFile(
      file,
      [
        'name: csvd',
        'source: { type: products.query, filter: { status: active } }',
        'sinks:',
        '  - { type: csv, path: "out/csvd/dt={date}/products.csv", delimiter: semicolon }',
        '',
      ].join('\n'),
    );
    const text = await runMain(['schema', file, '--format', 'duckdb'], cleanEnv());
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("delim = ';'");
    // a quoted empty field is the empty string the sink wrote (docs/lake-loading.md "CSV")
    expect(text.stdout).toContain('allow_quoted_nulls = false');
    expect(text.stdout).toContain("    'eanGtin13': 'VARCHAR',");
    const docs = JSON.parse((await runMain(['schema', file, '--format', 'json'], cleanEnv())).stdout) as Array<
      SchemaDoc & { format: string; columns: Array<{ name: string }> }
    >;
    expect(docs.map((d) => [d.sink, d.format])).toEqual([['sinks[0]', 'csv']]);
    const read = docs[0]!.ddl.duckdb;
    expect(text.stdout).toContain(read);

    const run = await runMain(['run', file], sandboxEnv(sandbox, { CATALOG_STREAMS_STATE_DIR: join(ws.dir, 'state') }));
    expect(run.code, run.stderr).toBe(0);
    const { rows, types } = await duckdbQuery(read.replace(/;$/, ' LIMIT 1000;'));
    expect(rows.length).toBeGreaterThan(0);
    // Every column as the sink wrote it, then the partition; no type guessed.
    expect(Object.keys(types)).toEqual([...docs[0]!.columns.map((c) => c.name), 'dt']);
    expect(types).toMatchObject({
      id: 'VARCHAR',
      eanGtin13: 'VARCHAR',
      publicPrice: 'BIGINT',
      meta_updatedAt: 'TIMESTAMP WITH TIME ZONE',
      requiresLegalText: 'BOOLEAN',
      dt: 'DATE',
    });
    // Codes keep their leading zeros; timestamps are timestamps.
    expect(rows.filter((r) => r.meta_updatedAt instanceof Date)).toHaveLength(rows.length);
    const codes = rows.map((r) => r.eanGtin13).filter((v): v is string => typeof v === 'string');
    expect(codes.length).toBeGreaterThan(0);
    expect(codes.every((c) => /^\d{13}$/.test(c))).toBe(true);
  });
});
