// Lineage columns (`lineage: true`, src/sinks/shared/lineage.ts): every row of every format carries
// `_run_id` and `_extracted_at` (read back by DuckDB: Parquet typed, CSV and JSONL as text), the
// option off writes neither, a field of that name is refused with a message naming the way out, and
// the schema the `schema` command prints lists both.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, DataError } from '../../src/errors.js';
import { csvSink, jsonlSink, parquetSink, s3Sink } from '../../src/sinks/index.js';
import { map } from '../../src/index.js';
import { columnSchemaFor, parquetFormatOptions } from '../../src/sinks/parquet/parquet-encoding.js';
import { duckdbCreateTable, duckdbReadCsv } from '../../src/sinks/shared/schema-ddl.js';
import { describeSinks } from '../../src/cli/schema-command.js';
import { createRegistry } from '../../src/pipeline/builtins.js';
import { parsePipelines } from '../../src/pipeline/loader.js';
import { z } from 'zod';
import { duckdbQuery, parquetColumnTypes, sqlString } from '../helpers/duckdb.js';
import { startS3Server, useS3rverEnvironment, type S3TestServer } from '../helpers/s3-server.js';
import { testContext } from '../helpers/stage-context.js';
import { PRODUCT_HINT, productRecords, tempDir } from './records.js';

const RUN_ID = 'test-run';
/** testContext's run start: the one extraction instant of every row. */
const STARTED = new Date('2026-01-02T03:04:05Z');

const records = () => Readable.from([...productRecords(5)]);

/** `_run_id` and `_extracted_at` of every row, as DuckDB reads them (`_extracted_at` as epoch ms). */
async function lineageOf(from: string): Promise<Array<{ id: string; run: string; at: number }>> {
  const { rows } = await duckdbQuery(
    `SELECT id, _run_id AS run, epoch_ms(_extracted_at::TIMESTAMPTZ)::BIGINT AS at FROM ${from} ORDER BY id`,
  );
  return rows.map((r) => ({ id: String(r.id), run: String(r.run), at: Number(r.at) }));
}

function expectEveryRow(rows: Array<{ run: string; at: number }>, count = 5): void {
  expect(rows).toHaveLength(count);
  for (const row of rows) expect(row).toMatchObject({ run: RUN_ID, at: STARTED.getTime() });
}

describe('lineage: true in every format', () => {
  it('Parquet: _run_id VARCHAR and _extracted_at TIMESTAMP WITH TIME ZONE in every row, before _extra', async () => {
    const dir = await tempDir('lineage-parquet-');
    const file = join(dir, 'p.parquet');
    await pipeline(records(), parquetSink({ path: file, lineage: true, schemaHint: PRODUCT_HINT }, testContext()));
    const types = await parquetColumnTypes(file);
    expect(types._run_id).toBe('VARCHAR');
    expect(types._extracted_at).toBe('TIMESTAMP WITH TIME ZONE');
    expect(Object.keys(types).slice(-3)).toEqual(['_run_id', '_extracted_at', '_extra']);
    expectEveryRow(await lineageOf(`read_parquet(${sqlString(file)})`));
  });

  it('Parquet with timestamps: micros keeps the instant (microsecond column)', async () => {
    const dir = await tempDir('lineage-micros-');
    const file = join(dir, 'p.parquet');
    await pipeline(
      records(),
      parquetSink({ path: file, lineage: true, timestamps: 'micros', schemaHint: PRODUCT_HINT }, testContext()),
    );
    expectEveryRow(await lineageOf(`read_parquet(${sqlString(file)})`));
  });

  it('CSV: both columns in the header and every line, _extracted_at as ISO 8601 UTC', async () => {
    const dir = await tempDir('lineage-csv-');
    const file = join(dir, 'p.csv');
    await pipeline(records(), csvSink({ path: file, lineage: true, schemaHint: PRODUCT_HINT }, testContext()));
    const text = await readFile(file, 'utf8');
    const header = text.split('\r\n')[0]!.split(',');
    expect(header.slice(-3)).toEqual(['_run_id', '_extracted_at', '_extra']);
    expect(text.split('\r\n')[1]).toContain(`,${RUN_ID},${STARTED.toISOString()},`);
    expectEveryRow(await lineageOf(`read_csv(${sqlString(file)})`));
  });

  it('JSONL: both members at the end of every line; the records themselves are not changed', async () => {
    const dir = await tempDir('lineage-jsonl-');
    const file = join(dir, 'p.jsonl');
    const sent = [...productRecords(5)];
    await pipeline(Readable.from(sent), jsonlSink({ path: file, lineage: true }, testContext()));
    const lines = (await readFile(file, 'utf8')).trim().split('\n');
    expect(lines[0]).toMatch(/"_run_id":"test-run","_extracted_at":"2026-01-02T03:04:05.000Z"}$/);
    for (const r of sent) expect(r).not.toHaveProperty('_run_id');
    expectEveryRow(await lineageOf(`read_json(${sqlString(file)}, format = 'newline_delimited')`));
  });

  it('Parquet in code after map (columns inferred from the records): the lineage columns too', async () => {
    const dir = await tempDir('lineage-inferred-');
    const file = join(dir, 'p.parquet');
    await pipeline(
      records(),
      map((p: { id: string; publicPrice: number }) => ({ id: p.id, price: p.publicPrice })),
      parquetSink({ path: file, lineage: true }),
    );
    expect(Object.keys(await parquetColumnTypes(file))).toEqual(['id', 'price', '_run_id', '_extracted_at', '_extra']);
    const { rows } = await duckdbQuery(`SELECT DISTINCT _run_id FROM read_parquet(${sqlString(file)})`);
    expect(rows).toHaveLength(1);
    expect(rows[0]!._run_id).toMatch(/^\d{8}T\d{6}Z-[0-9a-f]{6}$/);
  });

  it('off (the default): no lineage column in Parquet, CSV or JSONL', async () => {
    const dir = await tempDir('lineage-off-');
    const ctx = () => testContext();
    await pipeline(records(), parquetSink({ path: join(dir, 'p.parquet'), schemaHint: PRODUCT_HINT }, ctx()));
    await pipeline(records(), csvSink({ path: join(dir, 'p.csv'), schemaHint: PRODUCT_HINT }, ctx()));
    await pipeline(records(), jsonlSink({ path: join(dir, 'p.jsonl') }, ctx()));
    for (const from of [
      `read_parquet(${sqlString(join(dir, 'p.parquet'))})`,
      `read_csv(${sqlString(join(dir, 'p.csv'))})`,
      `read_json(${sqlString(join(dir, 'p.jsonl'))}, format = 'newline_delimited')`,
    ]) {
      const { rows } = await duckdbQuery(`DESCRIBE SELECT * FROM ${from}`);
      const names = rows.map((r) => String(r.column_name));
      expect(names).toContain('id');
      expect(names).not.toContain('_run_id');
      expect(names).not.toContain('_extracted_at');
    }
  });
});

describe('lineage: true on S3', () => {
  let server: S3TestServer;
  let restoreEnv: () => void;
  beforeAll(async () => {
    server = await startS3Server();
    restoreEnv = useS3rverEnvironment(server.endpoint);
  });
  afterAll(async () => {
    restoreEnv?.();
    await server?.stop();
  });

  for (const format of ['parquet', 'csv', 'jsonl'] as const) {
    it(`format: ${format}`, async () => {
      const key = `lineage/${format}/part.${format}`;
      await pipeline(
        records(),
        s3Sink({ format, bucket: server.bucket, key, lineage: true, schemaHint: PRODUCT_HINT }, testContext()),
      );
      const listed = await server.client.send(
        new ListObjectsV2Command({ Bucket: server.bucket, Prefix: `lineage/${format}/` }),
      );
      const data = (listed.Contents ?? []).map((c) => c.Key!).filter((k) => !k.endsWith('_manifest.json'));
      expect(data).toHaveLength(1);
      const object = await server.client.send(new GetObjectCommand({ Bucket: server.bucket, Key: data[0] }));
      const file = join(await tempDir('lineage-s3-'), `part.${format}`);
      await writeFile(file, Buffer.from(await object.Body!.transformToByteArray()));
      const from =
        format === 'parquet'
          ? `read_parquet(${sqlString(file)})`
          : format === 'csv'
            ? `read_csv(${sqlString(file)})`
            : `read_json(${sqlString(file)}, format = 'newline_delimited')`;
      expectEveryRow(await lineageOf(from));
    });
  }
});

describe('lineage names taken by the records', () => {
  const Clashing = z.object({ id: z.string(), _run_id: z.string() });

  it('a declared field named _run_id is a config error naming the field and the way out', () => {
    const make = () =>
      parquetSink({ path: 'never.parquet', lineage: true, schemaHint: Clashing }, testContext()).destroy();
    let error: unknown;
    try {
      columnSchemaFor(
        { fields: [{ name: '_run_id', type: { kind: 'string' } }] },
        z.strictObject(parquetFormatOptions).parse({ lineage: true }),
        new Set(),
      );
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ code: 'config.lineage_column_clash' });
    expect((error as Error).message).toMatch(/field "_run_id".*rename the field.*lineage: false/);
    expect(make).toThrow(/lineage: true adds a column of that name/);
  });

  it('an undeclared _extracted_at in a record fails the run (JSONL and Parquet), naming the record', async () => {
    const dir = await tempDir('lineage-clash-');
    const bad = () => Readable.from([{ id: 'P1' }, { id: 'P2', _extracted_at: 'yesterday' }]);
    for (const sink of [
      jsonlSink({ path: join(dir, 'p.jsonl'), lineage: true }, testContext()),
      parquetSink({ path: join(dir, 'p.parquet'), lineage: true, columns: { id: 'string' } }, testContext()),
    ]) {
      const failed = await pipeline(bad(), sink).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(failed).toBeInstanceOf(DataError);
      expect(failed).toMatchObject({ code: 'data.lineage_field' });
      expect((failed as Error).message).toMatch(/id P2.*"_extracted_at".*rename or drop the field/);
    }
  });
});

describe('the schema the schema command prints', () => {
  it('lists _run_id and _extracted_at before _extra in the DDL, for Parquet and CSV sinks', () => {
    const loaded = parsePipelines(
      `name: lineage-ddl
source: { type: brands.query }
sinks:
  - { type: parquet, path: "out/brands/dt={date}/brands.parquet", lineage: true }
  - { type: csv, path: "out/brands.csv", lineage: true }
`,
      createRegistry(),
      { file: join(process.cwd(), 'lineage-ddl.yml') },
    );
    const { schemas, csv } = describeSinks(loaded);
    for (const sink of [...schemas, ...csv]) {
      const names = sink.schema.describe().map((c) => `${c.name} ${c.type}`);
      expect(names.slice(-3)).toEqual(['_run_id VARCHAR', '_extracted_at TIMESTAMP WITH TIME ZONE', '_extra JSON']);
    }
    expect(duckdbCreateTable(schemas[0]!.table, schemas[0]!.schema, schemas[0]!.layout)).toMatch(
      /_run_id VARCHAR,\n\s+_extracted_at TIMESTAMP WITH TIME ZONE,\n\s+_extra JSON/,
    );
    expect(duckdbReadCsv(csv[0]!.schema, csv[0]!.layout, csv[0]!.csv!)).toContain(
      "'_extracted_at': 'TIMESTAMP WITH TIME ZONE'",
    );
  });
});
