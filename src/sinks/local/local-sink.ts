// Local files as a sink destination: for each registered format a sink stage of the format's
// name (`jsonl`, `parquet`) writing to a path template resolved against ctx.baseDir, or stdout
// for `-` (local-file-sink.ts: atomic temp+rename files committed together).
import { z } from 'zod';
import { defaultStageContext, type PartialStageContext } from '../../core/default-context.js';
import { parseStageOptions } from '../../core/issues.js';
import type { DocumentedInput } from '../../core/stage-factory.js';
import { defineStage, type SinkStream, type StageContext } from '../../core/stage.js';
import { createLocalFileSink, localPathTemplate } from './local-file-sink.js';
import { PATH_DESCRIPTION, rotationOptions } from '../shared/option-schemas.js';
import { sinkEncoding, type OutputFormat } from '../shared/output-format.js';
import { markStage, plannedStage } from '../../core/planned-stage.js';

/** Code-API extras a pipeline file cannot express (used by formats that type columns: parquet). */
export interface SinkCodeExtras {
  /** A zod schema of the records (e.g. a resource schema): the columns and their types. */
  schemaHint?: z.ZodType;
}

function localSinkOptions<Shape extends z.ZodRawShape>(format: OutputFormat<string, Shape>) {
  const path = z
    .string()
    .min(1)
    .describe(format.pathNote ? `${PATH_DESCRIPTION}. ${format.pathNote}` : PATH_DESCRIPTION);
  return z.strictObject({ path, ...format.options('path'), ...rotationOptions });
}

function build(
  format: OutputFormat,
  config: Record<string, unknown>,
  ctx: StageContext,
  code?: { schemaHint: z.ZodType | undefined },
): SinkStream {
  const { path, maxRows, maxBytes, maxOpenPartitions, ...formatOptions } = config as { path: string } & z.output<
    z.ZodObject<typeof rotationOptions>
  >;
  const rotation = { maxRows, maxBytes, maxOpenPartitions };
  const template = localPathTemplate(path, rotation, ctx);
  const env = { ctx, stage: format.name, target: path, template, schemaHint: code?.schemaHint };
  // Called at the sink's first record, once `sink` is set.
  const recordFormat = sinkEncoding(format, formatOptions, env, code && { sinkOf: () => sink });
  const sink = createLocalFileSink({ sinkType: format.name, ctx, path, rotation, format: recordFormat }, template);
  return sink;
}

/**
 * The local-file sink of `format`: its stage definition (registered under the format's name), its
 * options schema, and its code-API factory (`jsonlSink({path: 'out/products.jsonl.gz'})`, where
 * `ctx` is optional: run id, name and date default to a fresh code-API run).
 */
export function localSink<const Name extends string, Shape extends z.ZodRawShape>(format: OutputFormat<Name, Shape>) {
  const options = localSinkOptions(format);
  const stage = defineStage({
    kind: 'sink',
    type: format.name,
    description: format.description,
    options,
    create: (config, ctx): SinkStream => build(format, config, ctx),
    replacesAt: 'path',
  });
  const sink = (
    input: DocumentedInput<Name, z.input<typeof options>> & SinkCodeExtras,
    ctx?: PartialStageContext,
  ): SinkStream => {
    const { schemaHint, ...rest } = input;
    const parsed = parseStageOptions(format.name, options, rest);
    return markStage(
      build(format, parsed, defaultStageContext(ctx), { schemaHint }),
      plannedStage(stage, parsed, rest, 'sink'),
    );
  };
  return { stage, options, sink };
}
