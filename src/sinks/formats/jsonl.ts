// JSON Lines as a sink format: one record per line, gzip on request (or by the .gz extension).
import { z } from 'zod';
import { jsonlFormat } from '../jsonl-encoding.js';
import type { RecordFormat } from '../record-sink.js';
import { defineSinkFormat } from '../sink-format.js';

const gzipFor = (options: Record<string, unknown>, target: string): boolean =>
  (options.gzip as boolean | undefined) ?? target.endsWith('.gz');

export const jsonlSinkFormat = defineSinkFormat({
  name: 'jsonl',
  title: 'JSON Lines',
  pathNote: 'A path ending in .gz is gzip-compressed',
  description:
    'Writes records as JSON Lines to local files or stdout: path templates, Hive partitions, gzip, rotation by rows/bytes, atomic commit',
  options: (target) => ({
    gzip: z
      .boolean()
      .optional()
      .describe(
        target === 'path'
          ? 'Compress with gzip; default: when the path ends in .gz'
          : 'format jsonl: gzip the objects; default: when the key ends in .gz',
      ),
  }),
  optionsSet: (options) => (options.gzip !== undefined ? ['gzip'] : []),
  misuseHint: 'Parquet compresses columns: use compression',
  contentType: (options, target) => (gzipFor(options, target) ? 'application/gzip' : 'application/x-ndjson'),
  create: (options, { ctx, target }) => jsonlFormat({ gzip: gzipFor(options, target), ctx }) as RecordFormat<unknown>,
});
