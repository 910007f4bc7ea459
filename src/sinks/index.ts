// The sinks: Writable factories registered under `jsonl`, `parquet` and `s3`
// (for pipeline files) and the same factories as functions (for code).
import type { SinkDefinition } from '../core/stage.js';
import { jsonlSinkStage } from './jsonl-sink.js';
import { parquetSinkStage } from './parquet-sink.js';
import { s3SinkStage } from './s3-sink.js';

export const sinkStages = [jsonlSinkStage, parquetSinkStage, s3SinkStage] as SinkDefinition[];

export { jsonlSink, jsonlSinkOptions, jsonlSinkStage, type JsonlSinkConfig, type JsonlSinkOptions } from './jsonl-sink.js';
export { parquetSink, parquetSinkOptions, parquetSinkStage, type ParquetSchemaHint, type ParquetSinkConfig, type ParquetSinkOptions } from './parquet-sink.js';
export { createS3Client, s3Sink, s3SinkOptions, s3SinkStage, type S3Manifest, type S3SinkConfig, type S3SinkOptions } from './s3-sink.js';
export { COLUMN_TYPE_NAMES, EXTRA_COLUMN, type ColumnTypeName } from './column-schema.js';
export { recordSchemaFromZod, RESOURCE_SCHEMAS_SERVICE, type ResourceSchemas } from '../core/zod-column-hints.js';
export { HIVE_DEFAULT_PARTITION } from './path-template.js';
export { stringifyJson } from './jsonl-encoding.js';
export type { PartialStageContext } from '../core/default-context.js';
