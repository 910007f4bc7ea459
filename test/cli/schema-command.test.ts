// `catalog-streams schema` for every shipped pipeline: its output is derived
// without the network, and the DuckDB CREATE TABLE it prints takes every file the
// pipeline then writes (run by the real CLI against the sandbox; the S3 lake into
// s3rver) with an INSERT ... BY NAME and no cast; each file's footer carries the
// printed schema hash.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { startS3Server, S3RVER_CREDENTIALS, type S3TestServer } from '../helpers/s3-server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { cleanEnv, runCli, runMain, sandboxEnv, workspace } from './cli-process.js';

const SHIPPED = [
  'demo.yml',
  'products-lake-s3.yml',
  'products-nightly.yml',
  'reference-data.yml',
  'custom-transform.yml',
];

interface SchemaDoc {
  pipeline: string;
  sink: string;
  table: string;
  hash: string;
  layout: { location: string; partitions: string[]; glob: string };
  columns: Array<{ name: string; type: string }>;
  ddl: { duckdb: string; spark: string; athena: string };
}

describe('catalog-streams schema', () => {
  let s3: S3TestServer;
  let sandbox: TestSandbox;
  let ws: Awaited<ReturnType<typeof workspace>>;
  beforeAll(async () => {
    [s3, sandbox, ws] = await Promise.all([
      startS3Server({ bucket: 'lake' }),
      startTestSandbox({ products: 600 }),
      workspace(),
    ]);
  });
  afterAll(async () => {
    await Promise.all([s3?.stop(), sandbox?.close(), ws?.remove()]);
  });

  const env = () =>
    sandboxEnv(sandbox, {
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      S3_ENDPOINT: s3.endpoint,
      LAKE_BUCKET: 'lake',
      LAKE_PREFIX: 'catalog',
    });

  /** Copies the objects under an s3:// location into a local folder, keys kept; returns that folder. */
  async function download(location: string): Promise<string> {
    const prefix = location.replace('s3://lake/', '');
    const local = join(ws.dir, 's3-copy', prefix);
    const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: 'lake', Prefix: prefix }));
    for (const { Key } of listed.Contents ?? []) {
      const body = await (
        await s3.client.send(new GetObjectCommand({ Bucket: 'lake', Key: Key! }))
      ).Body!.transformToByteArray();
      const file = join(ws.dir, 's3-copy', Key!);
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, body);
    }
    return local;
  }

  it.each(SHIPPED)(
    '%s: the DuckDB table it prints takes every file the run writes, without a cast',
    async (file) => {
      // Without the network: no connection settings at all.
      const printed = await runMain(
        ['schema', `pipelines/${file}`, '--format', 'json'],
        cleanEnv({ LAKE_BUCKET: 'lake', LAKE_PREFIX: 'catalog' }),
      );
      // Nothing on stderr but the sinks it skipped, each named with its reason.
      expect(
        printed.stderr
          .split('\n')
          .filter((l) => l !== '')
          .filter((l) => (JSON.parse(l) as { event?: string }).event !== 'schema.skipped'),
      ).toEqual([]);
      expect(printed.code).toBe(0);
      const docs = (JSON.parse(printed.stdout) as SchemaDoc[]).map((d) => ({ ...d }));
      expect(docs.length).toBeGreaterThan(0);
      // The same file gives the same schema again.
      expect(
        JSON.parse(
          (
            await runMain(
              ['schema', `pipelines/${file}`, '--format', 'json'],
              cleanEnv({ LAKE_BUCKET: 'lake', LAKE_PREFIX: 'catalog' }),
            )
          ).stdout,
        ),
      ).toEqual(docs);

      const run = await runCli(['run', `pipelines/${file}`], { cwd: ws.dir, env: env() });
      expect(run.code, run.stderr).toBe(0);
      // Printed from the workspace copy, so local paths point at what the run wrote.
      const local = JSON.parse(
        (
          await runMain(
            ['schema', join(ws.dir, 'pipelines', file), '--format', 'json'],
            cleanEnv({ LAKE_BUCKET: 'lake', LAKE_PREFIX: 'catalog' }),
          )
        ).stdout,
      ) as SchemaDoc[];
      for (const doc of local) {
        let { glob } = doc.layout;
        const { location } = doc.layout;
        if (location.startsWith('s3://')) {
          const copy = `${await download(location)}/`;
          glob = glob.replace(location, copy);
        }
        const hive =
          doc.layout.partitions.length > 0
            ? 'hive_partitioning = true, hive_types_autocast = false'
            : 'hive_partitioning = false';
        const { rows } = await duckdbQuery(
          `${doc.ddl.duckdb}
         INSERT INTO ${doc.table} BY NAME SELECT * FROM read_parquet(${sqlString(glob)}, ${hive});
         SELECT (SELECT count(*) FROM ${doc.table}) AS inserted,
                (SELECT count(*) FROM read_parquet(${sqlString(glob)}, ${hive})) AS files`,
        );
        expect(rows[0]!.inserted, `${file} ${doc.pipeline}`).toBeGreaterThan(0n);
        expect(rows[0]!.inserted).toBe(rows[0]!.files);
        // Every file carries the printed schema hash, and its columns are the printed ones in order.
        const footer = await duckdbQuery(
          `SELECT DISTINCT decode(value) AS hash FROM parquet_kv_metadata(${sqlString(glob)}) WHERE decode(key) = 'catalog-streams.schema-hash'`,
        );
        expect(footer.rows).toEqual([{ hash: doc.hash }]);
        const described = await duckdbQuery(
          `DESCRIBE SELECT * FROM read_parquet(${sqlString(glob)}, hive_partitioning = false)`,
        );
        // DuckDB quotes the struct members it takes for keywords ("name"); the types are the same.
        const unquoted = (type: string) => type.replace(/"/g, '');
        expect(described.rows.map((r) => [r.column_name, unquoted(String(r.column_type))])).toEqual(
          doc.columns.map((c) => [c.name, unquoted(c.type)]),
        );
      }
    },
    120_000,
  );

  it('prints the Parquet schema, DuckDB, Spark and Athena DDL over the partition folders', async () => {
    const { code, stdout } = await runMain(
      ['schema', 'pipelines/products-lake-s3.yml'],
      cleanEnv({ LAKE_BUCKET: 'my-lake' }),
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(
      /^-- pipeline "products-lake", sinks\[0\]: \d+ columns, schema [0-9a-f]{16}, partitioned by dt/,
    );
    expect(stdout).toContain('optional group brands (LIST) {');
    // names are quoted only where a dialect needs it: keywords, Athena's leading underscore (the shipped
    // pipelines write snake_case, so no camelCase name is left to quote; test/sinks/schema-ddl.test.ts has those)
    expect(stdout).toMatch(/CREATE TABLE products_lake \(\n {2}id VARCHAR,/);
    expect(stdout).toContain('  brands STRUCT(id BIGINT, name_en VARCHAR,');
    expect(stdout).toContain('  meta_updated_at TIMESTAMP WITH TIME ZONE,');
    expect(stdout).toMatch(/USING parquet\nPARTITIONED BY \(dt\)\nLOCATION 's3:\/\/my-lake\/catalog\/products\/';/);
    expect(stdout).toContain('  brands array<struct<id:bigint,name_en:string,');
    expect(stdout).toContain('  `_extra` string COMMENT');
    expect(stdout).toMatch(
      /PARTITIONED BY \(dt date\)\nSTORED AS PARQUET\nLOCATION 's3:\/\/my-lake\/catalog\/products\/'/,
    );
    expect(stdout).toContain("  ean_gtin13 STRING COMMENT 'code of 13 digits, leading zeros kept'");
    expect(stdout).toContain(
      "  public_price BIGINT COMMENT 'price in integer minor units (cents), as the API sends it'",
    );
  });

  it('refuses an unknown --format, naming the ones it has', async () => {
    const { code, stderr } = await runMain(
      ['schema', 'pipelines/demo.yml', '--format', 'csv', '--log-format', 'pretty'],
      cleanEnv(),
    );
    expect(code).toBe(2);
    expect(stderr).toBe(
      'catalog-streams schema: --format must be one of all, parquet, duckdb, spark, athena, json, got "csv"\n',
    );
  });

  it('columnNames: snake_case: the DDL names the columns bare, and the table it prints takes what the run wrote', async () => {
    const file = join(ws.dir, 'snake.yml');
    await writeFile(
      file,
      [
        'name: snake',
        'source: { type: products.query, filter: { status: active } }',
        'transforms:',
        '  - { type: flatten-locales, locales: [en, nl] }',
        'sinks:',
        '  - { type: parquet, path: "out/snake/dt={date}/products.parquet", columnNames: snake_case }',
        '',
      ].join('\n'),
    );
    const printed = await runMain(['schema', file], cleanEnv());
    expect(printed.code, printed.stderr).toBe(0);
    for (const line of [
      '  meta_updated_at TIMESTAMP WITH TIME ZONE,',
      '  seo_name_en VARCHAR,',
      '  conservation_min_celsius DOUBLE,',
      '  gs1_category_active BOOLEAN,',
      '  ean_gtin13 VARCHAR,',
      '  _extra JSON,',
      "  ean_gtin13 STRING COMMENT 'code of 13 digits, leading zeros kept',",
      '  `_extra` string COMMENT',
    ])
      expect(printed.stdout).toContain(line);
    // the only names DuckDB's DDL quotes are keywords (publicCategories[].order)
    const duck = printed.stdout.slice(printed.stdout.indexOf('-- DuckDB'), printed.stdout.indexOf('-- Spark'));
    expect(new Set([...duck.matchAll(/"([^"]+)"/g)].map((m) => m[1]))).toEqual(new Set(['order']));

    const run = await runCli(['run', file], { cwd: ws.dir, env: env() });
    expect(run.code, run.stderr).toBe(0);
    const doc = (
      JSON.parse((await runMain(['schema', file, '--format', 'json'], cleanEnv())).stdout) as SchemaDoc[]
    )[0]!;
    const { rows } = await duckdbQuery(
      `${doc.ddl.duckdb}
       INSERT INTO ${doc.table} BY NAME SELECT * FROM read_parquet(${sqlString(doc.layout.glob)}, hive_partitioning = true, hive_types_autocast = false);
       SELECT count(*) AS n, count(meta_updated_at) AS updated,
              count(conservation_min_celsius) AS cold, count(gs1_category_active) AS flagged,
              count(*) FILTER (WHERE _extra LIKE '%conservation%' OR _extra LIKE '%gs1Category%') AS aside
       FROM ${doc.table}`,
    );
    expect(rows[0]!.n).toBeGreaterThan(0n);
    expect(rows[0]!.updated).toBe(rows[0]!.n);
    // the sandbox's temperatures and GS1 flags are in their typed columns, none kept aside
    expect(rows[0]).toMatchObject({ cold: expect.any(BigInt), flagged: expect.any(BigInt), aside: 0n });
    expect(rows[0]!.cold).toBeGreaterThan(0n);
    expect(rows[0]!.flagged).toBeGreaterThan(0n);
  });

  it('names every sink it skips and why, on stderr, in text and in JSON', async () => {
    const file = join(ws.dir, 'mixed-sinks.yml');
    await writeFile(
      file,
      [
        'name: mixed',
        'source: { type: brands.query }',
        'sinks:',
        '  - { type: jsonl, path: out/mixed.jsonl }',
        '  - { type: parquet, path: out/mixed.parquet }',
        '  - { type: csv, path: out/mixed.csv }',
        '',
      ].join('\n'),
    );
    const text = await runCli(['schema', file, '--format', 'duckdb', '--log-format', 'pretty'], { env: cleanEnv() });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('CREATE TABLE');
    // the CSV sink has its typed read_csv (test/cli/schema-command-lake.test.ts)
    expect(text.stdout).toContain('SELECT * FROM read_csv(');
    expect(text.stderr.split('\n').filter((l) => l !== '')).toEqual([
      'catalog-streams schema: skipped pipeline "mixed" sinks[0] (jsonl): JSON Lines has no column schema: each record is written as it is',
    ]);
    const spark = await runCli(['schema', file, '--format', 'spark', '--log-format', 'pretty'], { env: cleanEnv() });
    expect(spark.stderr).toContain(
      'skipped pipeline "mixed" sinks[2] (csv): a CSV sink has a typed DuckDB read_csv (--format duckdb or all), no table DDL',
    );
    const json = await runCli(['schema', file, '--format', 'json'], { env: cleanEnv() });
    expect((JSON.parse(json.stdout) as SchemaDoc[]).map((d) => d.sink)).toEqual(['sinks[1]', 'sinks[2]']);
    expect(
      json.stderr
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    ).toEqual([
      expect.objectContaining({
        level: 'info',
        event: 'schema.skipped',
        pipeline: 'mixed',
        sink: 'sinks[0]',
        type: 'jsonl',
      }),
    ]);
  });
});
