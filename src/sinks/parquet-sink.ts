// The `parquet` sink: records as Parquet files (hyparquet-writer behind
// parquet-encoder.ts), columns from the record contract (parquet-format.ts,
// column-schema.ts), with path templates, Hive partitions, rotation and atomic commit.
//
// Hive partition keys in the path (`status={status}`) are left out of the file's
// columns: their values live in the path, as Hive, Spark, Trino, Athena and DuckDB
// (hive_partitioning) expect.
import { z } from 'zod';
import type { SinkStream, StageContext } from '../core/stage.js';
import { defineStage } from '../core/stage.js';
import { createLocalFileSink, localPathTemplate } from './local-file-sink.js';
import { PATH_DESCRIPTION, rotationOptions } from './option-schemas.js';
import { parseStageOptions } from '../core/issues.js';
import { ParquetFormat, parquetFormatOptions, type ParquetFormatOptions } from './parquet-format.js';
import type { PathTemplate } from './path-template.js';
import { defaultStageContext, type PartialStageContext } from '../core/default-context.js';
import { recordSchemaFromZod, resourceSchemaFromContext } from '../core/zod-column-hints.js';

export const parquetSinkOptions = z.strictObject({
  path: z.string().min(1).describe(PATH_DESCRIPTION),
  ...parquetFormatOptions,
  ...rotationOptions,
});

/** Options as a caller writes them (defaults optional). */
export type ParquetSinkOptions = z.input<typeof parquetSinkOptions>;
/** Options after validation and defaults. */
export type ParquetSinkConfig = z.output<typeof parquetSinkOptions>;

/** Code-API extras that a pipeline file cannot express. */
export interface ParquetSchemaHint {
  /** A zod schema of the records (e.g. a resource schema): the columns and their types. */
  schemaHint?: z.ZodType;
}

/**
 * The Parquet format for a sink writing through `template`. The records' schema: an
 * explicit zod schema, else the one the runner derived through the transforms
 * (ctx.services.recordSchema), else the source's resource schema.
 */
export function parquetFormatFor(
  options: ParquetFormatOptions,
  ctx: StageContext,
  stage: string,
  template: PathTemplate | undefined,
  schemaHint?: z.ZodType,
): ParquetFormat {
  const derived = ctx.services.recordSchema;
  const zodSchema = schemaHint ?? (derived ? undefined : resourceSchemaFromContext(ctx));
  const schema = zodSchema ? recordSchemaFromZod(zodSchema) : derived;
  return new ParquetFormat({
    options,
    ctx,
    stage,
    schema,
    excludedColumns: new Set(template?.fields.map((f) => f.key) ?? []),
    metadata: { 'catalog-streams.run': ctx.run.id, 'catalog-streams.name': ctx.run.name },
  });
}

function createParquetSink(options: ParquetSinkConfig, ctx: StageContext, schemaHint?: z.ZodType): SinkStream {
  const { path, maxRows, maxBytes, maxOpenPartitions, ...formatOptions } = options;
  const rotation = { maxRows, maxBytes, maxOpenPartitions };
  const template = localPathTemplate(path, rotation, ctx);
  const format = parquetFormatFor(formatOptions, ctx, 'parquet', template, schemaHint);
  return createLocalFileSink({ sinkType: 'parquet', ctx, path, rotation, format }, template);
}

export const parquetSinkStage = defineStage({
  kind: 'sink',
  type: 'parquet',
  description:
    'Writes records as Parquet files (snappy, row groups, statistics): columns from the resource and the transforms, LIST<STRUCT>, TIMESTAMP, _extra, Hive partitions, rotation, atomic commit',
  options: parquetSinkOptions,
  create: (options, ctx): SinkStream => createParquetSink(options, ctx),
});

/**
 * A Parquet sink for code: `await pipeline(source, parquetSink({path: 'out/products.parquet'}))`.
 * `schemaHint` (a zod schema of the records) types the columns up front.
 */
export function parquetSink(options: ParquetSinkOptions & ParquetSchemaHint, ctx?: PartialStageContext): SinkStream {
  const { schemaHint, ...rest } = options;
  const config = parseStageOptions('parquet', parquetSinkOptions, rest);
  return createParquetSink(config, defaultStageContext(ctx), schemaHint);
}
