// With column-shredder.ts, the only modules that talk to hyparquet-writer (pinned: it is 0.x,
// and this file imports its internal writeColumn, writeIndexes, writeMetadata and snappy;
// test/docs/dependencies.test.ts fails when the pin or those exports change). Everything else
// deals in the neutral column types (shared/column-types.ts), so swapping the writer means rewriting
// these files only.
//
// Streaming: rows are shredded into leaf columns until a row group is full
// (`rowGroupRows` rows or about `rowGroupBytes` of values), then each leaf is encoded
// into the byte buffer as a column chunk, and the bytes go to the destination at once
// (waiting when it applies backpressure). Only one row
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
//   depth (LIST<STRUCT<..., LIST<STRUCT>>>), shredded into leaf columns as each row arrives by
//   a walk made once per file from the columns (column-shredder.ts); each leaf's values and
//   levels go to hyparquet-writer's column-chunk writer (writeColumn) when the row group is
//   written; every column and member is OPTIONAL (nullable).
//   Our own chunk writer (removed with issue 38) saved 10 % of the bench chain's CPU against
//   hyparquet-writer's public API and 6 % against writeColumn: under the 15 % that would pay
//   for 890 lines copying a 0.x library's bytes (docs/performance.md).
// Compression: snappy (hyparquet-writer's), gzip (node:zlib), zstd (node:zlib, where
// Node has it: 22.15+ and 24; on Node 20 a config error, no native or wasm dependency), none.
// Column statistics (min/max/null count) are written for top-level scalar columns except json.
//
// Memory: json columns (nested lists and objects as JSON text) hold most of a
// product's bytes (photos, organizations, descriptions...). Their values wait
// for the row group as UTF-8 in one reusable buffer per column (Utf8Column),
// outside the JS heap, and reach writeColumn as byte views (written as
// they are, without a UTF-8 pass of their own): as JS strings a row
// group of them would be most of the heap that survives young-generation GC, and
// V8 lets the old generation grow to about four times what survives.
import * as zlib from 'node:zlib';
import { ByteWriter, type SchemaElement } from 'hyparquet-writer';
import { writeColumn } from 'hyparquet-writer/src/column.js';
import { writeIndexes } from 'hyparquet-writer/src/indexes.js';
import { snappyCompress } from 'hyparquet-writer/src/snappy.js';
import type { ColumnEncoder, PageData, PageIndexes } from 'hyparquet-writer/src/types.js';
import { writeMetadata } from 'hyparquet-writer/src/metadata.js';
import { ConfigError } from '../../errors.js';
import type { ByteDestination } from '../shared/byte-destination.js';
import type { PartEncoder } from '../shared/part-encoder.js';
import { ColumnShredder, leafPageData } from './column-shredder.js';
import type { ParquetColumn, ParquetRow, ParquetType } from './parquet-types.js';
import { DECIMAL_PRECISION, DECIMAL_SCALE } from '../shared/column-types.js';

export type ParquetCompression = 'snappy' | 'gzip' | 'zstd' | 'none';
export const PARQUET_COMPRESSIONS = ['snappy', 'gzip', 'zstd', 'none'] as const satisfies readonly ParquetCompression[];

/** The first Node releases whose zlib compresses zstd (`zlib.zstdCompressSync`). */
export const ZSTD_NODE_VERSIONS = '22.15 or 24';

/** `compression: zstd` on a Node whose zlib has no zstd. */
export class ZstdUnavailableError extends ConfigError {
  constructor(path = 'compression') {
    super(
      `compression: zstd needs Node ${ZSTD_NODE_VERSIONS} or later (its zlib compresses zstd); this is Node ${process.versions.node}. ` +
        'Run on a newer Node, or choose snappy (the default) or gzip',
      { path },
      { code: 'config.zstd_unavailable' },
    );
  }
}

type Compress = (input: Uint8Array) => Uint8Array;

/** Node's zstd compressor, where its zlib has one (Node 22.15+, 24); read at run time so Node 20 still loads this module. */
export function zstdCompressor(): Compress | undefined {
  const compress = (zlib as unknown as { zstdCompressSync?: (input: Uint8Array) => Buffer }).zstdCompressSync;
  return typeof compress === 'function' ? (input) => compress(input) : undefined;
}

/** Refuses a compression this Node cannot write (zstd before Node 22.15), when a sink is made: before any request. */
export function checkCompression(compression: ParquetCompression): void {
  if (compression === 'zstd' && !zstdCompressor()) throw new ZstdUnavailableError();
}

/** hyparquet-writer's codec name and compressors for a compression choice (snappy is built in). */
function codecOf(compression: ParquetCompression): {
  codec: ColumnEncoder['codec'];
  compressors: ColumnEncoder['compressors'];
} {
  switch (compression) {
    case 'snappy':
      return { codec: 'SNAPPY', compressors: { SNAPPY: snappyCompress } };
    case 'gzip':
      return { codec: 'GZIP', compressors: { GZIP: (input) => zlib.gzipSync(input) } };
    case 'zstd': {
      const zstd = zstdCompressor();
      if (!zstd) throw new ZstdUnavailableError();
      return { codec: 'ZSTD', compressors: { ZSTD: zstd } };
    }
    case 'none':
      return { codec: 'UNCOMPRESSED', compressors: {} };
  }
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
  /** Told of every row group as it is written (its bytes and column chunks): see ChunkCopyEncoder. */
  rowGroupListener?: RowGroupListener | undefined;
}

/** Running totals of estimated (in-memory) and encoded bytes of the row groups written. */
export class CompressionRatio {
  estimated = 0;
  encoded = 0;

  get value(): number {
    return this.estimated > 0 ? this.encoded / this.estimated : 1;
  }
}

const CREATED_BY = 'catalog-streams (hyparquet-writer 0.17.0)';
const PAGE_SIZE = 1024 * 1024;
/** The magic number at both ends of a Parquet file ("PAR1", little-endian). */
const PAR1 = 0x31524150;

type ScalarKind = Exclude<ParquetType['kind'], 'list' | 'struct'>;

function leafElement(name: string, type: ScalarKind): SchemaElement {
  const repetition_type = 'OPTIONAL';
  switch (type) {
    case 'string':
    // falls through: JSON leaves are written as UTF8 and annotated JSON when the file is finished (see annotateJson).
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

/** `element` with the Iceberg field id when there is one (a file without ids keeps its bytes). */
function withId(element: SchemaElement, fieldId: number | undefined): SchemaElement {
  return fieldId === undefined ? element : { ...element, field_id: fieldId };
}

/** Appends the elements of one column (depth first, as Parquet lists them); JSON leaves are collected in `json`. */
function appendElements(
  schema: SchemaElement[],
  name: string,
  type: ParquetType,
  json: SchemaElement[],
  fieldId: number | undefined,
): void {
  if (type.kind === 'list') {
    // The standard 3-level LIST: optional group (LIST) > repeated group list > element. Iceberg
    // ids the outer group (the column) and the element; the repeated group is structure only.
    schema.push(
      withId(
        { name, repetition_type: 'OPTIONAL', converted_type: 'LIST', logical_type: { type: 'LIST' }, num_children: 1 },
        fieldId,
      ),
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    );
    appendElements(schema, 'element', type.element, json, type.elementId);
  } else if (type.kind === 'struct') {
    schema.push(withId({ name, repetition_type: 'OPTIONAL', num_children: type.fields.length }, fieldId));
    for (const f of type.fields) appendElements(schema, f.name, f.type, json, f.fieldId);
  } else {
    const element = withId(leafElement(name, type.kind), fieldId);
    if (type.kind === 'json') json.push(element);
    schema.push(element);
  }
}

export function parquetSchema(columns: readonly ParquetColumn[], json: SchemaElement[] = []): SchemaElement[] {
  const schema: SchemaElement[] = [{ name: 'root', num_children: columns.length }];
  for (const column of columns) appendElements(schema, column.name, column.type, json, column.fieldId);
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

type RowGroup = Parameters<typeof writeMetadata>[1]['row_groups'][number];
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
  /** Each row group's bytes, deflated: repeated paths and type tags compress well, and a file of a million rows holds hundreds of row groups until its end. */
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
    // A copy of exact size: zlib's result can be a view of its whole 16 KiB output chunk.
    this.#groups.push(
      new Uint8Array(zlib.deflateRawSync(one.subarray(at, at + one.length - empty.length), { level: 1 })),
    );
  }

  /**
   * Writes the footer (thrift FileMetaData, its length) with the row groups added so far. The
   * row groups go to `dest` one at a time, inflated as they are written, never joined in `out`:
   * joined, the footer of a large file was its size three times over at the file's end (`out`
   * growing to hold it, and the copy handed to `dest`).
   */
  async writeTo(out: ByteWriter, dest: ByteDestination, fields: FooterFields): Promise<void> {
    const empty = footerBytes(fields, []);
    const at = rowGroupListAt(empty, footerBytes(fields, [NO_ROW_GROUP]));
    const start = out.offset;
    out.appendBytes(empty.subarray(0, at));
    structListHeader(out, this.#groups.length);
    let length = out.offset - start;
    await drainTo(out, dest);
    for (const deflated of this.#groups) {
      const group = zlib.inflateRawSync(deflated);
      length += group.length;
      await dest.write(group);
    }
    const tail = empty.subarray(at + 1, empty.length - 4);
    out.appendBytes(tail);
    out.appendUint32(length + tail.length);
  }
}

/** Marks JSON leaves as JSON in the footer's schema (their values are written as UTF8 byte arrays). */
function annotateJson(elements: readonly SchemaElement[]): void {
  for (const element of elements) {
    element.converted_type = 'JSON';
    element.logical_type = { type: 'JSON' };
  }
}

/** The end of a file, after its last row group: the footer, its length and `PAR1`. */
async function finishFile(
  bytes: ByteWriter,
  dest: ByteDestination,
  footer: SerializedFooter,
  schema: SchemaElement[],
  numRows: bigint,
  metadata: Readonly<Record<string, string>> | undefined,
): Promise<void> {
  await footer.writeTo(bytes, dest, {
    version: 2,
    created_by: CREATED_BY,
    schema,
    num_rows: numRows,
    key_value_metadata: Object.entries(metadata ?? {}).map(([key, value]) => ({ key, value })),
  });
  bytes.appendUint32(PAR1);
}

/** Hands what `writer` holds to the destination (a copy: the writer reuses its buffer) and empties it. */
function drainTo(writer: ByteWriter, dest: ByteDestination): void | Promise<void> {
  if (writer.index === 0) return;
  const chunk = new Uint8Array(writer.buffer.slice(0, writer.index));
  writer.index = 0;
  return dest.write(chunk);
}

/** Writes one Parquet file, a row group at a time, into a destination. */
export class ParquetEncoder implements PartEncoder<ParquetRow> {
  rows = 0;
  readonly #dest: ByteDestination;
  readonly #options: ParquetEncoderOptions;
  readonly #bytes = new ByteWriter();
  readonly #schema: SchemaElement[];
  readonly #shredder: ColumnShredder;
  /** hyparquet-writer's description of each leaf's column chunks, made once. */
  readonly #encoders: ColumnEncoder[];
  #numRows = 0n;
  /** json columns buffer their text as UTF-8 here instead of in the shredder's leaves (see the top of the file). */
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
    this.#options = options;
    this.#utf8 = columns.map((c) => (c.type.kind === 'json' ? new Utf8Column() : undefined));
    this.#noStatistics = columns.map((c) => c.type.kind === 'list' || c.type.kind === 'struct' || hasJsonLeaf(c.type));
    this.#ratio = options.compressionRatio ?? new CompressionRatio();
    this.#schema = parquetSchema(columns, this.#jsonElements);
    this.#footer = new SerializedFooter(this.#schema);
    const utf8Columns = new Set(columns.flatMap((_, c) => (this.#utf8[c] ? [c] : [])));
    this.#shredder = new ColumnShredder(columns, this.#schema, utf8Columns);
    const { codec, compressors } = codecOf(options.compression);
    this.#encoders = this.#shredder.leaves.map((leaf) => ({
      columnName: leaf.schemaPath
        .slice(1)
        .map((e) => e.name)
        .join('.'),
      element: leaf.element,
      schemaPath: leaf.schemaPath,
      codec,
      compressors,
      stats: !this.#noStatistics[leaf.column],
      pageSize: PAGE_SIZE,
      columnIndex: false,
      offsetIndex: true,
    }));
    this.#bytes.appendUint32(PAR1);
  }

  /** Bytes written out plus the buffered row group, scaled by the compression seen so far. */
  get bytes(): number {
    return this.#bytes.offset + Math.round(this.#bufferedBytes * this.#ratio.value);
  }

  write(row: ParquetRow): void | Promise<void> {
    const { values } = row;
    const utf8 = this.#utf8;
    for (let c = 0; c < utf8.length; c++) utf8[c]?.push(values[c]);
    this.#shredder.shred(values);
    this.rows++;
    this.#bufferedRows++;
    this.#bufferedBytes += row.bytes;
    if (this.#bufferedRows >= this.#options.rowGroupRows || this.#bufferedBytes >= this.#options.rowGroupBytes) {
      return this.#writeRowGroup();
    }
  }

  /**
   * Writes the buffered rows as one row group: each leaf's shredded values and levels go to
   * hyparquet-writer's writeColumn (the chunks its ParquetWriter.write would write after
   * shredding each leaf itself), the row group's footer entry is built as it builds it.
   */
  #writeRowGroup(): void | Promise<void> {
    const rows = this.#bufferedRows;
    if (rows === 0) return;
    const writer = this.#bytes;
    const before = writer.offset;
    const startIndex = writer.index;
    const chunks: PageIndexes[] = [];
    const leaves = this.#shredder.leaves;
    for (let k = 0; k < leaves.length; k++) {
      const leaf = leaves[k]!;
      const utf8 = this.#utf8[leaf.column];
      let pageData: PageData;
      let column = this.#encoders[k]!;
      if (utf8) {
        const values = utf8.views();
        const definitionLevels = new Array<number>(values.length);
        for (let i = 0; i < values.length; i++) definitionLevels[i] = values[i] === null ? 0 : 1;
        pageData = { values, definitionLevels, repetitionLevels: [], maxDefinitionLevel: 1 };
        if (utf8.distinct) column = { ...column, encoding: 'PLAIN' };
      } else {
        pageData = leafPageData(leaf) as PageData;
      }
      chunks.push(writeColumn({ writer, column, pageData }));
    }
    let totalByteSize = 0n;
    for (const { chunk } of chunks) totalByteSize += chunk.meta_data?.total_uncompressed_size ?? 0n;
    this.#numRows += BigInt(rows);
    // Page indexes of multi-page chunks go right after their row group (readers find them by
    // the offsets in the chunk metadata); the footer entry is serialized at once (SerializedFooter).
    const group: RowGroup = {
      columns: chunks.map((c) => c.chunk),
      total_byte_size: totalByteSize,
      num_rows: BigInt(rows),
      total_compressed_size: BigInt(writer.offset - before),
    };
    const copied = this.#options.rowGroupListener?.rowGroup({
      rows,
      offset: before,
      bytes: new Uint8Array(writer.buffer.slice(startIndex, writer.index)),
      chunks: chunks.map((c) => ({ chunk: c.chunk, offsetIndex: c.offsetIndex })),
    });
    writeIndexes(writer, chunks);
    this.#footer.add(group);
    this.#ratio.estimated += this.#bufferedBytes;
    this.#ratio.encoded += writer.offset - before;
    this.#shredder.reset();
    for (const column of this.#utf8) column?.reset();
    this.#bufferedRows = 0;
    this.#bufferedBytes = 0;
    const drained = this.#drainBytes();
    if (!copied) return drained;
    return Promise.all([copied, drained]).then(() => undefined);
  }

  #drainBytes(): void | Promise<void> {
    return drainTo(this.#bytes, this.#dest);
  }

  async end(): Promise<void> {
    await this.#writeRowGroup();
    annotateJson(this.#jsonElements);
    await finishFile(this.#bytes, this.#dest, this.#footer, this.#schema, this.#numRows, this.#options.metadata);
    await this.#drainBytes();
    await this.#options.rowGroupListener?.end();
  }

  destroy(): void {
    this.#shredder.reset();
    for (const column of this.#utf8) column?.reset();
    this.#bufferedRows = 0;
  }
}

/** A row group as its encoder wrote it: its bytes, which began at `offset` in its file, and its column chunks. */
export interface EncodedRowGroup {
  rows: number;
  offset: number;
  bytes: Uint8Array;
  /** Chunk metadata and offset index per leaf, offsets in the source file. */
  chunks: ReadonlyArray<Pick<PageIndexes, 'chunk' | 'offsetIndex'>>;
}

export interface RowGroupListener {
  rowGroup(group: EncodedRowGroup): void | Promise<void>;
  /** The source file ended (after its last row group). */
  end(): Promise<void>;
}

/** A column written with one value in every row (the table's `_change`, `_changed_at`, `_run_id` of a first run). */
export interface ConstantColumn {
  column: ParquetColumn;
  value: string | bigint;
}

/**
 * Writes a Parquet file whose row groups are another file's, as that file's encoder writes them,
 * with constant columns inserted before the source's last column: the table's changes file of
 * a first run, which holds the snapshot's rows (every one an insert) and three columns more.
 * The source's column chunks are copied as bytes, their offsets moved to where they land, so
 * each row is encoded once; only the constant columns are encoded here (a dictionary of one
 * value per row group). The chunks are what encoding the same rows again would write: the same
 * values in the same row groups give the same pages.
 */
export class ChunkCopyEncoder {
  rows = 0;
  readonly #dest: ByteDestination;
  readonly #options: ParquetEncoderOptions;
  readonly #bytes = new ByteWriter();
  readonly #schema: SchemaElement[];
  readonly #footer: SerializedFooter;
  readonly #jsonElements: SchemaElement[] = [];
  /** Leaves of the source copied before the constant columns (all but the source's last column's). */
  readonly #leadingLeaves: number;
  readonly #constants: Array<{ encoder: ColumnEncoder; value: string | bigint }>;
  #numRows = 0n;

  /**
   * `columns`: the source's columns with the constant ones before its last (`constants`, in
   * that order); the source's last column must be a single leaf (`_extra`).
   */
  constructor(
    dest: ByteDestination,
    columns: readonly ParquetColumn[],
    constants: readonly ConstantColumn[],
    options: ParquetEncoderOptions,
  ) {
    this.#dest = dest;
    this.#options = options;
    this.#schema = parquetSchema(columns, this.#jsonElements);
    this.#footer = new SerializedFooter(this.#schema);
    const { codec, compressors } = codecOf(options.compression);
    const last = columns.length - 1;
    const at = last - constants.length;
    const shredder = new ColumnShredder(columns, this.#schema);
    const leaves = shredder.leaves;
    if (leaves.filter((l) => l.column === last).length !== 1 || constants.some((c, i) => columns[at + i] !== c.column))
      throw new Error('ChunkCopyEncoder: constant columns must come right before a single-leaf last column');
    this.#leadingLeaves = leaves.findIndex((l) => l.column === at);
    this.#constants = constants.map((constant, i) => {
      const leaf = leaves[this.#leadingLeaves + i]!;
      return {
        value: constant.value,
        encoder: {
          columnName: leaf.element.name,
          element: leaf.element,
          schemaPath: leaf.schemaPath,
          codec,
          compressors,
          stats: true,
          pageSize: PAGE_SIZE,
          columnIndex: false,
          offsetIndex: true,
        },
      };
    });
    this.#bytes.appendUint32(PAR1);
  }

  get bytes(): number {
    return this.#bytes.offset;
  }

  write(): never {
    throw new Error('ChunkCopyEncoder takes row groups (rowGroup), not rows');
  }

  rowGroup(group: EncodedRowGroup): void | Promise<void> {
    const writer = this.#bytes;
    const start = writer.offset;
    const lead = this.#leadingLeaves;
    const copy = (from: number, to: number): PageIndexes[] => {
      if (from >= to) return [];
      const first = Number(group.chunks[from]!.chunk.file_offset);
      const lastChunk = group.chunks[to - 1]!.chunk;
      const end = Number(lastChunk.file_offset) + Number(lastChunk.meta_data!.total_compressed_size);
      const shift = BigInt(writer.offset - first);
      writer.appendBytes(group.bytes.subarray(first - group.offset, end - group.offset));
      return group.chunks.slice(from, to).map(({ chunk, offsetIndex }) => rebased(chunk, offsetIndex, shift));
    };
    const chunks = copy(0, lead);
    const rows = group.rows;
    for (const { encoder, value } of this.#constants) {
      const values = new Array<string | bigint>(rows).fill(value);
      const definitionLevels = new Array<number>(rows).fill(1);
      chunks.push(
        writeColumn({
          writer,
          column: encoder,
          pageData: {
            values: values as PageData['values'],
            definitionLevels,
            repetitionLevels: [],
            maxDefinitionLevel: 1,
          },
        }),
      );
    }
    chunks.push(...copy(lead, group.chunks.length));
    let totalByteSize = 0n;
    for (const { chunk } of chunks) totalByteSize += chunk.meta_data?.total_uncompressed_size ?? 0n;
    this.#footer.add({
      columns: chunks.map((c) => c.chunk),
      total_byte_size: totalByteSize,
      num_rows: BigInt(rows),
      total_compressed_size: BigInt(writer.offset - start),
    });
    writeIndexes(writer, chunks);
    this.#numRows += BigInt(rows);
    this.rows += rows;
    return this.#drain();
  }

  #drain(): void | Promise<void> {
    return drainTo(this.#bytes, this.#dest);
  }

  async end(): Promise<void> {
    annotateJson(this.#jsonElements);
    await finishFile(this.#bytes, this.#dest, this.#footer, this.#schema, this.#numRows, this.#options.metadata);
    await this.#drain();
  }
}

/** A column chunk's metadata and offset index with every file offset moved by `shift` (a new object; the source's stays). */
function rebased(chunk: PageIndexes['chunk'], offsetIndex: PageIndexes['offsetIndex'], shift: bigint): PageIndexes {
  const meta = chunk.meta_data!;
  return {
    chunk: {
      ...chunk,
      file_offset: chunk.file_offset + shift,
      meta_data: {
        ...meta,
        data_page_offset: meta.data_page_offset + shift,
        ...(meta.dictionary_page_offset !== undefined
          ? { dictionary_page_offset: meta.dictionary_page_offset + shift }
          : {}),
      },
    },
    ...(offsetIndex
      ? { offsetIndex: { page_locations: offsetIndex.page_locations.map((p) => ({ ...p, offset: p.offset + shift })) } }
      : {}),
  };
}
