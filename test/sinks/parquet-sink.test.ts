import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { SinkError } from '../../src/errors.js';
import type { RunEventMap } from '../../src/events.js';
import { parquetSink, sinkStages, stringifyJson } from '../../src/sinks/index.js';
import { duckdbQuery, parquetColumnTypes, sqlString } from '../helpers/duckdb.js';
import { testContext } from '../helpers/stage-context.js';
import { productRecord, productRecords, randomBatches, tempDir, type ProductRecord } from './records.js';
import { failMidStream, waitClosed } from './stream-harness.js';

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
};

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
  return { ...r, priceSum: BigInt(r.priceSum as bigint), serialSum: BigInt(r.serialSum as bigint), atcItems: BigInt(r.atcItems as bigint) };
}

describe('parquet sink', () => {
  it('writes types, values, nulls, lists, Unicode, codes and BigInts that DuckDB reads back exactly', async () => {
    const dir = await tempDir();
    const records = [...productRecords(5000)];
    const sink = parquetSink({ path: join(dir, 'products.parquet'), rowGroupRows: 1000 });
    await pipeline(randomBatches(records, 200), sink);
    const file = join(dir, 'products.parquet');

    expect(await parquetColumnTypes(file)).toEqual(PRODUCT_TYPES);
    expect(await readAggregates(file)).toEqual(expectedAggregates(records));
    expect(sink.outputs).toEqual([{ kind: 'file', location: file, rows: 5000, bytes: (await readFile(file)).byteLength, sink: 'parquet' }]);

    const { rows } = await duckdbQuery(`SELECT * FROM read_parquet(${sqlString(file)}) WHERE id IN ('P0000000', 'P0000001', 'P0000008') ORDER BY id`);
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
    });
    expect(rows[1]).toMatchObject({ name_en: 'Δ8-THC drops 1', atcCategory: [], ean: productRecord(1).ean, vat: 5.5, serial: 2n ** 60n + 1_000_003n });
    expect(rows[2]).toMatchObject({ atcCategory: null, eanGtin13: productRecord(8).eanGtin13 });

    // Row groups of 1000 rows, snappy, with statistics.
    const meta = await duckdbQuery(
      `SELECT count(DISTINCT row_group_id) AS groups, min(compression) AS codec, max(compression) AS codec2,
              min(TRY_CAST(stats_min_value AS BIGINT)) FILTER (WHERE path_in_schema = 'publicPrice') AS priceMin,
              max(TRY_CAST(stats_max_value AS BIGINT)) FILTER (WHERE path_in_schema = 'publicPrice') AS priceMax
       FROM parquet_metadata(${sqlString(file)})`,
    );
    expect(meta.rows[0]).toEqual({ groups: 5n, codec: 'SNAPPY', codec2: 'SNAPPY', priceMin: 100n, priceMax: BigInt(Math.max(...records.map((r) => r.publicPrice))) });
  });

  it('writes a 200,000-row file that DuckDB reads with the right count, types and sums', async () => {
    const dir = await tempDir();
    const file = join(dir, 'big.parquet');
    const started = Date.now();
    const sink = parquetSink({ path: file });
    await pipeline(Readable.from(productRecords(200_000)), sink);
    const seconds = (Date.now() - started) / 1000;
    expect(await parquetColumnTypes(file)).toEqual(PRODUCT_TYPES);
    expect(await readAggregates(file)).toEqual(expectedAggregates([...productRecords(200_000)]));
    const groups = await duckdbQuery(`SELECT count(DISTINCT row_group_id) AS n FROM parquet_metadata(${sqlString(file)})`);
    expect(groups.rows[0]!.n).toBe(20n);
    expect(seconds).toBeLessThan(45);
  }, 90_000);

  it('stores timestamps in micros, or raw, and reads millisecond input', async () => {
    const dir = await tempDir();
    const records = [{ id: 'a', createdAt: 1_700_000_000_123, at: new Date('2026-01-02T03:04:05.678Z') }];
    const micros = parquetSink({ path: join(dir, 'micros.parquet'), timestamps: 'micros', timestampInput: 'milliseconds', timestampFields: ['createdAt'] });
    await pipeline(Readable.from(records), micros);
    const m = await duckdbQuery(`SELECT createdAt, epoch_us(createdAt) AS us, "at" FROM read_parquet(${sqlString(join(dir, 'micros.parquet'))})`);
    expect(m.types).toMatchObject({ createdAt: 'TIMESTAMP WITH TIME ZONE', at: 'TIMESTAMP WITH TIME ZONE' });
    expect(m.rows[0]).toEqual({ createdAt: new Date(1_700_000_000_123), us: 1_700_000_000_123_000n, at: new Date('2026-01-02T03:04:05.678Z') });

    const raw = parquetSink({ path: join(dir, 'raw.parquet'), timestamps: 'raw' });
    await pipeline(Readable.from([{ meta: { createdAt: 1_600_000_000 } }]), raw);
    const r = await duckdbQuery(`SELECT * FROM read_parquet(${sqlString(join(dir, 'raw.parquet'))})`);
    expect(r.types).toEqual({ meta_createdAt: 'BIGINT' });
    expect(r.rows).toEqual([{ meta_createdAt: 1_600_000_000n }]);
  });

  it('writes declared columns with their types (INT32, lists, JSON) and ISO/Date timestamps', async () => {
    const dir = await tempDir();
    const file = join(dir, 'declared.parquet');
    const sink = parquetSink({
      path: file,
      columns: { id: 'string', qty: 'int32', codes: 'string[]', prices: 'int64[]', 'meta.createdAt': 'timestamp', cannabisData: 'json', score: 'double' },
    });
    const records = [
      { id: 'P1', qty: 7, codes: ['0012345678905', null], prices: [1, 2n ** 62n], meta: { createdAt: '2026-01-02T03:04:05Z' }, cannabisData: { thc: 0.2, big: 2n ** 64n }, score: 1 },
      { id: 'P2', qty: null, codes: [], prices: null, meta: { createdAt: new Date(0) }, cannabisData: null, score: 2.5 },
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
    });
    expect(rows).toEqual([
      { id: 'P1', qty: 7, codes: ['0012345678905', null], prices: [1n, 2n ** 62n], meta_createdAt: new Date('2026-01-02T03:04:05Z'), cannabisData: '{"thc":0.2,"big":18446744073709551616}', score: 1 },
      { id: 'P2', qty: null, codes: [], prices: null, meta_createdAt: new Date(0), cannabisData: null, score: 2.5 },
    ]);
  });

  it('keeps nested objects as JSON text columns with nested: json', async () => {
    const dir = await tempDir();
    const file = join(dir, 'nested.parquet');
    const records = [...productRecords(3)];
    await pipeline(Readable.from(records), parquetSink({ path: file, nested: 'json' }));
    const { rows, types } = await duckdbQuery(`SELECT name, meta FROM read_parquet(${sqlString(file)})`);
    expect(types).toEqual({ name: 'VARCHAR', meta: 'VARCHAR' });
    expect(rows.map((r) => r.name)).toEqual(records.map((r) => JSON.stringify(r.name)));
    expect(rows.map((r) => r.meta)).toEqual(records.map((r) => JSON.stringify(r.meta)));
  });

  it('fails a record that breaks the inferred schema, naming column, record id and types, and leaves no file', async () => {
    const dir = await tempDir();
    const ctx = testContext();
    const invalid = events(ctx, 'invalid');
    const records: Record<string, unknown>[] = [...productRecords(300)];
    records[250] = { ...records[250], publicPrice: '12,50' };
    const sink = parquetSink({ path: join(dir, 'p.parquet'), inferenceSample: 100 }, ctx);
    const failure = pipeline(Readable.from(records), sink);
    await expect(failure).rejects.toThrow(SinkError);
    await expect(failure).rejects.toMatchObject({ code: 'sink.parquet.schema' });
    await expect(failure).rejects.toThrow(/column "publicPrice" expects int64, but record id=P0000250 has string "12,50"/);
    await waitClosed(sink);
    expect(await readdir(dir)).toEqual([]);
    expect(invalid).toEqual([expect.objectContaining({ stage: 'parquet', id: 'P0000250', action: 'fail' })]);
  });

  it('reports a new field and an integer above 2^53 that arrived as a JS number', async () => {
    const dir = await tempDir();
    const newField = parquetSink({ path: join(dir, 'a.parquet'), inferenceSample: 10 });
    const records: Record<string, unknown>[] = [...productRecords(20)];
    records[15] = { ...records[15], replacement: 'P0000001' };
    await expect(pipeline(Readable.from(records), newField)).rejects.toThrow(
      /record id=P0000015 has field "replacement" \(string "P0000001"\) that is not in the Parquet schema \(locked after 10 sampled records\)/,
    );
    const unsafe = parquetSink({ path: join(dir, 'b.parquet'), columns: { id: 'string', n: 'int64' } });
    await expect(pipeline(Readable.from([{ id: 'x', n: 2 ** 53 + 2 }]), unsafe)).rejects.toThrow(/beyond 2\^53 as a JS number/);
  });

  it('sends misfit records to the dead-letter sink, byte-exact, and writes the rest', async () => {
    const dir = await tempDir();
    const ctx = testContext({ baseDir: dir, stages: sinkStages });
    const invalid = events(ctx, 'invalid');
    const records: Record<string, unknown>[] = [...productRecords(300)];
    records[150] = { ...records[150], publicPrice: '12,50' };
    records[160] = { ...records[160], replacement: 'P0000001' };
    const sink = parquetSink(
      { path: 'p.parquet', inferenceSample: 100, onSchemaMismatch: 'dead-letter', deadLetter: { type: 'jsonl', path: 'rejected.jsonl' } },
      ctx,
    );
    await pipeline(Readable.from(records), sink);
    const { rows } = await duckdbQuery(`SELECT count(*) AS n, count(*) FILTER (WHERE id IN ('P0000150', 'P0000160')) AS bad FROM read_parquet(${sqlString(join(dir, 'p.parquet'))})`);
    expect(rows[0]).toEqual({ n: 298n, bad: 0n });
    expect(await readFile(join(dir, 'rejected.jsonl'), 'utf8')).toBe(`${stringifyJson(records[150])}\n${stringifyJson(records[160])}\n`);
    expect(invalid.map((e) => [e.id, e.action])).toEqual([
      ['P0000150', 'dead-letter'],
      ['P0000160', 'dead-letter'],
    ]);
  });

  it('ignore: writes misfit records without the misfit values and warns once per column', async () => {
    const dir = await tempDir();
    const ctx = testContext();
    const warnings = events(ctx, 'warning');
    const records: Record<string, unknown>[] = [...productRecords(300)];
    for (const i of [150, 151]) records[i] = { ...records[i], publicPrice: 'n/a', replacement: 'P1' };
    const sink = parquetSink({ path: join(dir, 'p.parquet'), inferenceSample: 100, onSchemaMismatch: 'ignore' }, ctx);
    await pipeline(Readable.from(records), sink);
    const file = sqlString(join(dir, 'p.parquet'));
    const { rows } = await duckdbQuery(`SELECT count(*) AS n, count(*) FILTER (WHERE publicPrice IS NULL) AS nulls FROM read_parquet(${file})`);
    expect(rows[0]).toEqual({ n: 300n, nulls: 2n });
    expect(Object.keys(await parquetColumnTypes(join(dir, 'p.parquet')))).not.toContain('replacement');
    const schemaWarnings = warnings.filter((w) => w.code === 'sink.parquet.schema');
    expect(schemaWarnings).toHaveLength(2);
    expect(schemaWarnings.map((w) => w.message).join('\n')).toMatch(/"publicPrice" expects int64.*written as null/);
  });

  it('types columns from a zod schema hint: doubles and null-only objects, but adds no field the records lack', async () => {
    const dir = await tempDir();
    const schemaHint = z.object({
      id: z.string(),
      vat: z.number(),
      replacement: z.string().optional(),
      qty: z.int32(),
      cannabisData: z.object({ thcPercentage: z.number().nullable(), strain: z.string().nullable() }).nullable(),
      photos: z.array(z.object({ url: z.string() })),
      meta: z.object({ createdAt: z.int(), updatedAt: z.int() }),
      name: z.record(z.string(), z.string()),
    });
    const records = Array.from({ length: 20 }, (_, i) => ({
      id: `P${i}`,
      vat: 21,
      qty: i,
      cannabisData: i === 19 ? { thcPercentage: 0.25, strain: 'Δ9' } : null,
      photos: [{ url: `u${i}` }],
      meta: { createdAt: 1_600_000_000 + i, updatedAt: 1_600_000_000 },
      name: { en: `n${i}`, fr: `f${i}` },
    }));
    const file = join(dir, 'hinted.parquet');
    await pipeline(Readable.from(records), parquetSink({ path: file, schemaHint, inferenceSample: 10 }));
    expect(await parquetColumnTypes(file)).toEqual({
      id: 'VARCHAR',
      vat: 'DOUBLE',
      qty: 'INTEGER',
      cannabisData_thcPercentage: 'DOUBLE',
      cannabisData_strain: 'VARCHAR',
      photos: 'VARCHAR',
      meta_createdAt: 'TIMESTAMP WITH TIME ZONE',
      meta_updatedAt: 'TIMESTAMP WITH TIME ZONE',
      name_en: 'VARCHAR',
      name_fr: 'VARCHAR',
    });
    const { rows } = await duckdbQuery(`SELECT cannabisData_thcPercentage AS thc, photos FROM read_parquet(${sqlString(file)}) WHERE id = 'P19'`);
    expect(rows).toEqual([{ thc: 0.25, photos: '[{"url":"u19"}]' }]);
  });

  it('stores a field that was null in the whole sample as JSON text, with a warning', async () => {
    const dir = await tempDir();
    const ctx = testContext();
    const warnings = events(ctx, 'warning');
    const records = [{ id: 'a', note: null }, { id: 'b', note: null }, { id: 'c', note: 'late' }, { id: 'd', note: { x: 1 } }];
    const file = join(dir, 'n.parquet');
    await pipeline(Readable.from(records), parquetSink({ path: file, inferenceSample: 2 }, ctx));
    const { rows } = await duckdbQuery(`SELECT note FROM read_parquet(${sqlString(file)}) ORDER BY id`);
    expect(rows.map((r) => r.note)).toEqual([null, null, '"late"', '{"x":1}']);
    expect(warnings.map((w) => w.message)).toEqual([expect.stringMatching(/column "note" was null in every sampled record; stored as JSON text/)]);
  });

  it('writes gzip and uncompressed files', async () => {
    const dir = await tempDir();
    for (const compression of ['gzip', 'none'] as const) {
      const file = join(dir, `${compression}.parquet`);
      await pipeline(Readable.from(productRecords(2000)), parquetSink({ path: file, compression }));
      const meta = await duckdbQuery(`SELECT DISTINCT compression FROM parquet_metadata(${sqlString(file)})`);
      expect(meta.rows).toEqual([{ compression: compression === 'gzip' ? 'GZIP' : 'UNCOMPRESSED' }]);
      expect(await readAggregates(file)).toEqual(expectedAggregates([...productRecords(2000)]));
    }
  });

  it('partitions Hive-style, leaving the partition column out of the files', async () => {
    const dir = await tempDir();
    const records = [...productRecords(1000)];
    const sink = parquetSink({ path: join(dir, 'products/status={status}/part-{part}.parquet') });
    await pipeline(Readable.from(records), sink);
    expect(sink.outputs).toHaveLength(4);
    const one = sink.outputs.find((o) => o.location.includes('status=active'))!.location;
    expect(Object.keys(await parquetColumnTypes(one))).not.toContain('status');
    const { rows } = await duckdbQuery(
      `SELECT status, count(*) AS n FROM read_parquet(${sqlString(join(dir, 'products/*/*.parquet'))}, hive_partitioning = true) GROUP BY status ORDER BY status`,
    );
    const expected = ['active', 'inactive', 'no_selection', 'replaced'].map((status) => ({ status, n: BigInt(records.filter((r) => r.status === status).length) }));
    expect(rows).toEqual(expected);
  });

  it('rotates by bytes into several readable parts without losing rows', async () => {
    const dir = await tempDir();
    const maxBytes = 256 * 1024;
    const sink = parquetSink({ path: join(dir, 'p-{part}.parquet'), maxBytes, rowGroupRows: 2000 });
    await pipeline(randomBatches(productRecords(40_000), 500, 3), sink);
    expect(sink.outputs.length).toBeGreaterThan(2);
    // The first part closes early (it assumes 1:1 until a row group is compressed); later parts
    // use the ratio learnt so far and land close to maxBytes.
    expect(sink.outputs[0]!.bytes).toBeLessThan(maxBytes * 1.5);
    for (const output of sink.outputs.slice(1, -1)) {
      expect(output.bytes).toBeGreaterThan(maxBytes * 0.9);
      expect(output.bytes).toBeLessThan(maxBytes * 1.25);
    }
    const { rows } = await duckdbQuery(`SELECT count(*) AS n, count(DISTINCT id) AS ids FROM read_parquet(${sqlString(join(dir, 'p-*.parquet'))})`);
    expect(rows[0]).toEqual({ n: 40_000n, ids: 40_000n });
    expect(sink.outputs.reduce((n, o) => n + o.rows, 0)).toBe(40_000);
  });

  it('writes an empty file with declared columns, and no file (with a warning) without them', async () => {
    const dir = await tempDir();
    const declared = parquetSink({ path: join(dir, 'declared.parquet'), columns: { id: 'string', n: 'int64' } });
    await pipeline(Readable.from([]), declared);
    const { rows, types } = await duckdbQuery(`SELECT * FROM read_parquet(${sqlString(join(dir, 'declared.parquet'))})`);
    expect(rows).toEqual([]);
    expect(types).toEqual({ id: 'VARCHAR', n: 'BIGINT' });

    const ctx = testContext();
    const warnings = events(ctx, 'warning');
    const inferred = parquetSink({ path: join(dir, 'inferred.parquet') }, ctx);
    await pipeline(Readable.from([]), inferred);
    expect(existsSync(join(dir, 'inferred.parquet'))).toBe(false);
    expect(inferred.outputs).toEqual([]);
    expect(warnings).toEqual([expect.objectContaining({ code: 'sink.empty' })]);
  });

  it('row groups of varying row counts (bytes-limited, larger and smaller than the last) keep every value in place', async () => {
    const dir = await tempDir();
    // Records of growing then shrinking size: the byte limit closes row groups at varying row counts.
    const records = Array.from({ length: 6000 }, (_, i) => ({ ...productRecord(i), note: 'x'.repeat(i < 3000 ? i % 700 : 20) }));
    const file = join(dir, 'varying.parquet');
    await pipeline(randomBatches(records, 300), parquetSink({ path: file, rowGroupRows: 2500, rowGroupBytes: '512KiB' }));
    const groups = await duckdbQuery(`SELECT DISTINCT row_group_id, row_group_num_rows AS n FROM parquet_metadata(${sqlString(file)}) ORDER BY row_group_id`);
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
      const names = slice.map((r) => r.name.nl).filter((v): v is string => v !== null).sort();
      return { g: BigInt(g), lo: names[0], hi: names.at(-1), nulls: BigInt(slice.length - names.length) };
    });
    expect(stats.rows).toEqual(expected);
    const { rows } = await duckdbQuery(`SELECT count(*) AS n, count(DISTINCT id) AS ids, sum(length(note)) AS noteChars, sum(serial) AS serialSum FROM read_parquet(${sqlString(file)})`);
    expect(rows[0]).toEqual({
      n: 6000n,
      ids: 6000n,
      noteChars: BigInt(records.reduce((a, r) => a + r.note.length, 0)),
      serialSum: records.reduce((a, r) => a + BigInt(r.serial), 0n),
    });
  });

  it('leaves no file when destroyed mid-write', async () => {
    const dir = await tempDir();
    const sink = parquetSink({ path: join(dir, 'p-{part}.parquet'), maxRows: 3000, rowGroupRows: 500 });
    const failure = await failMidStream(sink, productRecords(7000), {
      until: async () => (await readdir(dir)).length >= 2,
      error: new Error('boom'),
    });
    expect(failure).toMatchObject({ message: 'boom' });
    expect(await readdir(dir)).toEqual([]);
  });

  it('validates its options: dead-letter needs deadLetter, unknown types and keys are errors', () => {
    expect(() => parquetSink({ path: 'x.parquet', onSchemaMismatch: 'dead-letter' })).toThrow(/deadLetter: onSchemaMismatch: dead-letter needs a deadLetter sink/);
    expect(() => parquetSink({ path: 'x.parquet', columns: { id: 'text' as 'string' } })).toThrow(/columns\.id/);
    expect(() => parquetSink({ path: 'x.parquet', compresion: 'gzip' } as never)).toThrow(/compresion/);
    expect(() => parquetSink({ path: 'x.parquet', compression: 'zstd' as 'gzip' })).toThrow(/compression/);
    expect(() => parquetSink({ path: 'x.parquet', columns: { a: 'string', 'a.b': 'int64' } })).toThrow(/"a\.b" is inside "a"/);
  });
});
