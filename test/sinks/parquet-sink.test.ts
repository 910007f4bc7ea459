import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import type { RunEventMap } from '../../src/events.js';
import { zstdCompressor } from '../../src/sinks/parquet/parquet-encoder.js';
import { parquetSink, type ParquetSinkOptions } from '../../src/sinks/index.js';
import { duckdbQuery, parquetColumnTypes, sqlString } from '../helpers/duckdb.js';
import { testContext } from '../helpers/stage-context.js';
import { PRODUCT_HINT, productRecord, productRecords, randomBatches, tempDir, type ProductRecord } from './records.js';
import { failMidStream } from './stream-harness.js';

const PRODUCT_TYPES = {
  id: 'VARCHAR',
  status: 'VARCHAR',
  name_en: 'VARCHAR',
  name_nl: 'VARCHAR',
  eanGtin13: 'VARCHAR',
  ean: 'VARCHAR[]',
  publicPrice: 'BIGINT',
  vat: 'DOUBLE',
  requiresLegalText: 'BOOLEAN',
  isANutritionSupplement: 'BOOLEAN',
  atcCategory: 'VARCHAR[]',
  meta_createdAt: 'TIMESTAMP WITH TIME ZONE',
  meta_updatedAt: 'TIMESTAMP WITH TIME ZONE',
  serial: 'BIGINT',
  _extra: 'JSON',
};

function productSink(options: ParquetSinkOptions, ctx?: ReturnType<typeof testContext>) {
  return parquetSink({ schemaHint: PRODUCT_HINT, ...options }, ctx);
}

function events<K extends keyof RunEventMap>(ctx: ReturnType<typeof testContext>, name: K): RunEventMap[K][0][] {
  const seen: RunEventMap[K][0][] = [];
  (ctx.events.on as (n: K, l: (e: RunEventMap[K][0]) => void) => void)(name, (e) => seen.push(e));
  return seen;
}

/** Aggregates of the generated products, computed in JS, to compare with DuckDB's. */
function expectedAggregates(records: ProductRecord[]) {
  return {
    count: BigInt(records.length),
    priceSum: BigInt(records.reduce((n, r) => n + r.publicPrice, 0)),
    vatSum: records.reduce((n, r) => n + r.vat, 0),
    serialSum: records.reduce((n, r) => n + r.serial, 0n),
    nlNulls: BigInt(records.filter((r) => r.name.nl === null).length),
    atcNull: BigInt(records.filter((r) => r.atcCategory === null).length),
    atcEmpty: BigInt(records.filter((r) => r.atcCategory?.length === 0).length),
    atcItems: BigInt(records.reduce((n, r) => n + (r.atcCategory?.length ?? 0), 0)),
    eanEmpty: BigInt(records.filter((r) => r.ean.length === 0).length),
    leadingZeros: BigInt(records.filter((r) => r.eanGtin13.startsWith('00')).length),
    supplementNull: BigInt(records.filter((r) => r.isANutritionSupplement === null).length),
    legalTrue: BigInt(records.filter((r) => r.requiresLegalText).length),
    minCreated: new Date(records.reduce((m, r) => Math.min(m, r.meta.createdAt), Infinity) * 1000),
    maxCreated: new Date(records.reduce((m, r) => Math.max(m, r.meta.createdAt), -Infinity) * 1000),
  };
}

const AGGREGATE_SQL = (file: string) => `
  SELECT count(*) AS count, sum(publicPrice) AS priceSum, sum(vat) AS vatSum, sum(serial) AS serialSum,
         count(*) FILTER (WHERE name_nl IS NULL) AS nlNulls,
         count(*) FILTER (WHERE atcCategory IS NULL) AS atcNull,
         count(*) FILTER (WHERE len(atcCategory) = 0) AS atcEmpty,
         sum(len(atcCategory)) AS atcItems,
         count(*) FILTER (WHERE len(ean) = 0) AS eanEmpty,
         count(*) FILTER (WHERE starts_with(eanGtin13, '00')) AS leadingZeros,
         count(*) FILTER (WHERE isANutritionSupplement IS NULL) AS supplementNull,
         count(*) FILTER (WHERE requiresLegalText) AS legalTrue,
         min(meta_createdAt) AS minCreated, max(meta_createdAt) AS maxCreated
  FROM read_parquet(${sqlString(file)})`;

async function readAggregates(file: string) {
  const { rows } = await duckdbQuery(AGGREGATE_SQL(file));
  const r = rows[0]!;
  return {
    ...r,
    priceSum: BigInt(r.priceSum as bigint),
    serialSum: BigInt(r.serialSum as bigint),
    atcItems: BigInt(r.atcItems as bigint),
  };
}

describe('parquet sink', () => {
  it('writes types, values, nulls, lists, Unicode, codes and BigInts that DuckDB reads back exactly', async () => {
    const dir = await tempDir();
    const records = [...productRecords(5000)];
    const sink = productSink({ path: join(dir, 'products.parquet'), rowGroupRows: 1000 });
    await pipeline(randomBatches(records, 200), sink);
    const file = join(dir, 'products.parquet');

    expect(await parquetColumnTypes(file)).toEqual(PRODUCT_TYPES);
    expect(await readAggregates(file)).toEqual(expectedAggregates(records));
    expect(sink.outputs).toEqual([
      { kind: 'file', location: file, rows: 5000, bytes: (await readFile(file)).byteLength, sink: 'parquet' },
    ]);

    const { rows } = await duckdbQuery(
      `SELECT * FROM read_parquet(${sqlString(file)}) WHERE id IN ('P0000000', 'P0000001', 'P0000008') ORDER BY id`,
    );
    const r0 = productRecord(0);
    expect(rows[0]).toEqual({
      id: 'P0000000',
      status: 'active',
      name_en: 'β-Caryophyllene drops 0',
      name_nl: null,
      eanGtin13: '0000000000000',
      ean: [],
      publicPrice: 100n,
      vat: 21,
      requiresLegalText: true,
      isANutritionSupplement: null,
      atcCategory: null,
      meta_createdAt: new Date(r0.meta.createdAt * 1000),
      meta_updatedAt: new Date(r0.meta.updatedAt * 1000),
      serial: 2n ** 60n,
      _extra: null,
    });
    expect(rows[1]).toMatchObject({
      name_en: 'Δ8-THC drops 1',
      atcCategory: [],
      ean: productRecord(1).ean,
      vat: 5.5,
      serial: 2n ** 60n + 1_000_003n,
    });
    expect(rows[2]).toMatchObject({ atcCategory: null, eanGtin13: productRecord(8).eanGtin13 });

    // Row groups of 1000 rows, snappy, with statistics.
    const meta = await duckdbQuery(
      `SELECT count(DISTINCT row_group_id) AS groups, min(compression) AS codec, max(compression) AS codec2,
              min(TRY_CAST(stats_min_value AS BIGINT)) FILTER (WHERE path_in_schema = 'publicPrice') AS priceMin,
              max(TRY_CAST(stats_max_value AS BIGINT)) FILTER (WHERE path_in_schema = 'publicPrice') AS priceMax
       FROM parquet_metadata(${sqlString(file)})`,
    );
    expect(meta.rows[0]).toEqual({
      groups: 5n,
      codec: 'SNAPPY',
      codec2: 'SNAPPY',
      priceMin: 100n,
      priceMax: BigInt(Math.max(...records.map((r) => r.publicPrice))),
    });
  });

  it('writes a 200,000-row file that DuckDB reads with the right count, types and sums', async () => {
    const dir = await tempDir();
    const file = join(dir, 'big.parquet');
    const sink = productSink({ path: file });
    await pipeline(Readable.from(productRecords(200_000)), sink);
    expect(await parquetColumnTypes(file)).toEqual(PRODUCT_TYPES);
    expect(await readAggregates(file)).toEqual(expectedAggregates([...productRecords(200_000)]));
    const groups = await duckdbQuery(
      `SELECT count(DISTINCT row_group_id) AS n FROM parquet_metadata(${sqlString(file)})`,
    );
    expect(groups.rows[0]!.n).toBe(20n);
  }, 90_000);

  it('stores timestamps in micros, or raw, and reads millisecond input', async () => {
    const dir = await tempDir();
    const records = [{ id: 'a', createdAt: 1_700_000_000_123, at: new Date('2026-01-02T03:04:05.678Z') }];
    const micros = parquetSink({
      path: join(dir, 'micros.parquet'),
      columns: { id: 'string', createdAt: 'int64', at: 'timestamp' },
      timestamps: 'micros',
      timestampInput: 'milliseconds',
      timestampFields: ['createdAt'],
    });
    await pipeline(Readable.from(records), micros);
    const m = await duckdbQuery(
      `SELECT createdAt, epoch_us(createdAt) AS us, "at" FROM read_parquet(${sqlString(join(dir, 'micros.parquet'))})`,
    );
    expect(m.types).toMatchObject({ createdAt: 'TIMESTAMP WITH TIME ZONE', at: 'TIMESTAMP WITH TIME ZONE' });
    expect(m.rows[0]).toEqual({
      createdAt: new Date(1_700_000_000_123),
      us: 1_700_000_000_123_000n,
      at: new Date('2026-01-02T03:04:05.678Z'),
    });

    const raw = parquetSink({
      path: join(dir, 'raw.parquet'),
      columns: { 'meta.createdAt': 'int64' },
      timestamps: 'raw',
    });
    await pipeline(Readable.from([{ meta: { createdAt: 1_600_000_000 } }]), raw);
    const r = await duckdbQuery(`SELECT * FROM read_parquet(${sqlString(join(dir, 'raw.parquet'))})`);
    // DuckDB reports a JSON column as VARCHAR in a query's result types; DESCRIBE (parquetColumnTypes) shows JSON.
    expect(r.types).toEqual({ meta_createdAt: 'BIGINT', _extra: 'VARCHAR' });
    expect(r.rows).toEqual([{ meta_createdAt: 1_600_000_000n, _extra: null }]);
  });

  it('writes declared columns with their types (INT32, lists, JSON) and ISO/Date timestamps', async () => {
    const dir = await tempDir();
    const file = join(dir, 'declared.parquet');
    const sink = parquetSink({
      path: file,
      columns: {
        id: 'string',
        qty: 'int32',
        codes: 'string[]',
        prices: 'int64[]',
        'meta.createdAt': 'timestamp',
        cannabisData: 'json',
        score: 'double',
      },
    });
    const records = [
      {
        id: 'P1',
        qty: 7,
        codes: ['0012345678905', null],
        prices: [1, 2n ** 62n],
        meta: { createdAt: '2026-01-02T03:04:05Z' },
        cannabisData: { thc: 0.2, big: 2n ** 64n },
        score: 1,
      },
      {
        id: 'P2',
        qty: null,
        codes: [],
        prices: null,
        meta: { createdAt: new Date(0) },
        cannabisData: null,
        score: 2.5,
      },
    ];
    await pipeline(Readable.from(records), sink);
    const { rows, types } = await duckdbQuery(`SELECT * FROM read_parquet(${sqlString(file)})`);
    expect(types).toEqual({
      id: 'VARCHAR',
      qty: 'INTEGER',
      codes: 'VARCHAR[]',
      prices: 'BIGINT[]',
      meta_createdAt: 'TIMESTAMP WITH TIME ZONE',
      cannabisData: 'VARCHAR',
      score: 'DOUBLE',
      _extra: 'VARCHAR',
    });
    expect(await parquetColumnTypes(file)).toMatchObject({ cannabisData: 'JSON', _extra: 'JSON' });
    expect(rows).toEqual([
      {
        id: 'P1',
        qty: 7,
        codes: ['0012345678905', null],
        prices: [1n, 2n ** 62n],
        meta_createdAt: new Date('2026-01-02T03:04:05Z'),
        cannabisData: '{"thc":0.2,"big":18446744073709551616}',
        score: 1,
        _extra: null,
      },
      {
        id: 'P2',
        qty: null,
        codes: [],
        prices: null,
        meta_createdAt: new Date(0),
        cannabisData: null,
        score: 2.5,
        _extra: null,
      },
    ]);
  });

  it('keeps nested objects as JSON text columns with nested: json', async () => {
    const dir = await tempDir();
    const file = join(dir, 'nested.parquet');
    const records = [...productRecords(3)];
    await pipeline(Readable.from(records), productSink({ path: file, nested: 'json' }));
    const { rows } = await duckdbQuery(`SELECT name, meta FROM read_parquet(${sqlString(file)})`);
    expect(await parquetColumnTypes(file)).toMatchObject({ name: 'JSON', meta: 'JSON' });
    expect(rows.map((r) => r.name)).toEqual(records.map((r) => JSON.stringify(r.name)));
    expect(rows.map((r) => r.meta)).toEqual(records.map((r) => JSON.stringify(r.meta)));
  });

  // Issue 12 replaced the sampled-and-locked schema (and onSchemaMismatch) by the contract: a value
  // the schema does not name, or that does not fit its column, is kept in _extra; nothing fails the run.
  it('keeps a late undeclared field and a misfit value in _extra, lists their paths, and fails nothing', async () => {
    const dir = await tempDir();
    const ctx = testContext();
    const warnings = events(ctx, 'warning');
    const infos = events(ctx, 'info');
    const records: Record<string, unknown>[] = [...productRecords(6000)];
    records[5200] = { ...records[5200], publicPrice: '12,50' };
    records[5300] = { ...records[5300], replacement: 'P0000001', cnk: '0123456' };
    records[5400] = {
      ...records[5400],
      replacement: 'P0000002',
      meta: { ...(records[5400]!.meta as object), source: 'x' },
    };
    records[5500] = { ...records[5500], serial: 2 ** 53 + 2 };
    const file = join(dir, 'p.parquet');
    await pipeline(randomBatches(records, 400), productSink({ path: file }, ctx));
    const { rows } = await duckdbQuery(
      `SELECT id, publicPrice, serial, _extra, json_extract_string(_extra, '$.cnk') AS cnk FROM read_parquet(${sqlString(file)}) WHERE _extra IS NOT NULL ORDER BY id`,
    );
    expect(rows).toEqual([
      {
        id: 'P0005200',
        publicPrice: null,
        serial: records[5200]!.serial,
        _extra: '{"publicPrice":"12,50"}',
        cnk: null,
      },
      {
        id: 'P0005300',
        publicPrice: 100n + 5300n,
        serial: records[5300]!.serial,
        _extra: '{"replacement":"P0000001","cnk":"0123456"}',
        cnk: '0123456',
      },
      {
        id: 'P0005400',
        publicPrice: 100n + 5400n,
        serial: records[5400]!.serial,
        _extra: '{"meta.source":"x","replacement":"P0000002"}',
        cnk: null,
      },
      { id: 'P0005500', publicPrice: 100n + 5500n, serial: null, _extra: '{"serial":9007199254740994}', cnk: null },
    ]);
    const { rows: count } = await duckdbQuery(`SELECT count(*) AS n FROM read_parquet(${sqlString(file)})`);
    expect(count[0]).toEqual({ n: 6000n });
    const extra = warnings.filter((w) => w.code === 'sink.parquet.extra').map((w) => w.message);
    expect(extra).toEqual([
      expect.stringMatching(
        /field "publicPrice" has a column, but this value \(string "12,50"\).*kept in the _extra JSON column/,
      ),
      expect.stringMatching(/field "replacement"/),
      expect.stringMatching(/field "cnk"/),
      expect.stringMatching(/field "meta\.source"/),
      expect.stringMatching(/field "serial" has a column, but this value \(integer 9007199254740994 \(beyond 2\^53/),
    ]);
    expect(infos.find((i) => i.code === 'sink.parquet.extra_fields')).toMatchObject({
      fields: { publicPrice: 1, replacement: 2, cnk: 1, 'meta.source': 1, serial: 1 },
    });
  });

  it('a float after 5,000 integers lands in the DOUBLE column the declaration gives', async () => {
    const dir = await tempDir();
    const schemaHint = z.object({ id: z.string(), weightWithUnit: z.object({ value: z.number(), unit: z.string() }) });
    const records = Array.from({ length: 6000 }, (_, i) => ({
      id: `P${i}`,
      weightWithUnit: { value: i < 5500 ? i : i + 0.37, unit: 'g' },
    }));
    const file = join(dir, 'w.parquet');
    await pipeline(randomBatches(records, 300), parquetSink({ path: file, schemaHint }));
    const { rows, types } = await duckdbQuery(
      `SELECT weightWithUnit_value AS v, _extra FROM read_parquet(${sqlString(file)}) WHERE id IN ('P0', 'P5600')`,
    );
    expect(types).toEqual({ v: 'DOUBLE', _extra: 'VARCHAR' });
    expect(rows).toEqual([
      { v: 0, _extra: null },
      { v: 5600.37, _extra: null },
    ]);
  });

  it('types columns from a zod declaration: lists of objects as LIST<STRUCT>, every declared field, whatever the records hold', async () => {
    const dir = await tempDir();
    const schemaHint = z.object({
      id: z.string(),
      vat: z.number(),
      replacement: z.string().optional(),
      qty: z.int32(),
      cannabisData: z.object({ thcPercentage: z.number().nullable(), strain: z.string().nullable() }).nullable(),
      photos: z.array(z.object({ url: z.string(), meta: z.object({ createdAt: z.int() }) })),
      meta: z.object({ createdAt: z.int(), updatedAt: z.int() }),
      name: z.record(z.string(), z.string()),
    });
    const records = Array.from({ length: 20 }, (_, i) => ({
      id: `P${i}`,
      vat: 21,
      qty: i,
      cannabisData: i === 19 ? { thcPercentage: 0.25, strain: 'Δ9' } : null,
      photos: [{ url: `u${i}`, meta: { createdAt: 1_600_000_000 + i }, shiny: i === 3 ? true : undefined }],
      meta: { createdAt: 1_600_000_000 + i, updatedAt: 1_600_000_000 },
      name: { en: `n${i}`, fr: `f${i}` },
    }));
    const file = join(dir, 'hinted.parquet');
    await pipeline(Readable.from(records), parquetSink({ path: file, schemaHint }));
    expect(await parquetColumnTypes(file)).toEqual({
      id: 'VARCHAR',
      vat: 'DOUBLE',
      replacement: 'VARCHAR',
      qty: 'INTEGER',
      cannabisData_thcPercentage: 'DOUBLE',
      cannabisData_strain: 'VARCHAR',
      photos: 'STRUCT(url VARCHAR, meta STRUCT(createdAt TIMESTAMP WITH TIME ZONE))[]',
      meta_createdAt: 'TIMESTAMP WITH TIME ZONE',
      meta_updatedAt: 'TIMESTAMP WITH TIME ZONE',
      name: 'JSON',
      _extra: 'JSON',
    });
    const { rows } = await duckdbQuery(
      `SELECT cannabisData_thcPercentage AS thc, photos[1].url AS url, photos[1].meta.createdAt AS at, name, _extra FROM read_parquet(${sqlString(file)}) WHERE id IN ('P3', 'P19') ORDER BY id`,
    );
    expect(rows).toEqual([
      {
        thc: 0.25,
        url: 'u19',
        at: new Date((1_600_000_000 + 19) * 1000),
        name: '{"en":"n19","fr":"f19"}',
        _extra: null,
      },
      {
        thc: null,
        url: 'u3',
        at: new Date((1_600_000_000 + 3) * 1000),
        name: '{"en":"n3","fr":"f3"}',
        _extra: '{"photos[0].shiny":true}',
      },
    ]);
  });

  it('writes the same Parquet schema whatever the data: all nulls, or every field set', async () => {
    const dir = await tempDir();
    const sparse = [{ id: 'a', status: 'active', meta: { createdAt: 1, updatedAt: 2 } }];
    await pipeline(Readable.from(sparse), productSink({ path: join(dir, 'sparse.parquet') }));
    await pipeline(Readable.from(productRecords(50)), productSink({ path: join(dir, 'full.parquet') }));
    const schemaOf = async (name: string) =>
      (
        await duckdbQuery(
          `SELECT name, type, converted_type, logical_type FROM parquet_schema(${sqlString(join(dir, name))})`,
        )
      ).rows;
    expect(await schemaOf('sparse.parquet')).toEqual(await schemaOf('full.parquet'));
    const kv = await duckdbQuery(
      `SELECT decode(key) AS key, decode(value) AS value FROM parquet_kv_metadata(${sqlString(join(dir, 'full.parquet'))}) WHERE decode(key) LIKE 'catalog-streams.schema%' ORDER BY key`,
    );
    expect(kv.rows.map((r) => r.key)).toEqual(['catalog-streams.schema', 'catalog-streams.schema-hash']);
    expect(JSON.parse(String(kv.rows[0]!.value))[0]).toEqual({ name: 'id', type: 'VARCHAR' });
    expect(String(kv.rows[1]!.value)).toMatch(/^[0-9a-f]{16}$/);
  });

  it('writes prices as integer minor units by default and as DECIMAL(18,2) on request', async () => {
    const dir = await tempDir();
    const records = [...productRecords(20)];
    await pipeline(Readable.from(records), productSink({ path: join(dir, 'cents.parquet') }));
    await pipeline(Readable.from(records), productSink({ path: join(dir, 'decimal.parquet'), prices: 'decimal' }));
    expect(await parquetColumnTypes(join(dir, 'cents.parquet'))).toMatchObject({ publicPrice: 'BIGINT' });
    expect(await parquetColumnTypes(join(dir, 'decimal.parquet'))).toMatchObject({ publicPrice: 'DECIMAL(18,2)' });
    const { rows } = await duckdbQuery(
      `SELECT c.publicPrice AS cents, d.publicPrice::VARCHAR AS amount FROM read_parquet(${sqlString(join(dir, 'cents.parquet'))}) c
       JOIN read_parquet(${sqlString(join(dir, 'decimal.parquet'))}) d USING (id) ORDER BY id LIMIT 2`,
    );
    expect(rows).toEqual([
      { cents: 100n, amount: '1.00' },
      { cents: 101n, amount: '1.01' },
    ]);
  });

  it('writes gzip and uncompressed files', async () => {
    const dir = await tempDir();
    for (const compression of ['gzip', 'none'] as const) {
      const file = join(dir, `${compression}.parquet`);
      await pipeline(Readable.from(productRecords(2000)), productSink({ path: file, compression }));
      const meta = await duckdbQuery(`SELECT DISTINCT compression FROM parquet_metadata(${sqlString(file)})`);
      expect(meta.rows).toEqual([{ compression: compression === 'gzip' ? 'GZIP' : 'UNCOMPRESSED' }]);
      expect(await readAggregates(file)).toEqual(expectedAggregates([...productRecords(2000)]));
    }
  });

  it('partitions Hive-style, leaving the partition column out of the files', async () => {
    const dir = await tempDir();
    const records = [...productRecords(1000)];
    const sink = productSink({ path: join(dir, 'products/status={status}/part-{part}.parquet') });
    await pipeline(Readable.from(records), sink);
    expect(sink.outputs).toHaveLength(4);
    const one = sink.outputs.find((o) => o.location.includes('status=active'))!.location;
    expect(Object.keys(await parquetColumnTypes(one))).not.toContain('status');
    const { rows } = await duckdbQuery(
      `SELECT status, count(*) AS n FROM read_parquet(${sqlString(join(dir, 'products/*/*.parquet'))}, hive_partitioning = true) GROUP BY status ORDER BY status`,
    );
    const expected = ['active', 'inactive', 'no_selection', 'replaced'].map((status) => ({
      status,
      n: BigInt(records.filter((r) => r.status === status).length),
    }));
    expect(rows).toEqual(expected);
  });

  it('rotates by bytes into several readable parts without losing rows', async () => {
    const dir = await tempDir();
    const maxBytes = 256 * 1024;
    const sink = productSink({ path: join(dir, 'p-{part}.parquet'), maxBytes, rowGroupRows: 2000 });
    await pipeline(randomBatches(productRecords(40_000), 500, 3), sink);
    expect(sink.outputs.length).toBeGreaterThan(2);
    // The first part closes early (it assumes 1:1 until a row group is compressed); later parts
    // use the ratio learnt so far and land close to maxBytes.
    expect(sink.outputs[0]!.bytes).toBeLessThan(maxBytes * 1.5);
    for (const output of sink.outputs.slice(1, -1)) {
      expect(output.bytes).toBeGreaterThan(maxBytes * 0.9);
      expect(output.bytes).toBeLessThan(maxBytes * 1.25);
    }
    const { rows } = await duckdbQuery(
      `SELECT count(*) AS n, count(DISTINCT id) AS ids FROM read_parquet(${sqlString(join(dir, 'p-*.parquet'))})`,
    );
    expect(rows[0]).toEqual({ n: 40_000n, ids: 40_000n });
    expect(sink.outputs.reduce((n, o) => n + o.rows, 0)).toBe(40_000);
  });

  it('writes an empty file with its columns (the schema is known before any record); in code, nothing known: only _extra', async () => {
    const dir = await tempDir();
    const declared = parquetSink({ path: join(dir, 'declared.parquet'), columns: { id: 'string', n: 'int64' } });
    await pipeline(Readable.from([]), declared);
    const { rows, types } = await duckdbQuery(
      `SELECT * FROM read_parquet(${sqlString(join(dir, 'declared.parquet'))})`,
    );
    expect(rows).toEqual([]);
    expect(types).toEqual({ id: 'VARCHAR', n: 'BIGINT', _extra: 'VARCHAR' });

    const hinted = productSink({ path: join(dir, 'hinted.parquet') });
    await pipeline(Readable.from([]), hinted);
    expect(await parquetColumnTypes(join(dir, 'hinted.parquet'))).toEqual(PRODUCT_TYPES);

    // Nothing upstream declares the records and none arrived to infer columns from.
    await pipeline(Readable.from([]), parquetSink({ path: join(dir, 'unknown.parquet') }));
    expect(await parquetColumnTypes(join(dir, 'unknown.parquet'))).toEqual({ _extra: 'JSON' });
  });

  it('row groups of varying row counts (bytes-limited, larger and smaller than the last) keep every value in place', async () => {
    const dir = await tempDir();
    // Records of growing then shrinking size: the byte limit closes row groups at varying row counts.
    const records = Array.from({ length: 6000 }, (_, i) => ({
      ...productRecord(i),
      note: 'x'.repeat(i < 3000 ? i % 700 : 20),
    }));
    const file = join(dir, 'varying.parquet');
    await pipeline(
      randomBatches(records, 300),
      productSink({ path: file, rowGroupRows: 2500, rowGroupBytes: '512KiB', columns: { note: 'string' } }),
    );
    const groups = await duckdbQuery(
      `SELECT DISTINCT row_group_id, row_group_num_rows AS n FROM parquet_metadata(${sqlString(file)}) ORDER BY row_group_id`,
    );
    const counts = groups.rows.map((r) => Number(r.n));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(6000);
    expect(new Set(counts).size).toBeGreaterThan(2);
    expect(counts.some((n, i) => i > 0 && n > counts[i - 1]!)).toBe(true);
    expect(counts.some((n, i) => i > 0 && n < counts[i - 1]!)).toBe(true);
    // Every row group's footer entry (min/max/null count, shared between row groups where equal) reads back right.
    const stats = await duckdbQuery(
      `SELECT row_group_id AS g, stats_min_value AS lo, stats_max_value AS hi, stats_null_count AS nulls FROM parquet_metadata(${sqlString(file)}) WHERE path_in_schema = 'name_nl' ORDER BY g`,
    );
    let start = 0;
    const expected = counts.map((n, g) => {
      const slice = records.slice(start, start + n);
      start += n;
      const names = slice
        .map((r) => r.name.nl)
        .filter((v): v is string => v !== null)
        .sort();
      return { g: BigInt(g), lo: names[0], hi: names.at(-1), nulls: BigInt(slice.length - names.length) };
    });
    expect(stats.rows).toEqual(expected);
    const { rows } = await duckdbQuery(
      `SELECT count(*) AS n, count(DISTINCT id) AS ids, sum(length(note)) AS noteChars, sum(serial) AS serialSum FROM read_parquet(${sqlString(file)})`,
    );
    expect(rows[0]).toEqual({
      n: 6000n,
      ids: 6000n,
      noteChars: BigInt(records.reduce((a, r) => a + r.note.length, 0)),
      serialSum: records.reduce((a, r) => a + BigInt(r.serial), 0n),
    });
  });

  it('leaves no file when destroyed mid-write', async () => {
    const dir = await tempDir();
    const sink = productSink({ path: join(dir, 'p-{part}.parquet'), maxRows: 3000, rowGroupRows: 500 });
    const failure = await failMidStream(sink, productRecords(7000), {
      until: async () => (await readdir(dir)).length >= 2,
      error: new Error('boom'),
    });
    expect(failure).toMatchObject({ message: 'boom' });
    expect(await readdir(dir)).toEqual([]);
  });

  it('validates its options: unknown types and keys are errors', () => {
    expect(() => parquetSink({ path: 'x.parquet', inferenceSample: 10 } as never)).toThrow(/inferenceSample/);
    expect(() => parquetSink({ path: 'x.parquet', columns: { id: 'text' as 'string' } })).toThrow(/columns\.id/);
    expect(() => parquetSink({ path: 'x.parquet', compresion: 'gzip' } as never)).toThrow(/compresion/);
    expect(() => parquetSink({ path: 'x.parquet', compression: 'brotli' as 'gzip' })).toThrow(/compression/);
    // zstd where Node's zlib has it (22.15+, 24); elsewhere an option error naming the Node needed.
    const zstd = () => parquetSink({ path: 'x.parquet', compression: 'zstd' });
    if (zstdCompressor()) expect(zstd).not.toThrow();
    else expect(zstd).toThrow(/compression: zstd needs Node 22\.15 or 24 or later/);
    expect(() => parquetSink({ path: 'x.parquet', columns: { a: 'string', 'a.b': 'int64' } })).toThrow(
      /"a\.b": "a" is not an object in the schema/,
    );
  });
});
