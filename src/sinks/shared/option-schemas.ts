// Option pieces shared by the sink schemas (jsonl, parquet, s3), so an option
// means the same thing, with the same text, wherever it appears.
import { z } from 'zod';

const UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
};

/** Parses `5242880`, `"64MiB"`, `"1.5 GB"` into bytes; undefined when it is not a size. */
export function parseByteSize(input: string | number): number | undefined {
  if (typeof input === 'number') return Number.isSafeInteger(input) && input > 0 ? input : undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([kmg]i?b|b)?\s*$/i.exec(input);
  if (!match) return undefined;
  const bytes = Math.round(Number(match[1]) * UNITS[(match[2] ?? 'b').toLowerCase()]!);
  return bytes > 0 ? bytes : undefined;
}

/** A positive byte count: a number, or a string with a unit (B, KB, MB, GB, KiB, MiB, GiB). */
export function byteSize() {
  return z.union([z.number(), z.string()]).transform((value, ctx) => {
    const bytes = parseByteSize(value);
    if (bytes === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `expected a positive byte size such as 1048576 or "64MiB", received ${JSON.stringify(value)}`,
      });
      return z.NEVER;
    }
    return bytes;
  });
}

/** Rotation and partitioning: the same three options on every sink that writes files/objects. */
export const rotationOptions = {
  maxRows: z
    .number()
    .int()
    .positive()
    .optional()
    .describe(
      'Close the current part after this many records and continue in the next {part}; needs {part} in the path/key',
    ),
  maxBytes: byteSize()
    .optional()
    .describe(
      'Close the current part once it holds this many bytes (number or "128MiB") and continue in the next {part}; needs {part}. ' +
        'Checked after each record, so a part ends within one record (plain JSONL), the compressor backlog (gzip) or one row group (Parquet) past it',
    ),
  maxOpenPartitions: z
    .number()
    .int()
    .positive()
    .default(8)
    .describe(
      'Partition outputs (paths with {field}) kept open at once; past it the least recently used one is closed and continued in a new {part} ' +
        '(or, without {part} in the path, the run fails). Each open Parquet partition buffers one row group',
    ),
};

/** The text shared by the `path` option of the local-file sinks. */
export const PATH_DESCRIPTION =
  'Output file, relative to the pipeline file\'s folder; "-" writes to stdout. Placeholders: {name} run name, {run} run id, ' +
  '{date} run start date (UTC, YYYY-MM-DD), {part} part number (00000, 00001, ...), key={field} a Hive partition taken from a record field. ' +
  'Written under a temporary name and renamed when complete';

/**
 * `gzip` of the line-based formats (jsonl, csv). The s3 sink merges the formats' options, so the
 * formats that share it declare it once, here.
 */
export function gzipOption(target: 'path' | 'key') {
  return z
    .boolean()
    .optional()
    .describe(
      target === 'path'
        ? 'Compress with gzip; default: when the path ends in .gz'
        : 'format jsonl or csv: gzip the objects; default: when the key ends in .gz',
    );
}

/** Whether a line-based output is gzip'd: the `gzip` option, else a `.gz` path or key. */
export function gzipFor(options: Record<string, unknown>, target: string): boolean {
  return (options.gzip as boolean | undefined) ?? target.endsWith('.gz');
}

/** `prices` of the formats that type columns (parquet, csv): one schema, as the s3 sink merges the formats' options. */
export const pricesOption = z
  .enum(['minor-units', 'decimal'])
  .default('minor-units')
  .describe(
    'Prices (publicPrice...): integer minor units (cents) as the API sends them (Parquet BIGINT), or decimal (Parquet DECIMAL(18,2), CSV 12.99)',
  );
