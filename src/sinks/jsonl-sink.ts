// The `jsonl` sink: records as JSON Lines in local files (or stdout), with path
// templates, Hive partitions, gzip and rotation. See path-template.ts for the
// placeholder rules and jsonl-encoding.ts for the line format.
import { z } from 'zod';
import type { SinkStream, StageContext } from '../core/stage.js';
import { defineStage } from '../core/stage.js';
import { jsonlFormat } from './jsonl-encoding.js';
import { createLocalFileSink, localPathTemplate } from './local-file-sink.js';
import { PATH_DESCRIPTION, rotationOptions } from './option-schemas.js';
import { parseStageOptions } from '../core/issues.js';
import { defaultStageContext, type PartialStageContext } from '../core/default-context.js';

export const jsonlSinkOptions = z.strictObject({
  path: z.string().min(1).describe(`${PATH_DESCRIPTION}. A path ending in .gz is gzip-compressed`),
  gzip: z.boolean().optional().describe('Compress with gzip; default: when the path ends in .gz'),
  ...rotationOptions,
});

/** Options as a caller writes them (defaults optional). */
export type JsonlSinkOptions = z.input<typeof jsonlSinkOptions>;
/** Options after validation and defaults. */
export type JsonlSinkConfig = z.output<typeof jsonlSinkOptions>;

function createJsonlSink(options: JsonlSinkConfig, ctx: StageContext): SinkStream {
  const { path, gzip = path.endsWith('.gz'), ...rotation } = options;
  const template = localPathTemplate(path, rotation, ctx);
  return createLocalFileSink({ sinkType: 'jsonl', ctx, path, rotation, format: jsonlFormat({ gzip, ctx }) }, template);
}

export const jsonlSinkStage = defineStage({
  kind: 'sink',
  type: 'jsonl',
  description: 'Writes records as JSON Lines to local files or stdout: path templates, Hive partitions, gzip, rotation by rows/bytes, atomic commit',
  options: jsonlSinkOptions,
  create: (options, ctx): SinkStream => createJsonlSink(options, ctx),
});

/**
 * A JSON Lines sink for code: `await pipeline(source, jsonlSink({path: 'out/products.jsonl.gz'}))`.
 * `ctx` is optional; run id, name and date default to a fresh code-API run.
 */
export function jsonlSink(options: JsonlSinkOptions, ctx?: PartialStageContext): SinkStream {
  return createJsonlSink(parseStageOptions('jsonl', jsonlSinkOptions, options), defaultStageContext(ctx));
}
