// Lineage columns (`lineage: true` on a sink): every row says which run wrote it (`_run_id`, the
// run id the summary, the history and the manifests carry) and when that run extracted it
// (`_extracted_at`, the run's start, one instant per run: an analyst joins rows to the manifest or
// the history by run id, and every row of one run has the same instant, so "what did the run of
// the 3rd see" is one equality). Both names start with `_`, so they are the same under either
// `columnNames` and never collide with a catalog field. A `table` keeps, in its current rows, the
// lineage of the run that last changed the row (table/table-lineage.ts).
import { z } from 'zod';
import { ConfigError, DataError } from '../../errors.js';
import { originOf } from '../../core/origin.js';

export const LINEAGE_RUN_ID = '_run_id';
export const LINEAGE_EXTRACTED_AT = '_extracted_at';
export const LINEAGE_COLUMNS = [LINEAGE_RUN_ID, LINEAGE_EXTRACTED_AT] as const;

/** `lineage` of every sink that writes rows: one schema object, as the s3 sink merges the formats' options. */
export const lineageOption = z
  .boolean()
  .default(false)
  .describe(
    "Add _run_id (the run id of the summary and the manifest, VARCHAR) and _extracted_at (the run's start, TIMESTAMP WITH TIME ZONE; ISO 8601 UTC in JSONL and CSV) to every row. " +
      'Off by default so that existing outputs keep their columns; set it on new pipelines. A table keeps in each current row the run that last changed it',
  );

/** What a sink stamps on each row: one run id and one extraction instant per run. */
export interface LineageValues {
  runId: string;
  extractedAt: Date;
  /** The `_extracted_at` column in microseconds (Iceberg, `timestamps: micros`); default milliseconds. */
  micros?: boolean | undefined;
}

/** The run of a column schema made to print its columns (the `schema` command), never to write rows. */
export const COLUMNS_ONLY: { id: string; startedAt: Date } = { id: 'schema', startedAt: new Date(0) };

/** The lineage values of a run, or undefined when the sink's option is off. */
export function lineageFor(
  enabled: boolean | undefined,
  run: { id: string; startedAt: Date },
  micros?: boolean,
): LineageValues | undefined {
  return enabled ? { runId: run.id, extractedAt: run.startedAt, micros } : undefined;
}

/** `_extracted_at` as its column stores it: milliseconds or microseconds since the epoch. */
export function extractedAtValue(lineage: Pick<LineageValues, 'extractedAt' | 'micros'>): bigint {
  return BigInt(lineage.extractedAt.getTime()) * (lineage.micros ? 1000n : 1n);
}

/** A field of the records' schema under a lineage name: a config error before any request. */
export function lineageClash(path: string): ConfigError {
  return new ConfigError(
    `the records have a field "${path}", and lineage: true adds a column of that name; ` +
      `rename the field (the rename transform, e.g. {type: rename, fields: {${path}: source${path}}}) or set lineage: false on this sink`,
    { path: 'lineage' },
    { code: 'config.lineage_column_clash' },
  );
}

/** A record that brings its own `_run_id` or `_extracted_at` to a sink with lineage on: the run fails, naming it. */
export function checkNoLineageField(record: Record<string, unknown>, stage: string): void {
  if (!(LINEAGE_RUN_ID in record) && !(LINEAGE_EXTRACTED_AT in record)) return;
  const field = LINEAGE_RUN_ID in record ? LINEAGE_RUN_ID : LINEAGE_EXTRACTED_AT;
  const origin = originOf(record);
  const id = typeof record.id === 'string' || typeof record.id === 'number' ? `id ${record.id}` : undefined;
  const where = [id, origin && `${origin.endpoint}${origin.page !== undefined ? ` page ${origin.page}` : ''}`]
    .filter(Boolean)
    .join(', ');
  throw new DataError(
    `${stage}: a record${where ? ` (${where})` : ''} has a field "${field}", which lineage: true writes itself; ` +
      `rename or drop the field before this sink (the rename or drop transform), or set lineage: false on it`,
    { code: 'data.lineage_field' },
  );
}

/**
 * A JSON line with the lineage members added before its closing brace: the record is not copied
 * (a JSONL sink writes records as they came), only its text is extended.
 */
export function lineageJsonSuffix(lineage: LineageValues): (json: string) => string {
  const members = `${JSON.stringify(LINEAGE_RUN_ID)}:${JSON.stringify(lineage.runId)},${JSON.stringify(LINEAGE_EXTRACTED_AT)}:${JSON.stringify(lineage.extractedAt.toISOString())}`;
  return (json) => {
    if (json.length < 2 || json[0] !== '{') return json;
    return json === '{}' ? `{${members}}` : `${json.slice(0, -1)},${members}}`;
  };
}
