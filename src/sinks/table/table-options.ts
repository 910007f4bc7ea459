// The table sink's options: the zod schema a pipeline file's `table:` block is parsed by, and the
// option combinations checked before the sink exists (ARCHITECTURE.md, "The table sink").
import { z } from 'zod';
import { ConfigError } from '../../errors.js';
import type { WithOptionDocs } from '../../generated/stage-option-docs.js';
import { byteSize } from '../shared/option-schemas.js';
import { parquetFormatOptions } from '../parquet/parquet-encoding.js';
import { icebergCatalogOption } from './iceberg-catalog-option.js';

/**
 * Row-group budget of the snapshot and changes files: half the Parquet sinks' default. What the
 * merge keeps alive is mostly the open row group, and V8 lets the heap grow to about four times
 * what survives a collection; 8 MiB groups make files ~7 % larger than 16 MiB ones (more
 * dictionary pages and chunk headers).
 */
export const TABLE_ROW_GROUP_BYTES = 8 * 1024 * 1024;
export const CHANGE_COLUMNS = ['_change', '_changed_at', '_run_id'] as const;

export const tableSinkOptions = z.strictObject({
  path: z
    .string()
    .min(1)
    .describe(
      "The table's folder (relative to the pipeline file's folder) or s3://bucket/prefix; snapshot/, changes/ and _table.json (format: hive) or the Iceberg tables current/ and changes/ (format: iceberg) go under it",
    ),
  format: z
    .enum(['hive', 'iceberg'])
    .default('hive')
    .describe(
      'hive: snapshot/ and changes/ folders of Parquet by dt= and _table.json, the commit point; iceberg: two Iceberg format-version 2 tables, current/ (one row per key, a snapshot per run) and changes/ (append-only change rows), that Athena, Trino, Spark, Snowflake, BigQuery, DuckDB and S3 Tables open',
    ),
  keepSnapshots: z
    .number()
    .int()
    .min(1)
    .default(30)
    .describe(
      'format: iceberg: the snapshots each table keeps (time travel reaches back this many runs), plus the one before the newest run until the next run commits (what a repair or a rollback needs); files that only older snapshots reference are removed',
    ),
  keepSnapshotsDays: z
    .number()
    .positive()
    .optional()
    .describe(
      "format: iceberg: snapshots older than this many days expire too, even within keepSnapshots (by count and by age: whichever keeps fewer); the newest run's snapshot always stays. Default: no age limit",
    ),
  fileRows: z
    .number()
    .int()
    .positive()
    .optional()
    .describe(
      'format: iceberg: rows per data file a run writes into current/ (its changed rows, with position deletes for the rows they replace; a rewrite; a full refresh). Default 1000, or maxRows if smaller',
    ),
  catalog: icebergCatalogOption.optional(),
  shard: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'letters, digits, _ and - (at most 64), starting with a letter or digit')
    .optional()
    .describe(
      "format: iceberg: this run's part of a table several processes commit (a region of a region-keyed table, one per process or pod): it replaces only the files of current/ it wrote under this shard, appends to changes/, keeps its own merge state and lock, and rebases on another shard's commit when it loses the race. Every run of the table sets one (docs/iceberg.md, Several processes, one table)",
    ),
  key: z
    .string()
    .min(1)
    .default('id')
    .describe(
      'The field (dotted path) that identifies a record, or several comma-separated (region,id: a fan-out over regions, whose product ids are per region); one snapshot row per key. Keep id for products: a code (eanGtin14) can be on several products, and records of another id sharing a key are warned about (table.shared_key) and counted',
    ),
  deletes: z
    .strictObject({
      maxRatio: z
        .number()
        .min(0)
        .max(1)
        .default(0.05)
        .describe(
          'Full runs: refuse (exit 1, nothing published) to delete more than this share of the previous snapshot (counting only keys the API no longer returns), unless run with --allow-deletes',
        ),
    })
    .default({ maxRatio: 0.05 })
    .describe(
      'Deletes inferred by full runs: keys of the previous snapshot missing from the extract that the API, asked by id, no longer returns',
    ),
  ignoreFields: z
    .array(z.string().min(1))
    .default([])
    .describe(
      'Columns (as written, e.g. meta_updatedAt, or meta_updated_at with columnNames: snake_case) whose change alone is not a change: the snapshot keeps the earlier row',
    ),
  maxRows: z
    .number()
    .int()
    .positive()
    .default(1_000_000)
    .describe('Rows per snapshot or changes file; past it the next part-NNNNN begins'),
  sortBufferBytes: byteSize()
    .default(32 * 1024 * 1024)
    .describe(
      'Incoming records held (serialized) before a sorted run is spilled to the temp folder; bounds the merge memory',
    ),
  ...parquetFormatOptions,
  timestamps: z
    .enum(['millis', 'micros', 'raw'])
    .optional()
    .describe(
      'Timestamp columns: TIMESTAMP (UTC) in millisecond or microsecond precision, or raw: keep the integers as given (INT64); default millis, and micros with format: iceberg (Iceberg timestamps are microseconds)',
    ),
  rowGroupBytes: byteSize()
    .default(TABLE_ROW_GROUP_BYTES)
    .describe(
      'A row group is written once its values take about this much memory (number or "8MiB"); default 8 MiB, half a Parquet sink\'s: the merge\'s memory is mostly its open row groups',
    ),
  endpoint: z.url().optional().describe('s3:// paths: S3-compatible endpoint URL; default: env S3_ENDPOINT, else AWS'),
  region: z
    .string()
    .min(1)
    .optional()
    .describe('s3:// paths: region; default: the AWS SDK chain, or us-east-1 with a custom endpoint'),
  forcePathStyle: z.boolean().optional().describe('s3:// paths: path-style URLs; default: true with a custom endpoint'),
  checksums: z
    .enum(['when-supported', 'when-required'])
    .optional()
    .describe('s3:// paths: checksum mode; default: when-required with a custom endpoint'),
  maxAttempts: z.number().int().min(1).max(10).default(3).describe('s3:// paths: attempts per S3 request'),
});

export type TableSinkOptions = WithOptionDocs<'table', z.input<typeof tableSinkOptions>>;
export type TableSinkConfig = z.output<typeof tableSinkOptions>;

export type ResolvedConfig = TableSinkConfig & { timestamps: 'millis' | 'micros' | 'raw' };

/** Rows per data file of an Iceberg current/ table (fileRows). */
export const DEFAULT_FILE_ROWS = 1000;

export function currentFileRows(config: TableSinkConfig): number {
  return config.fileRows ?? Math.min(DEFAULT_FILE_ROWS, config.maxRows);
}

/** The timestamps option resolved: Iceberg has only microsecond timestamps. */
export function withTimestamps(config: TableSinkConfig): ResolvedConfig {
  if (config.catalog && config.format !== 'iceberg') {
    throw new ConfigError('table: catalog: is an option of format: iceberg; add format: iceberg or remove catalog:', {
      path: 'catalog',
    });
  }
  for (const option of ['fileRows', 'keepSnapshotsDays'] as const)
    if (config[option] !== undefined && config.format !== 'iceberg')
      throw new ConfigError(
        `table: ${option}: is an option of format: iceberg; add format: iceberg or remove ${option}:`,
        {
          path: option,
        },
      );
  if (config.shard !== undefined && config.format !== 'iceberg') {
    // The hive layout has one commit point (_table.json) that every run rewrites whole: two
    // processes would drop each other's versions. Iceberg commits are conditional and rebase.
    throw new ConfigError(
      `table: shard: is for several processes committing one table, which format: hive cannot do safely (_table.json is rewritten whole by each run); add format: iceberg, whose commits rebase on each other, or run the shards as one fan-out (connection.regions) into one hive table`,
      { path: 'shard' },
    );
  }
  if (config.format === 'iceberg' && config.timestamps === 'millis') {
    throw new ConfigError(
      'table: format: iceberg writes timestamps in microseconds (Iceberg has no millisecond timestamp); remove timestamps: millis, or set micros or raw',
      { path: 'timestamps' },
      { code: 'config.invalid' },
    );
  }
  return { ...config, timestamps: config.timestamps ?? (config.format === 'iceberg' ? 'micros' : 'millis') };
}
