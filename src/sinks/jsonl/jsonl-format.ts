// JSON Lines as a sink format: one record per line, gzip on request (or by the .gz extension).
import { jsonlFormat } from './jsonl-encoding.js';
import { gzipFor, gzipOption } from '../shared/option-schemas.js';
import type { RecordEncoding } from '../shared/record-sink.js';
import { defineSinkFormat } from '../shared/output-format.js';
import { lineageFor, lineageOption } from '../shared/lineage.js';

export const jsonlSinkFormat = defineSinkFormat({
  name: 'jsonl',
  title: 'JSON Lines',
  pathNote: 'A path ending in .gz is gzip-compressed',
  needsColumns: false,
  description:
    'Writes records as JSON Lines to local files or stdout: path templates, Hive partitions, gzip, rotation by rows/bytes, atomic commit',
  options: (target) => ({ gzip: gzipOption(target), lineage: lineageOption }),
  optionsSet: (options) => (options.gzip !== undefined ? ['gzip'] : []),
  misuseHint: 'Parquet compresses columns: use compression',
  contentType: (options, target) => (gzipFor(options, target) ? 'application/gzip' : 'application/x-ndjson'),
  create: (options, { ctx, target, stage }) =>
    jsonlFormat({
      gzip: gzipFor(options, target),
      ctx,
      lineage: lineageFor(options.lineage as boolean | undefined, ctx.run),
      stage,
    }) as RecordEncoding<unknown>,
});
