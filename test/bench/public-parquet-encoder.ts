// The Parquet encoder written with hyparquet-writer's public API only (`ParquetWriter` with
// `columnData`, its `finish()`), to measure our encoder against (test/bench/encoder-vs-public.ts
// and the bench's `writers` scenario). It takes the same shaped rows as ParquetEncoder,
// the same schema (parquetSchema), row groups, statistics choices and JSON-as-UTF-8 columns, so
// what differs is what the public API decides for itself: it shreds each nested column again
// (its encodeNestedValues: the public API has no entry for values with their levels, so the
// ColumnShredder's output cannot reach it); its footer keeps each chunk's metadata as objects
// until finish().
import { gzipSync } from 'node:zlib';
import { ByteWriter, ParquetWriter, type SchemaElement } from 'hyparquet-writer';
import type { ByteDestination } from '../../src/sinks/shared/byte-destination.js';
import type { PartEncoder } from '../../src/sinks/shared/part-encoder.js';
import { parquetSchema, type ParquetEncoderOptions } from '../../src/sinks/parquet/parquet-encoder.js';
import { type TypedColumn, type ShapedRow, type ColumnType } from '../../src/sinks/shared/column-types.js';

const PAGE_SIZE = 1024 * 1024;

function hasJsonLeaf(type: ColumnType): boolean {
  if (type.kind === 'list') return hasJsonLeaf(type.element);
  if (type.kind === 'struct') return type.fields.some((f) => hasJsonLeaf(f.type));
  return type.kind === 'json';
}

/** A 32-bit FNV-1a key of a string's length and first and last 64 code units (as ParquetEncoder samples). */
function sampleKey(value: string): number {
  let h = 0x811c9dc5 ^ value.length;
  const n = value.length;
  const head = Math.min(n, 64);
  for (let i = 0; i < head; i++) h = Math.imul(h ^ value.charCodeAt(i), 0x01000193);
  for (let i = Math.max(head, n - 64); i < n; i++) h = Math.imul(h ^ value.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * A JSON column's text as UTF-8 views into one buffer per row group, and whether its first 1,000
 * values are nearly all distinct (then written PLAIN: `encoding` is public), as ParquetEncoder does.
 */
class Utf8Values {
  #bytes = Buffer.allocUnsafe(64 * 1024);
  #used = 0;
  #ends: number[] = [];
  #sample = new Set<number>();
  #sampledTotal = 0;
  #sampledDistinct = 0;

  push(value: unknown): void {
    if (typeof value !== 'string') return void this.#ends.push(-1);
    if (this.#ends.length < 1000) {
      this.#sampledTotal += value.length + 4;
      const key = sampleKey(value);
      if (!this.#sample.has(key)) {
        this.#sample.add(key);
        this.#sampledDistinct += value.length + 4;
      }
    }
    const most = value.length * 3;
    if (this.#used + most > this.#bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.#bytes.length * 2, this.#used + most));
      this.#bytes.copy(grown, 0, 0, this.#used);
      this.#bytes = grown;
    }
    this.#used += this.#bytes.write(value, this.#used, 'utf8');
    this.#ends.push(this.#used);
  }

  views(): Array<Uint8Array | null> {
    let start = 0;
    return this.#ends.map((end) => {
      if (end < 0) return null;
      const view = this.#bytes.subarray(start, end);
      start = end;
      return view;
    });
  }

  get distinct(): boolean {
    return this.#sampledTotal === 0 || this.#sampledDistinct / this.#sampledTotal > 0.9;
  }

  reset(): void {
    this.#used = 0;
    this.#ends = [];
    this.#sample = new Set();
    this.#sampledTotal = this.#sampledDistinct = 0;
  }
}

export class PublicApiParquetEncoder implements PartEncoder<ShapedRow> {
  rows = 0;
  readonly #dest: ByteDestination;
  readonly #columns: readonly TypedColumn[];
  readonly #options: ParquetEncoderOptions;
  readonly #bytes = new ByteWriter();
  readonly #writer: ParquetWriter;
  readonly #utf8: Array<Utf8Values | undefined>;
  readonly #statistics: boolean[];
  readonly #jsonElements: SchemaElement[] = [];
  #buffer: unknown[][];
  #bufferedRows = 0;
  #bufferedBytes = 0;

  constructor(dest: ByteDestination, columns: readonly TypedColumn[], options: ParquetEncoderOptions) {
    this.#dest = dest;
    this.#columns = columns;
    this.#options = options;
    this.#utf8 = columns.map((c) => (c.type.kind === 'json' ? new Utf8Values() : undefined));
    // As ParquetEncoder: statistics on top-level scalar columns but JSON.
    this.#statistics = columns.map((c) => !(c.type.kind === 'list' || c.type.kind === 'struct' || hasJsonLeaf(c.type)));
    this.#buffer = columns.map(() => []);
    const gzip = options.compression === 'gzip';
    this.#writer = new ParquetWriter({
      writer: this.#bytes,
      schema: parquetSchema(columns, this.#jsonElements),
      codec: gzip ? 'GZIP' : options.compression === 'none' ? 'UNCOMPRESSED' : 'SNAPPY',
      compressors: gzip ? { GZIP: (input) => gzipSync(input) } : {},
      kvMetadata: Object.entries(options.metadata ?? {}).map(([key, value]) => ({ key, value })),
      createdBy: 'catalog-streams bench (hyparquet-writer public API)',
    });
  }

  get bytes(): number {
    return this.#bytes.offset + this.#bufferedBytes;
  }

  write(row: ShapedRow): void | Promise<void> {
    const { values } = row;
    for (let c = 0; c < this.#columns.length; c++) {
      const utf8 = this.#utf8[c];
      if (utf8) utf8.push(values[c]);
      else this.#buffer[c]!.push(values[c]);
    }
    this.rows++;
    this.#bufferedRows++;
    this.#bufferedBytes += row.bytes;
    if (this.#bufferedRows >= this.#options.rowGroupRows || this.#bufferedBytes >= this.#options.rowGroupBytes)
      return this.#writeRowGroup();
  }

  #writeRowGroup(): void | Promise<void> {
    if (this.#bufferedRows === 0) return;
    void this.#writer.write({
      columnData: this.#columns.map((column, c) => ({
        name: column.name,
        data: this.#utf8[c]?.views() ?? this.#buffer[c]!,
        statistics: this.#statistics[c],
        ...(this.#utf8[c]?.distinct ? { encoding: 'PLAIN' as const } : {}),
      })),
      rowGroupSize: this.#bufferedRows,
      pageSize: PAGE_SIZE,
    });
    this.#buffer = this.#columns.map(() => []);
    for (const column of this.#utf8) column?.reset();
    this.#bufferedRows = 0;
    this.#bufferedBytes = 0;
    return this.#drain();
  }

  #drain(): void | Promise<void> {
    const writer = this.#bytes;
    if (writer.index === 0) return;
    const chunk = new Uint8Array(writer.buffer.slice(0, writer.index));
    writer.index = 0;
    return this.#dest.write(chunk);
  }

  async end(): Promise<void> {
    await this.#writeRowGroup();
    for (const element of this.#jsonElements) {
      element.converted_type = 'JSON';
      element.logical_type = { type: 'JSON' };
    }
    await this.#writer.finish();
    await this.#drain();
  }

  destroy(): void {
    this.#buffer = [];
    for (const column of this.#utf8) column?.reset();
    this.#bufferedRows = 0;
  }
}
