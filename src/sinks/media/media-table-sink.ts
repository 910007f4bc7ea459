// The media table kept by the `table` sink (media-mirror's `table:` option; docs/media-mirror.md,
// "The media table as a table with history"): the mirror feeds its table rows, in-process, to a
// TableSink of its own once its files and state are written. One merge and one publication
// protocol for every table: the table sink's lock, staging, journal, fenced commit and clean-up,
// hive folders or Iceberg; nothing of the merge is written again here.
import { once } from 'node:events';
import path from 'node:path';
import { finished } from 'node:stream/promises';
import { z } from 'zod';
import { ConfigError } from '../../errors.js';
import type { Fence } from '../../core/lock.js';
import type { StageContext } from '../../core/stage.js';
import { parseS3Location } from '../../storage/s3-client.js';
import { TableSink, tableSinkOptions, type TableSinkConfig } from '../table/table-sink.js';
import { MEDIA_RECORD_SCHEMA } from './media-table.js';

/**
 * A row is a file, so its key is the file's URL: a media item has several files (formats, a
 * brochure), photos inside a spec-profile product carry no media id, and a replaced image is a new
 * URL whose old file stays (and keeps its row) until its grace period ends: keyed by media id and
 * format, those two rows would be one key.
 */
export const MEDIA_TABLE_KEY = 'source_url';

/** Columns every run moves for every file it sees: their change alone is not a change of the file. */
export const MEDIA_TABLE_IGNORED = ['last_seen', 'last_attempt_at', 'last_status'] as const;

export const mediaTableOption = tableSinkOptions
  .omit({ key: true, deletes: true, shard: true })
  .extend({
    path: z
      .string()
      .min(1)
      .optional()
      .describe(
        "The table's folder (relative to the pipeline file's folder) or s3://bucket/prefix; default <path>/table. Not the mirror's path itself",
      ),
    ignoreFields: z
      .array(z.string().min(1))
      .default([...MEDIA_TABLE_IGNORED])
      .describe(
        'Columns whose change alone is not a change (the snapshot keeps the earlier row); default last_seen, last_attempt_at, last_status, which every run moves; [] keeps current/ equal to media.parquet',
      ),
  })
  .describe(
    "Also keep the media table as a table with history through the table sink: snapshot/ and changes/ (format: hive) or Iceberg current/ and changes/ (format: iceberg), keyed by source_url; a file the mirror removed is a delete. Its other options are the table stage's (above), but key and deletes; path defaults to <path>/table",
  );

export type MediaTableOption = z.output<typeof mediaTableOption>;

/** The mirror's options the table inherits when it names none of its own (same bucket and endpoint). */
interface MirrorLocation {
  path: string;
  endpoint?: string | undefined;
  region?: string | undefined;
  forcePathStyle?: boolean | undefined;
}

/** The table sink's options for the media table; refuses a table in the mirror's own folder. */
export function mediaTableConfig(option: MediaTableOption, mirror: MirrorLocation, baseDir: string): TableSinkConfig {
  const tablePath = option.path ?? `${mirror.path.replace(/\/+$/, '')}/table`;
  if (sameFolder(tablePath, mirror.path, baseDir))
    throw new ConfigError(
      `media-mirror: table.path is the mirror's own folder (${mirror.path}), where the mirror's _journal/ and the table's would collide; give the table its own folder, e.g. ${mirror.path.replace(/\/+$/, '')}/table (the default)`,
      { path: 'table.path' },
    );
  return {
    ...option,
    path: tablePath,
    key: MEDIA_TABLE_KEY,
    // Deletes are the mirror's removals (after removeAfterDays, full runs only): nothing to refuse.
    deletes: { maxRatio: 1 },
    endpoint: option.endpoint ?? mirror.endpoint,
    region: option.region ?? mirror.region,
    forcePathStyle: option.forcePathStyle ?? mirror.forcePathStyle,
  };
}

function sameFolder(a: string, b: string, baseDir: string): boolean {
  const s3a = parseS3Location(a);
  const s3b = parseS3Location(b);
  if (s3a || s3b) return !!s3a && !!s3b && s3a.bucket === s3b.bucket && s3a.prefix === s3b.prefix;
  return path.resolve(baseDir, a) === path.resolve(baseDir, b);
}

/**
 * The table sink of the media table. Its records are the mirror's whole state each run, so its
 * runs are full (a key missing is a file the mirror removed) whatever the mirror's mode; its
 * commit points also assert `fence`, the mirror's locks: it publishes only while the mirror may.
 */
export function openMediaTable(config: TableSinkConfig, ctx: StageContext, fence: Fence): TableSink {
  const tableCtx: StageContext = {
    ...ctx,
    recordSchema: MEDIA_RECORD_SCHEMA,
    declaredColumns: undefined,
    recordLookup: undefined,
    mode: { incremental: false, allowDeletes: true },
    fence,
  };
  return new TableSink(config, tableCtx, { complete: true });
}

/** Writes the rows (with backpressure), ends the table and waits until it published and closed. */
export async function feedTable(table: TableSink, records: Iterable<Record<string, unknown>>): Promise<void> {
  for (const record of records) if (!table.write(record)) await once(table, 'drain');
  table.end();
  await finished(table);
}
