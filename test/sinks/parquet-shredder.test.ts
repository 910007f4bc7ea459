// The compiled shredder (src/sinks/parquet/column-shredder.ts) against the encoder it replaced
// (legacy-parquet-encoder.ts, hyparquet-writer shredding every leaf itself): for the live-shaped
// products of every sandbox profile after the bench chain's transforms, plus copies with a null,
// an empty list, a null element and null members at every nesting level, both write the same
// bytes, and DuckDB reads the same values from both files, row by row.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_PROFILES } from '../../src/sandbox/profiles.js';
import type { ByteDestination } from '../../src/sinks/shared/byte-destination.js';
import {
  ChunkCopyEncoder,
  ParquetEncoder,
  ZstdUnavailableError,
  zstdCompressor,
  type ParquetCompression,
} from '../../src/sinks/parquet/parquet-encoder.js';
import { type TypedColumn, type ShapedRow, type ColumnType } from '../../src/sinks/shared/column-types.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { chainRows } from './chain-rows.js';
import { ParquetEncoder as LegacyParquetEncoder } from './legacy-parquet-encoder.js';
import { tempDir } from './records.js';

function memoryDestination(): ByteDestination & { bytesOut(): Buffer } {
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
  };
}

type Encoder = { write(row: ShapedRow): void | Promise<void>; end(): Promise<void> };
type EncoderClass = new (
  dest: ByteDestination,
  columns: readonly TypedColumn[],
  options: { compression: 'snappy' | 'gzip' | 'none'; rowGroupRows: number; rowGroupBytes: number },
) => Encoder;

async function encode(
  Encoder: EncoderClass | typeof ParquetEncoder,
  columns: readonly TypedColumn[],
  rows: readonly ShapedRow[],
  compression: ParquetCompression = 'snappy',
): Promise<Buffer> {
  const dest = memoryDestination();
  const encoder = new (Encoder as typeof ParquetEncoder)(dest, columns, {
    compression,
    rowGroupRows: 64,
    rowGroupBytes: 4 * 1024 * 1024,
    metadata: { 'catalog-streams.test': 'shredder' },
  });
  for (const row of rows) await encoder.write(row);
  await encoder.end();
  return dest.bytesOut();
}

/** Copies of a shaped value with nulls where nested types allow them: the value itself, an empty list, null elements, null members. */
function nullVariants(type: ColumnType, value: unknown): unknown[] {
  const out: unknown[] = [null];
  if (type.kind === 'list' && Array.isArray(value)) {
    out.push([], [null], [...value, null]);
    if (value.length > 0)
      for (const inner of nullVariants(type.element, value[0])) out.push([inner, ...value.slice(1)]);
  } else if (type.kind === 'struct' && value !== null && typeof value === 'object') {
    const struct = value as Record<string, unknown>;
    out.push(Object.fromEntries(type.fields.map((f) => [f.name, null])));
    for (const f of type.fields) {
      if (f.type.kind !== 'list' && f.type.kind !== 'struct') continue;
      for (const inner of nullVariants(f.type, struct[f.name])) out.push({ ...struct, [f.name]: inner });
    }
  }
  return out;
}

/** Rows with one nested column replaced by each of its null variants (the other columns as they were). */
function withNullsEverywhere(columns: readonly TypedColumn[], rows: readonly ShapedRow[]): ShapedRow[] {
  const out: ShapedRow[] = [];
  columns.forEach((column, c) => {
    if (column.type.kind !== 'list' && column.type.kind !== 'struct') return;
    const source = rows.find((r) => Array.isArray(r.values[c]) && (r.values[c] as unknown[]).length > 1) ?? rows[0]!;
    for (const variant of nullVariants(column.type, source.values[c])) {
      const values = [...source.values];
      values[c] = variant;
      out.push({ values, bytes: source.bytes });
    }
  });
  return out;
}

/** Rows of `b` that differ from the same row of `a` (by file row number), and both row counts. */
async function compareRows(a: string, b: string): Promise<{ rowsA: bigint; rowsB: bigint; differing: bigint }> {
  const read = (file: string) => `read_parquet(${sqlString(file)}, file_row_number = true)`;
  const { rows } = await duckdbQuery(
    `SELECT (SELECT count(*) FROM ${read(a)}) AS rowsA, (SELECT count(*) FROM ${read(b)}) AS rowsB,
            (SELECT count(*) FROM ${read(a)} x FULL JOIN ${read(b)} y USING (file_row_number)
              WHERE to_json(x) IS DISTINCT FROM to_json(y)) AS differing`,
  );
  return rows[0] as { rowsA: bigint; rowsB: bigint; differing: bigint };
}

describe('the compiled shredder', () => {
  for (const profile of SANDBOX_PROFILES) {
    it(`${profile}: the same bytes as hyparquet-writer's own shredding, and DuckDB reads the same rows`, async () => {
      const dir = await tempDir(`shredder-${profile}-`);
      const chain = await chainRows(profile, 300, dir);
      expect(chain.records.length).toBeGreaterThan(250);
      // Every live shape now has its declared column, so a field no schema declares is added to a
      // few records: `_extra` is exercised on every profile.
      for (const record of chain.records.slice(0, 5) as Record<string, unknown>[])
        record.undeclaredForTest = { nested: [1, 'two'] };
      const shaped = chain.shape(chain.records);
      const rows = [...shaped, ...withNullsEverywhere(chain.columns, shaped)];
      // Every kind of nested value was exercised: lists of structs, empty lists, _extra.
      const extra = chain.columns.length - 1;
      expect(rows.some((r) => r.values[extra] !== null)).toBe(true);
      expect(chain.columns.some((c) => c.type.kind === 'list' && c.type.element.kind === 'struct')).toBe(true);

      const legacy = await encode(LegacyParquetEncoder as EncoderClass, chain.columns, rows);
      const current = await encode(ParquetEncoder, chain.columns, rows);
      expect(current.length).toBe(legacy.length);
      expect(current.equals(legacy)).toBe(true);

      const legacyFile = join(dir, 'legacy.parquet');
      const currentFile = join(dir, 'current.parquet');
      await writeFile(legacyFile, legacy);
      await writeFile(currentFile, current);
      expect(await compareRows(legacyFile, currentFile)).toEqual({
        rowsA: BigInt(rows.length),
        rowsB: BigInt(rows.length),
        differing: 0n,
      });
    });
  }

  it("a table's first-run changes file from the snapshot's chunks: the bytes of encoding the change rows", async () => {
    const dir = await tempDir('shredder-copy-');
    const chain = await chainRows('be', 300, dir);
    const columns = chain.columns;
    const rows = chain.shape(chain.records);
    const extraAt = columns.length - 1;
    const changeColumns: TypedColumn[] = [
      ...columns.slice(0, extraAt),
      { name: '_change', type: { kind: 'string' } },
      { name: '_changed_at', type: { kind: 'timestamp-millis' } },
      { name: '_run_id', type: { kind: 'string' } },
      columns[extraAt]!,
    ];
    const changedAt = 1_764_000_000_000n;
    // Row groups by count only, so the rows with three columns more fall into the same groups.
    const options = { compression: 'snappy' as const, rowGroupRows: 64, rowGroupBytes: Number.MAX_SAFE_INTEGER };
    const changesDest = memoryDestination();
    const copy = new ChunkCopyEncoder(
      changesDest,
      changeColumns,
      [
        { column: changeColumns[extraAt]!, value: 'insert' },
        { column: changeColumns[extraAt + 1]!, value: changedAt },
        { column: changeColumns[extraAt + 2]!, value: 'run-1' },
      ],
      options,
    );
    const snapshotDest = memoryDestination();
    const snapshot = new ParquetEncoder(snapshotDest, columns, { ...options, rowGroupListener: copy });
    for (const row of rows) await snapshot.write(row);
    await snapshot.end();
    expect(copy.rows).toBe(rows.length);

    const direct = memoryDestination();
    const encoder = new ParquetEncoder(direct, changeColumns, options);
    for (const row of rows) {
      const values = row.values.slice(0, extraAt);
      values.push('insert', changedAt, 'run-1', row.values[extraAt]);
      await encoder.write({ values, bytes: row.bytes });
    }
    await encoder.end();
    expect(changesDest.bytesOut().equals(direct.bytesOut())).toBe(true);
    const plain = memoryDestination();
    const alone = new ParquetEncoder(plain, columns, options);
    for (const row of rows) await alone.write(row);
    await alone.end();
    expect(snapshotDest.bytesOut().equals(plain.bytesOut())).toBe(true);

    const file = join(dir, 'changes.parquet');
    await writeFile(file, changesDest.bytesOut());
    const { rows: read } = await duckdbQuery(
      `SELECT count(*) AS n, count(*) FILTER (WHERE _change = 'insert' AND _run_id = 'run-1') AS inserts FROM read_parquet(${sqlString(file)})`,
    );
    expect(read[0]).toEqual({ n: BigInt(rows.length), inserts: BigInt(rows.length) });
  });

  // zstd comes from Node's zlib (22.15+, 24); `.ci/run` runs this file on Node 24 too.
  const zstd = zstdCompressor();
  it.skipIf(!zstd)(
    `zstd (needs Node 22.15+ or 24, this is ${process.version}): DuckDB reads the same rows as from snappy`,
    async () => {
      const dir = await tempDir('shredder-zstd-');
      const chain = await chainRows('be', 300, dir);
      const rows = chain.shape(chain.records);
      const snappyFile = join(dir, 'snappy.parquet');
      const zstdFile = join(dir, 'zstd.parquet');
      await writeFile(snappyFile, await encode(ParquetEncoder, chain.columns, rows, 'snappy'));
      await writeFile(zstdFile, await encode(ParquetEncoder, chain.columns, rows, 'zstd'));
      const codecs = await duckdbQuery(
        `SELECT DISTINCT compression FROM parquet_metadata(${sqlString(zstdFile)}) ORDER BY compression`,
      );
      expect(codecs.rows.map((r) => r.compression)).toEqual(['ZSTD']);
      expect(await compareRows(snappyFile, zstdFile)).toEqual({
        rowsA: BigInt(rows.length),
        rowsB: BigInt(rows.length),
        differing: 0n,
      });
    },
  );

  it.skipIf(zstd)(`zstd on ${process.version}, whose zlib has none: a config error naming the Node needed`, () => {
    const make = () =>
      new ParquetEncoder(memoryDestination(), [{ name: 'id', type: { kind: 'string' } }], {
        compression: 'zstd',
        rowGroupRows: 10,
        rowGroupBytes: 1024,
      });
    expect(make).toThrow(ZstdUnavailableError);
    expect(make).toThrow(/needs Node 22\.15 or 24 or later .*this is Node 20/);
  });
});
