// The encoder writes the footer itself (row groups serialized as they are written, page
// indexes after their row group): these tests hold it against hyparquet-writer's own
// finish() byte for byte, and against DuckDB where the layout differs.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import type { ByteDestination } from '../../src/sinks/shared/byte-destination.js';
import { parquetSchema, ParquetEncoder } from '../../src/sinks/parquet/parquet-encoder.js';
import { type TypedColumn } from '../../src/sinks/shared/column-types.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { tempDir } from './records.js';

/** A destination that keeps every chunk, in random-sized writes as the encoder gives them. */
function memoryDestination(): ByteDestination & { bytesOut(): Buffer; chunkSizes(): number[] } {
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  return {
    kind: 'file',
    location: 'memory',
    get bytes() {
      return bytes;
    },
    write(chunk) {
      chunks.push(chunk);
      bytes += chunk.length;
    },
    async commit() {},
    async abort() {},
    bytesOut: () => Buffer.concat(chunks),
    chunkSizes: () => chunks.map((c) => c.length),
  };
}

const COLUMNS: TypedColumn[] = [
  { name: 'id', type: { kind: 'string' } },
  { name: 'serial', type: { kind: 'int64' } },
  { name: 'weight', type: { kind: 'double' } },
  { name: 'updatedAt', type: { kind: 'timestamp-micros' } },
  {
    name: 'brands',
    type: {
      kind: 'list',
      element: {
        kind: 'struct',
        fields: [
          { name: 'id', type: { kind: 'int32' } },
          { name: 'name', type: { kind: 'string' } },
        ],
      },
    },
  },
];

function row(i: number): unknown[] {
  return [
    `p-${String(i).padStart(6, '0')}`,
    BigInt(i) * 1_000_003n,
    i % 7 === 0 ? null : i / 8,
    BigInt(1_700_000_000_000_000 + i * 1_000_000),
    i % 5 === 0 ? null : Array.from({ length: i % 3 }, (_, k) => ({ id: k + i, name: `brand ${k} of ${i}` })),
  ];
}

describe('parquet encoder footer', () => {
  it('writes the footer byte for byte as hyparquet-writer finish() would, over 37 row groups', async () => {
    const rowsPerGroup = 113;
    const total = 37 * rowsPerGroup - 50; // the last row group is partial
    const dest = memoryDestination();
    const encoder = new ParquetEncoder(dest, COLUMNS, {
      compression: 'snappy',
      rowGroupRows: rowsPerGroup,
      rowGroupBytes: Number.MAX_SAFE_INTEGER,
      metadata: { 'catalog-streams.schema': '{"v":1}' },
    });
    for (let i = 0; i < total; i++) await encoder.write({ values: row(i), bytes: 100 });
    const beforeEnd = dest.chunkSizes().length;
    await encoder.end();

    // The reference: the same row groups given to hyparquet-writer, which keeps the footer as objects.
    const bytes = new ByteWriter();
    const writer = new ParquetWriter({
      writer: bytes,
      schema: parquetSchema(COLUMNS),
      codec: 'SNAPPY',
      statistics: true,
      kvMetadata: [{ key: 'catalog-streams.schema', value: '{"v":1}' }],
      createdBy: 'catalog-streams (hyparquet-writer 0.17.0)',
    });
    for (let start = 0; start < total; start += rowsPerGroup) {
      const n = Math.min(rowsPerGroup, total - start);
      const rows = Array.from({ length: n }, (_, k) => row(start + k));
      void writer.write({
        columnData: COLUMNS.map((column, c) => ({
          name: column.name,
          data: rows.map((r) => r[c]),
          statistics: column.type.kind !== 'list',
        })),
        rowGroupSize: n,
        pageSize: 1024 * 1024,
      });
    }
    void writer.finish();
    const expected = Buffer.from(bytes.getBytes());
    const actual = dest.bytesOut();
    expect(actual.length).toBe(expected.length);
    expect(actual.equals(expected)).toBe(true);
    // The footer reaches the destination a row group at a time, never joined in one buffer
    // (a file of a million rows has a footer of megabytes).
    const footerLength = actual.readUInt32LE(actual.length - 8);
    const footer = dest.chunkSizes().slice(beforeEnd + 1); // after the last, partial row group
    expect(footer.reduce((a, b) => a + b)).toBe(footerLength + 8);
    expect(footer.length).toBeGreaterThan(37);
    expect(Math.max(...footer)).toBeLessThan(footerLength / 10);

    const dir = await tempDir();
    const file = join(dir, 'groups.parquet');
    await writeFile(file, actual);
    const groups = await duckdbQuery(
      `SELECT count(DISTINCT row_group_id) AS groups, min(stats_min_value) AS lo, max(stats_max_value) AS hi
       FROM parquet_metadata(${sqlString(file)}) WHERE path_in_schema = 'id'`,
    );
    expect(groups.rows[0]).toEqual({ groups: 37n, lo: 'p-000000', hi: `p-${String(total - 1).padStart(6, '0')}` });
  });

  it('writes the page indexes of multi-page column chunks after their row group, and DuckDB reads every value', async () => {
    // Values of 3 KiB in row groups of 1,000 rows: about 3 MiB a chunk, so three or more 1 MiB pages each.
    const columns: TypedColumn[] = [
      { name: 'n', type: { kind: 'int64' } },
      { name: 'text', type: { kind: 'string' } },
      { name: 'doc', type: { kind: 'json' } },
    ];
    const text = (i: number) => `${i}:`.padEnd(3072, String.fromCharCode(97 + (i % 26)));
    const dest = memoryDestination();
    const encoder = new ParquetEncoder(dest, columns, {
      compression: 'none',
      rowGroupRows: 1000,
      rowGroupBytes: Number.MAX_SAFE_INTEGER,
    });
    const total = 3500;
    for (let i = 0; i < total; i++) {
      await encoder.write({
        values: [BigInt(i), text(i), JSON.stringify({ i, t: text(i).slice(0, 40) })],
        bytes: 3200,
      });
    }
    await encoder.end();
    const dir = await tempDir();
    const file = join(dir, 'pages.parquet');
    await writeFile(file, dest.bytesOut());
    const meta = await duckdbQuery(
      `SELECT count(DISTINCT row_group_id) AS groups, sum(row_group_num_rows) FILTER (WHERE path_in_schema = 'n') AS rows,
              min(total_uncompressed_size) FILTER (WHERE path_in_schema = 'text' AND row_group_num_rows = 1000) AS smallestText
       FROM parquet_metadata(${sqlString(file)})`,
    );
    expect(meta.rows[0]).toMatchObject({ groups: 4n, rows: BigInt(total) });
    expect(Number(meta.rows[0]!.smallestText)).toBeGreaterThan(2 * 1024 * 1024);
    const { rows } = await duckdbQuery(
      `SELECT count(*) AS n, sum(n) AS nSum, count(*) FILTER (WHERE text = n::VARCHAR || ':' || repeat(chr(97 + (n % 26)::INTEGER), 3072 - length(n::VARCHAR) - 1)) AS textOk,
              sum((doc->>'i')::BIGINT) AS docSum, typeof(any_value(doc)) AS docType
       FROM read_parquet(${sqlString(file)})`,
    );
    expect(rows[0]).toEqual({
      n: BigInt(total),
      nSum: BigInt((total * (total - 1)) / 2),
      textOk: BigInt(total),
      docSum: BigInt((total * (total - 1)) / 2),
      docType: 'JSON',
    });
  });
});
