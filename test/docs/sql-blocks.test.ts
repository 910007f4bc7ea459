// Every SQL query of the README and docs/ runs, as printed, against what the shipped pipelines
// write. The pipelines run through the CLI against the sandbox on loopback, in a temp workspace;
// the S3 ones against s3rver, whose objects are then copied into a local mirror of the bucket,
// since DuckDB's httpfs extension is not something a test may download. Paths in the queries
// are only re-rooted: `'out/...` at the workspace, `'s3://my-lake/...` at the mirror.
//
// `sql` blocks are DuckDB. `sparksql` blocks are Spark: their two Spark-only constructs (a view
// `USING parquet OPTIONS (path ...)`, `SELECT * EXCEPT`) are translated to DuckDB's, the rest runs
// as printed, so a wrong column or window in the Spark view fails here too.
//
// DuckDB's `iceberg` extension is not something a test may download either: `iceberg_scan(...)`
// and `iceberg_snapshots(...)` are answered by icebird, an independent Iceberg reader, which
// reads the table (the version named) into JSON lines DuckDB then queries in their place.
// `icebergsql` blocks (Spark, Trino, Athena) cannot run here: each names its engine, uses that
// engine's time-travel clause, and names only columns the Iceberg tables have.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duckdbQuery } from '../helpers/duckdb.js';
import { startS3Server, S3RVER_CREDENTIALS, type S3TestServer } from '../helpers/s3-server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { jsonLines, runCli, sandboxEnv, workspace } from '../cli/cli-process.js';
import { allBlocks, at } from './doc-blocks.js';
import { readIceberg, readIcebergMetadata } from '../helpers/iceberg-reader.js';

const BUCKET = 'my-lake';
const blocks = allBlocks().filter((b) => b.lang === 'sql' || b.lang === 'sparksql');

/** The Spark-only parts of a `sparksql` block, in DuckDB's words. */
export function sparkToDuckdb(sql: string): string {
  return sql
    .replace(
      /CREATE OR REPLACE TEMPORARY VIEW (\w+)\s+USING parquet OPTIONS \(path '([^']+)', mergeSchema 'true'\);/g,
      (_, name: string, path: string) =>
        `CREATE OR REPLACE TEMPORARY VIEW ${name} AS SELECT * FROM read_parquet('${path.replace(/\/?$/, '/')}**/*.parquet', hive_partitioning = true, union_by_name = true);`,
    )
    .replace(/SELECT \* EXCEPT \(/g, 'SELECT * EXCLUDE (');
}

describe('SQL of the README and docs/, on the outputs of the shipped pipelines', () => {
  let ws: Awaited<ReturnType<typeof workspace>>;
  let sandbox: TestSandbox;
  let s3: S3TestServer;
  const mirror = () => join(ws.dir, 's3', BUCKET);

  beforeAll(async () => {
    [ws, sandbox, s3] = await Promise.all([
      workspace('catalog-streams-doc-sql-'),
      startTestSandbox({ products: 1500 }),
      startS3Server({ bucket: BUCKET }),
    ]);
    const env = sandboxEnv(sandbox);
    const s3Env = sandboxEnv(sandbox, {
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      S3_ENDPOINT: s3.endpoint,
      LAKE_BUCKET: BUCKET,
    });
    const runs: Array<[string, NodeJS.ProcessEnv]> = [
      ['pipelines/demo.yml', env],
      ['pipelines/reference-data.yml', env],
      ['pipelines/products-nightly.yml', env],
      ['pipelines/products-table.yml', env],
      ['pipelines/products-csv.yml', env],
      ['pipelines/products-iceberg.yml', env],
      ['pipelines/products-lake-s3.yml', s3Env],
      // The table on S3, as the Spark view reads it (its own cursor: the local table has one).
      [
        'pipelines/products-table.yml',
        {
          ...s3Env,
          TABLE_PATH: `s3://${BUCKET}/products-table`,
          TABLE_STATE: `s3://${BUCKET}/state/products-table.json`,
        },
      ],
    ];
    // One after the other: the machine is shared, and a failure is easier to read alone.
    for (const [file, runEnv] of runs) {
      const { code, stderr } = await runCli(['run', file, '--quiet'], { cwd: ws.dir, env: runEnv });
      expect(code, `${file}: ${stderr}`).toBe(0);
      const statuses = jsonLines(stderr)
        .filter((l) => l.event === 'summary')
        .map((l) => l.status);
      expect(statuses.length, file).toBeGreaterThan(0);
      expect(new Set(statuses), file).toEqual(new Set(['succeeded']));
    }
    const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: BUCKET }));
    for (const { Key } of listed.Contents ?? []) {
      const body = await (await s3.client.send(new GetObjectCommand({ Bucket: BUCKET, Key }))).Body!;
      const file = join(mirror(), Key!);
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, await body.transformToByteArray());
    }
  }, 300_000);
  afterAll(async () => {
    await Promise.all([ws?.remove(), sandbox?.close(), s3?.stop()]);
  });

  it('the pages hold DuckDB and Spark queries, each over paths a shipped pipeline writes', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(8);
    expect(new Set(blocks.map((b) => b.lang))).toEqual(new Set(['sql', 'sparksql']));
    for (const b of blocks) expect(b.body, at(b)).toMatch(/'(out\/|s3:\/\/my-lake\/)/);
  });

  /** `iceberg_scan(...)` and `iceberg_snapshots(...)` replaced by JSON lines icebird read. */
  async function icebergToJson(sql: string): Promise<string> {
    let out = sql;
    let n = 0;
    for (const m of sql.matchAll(/iceberg_(scan|snapshots)\('([^']+)'(?:,\s*version = '(\d+)')?\)/g)) {
      const [call, kind, table, version] = m as unknown as [string, string, string, string | undefined];
      const rows =
        kind === 'scan'
          ? await readIceberg(table, version ? { metadataFileName: `v${version}.metadata.json` } : {})
          : ((await readIcebergMetadata(table)).snapshots as Array<Record<string, unknown>>).map((s) => ({
              snapshot_id: s['snapshot-id'],
              timestamp_ms: new Date(Number(s['timestamp-ms'])).toISOString(),
            }));
      const file = join(ws.dir, `iceberg-${n++}.jsonl`);
      await writeFile(
        file,
        rows.map((r) => JSON.stringify(r, (_, v: unknown) => (typeof v === 'bigint' ? Number(v) : v))).join('\n'),
      );
      out = out.replace(call, `read_json('${file}')`);
    }
    return out;
  }

  it.each(blocks.map((b) => [at(b), b] as const))('%s runs and returns rows', async (_, block) => {
    const rooted = await icebergToJson(
      block.body.replaceAll("'out/", `'${ws.dir}/out/`).replaceAll(`'s3://${BUCKET}/`, `'${mirror()}/`),
    );
    const sql = block.lang === 'sparksql' ? sparkToDuckdb(rooted) : rooted;
    if (block.lang === 'sparksql')
      expect(sql, 'every Spark-only construct was translated').not.toMatch(/USING parquet|EXCEPT \(/);
    // A Spark view alone returns nothing: read it back, as its reader would.
    const query = block.lang === 'sparksql' ? `${sql}\nSELECT * FROM products_history WHERE is_current;` : sql;
    const { rows } = await duckdbQuery(query);
    expect(rows.length, `${at(block)}: the last statement returned no row`).toBeGreaterThan(0);
  });
});

describe('icebergsql blocks: Spark, Trino and Athena over the Iceberg tables', () => {
  const engineBlocks = allBlocks().filter((b) => b.lang === 'icebergsql');
  const TIME_TRAVEL: Record<string, RegExp> = {
    Spark: /\b(?:TIMESTAMP|VERSION) AS OF '[^']+'/,
    Trino: /\bFOR (?:TIMESTAMP AS OF TIMESTAMP '[^']+'|VERSION AS OF \d+)/,
    Athena: /\bFOR (?:TIMESTAMP AS OF TIMESTAMP '[^']+'|VERSION AS OF \d+)/,
  };
  const KEYWORDS = new Set(
    'select from where group by order as of for timestamp version and or not count call system register_table schema_name table_name table_location lake catalog products products_changes current changes utc'.split(
      ' ',
    ),
  );
  let columns: Set<string>;
  beforeAll(async () => {
    // The tables' columns, as the shipped pipeline writes them (a run of its own, on the sandbox).
    const [ws, sandbox] = await Promise.all([
      workspace('catalog-streams-doc-iceberg-'),
      startTestSandbox({ products: 200 }),
    ]);
    try {
      const run = await runCli(['run', 'pipelines/products-iceberg.yml', '--quiet'], {
        cwd: ws.dir,
        env: sandboxEnv(sandbox),
      });
      expect(run.code, run.stderr).toBe(0);
      columns = new Set<string>();
      for (const table of ['current', 'changes']) {
        const metadata = await readIcebergMetadata(join(ws.dir, 'out/products-iceberg', table));
        for (const f of metadata.schemas.at(-1).fields as Array<{ name: string }>) columns.add(f.name);
      }
    } finally {
      await Promise.all([ws.remove(), sandbox.close()]);
    }
  }, 120_000);

  it('the pages hold one for each engine', () => {
    expect(engineBlocks.map((b) => /^-- (\w+)/.exec(b.body)?.[1]).sort()).toEqual(['Athena', 'Spark', 'Trino']);
  });

  it.each(engineBlocks.map((b) => [at(b), b] as const))(
    "%s: its engine's time travel, and only columns the tables have",
    (_, block) => {
      const engine = /^-- (\w+)/.exec(block.body)![1]!;
      expect(block.body).toMatch(TIME_TRAVEL[engine]!);
      const words = block.body
        .replace(/^--.*$/gm, '')
        .replace(/'[^']*'/g, '')
        .replace(/`[^`]*`/g, '')
        .match(/\b[A-Za-z_][A-Za-z0-9_]*\b/g)!;
      const unknown = words.filter((w) => !KEYWORDS.has(w.toLowerCase()) && !columns.has(w));
      expect(unknown, `${at(block)}: not a column of the Iceberg tables`).toEqual([]);
      for (const location of block.body.matchAll(/'(s3:\/\/my-lake\/[^']+)'/g))
        expect(location[1]).toMatch(/^s3:\/\/my-lake\/products-iceberg\/(current|changes)$/);
    },
  );
});
