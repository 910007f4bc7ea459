// Parquet as a sink format (hyparquet-writer behind parquet-encoder.ts), columns from the record
// contract (parquet-encoding.ts, column-schema.ts). Hive partition keys in the path (`status={status}`)
// are left out of the file's columns: their values live in the path, as Hive, Spark, Trino, Athena
// and DuckDB (hive_partitioning) expect.
import type { z } from 'zod';
import type { StageContext } from '../../core/stage.js';
import { sinkRecordSchema } from '../../core/zod-column-hints.js';
import {
  ParquetFormat,
  parquetFormatOptions,
  parquetOptionsSet,
  type ParquetFormatOptions,
} from './parquet-encoding.js';
import type { PathTemplate } from '../shared/path-template.js';
import type { RecordEncoding } from '../shared/record-sink.js';
import { defineSinkFormat } from '../shared/output-format.js';

/** Code-API extras that a pipeline file cannot express. */
export interface ParquetSchemaHint {
  /** A zod schema of the records (e.g. a resource schema): the columns and their types. */
  schemaHint?: z.ZodType;
}

/**
 * The Parquet format for a sink writing through `template`. The records' schema: an
 * explicit zod schema, else the one the runner derived through the transforms
 * (ctx.recordSchema), else the source's resource schema.
 */
export function parquetFormatFor(
  options: ParquetFormatOptions,
  ctx: StageContext,
  stage: string,
  template: PathTemplate | undefined,
  schemaHint?: z.ZodType,
): ParquetFormat {
  const schema = sinkRecordSchema(ctx, schemaHint);
  return new ParquetFormat({
    options,
    ctx,
    stage,
    schema,
    excludedColumns: new Set(template?.fields.map((f) => f.key) ?? []),
    metadata: { 'catalog-streams.run': ctx.run.id, 'catalog-streams.name': ctx.run.name },
  });
}

export const parquetSinkFormat = defineSinkFormat({
  name: 'parquet',
  title: 'Parquet',
  needsColumns: true,
  description:
    'Writes records as Parquet files (snappy, row groups, statistics): columns from the resource and the transforms, LIST<STRUCT>, TIMESTAMP, _extra, Hive partitions, rotation, atomic commit',
  options: () => parquetFormatOptions,
  optionsSet: (options) => parquetOptionsSet(options),
  contentType: () => 'application/vnd.apache.parquet',
  create: (options, { ctx, stage, template, schemaHint }) =>
    parquetFormatFor(options as ParquetFormatOptions, ctx, stage, template, schemaHint) as RecordEncoding<unknown>,
});
