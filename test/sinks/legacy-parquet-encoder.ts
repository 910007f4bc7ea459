// The Parquet encoder as it was before rows were shredded by a compiled walk (commit 50fe37f,
// src/sinks/parquet/parquet-encoder.ts): hyparquet-writer's ParquetWriter shreds every leaf
// itself. Kept, unchanged but for its imports, as the reference test/sinks/parquet-shredder.test.ts
// holds the current encoder's bytes against.
// The one module that talks to hyparquet-writer (pinned: it is 0.x). Everything
// else deals in our own ParquetColumn/ParquetRow types, so swapping the writer
// means rewriting this file only.
//
// Streaming: rows are buffered column by column until a row group is full
// (`rowGroupRows` rows or about `rowGroupBytes` of values), then hyparquet's
// ParquetWriter encodes that row group into its byte buffer, and the bytes go to
// the destination at once (waiting when it applies backpressure). Only one row
// group is ever held in memory; the footer's row groups wait as thrift bytes
// (SerializedFooter) and the footer is written by end().
//
// Types as written (and as DuckDB reads them):
//   string -> BYTE_ARRAY UTF8 (VARCHAR); json -> BYTE_ARRAY JSON (JSON; without statistics)
//   int32 -> INT32 (INTEGER); int64 -> INT64 (BIGINT); double -> DOUBLE; boolean -> BOOLEAN
//   decimal -> INT64 DECIMAL(18,2) (the integer minor units as given)
//   timestamp-millis / -micros -> INT64 TIMESTAMP(isAdjustedToUTC, MILLIS/MICROS)
//                                (TIMESTAMP WITH TIME ZONE)
//   list -> standard 3-level LIST (<type>[]); struct -> group (STRUCT(...)), nested to any
//   depth (LIST<STRUCT<..., LIST<STRUCT>>>), shredded by hyparquet-writer's Dremel encoder
//   from the JS arrays/objects of the row; every column and member is OPTIONAL (nullable).
// Compression: snappy (built into hyparquet-writer), gzip (node:zlib), none.
// zstd is not offered: hyparquet-writer ships only snappy, and Node 20's zlib has no
// zstd (it needs a native/wasm dependency, or Node >= 22.15).
// Column statistics (min/max/null count) are written for top-level scalar columns except json.
//
// Memory: json columns (nested lists and objects as JSON text) hold most of a
// product's bytes (photos, organizations, descriptions...). Their values wait
// for the row group as UTF-8 in one reusable buffer per column (Utf8Column),
// outside the JS heap, and reach hyparquet-writer as byte views (which it
// writes as they are, without its own TextEncoder pass): as JS strings a row
// group of them would be most of the heap that survives young-generation GC, and
// V8 lets the old generation grow to about four times what survives.
import { gzipSync } from 'node:zlib';
import { ByteWriter, ParquetWriter, type SchemaElement } from 'hyparquet-writer';
import { writeIndexes } from 'hyparquet-writer/src/indexes.js';
import { writeMetadata } from 'hyparquet-writer/src/metadata.js';
import type { ByteDestination } from '../../src/sinks/shared/byte-destination.js';
import type { PartEncoder } from '../../src/sinks/shared/part-encoder.js';

export type ParquetCompression = 'snappy' | 'gzip' | 'none';
export const PARQUET_COMPRESSIONS = ['snappy', 'gzip', 'none'] as const satisfies readonly ParquetCompression[];

/** A column's type: a scalar, a LIST of a type, or a STRUCT of named columns. */
export type ParquetType =
  | {
      kind:
        | 'string'
        | 'json'
        | 'int32'
        | 'int64'
        | 'double'
        | 'boolean'
        | 'timestamp-millis'
        | 'timestamp-micros'
        | 'decimal';
    }
  | { kind: 'list'; element: ParquetType }
  | { kind: 'struct'; fields: readonly ParquetColumn[] };

export interface ParquetColumn {
  name: string;
  type: ParquetType;
}

/** Prices are integer minor units (cents): DECIMAL(18,2) stores the same integer with its scale. */
export const DECIMAL_PRECISION = 18;
export const DECIMAL_SCALE = 2;

/**
 * One row in physical values, in column order: strings, numbers (int32, double),
 * bigints (int64 and timestamps in their unit), booleans, arrays of those for lists,
 * null/undefined for missing. `bytes` estimates its in-memory size for row-group sizing.
 */
export interface ParquetRow {
  values: unknown[];
  bytes: number;
}

export interface ParquetEncoderOptions {
  compression: ParquetCompression;
  rowGroupRows: number;
  rowGroupBytes: number;
  /** Extra key/value metadata written into the footer. */
  metadata?: Record<string, string> | undefined;
  /**
   * Encoded bytes per estimated in-memory byte, shared by the parts of one sink so a new
   * part sizes itself (for maxBytes) with what earlier row groups compressed to.
   */
  compressionRatio?: CompressionRatio | undefined;
}

/** Running totals of estimated (in-memory) and encoded bytes of the row groups written. */
export class CompressionRatio {
  estimated = 0;
  encoded = 0;

  get value(): number {
    return this.estimated > 0 ? this.encoded / this.estimated : 1;
  }
}

/** Column arrays of a first row group are allocated for this many rows (then for the largest row group seen). */
const INITIAL_CAPACITY = 1024;
const CREATED_BY = 'catalog-streams (hyparquet-writer 0.17.0)';
const PAGE_SIZE = 1024 * 1024;

type ScalarKind = Exclude<ParquetType['kind'], 'list' | 'struct'>;

function leafElement(name: string, type: ScalarKind): SchemaElement {
  const repetition_type = 'OPTIONAL';
  switch (type) {
    case 'string':
    // falls through: JSON leaves are written as UTF8 and annotated JSON when the file is finished (see #annotateJson).
    case 'json':
      return { name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type };
    case 'int32':
      return { name, type: 'INT32', repetition_type };
    case 'int64':
      return { name, type: 'INT64', repetition_type };
    case 'decimal':
      return {
        name,
        type: 'INT64',
        converted_type: 'DECIMAL',
        scale: DECIMAL_SCALE,
        precision: DECIMAL_PRECISION,
        logical_type: { type: 'DECIMAL', scale: DECIMAL_SCALE, precision: DECIMAL_PRECISION },
        repetition_type,
      };
    case 'double':
      return { name, type: 'DOUBLE', repetition_type };
    case 'boolean':
      return { name, type: 'BOOLEAN', repetition_type };
    case 'timestamp-millis':
    case 'timestamp-micros': {
      const unit = type === 'timestamp-millis' ? 'MILLIS' : 'MICROS';
      return {
        name,
        type: 'INT64',
        converted_type: `TIMESTAMP_${unit}`,
        logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit },
        repetition_type,
      };
    }
  }
}

/** Appends the elements of one column (depth first, as Parquet lists them); JSON leaves are collected in `json`. */
function appendElements(schema: SchemaElement[], name: string, type: ParquetType, json: SchemaElement[]): void {
  if (type.kind === 'list') {
    // The standard 3-level LIST: optional group (LIST) > repeated group list > element.
    schema.push(
      { name, repetition_type: 'OPTIONAL', converted_type: 'LIST', logical_type: { type: 'LIST' }, num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    );
    appendElements(schema, 'element', type.element, json);
  } else if (type.kind === 'struct') {
    schema.push({ name, repetition_type: 'OPTIONAL', num_children: type.fields.length });
    for (const f of type.fields) appendElements(schema, f.name, f.type, json);
  } else {
    const element = leafElement(name, type.kind);
    if (type.kind === 'json') json.push(element);
    schema.push(element);
  }
}

export function parquetSchema(columns: readonly ParquetColumn[], json: SchemaElement[] = []): SchemaElement[] {
  const schema: SchemaElement[] = [{ name: 'root', num_children: columns.length }];
  for (const column of columns) appendElements(schema, column.name, column.type, json);
  return schema;
}

function hasJsonLeaf(type: ParquetType): boolean {
  if (type.kind === 'list') return hasJsonLeaf(type.element);
  if (type.kind === 'struct') return type.fields.some((f) => hasJsonLeaf(f.type));
  return type.kind === 'json';
}

/** Values of a row group sampled to tell whether a dictionary could pay (as hyparquet-writer samples). */
const DICTIONARY_SAMPLE = 1000;
/** hyparquet-writer rejects a dictionary when distinct values are more than this share of the sampled bytes. */
const DICTIONARY_REJECTION = 0.9;

/**
 * A 32-bit FNV-1a key of a string's length, first and last 64 code units. Two different
 * values sharing a key only make a column look less distinct than it is, and then
 * hyparquet-writer's own (exact) dictionary check decides: a collision costs time, never output.
 */
function sampleKey(value: string): number {
  let h = 0x811c9dc5 ^ value.length;
  const n = value.length;
  const head = Math.min(n, 64);
  for (let i = 0; i < head; i++) h = Math.imul(h ^ value.charCodeAt(i), 0x01000193);
  for (let i = Math.max(head, n - 64); i < n; i++) h = Math.imul(h ^ value.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** A column's strings as UTF-8 in one growing buffer, reused row group after row group. */
class Utf8Column {
  #bytes = Buffer.allocUnsafe(64 * 1024);
  #used = 0;
  /** End offset of each value, -1 for a missing one. */
  #ends: number[] = [];
  /** The first values of the row group, and their lengths in all and once each. */
  /** Keys (sampleKey) of the sampled values: holding the strings themselves kept ~1000 JSON texts per column alive, into the old generation. */
  #sample = new Set<number>();
  #sampled = 0;
  #sampledTotal = 0;
  #sampledDistinct = 0;

  push(value: unknown): void {
    if (typeof value !== 'string') {
      this.#ends.push(-1);
      return;
    }
    if (this.#sampled < DICTIONARY_SAMPLE) {
      this.#sampled++;
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

  /** The values as views into the buffer (valid until the next reset). */
  views(): Array<Uint8Array | null> {
    const ends = this.#ends;
    const out = new Array<Uint8Array | null>(ends.length);
    let start = 0;
    for (let i = 0; i < ends.length; i++) {
      const end = ends[i]!;
      if (end < 0) out[i] = null;
      else {
        out[i] = this.#bytes.subarray(start, end);
        start = end;
      }
    }
    return out;
  }

  /**
   * Whether hyparquet-writer would reject a dictionary for these values: it decides so from
   * a sample too, but on the bytes, hashing every sampled value in JavaScript; JSON text is
   * nearly always distinct, and deciding here on the strings skips that work.
   */
  get distinct(): boolean {
    return this.#sampledTotal === 0 || this.#sampledDistinct / this.#sampledTotal > DICTIONARY_REJECTION;
  }

  reset(): void {
    this.#used = 0;
    this.#ends = [];
    this.#sample = new Set();
    this.#sampled = this.#sampledTotal = this.#sampledDistinct = 0;
  }
}

type RowGroup = ParquetWriter['row_groups'][number];
/** The footer's fields but its row groups (and metadata_length, which hyparquet-writer computes). */
type FooterFields = Omit<Parameters<typeof writeMetadata>[1], 'row_groups' | 'metadata_length'>;

/** The compact-protocol header of a list of `count` structs (type 12; hyparquet-writer gives an empty list type 0). */
function structListHeader(out: ByteWriter, count: number): void {
  if (count === 0) out.appendUint8(0);
  else if (count < 15) out.appendUint8((count << 4) | 12);
  else {
    out.appendUint8(0xf0 | 12);
    out.appendVarInt(count);
  }
}

/** hyparquet-writer's own footer bytes (thrift, then its length), in a scratch buffer. */
function footerBytes(fields: FooterFields, rowGroups: RowGroup[]): Uint8Array {
  const scratch = new ByteWriter();
  writeMetadata(scratch, { ...fields, row_groups: rowGroups, metadata_length: 0 });
  return scratch.getBytes();
}

/** Where the size byte of the row-group list stands: the first byte in which the footers with none and with one row group differ. */
function rowGroupListAt(none: Uint8Array, one: Uint8Array): number {
  let at = 0;
  while (none[at] === one[at]) at++;
  return at;
}

const NO_ROW_GROUP: RowGroup = { columns: [], total_byte_size: 0n, num_rows: 0n };

/**
 * The footer's row groups held as the thrift bytes they are written as, not as JS objects.
 * hyparquet-writer keeps every column chunk's metadata as objects until the file ends, about
 * 1 KB per chunk, and native nested columns make hundreds of leaf chunks per row group: the
 * footer would grow with the file's rows and keep memory from staying flat. Serialized, a
 * chunk is tens of bytes. The bytes come from hyparquet-writer's own `writeMetadata`
 * (so statistics and types are converted exactly as it would): a row group's bytes are what
 * its footer holds beyond an empty footer's, at the row-group list. Byte for byte the same
 * footer as `ParquetWriter.finish()` writes (test/sinks/parquet-encoder.test.ts).
 */
class SerializedFooter {
  readonly #schema: SchemaElement[];
  readonly #groups: Uint8Array[] = [];
  #empty: Uint8Array | undefined;

  constructor(schema: SchemaElement[]) {
    this.#schema = schema;
  }

  add(group: RowGroup): void {
    const fields: FooterFields = { version: 2, schema: this.#schema, num_rows: 0n };
    const empty = (this.#empty ??= footerBytes(fields, []));
    const one = footerBytes(fields, [group]);
    const at = rowGroupListAt(empty, one) + 1;
    this.#groups.push(one.slice(at, at + one.length - empty.length));
  }

  /** Writes the footer (thrift FileMetaData, its length) with the row groups added so far. */
  write(out: ByteWriter, fields: FooterFields): void {
    const empty = footerBytes(fields, []);
    const at = rowGroupListAt(empty, footerBytes(fields, [NO_ROW_GROUP]));
    const start = out.offset;
    out.appendBytes(empty.subarray(0, at));
    structListHeader(out, this.#groups.length);
    for (const group of this.#groups) out.appendBytes(group);
    out.appendBytes(empty.subarray(at + 1, empty.length - 4));
    out.appendUint32(out.offset - start);
  }
}

/** Writes one Parquet file, a row group at a time, into a destination. */
export class ParquetEncoder implements PartEncoder<ParquetRow> {
  rows = 0;
  readonly #dest: ByteDestination;
  readonly #columns: readonly ParquetColumn[];
  readonly #options: ParquetEncoderOptions;
  readonly #bytes = new ByteWriter();
  readonly #writer: ParquetWriter;
  #buffer: unknown[][];
  /**
   * Rows the column arrays are allocated for: the largest row group so far. Pre-sized arrays
   * filled by index grow no backing stores on the way (push() left the old ones as garbage,
   * and a row group lives long enough to get them promoted to the old generation).
   */
  #capacity: number;
  /** json columns buffer their text as UTF-8 here instead of in #buffer (see the top of the file). */
  readonly #utf8: Array<Utf8Column | undefined>;
  #bufferedRows = 0;
  #bufferedBytes = 0;
  readonly #ratio: CompressionRatio;
  readonly #footer: SerializedFooter;
  /**
   * Columns without statistics: JSON leaves (min/max of JSON text orders nothing a reader filters
   * on) and nested columns (LIST/STRUCT members: readers prune on top-level columns; computing
   * them took a third of the encoding time of a product row).
   */
  readonly #noStatistics: boolean[];
  /** The schema elements of JSON leaves, annotated JSON once every row group is written. */
  readonly #jsonElements: SchemaElement[] = [];

  constructor(dest: ByteDestination, columns: readonly ParquetColumn[], options: ParquetEncoderOptions) {
    this.#dest = dest;
    this.#columns = columns;
    this.#options = options;
    this.#utf8 = columns.map((c) => (c.type.kind === 'json' ? new Utf8Column() : undefined));
    this.#noStatistics = columns.map((c) => c.type.kind === 'list' || c.type.kind === 'struct' || hasJsonLeaf(c.type));
    this.#capacity = Math.min(options.rowGroupRows, INITIAL_CAPACITY);
    this.#buffer = this.#newBuffers();
    this.#ratio = options.compressionRatio ?? new CompressionRatio();
    const schema = parquetSchema(columns, this.#jsonElements);
    this.#footer = new SerializedFooter(schema);
    this.#writer = new ParquetWriter({
      writer: this.#bytes,
      schema,
      codec: options.compression === 'gzip' ? 'GZIP' : options.compression === 'none' ? 'UNCOMPRESSED' : 'SNAPPY',
      compressors: options.compression === 'gzip' ? { GZIP: (input) => gzipSync(input) } : {},
      statistics: true,
      kvMetadata: Object.entries(options.metadata ?? {}).map(([key, value]) => ({ key, value })),
      createdBy: CREATED_BY,
    });
  }

  /** Bytes written out plus the buffered row group, scaled by the compression seen so far. */
  get bytes(): number {
    return this.#bytes.offset + Math.round(this.#bufferedBytes * this.#ratio.value);
  }

  #newBuffers(): unknown[][] {
    return this.#columns.map((_, c) => (this.#utf8[c] ? [] : new Array<unknown>(this.#capacity)));
  }

  write(row: ParquetRow): void | Promise<void> {
    const { values } = row;
    const utf8 = this.#utf8;
    const at = this.#bufferedRows;
    for (let c = 0; c < this.#buffer.length; c++) {
      const column = utf8[c];
      if (column) column.push(values[c]);
      else this.#buffer[c]![at] = values[c];
    }
    this.rows++;
    this.#bufferedRows++;
    this.#bufferedBytes += row.bytes;
    if (this.#bufferedRows >= this.#options.rowGroupRows || this.#bufferedBytes >= this.#options.rowGroupBytes) {
      return this.#writeRowGroup();
    }
  }

  #writeRowGroup(): void | Promise<void> {
    const rows = this.#bufferedRows;
    if (rows === 0) return;
    // Trim to the rows written (in place), or take what index writes grew past the capacity.
    for (let c = 0; c < this.#buffer.length; c++) {
      const data = this.#buffer[c]!;
      if (!this.#utf8[c] && data.length !== rows) data.length = rows;
    }
    this.#capacity = Math.max(this.#capacity, rows);
    const before = this.#bytes.offset;
    void this.#writer.write({
      columnData: this.#columns.map((column, c) => ({
        name: column.name,
        data: this.#utf8[c]?.views() ?? this.#buffer[c]!,
        statistics: !this.#noStatistics[c],
        ...(this.#utf8[c]?.distinct ? { encoding: 'PLAIN' as const } : {}),
      })),
      rowGroupSize: this.#bufferedRows,
      pageSize: PAGE_SIZE,
    });
    this.#closeRowGroup();
    this.#ratio.estimated += this.#bufferedBytes;
    this.#ratio.encoded += this.#bytes.offset - before;
    this.#buffer = this.#newBuffers();
    for (const column of this.#utf8) column?.reset();
    this.#bufferedRows = 0;
    this.#bufferedBytes = 0;
    return this.#drainBytes();
  }

  /**
   * Moves what hyparquet-writer keeps of the row group just written out of its arrays: the
   * page indexes of its multi-page column chunks are written now, after the row group (readers
   * find them by the offsets in the chunk metadata, wherever they stand), and its metadata is
   * serialized into the footer (SerializedFooter).
   */
  #closeRowGroup(): void {
    const writer = this.#writer;
    writeIndexes(this.#bytes, writer.pendingIndexes);
    writer.pendingIndexes = [];
    for (const group of writer.row_groups) this.#footer.add(group);
    writer.row_groups = [];
  }

  /** Hands the encoded bytes to the destination (a copy: the writer reuses its buffer). */
  #drainBytes(): void | Promise<void> {
    const writer = this.#bytes;
    if (writer.index === 0) return;
    const chunk = new Uint8Array(writer.buffer.slice(0, writer.index));
    writer.index = 0;
    return this.#dest.write(chunk);
  }

  async end(): Promise<void> {
    await this.#writeRowGroup();
    this.#annotateJson();
    const writer = this.#writer;
    this.#footer.write(this.#bytes, {
      version: 2,
      created_by: writer.createdBy,
      schema: writer.schema,
      num_rows: writer.num_rows,
      key_value_metadata: writer.kvMetadata,
    });
    this.#bytes.appendUint32(0x31524150); // PAR1
    await this.#drainBytes();
  }

  /**
   * JSON leaves are encoded as UTF8 byte arrays (the same bytes: hyparquet-writer would
   * JSON.stringify the values of a JSON-annotated column once more) and get their JSON
   * annotation in the footer, which is written from this schema.
   */
  #annotateJson(): void {
    for (const element of this.#jsonElements) {
      element.converted_type = 'JSON';
      element.logical_type = { type: 'JSON' };
    }
  }

  destroy(): void {
    this.#buffer = [];
    for (const column of this.#utf8) column?.reset();
    this.#bufferedRows = 0;
  }
}
