// Parquet as a record format (used by the parquet sink and by the s3 sink with
// format: parquet). The column schema is fixed when the sink is made, from the
// record contract (column-schema.ts) and `columns:`; each record is shaped into a
// row, and what the schema does not name goes into `_extra`, listed once per field
// path as a warning (so the run summary shows it) with a count at the end.
import { z } from 'zod';
import { ConfigError } from '../../errors.js';
import type { RecordSchema } from '../../core/record-schema.js';
import type { StageContext } from '../../core/stage.js';
import type { ByteDestination } from '../shared/byte-destination.js';
import {
  COLUMN_TYPE_NAMES,
  ColumnSchema,
  describeColumnValue,
  EXTRA_COLUMN,
  RecordShaper,
  withDeclaredColumns,
  type ColumnSchemaSettings,
} from '../shared/column-schema.js';
import { byteSize, pricesOption } from '../shared/option-schemas.js';
import { columnNamesOption } from '../shared/column-names.js';
import { COLUMNS_ONLY, lineageFor, lineageOption } from '../shared/lineage.js';
import {
  checkCompression,
  CompressionRatio,
  PARQUET_COMPRESSIONS,
  ParquetEncoder,
  ZstdUnavailableError,
  zstdCompressor,
} from './parquet-encoder.js';
import { type ShapedRow } from '../shared/column-types.js';
import { parquetKeyValues } from './parquet-footer.js';
import type { PartEncoder } from '../shared/part-encoder.js';
import type { EmitItem, RecordEncoding } from '../shared/record-sink.js';

export const DEFAULT_ROW_GROUP_ROWS = 10_000;
export const DEFAULT_ROW_GROUP_BYTES = 16 * 1024 * 1024;

/** Footer key/value metadata keys. */
export const SCHEMA_METADATA_KEY = 'catalog-streams.schema';
export const SCHEMA_HASH_METADATA_KEY = 'catalog-streams.schema-hash';

/** Options of the Parquet format, shared by the parquet sink and the s3 sink. */
export const parquetFormatOptions = {
  columns: z
    .record(z.string().min(1), z.enum(COLUMN_TYPE_NAMES))
    .optional()
    .describe(
      'Columns added to (or retyped in) the schema derived from the resource and the transforms, by field path: ' +
        '{cnk: string, "meta.source": string, "brands[].logo": string}; promotes fields the run summary lists in _extra. ' +
        'Types: string, int32, int64, double, boolean, timestamp, json, and lists string[], int64[], ...',
    ),
  columnNames: columnNamesOption,
  lineage: lineageOption,
  nested: z
    .enum(['flatten', 'struct', 'json'])
    .default('flatten')
    .describe(
      'Objects outside lists: flatten into parent_child columns (meta_createdAt, weightWithUnit_value), STRUCT columns, or one JSON column each',
    ),
  lists: z
    .enum(['native', 'json'])
    .default('native')
    .describe(
      'Lists of objects (brands, photos, organizations...): LIST<STRUCT> with typed members (DuckDB brands[1].name_en), or JSON text',
    ),
  timestampFields: z
    .array(z.string().min(1))
    .optional()
    .describe(
      'Integer fields (dotted paths) stored as timestamps; default: the declared timestamps and integer fields whose name ends in "At"',
    ),
  timestamps: z
    .enum(['millis', 'micros', 'raw'])
    .default('millis')
    .describe(
      'Timestamp columns: TIMESTAMP (UTC) in millisecond or microsecond precision, or raw: keep the integers as given (INT64)',
    ),
  timestampInput: z
    .enum(['seconds', 'milliseconds'])
    .default('seconds')
    .describe('Unit of integer timestamps in the records (the Catalog API sends unix seconds)'),
  prices: pricesOption,
  compression: z
    .enum(PARQUET_COMPRESSIONS)
    // Refused where options are parsed (validate, the plan, code factories), naming the Node needed.
    .refine((compression) => compression !== 'zstd' || zstdCompressor() !== undefined, {
      message: new ZstdUnavailableError().message,
    })
    .default('snappy')
    .describe(
      'Column compression: snappy, gzip, zstd (needs Node 22.15+ or 24: its zlib compresses zstd; a config error on Node 20) or none',
    ),
  rowGroupRows: z
    .number()
    .int()
    .positive()
    .default(DEFAULT_ROW_GROUP_ROWS)
    .describe(
      'A row group is written once it has this many rows (or rowGroupBytes); memory holds one row group per open file',
    ),
  rowGroupBytes: byteSize()
    .default(DEFAULT_ROW_GROUP_BYTES)
    .describe(
      'A row group is written once its values take about this much memory (number or "16MiB"); caps memory for wide rows',
    ),
};

const parquetFormatSchema = z.strictObject(parquetFormatOptions);
export type ParquetFormatOptions = z.output<typeof parquetFormatSchema>;

/** The parquet options that differ from their defaults (to reject them where they do not apply). */
export function parquetOptionsSet(options: Partial<ParquetFormatOptions>): string[] {
  const defaults = parquetFormatSchema.parse({}) as Record<string, unknown>;
  return Object.keys(parquetFormatOptions).filter((key) => {
    const value = (options as Record<string, unknown>)[key];
    return value !== undefined && value !== defaults[key];
  });
}

/** The column schema a sink with these options writes for records of `schema`, in `run` (the lineage values of its rows). */
export function columnSchemaFor(
  schema: RecordSchema,
  options: ParquetFormatOptions,
  excludedColumns: ReadonlySet<string>,
  run: { id: string; startedAt: Date } = COLUMNS_ONLY,
  /** `_extracted_at` in microseconds (a table's Iceberg layout, whose timestamps are all microseconds). */
  lineageMicros = options.timestamps === 'micros',
): ColumnSchema {
  const settings: ColumnSchemaSettings = {
    nested: options.nested,
    lists: options.lists,
    timestampFields: options.timestampFields,
    timestamps: options.timestamps,
    timestampInput: options.timestampInput,
    prices: options.prices,
    excluded: excludedColumns,
    columnNames: options.columnNames,
    lineage: lineageFor(options.lineage, run, lineageMicros),
  };
  return new ColumnSchema(withDeclaredColumns(schema, options.columns), settings);
}

/**
 * The `{hash, columns}` this toolkit wrote into the footer of the Parquet file `file`
 * (SCHEMA_HASH_METADATA_KEY, SCHEMA_METADATA_KEY); undefined for any other file, or one that
 * cannot be read (parquet-footer.ts). Never throws.
 */
export async function publishedParquetSchema(file: string): Promise<unknown> {
  const metadata = await parquetKeyValues(file);
  const hash = metadata?.get(SCHEMA_HASH_METADATA_KEY);
  const columns = metadata?.get(SCHEMA_METADATA_KEY);
  if (hash === undefined || columns === undefined) return undefined;
  try {
    return { hash, columns: JSON.parse(columns) as unknown };
  } catch {
    return undefined;
  }
}

export interface ParquetFormatSetup {
  options: ParquetFormatOptions;
  ctx: StageContext;
  /** Stage name for events and messages (`parquet`, `s3`). */
  stage: string;
  /** Column names left out of the data (Hive partition keys of the path template). */
  excludedColumns: ReadonlySet<string>;
  /** The records' schema (the contract); undefined: only `columns:` and `_extra`. */
  schema: RecordSchema | undefined;
  /** Footer metadata. */
  metadata?: Record<string, string>;
}

/**
 * The `_extra` warning. A field without a column is told to declare one; a field that has a column
 * (declared by the resource or by `columns:`) but sent a value of another shape is not: declaring it
 * again changes nothing, which is how the advice kept firing after a field was promoted (issue 37).
 */
export function extraFieldMessage(stage: string, path: string, value: unknown, declared: boolean): string {
  const kept = `kept in the ${EXTRA_COLUMN} JSON column`;
  if (!declared)
    return `${stage}: field "${path}" (${describeColumnValue(value)}) is not in the Parquet schema; ${kept} (declare it in the sink's columns: to give it a column)`;
  return (
    `${stage}: field "${path}" has a column, but this value (${describeColumnValue(value)}) does not fit its type; ${kept} ` +
    `(columns: {"${path}": json} keeps every shape in the column, or a transform can bring the value to the column's type)`
  );
}

export class ParquetFormat implements RecordEncoding<ShapedRow> {
  readonly #setup: ParquetFormatSetup;
  readonly #shaper: RecordShaper;
  readonly #metadata: Record<string, string>;
  readonly #compressionRatio = new CompressionRatio();

  constructor(setup: ParquetFormatSetup) {
    this.#setup = setup;
    const { options, ctx, stage } = setup;
    if (!setup.schema && !options.columns) {
      throw new ConfigError(
        `${stage}: the records' schema is unknown (the source names no resource and no schemaHint was given); ` +
          'declare the columns (columns: {id: string, ...}), pass schemaHint in code, or add a custom stage with columns',
        { path: 'columns' },
        { code: 'config.schema_unknown' },
      );
    }
    checkCompression(options.compression);
    const schema = columnSchemaFor(setup.schema ?? { fields: [] }, options, setup.excludedColumns, ctx.run);
    this.#shaper = new RecordShaper(schema);
    this.#shaper.onNewExtraField = (path, value, declared) => {
      ctx.events.emit('warning', {
        code: 'sink.parquet.extra',
        message: extraFieldMessage(stage, path, value, declared),
      });
    };
    this.#metadata = {
      ...setup.metadata,
      [SCHEMA_HASH_METADATA_KEY]: schema.hash,
      [SCHEMA_METADATA_KEY]: JSON.stringify(schema.describe()),
    };
    ctx.events.emit('info', {
      code: 'sink.parquet.schema',
      message: `${stage}: ${schema.columns.length} columns (schema ${schema.hash})`,
      columns: schema.describe(),
    });
  }

  get schema(): ColumnSchema {
    return this.#shaper.schema;
  }

  accept(record: Record<string, unknown>, _ordinal: number, emit: EmitItem<ShapedRow>): void | Promise<void> {
    return emit(record, this.#shaper.shape(record));
  }

  async flush(): Promise<void> {}

  createEncoder(destination: ByteDestination): PartEncoder<ShapedRow> {
    const { compression, rowGroupRows, rowGroupBytes } = this.#setup.options;
    return new ParquetEncoder(destination, this.#shaper.schema.parquetColumns(), {
      compression,
      rowGroupRows,
      rowGroupBytes,
      metadata: this.#metadata,
      compressionRatio: this.#compressionRatio,
    });
  }

  canWriteEmpty(): boolean {
    return true;
  }

  describeSchema(): unknown {
    const schema = this.#shaper.schema;
    return { hash: schema.hash, columns: schema.describe() };
  }

  readPublishedSchema(file: string): Promise<unknown> {
    return publishedParquetSchema(file);
  }

  /** Field paths kept in `_extra` during the run, with the number of records that had them. */
  get extraFields(): ReadonlyMap<string, number> {
    return this.#shaper.extraFields;
  }

  async close(): Promise<void> {
    const fields = this.#shaper.extraFields;
    if (fields.size === 0) return;
    const list = [...fields].map(([path, count]) => `${path} (${count} record${count === 1 ? '' : 's'})`).join(', ');
    this.#setup.ctx.events.emit('info', {
      code: 'sink.parquet.extra_fields',
      message: `${this.#setup.stage}: fields kept in ${EXTRA_COLUMN}: ${list}`,
      fields: Object.fromEntries(fields),
    });
  }

  async abort(): Promise<void> {}
}
