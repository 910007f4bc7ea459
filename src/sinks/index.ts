// The sinks: Writable factories registered under `jsonl`, `parquet`, `csv`, `s3` and `table`
// (for pipeline files) and the same factories as functions (for code).
import type { PartialStageContext } from '../core/default-context.js';
import type { SinkDefinition, SinkStream } from '../core/stage.js';
import type { ParquetSchemaHint } from './parquet/parquet-format.js';
import type { z } from 'zod';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';
import { localSink, type SinkCodeExtras } from './local/local-sink.js';
import { s3Sink as s3Destination } from './s3/s3-sink.js';
import { csvSinkFormat } from './csv/csv-format.js';
import { jsonlSinkFormat } from './jsonl/jsonl-format.js';
import { parquetSinkFormat } from './parquet/parquet-format.js';
import { tableSinkStage } from './table/table-sink.js';
import { mediaMirrorStage } from './media/media-mirror-sink.js';

/** The formats every destination writes, one line each (ARCHITECTURE.md "Add a format"). */
export const outputFormats = [parquetSinkFormat, jsonlSinkFormat, csvSinkFormat] as const;

/** The destinations, one line each: local files (a stage per format) and S3 (`format:` picks one). */
const jsonlLocal = localSink(jsonlSinkFormat);
const parquetLocal = localSink(parquetSinkFormat);
const csvLocal = localSink(csvSinkFormat);
const s3 = s3Destination(outputFormats);

export const sinkStages = [
  jsonlLocal.stage,
  parquetLocal.stage,
  csvLocal.stage,
  s3.stage,
  tableSinkStage,
  mediaMirrorStage,
] as SinkDefinition[];

// The code API: each sink's stage, options schema, factory and option types.
export const { stage: jsonlSinkStage, options: jsonlSinkOptions } = jsonlLocal;
export const { stage: parquetSinkStage, options: parquetSinkOptions } = parquetLocal;
export const { stage: csvSinkStage, options: csvSinkOptions } = csvLocal;
export const { stage: s3SinkStage, options: s3SinkOptions } = s3;
// Typed with the named option types so that an editor shows each option's JSDoc (generated/stage-option-docs.ts).
/** A JSON Lines sink for code: `await pipeline(source, jsonlSink({path: 'out/products.jsonl.gz'}))`. */
export const jsonlSink: (options: JsonlSinkOptions, ctx?: PartialStageContext) => SinkStream = jsonlLocal.sink;
/**
 * A Parquet sink for code: `await pipeline(productsQuery(client, {...}), validate({...}), parquetSink({path}))`.
 * Its columns come from the schema the stages piped into it declare; after a stage that declares none
 * (`map`) they are inferred from the first 1,000 records. `schemaHint` (a zod schema of the records)
 * or `columns` type them up front.
 */
export const parquetSink: (options: ParquetSinkOptions & ParquetSchemaHint, ctx?: PartialStageContext) => SinkStream =
  parquetLocal.sink;
/** A CSV sink for code: `await pipeline(source, csvSink({path: 'out/products.csv'}))`; columns from the record contract. */
export const csvSink: (options: CsvSinkOptions & SinkCodeExtras, ctx?: PartialStageContext) => SinkStream =
  csvLocal.sink;
/** An S3 sink for code: `s3Sink({format: 'parquet', bucket, key})`; credentials from the AWS SDK's chain. */
export const s3Sink: (options: S3SinkOptions & ParquetSchemaHint, ctx?: PartialStageContext) => SinkStream = s3.sink;
/** Options as a caller writes them (defaults optional). */
export type JsonlSinkOptions = WithOptionDocs<'jsonl', z.input<typeof jsonlSinkOptions>>;
/** Options after validation and defaults. */
export type JsonlSinkConfig = z.output<typeof jsonlSinkOptions>;
export type ParquetSinkOptions = WithOptionDocs<'parquet', z.input<typeof parquetSinkOptions>>;
export type ParquetSinkConfig = z.output<typeof parquetSinkOptions>;
export type CsvSinkOptions = WithOptionDocs<'csv', z.input<typeof csvSinkOptions>>;
export type CsvSinkConfig = z.output<typeof csvSinkOptions>;
export type S3SinkOptions = WithOptionDocs<'s3', z.input<typeof s3SinkOptions>>;
export type S3SinkConfig = z.output<typeof s3SinkOptions>;
export { type S3Manifest, manifestKeyPattern } from './s3/s3-sink.js';
export type { DescribedColumn, SchemaChange } from './shared/schema-change.js';
export { createS3Client } from '../storage/s3-client.js';
export type { ParquetSchemaHint } from './parquet/parquet-format.js';
export type { SinkCodeExtras } from './local/local-sink.js';
export { defineSinkFormat, type OutputFormat } from './shared/output-format.js';
export {
  tableSink,
  tableSinkOptions,
  tableSinkStage,
  type TableManifest,
  type TableSinkConfig,
  type TableSinkOptions,
  type TableVersion,
} from './table/table-sink.js';
export {
  mediaMirror,
  mediaMirrorOptions,
  mediaMirrorStage,
  MediaMirrorSink,
  type MediaMirrorConfig,
  type MediaMirrorOptions,
} from './media/media-mirror-sink.js';
export { icebergTableVersions } from './table/iceberg-versions.js';
export { COLUMN_TYPE_NAMES, EXTRA_COLUMN, type ColumnTypeName } from './shared/column-schema.js';
export { recordSchemaFromZod, type ResourceSchemas } from '../core/zod-column-hints.js';
export { HIVE_DEFAULT_PARTITION } from './shared/path-template.js';
export { stringifyJson } from './shared/json-text.js';
export type { PartialStageContext } from '../core/default-context.js';
