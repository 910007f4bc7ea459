// The table's columns: the snapshot's (the records' schema with the sink's `columns:`), the change
// rows' (the same plus `_change`, `_changed_at`, `_run_id` before `_extra`), the columns whose
// change alone is not a change (`ignoreFields`), and the one naming a table keeps.
import { ConfigError, SinkError } from '../../errors.js';
import type { StageContext } from '../../core/stage.js';
import { sinkRecordSchema } from '../../core/zod-column-hints.js';
import { EXTRA_COLUMN, RecordShaper, type ColumnSchema } from '../shared/column-schema.js';
import type { RunEvents } from '../../events.js';
import { columnNamer, snakeCase } from '../shared/column-names.js';
import { columnSchemaFor } from '../parquet/parquet-encoding.js';
import type { TypedColumn } from '../shared/column-types.js';
import type { ResolvedConfig } from './table-options.js';
import { TableLineage } from './table-lineage.js';
import { reportSchemaChange, schemaChange } from '../shared/schema-change.js';
import type { PreviousVersion } from './table-layout.js';

/** The snapshot's columns: the records' schema (resource through the transforms) with the sink's `columns:`. */
export function tableColumns(config: ResolvedConfig, ctx: StageContext): ColumnSchema {
  const recordSchema = sinkRecordSchema(ctx);
  if (!recordSchema && !config.columns) {
    throw new ConfigError(
      "table: the records' schema is unknown (the source names no resource); declare the columns (columns: {id: string, ...})",
      { path: 'columns' },
      { code: 'config.schema_unknown' },
    );
  }
  const micros = config.format === 'iceberg' || config.timestamps === 'micros';
  const schema = columnSchemaFor(recordSchema ?? { fields: [] }, config, new Set(), ctx.run, micros);
  for (const name of new TableLineage(schema, ctx.run).changeColumns()) {
    if (schema.columns.some((c) => c.name === name)) {
      throw new ConfigError(
        `table: the records have a column named ${name}, which the change rows use; rename or drop it`,
        { path: 'columns' },
      );
    }
  }
  return schema;
}

/** The positions of `ignoreFields`: a column as written, or its record name (meta_updatedAt) under columnNames: snake_case. */
export function ignoredColumns(config: ResolvedConfig, schema: ColumnSchema): number[] {
  const names = schema.columns.map((c) => c.name);
  const rename = columnNamer(config.columnNames);
  return config.ignoreFields.map((f) => {
    const i = names.includes(f) ? names.indexOf(f) : names.indexOf(rename(f));
    if (i < 0)
      throw new ConfigError(`table: ignoreFields names "${f}", which is not a column; columns: ${names.join(', ')}`, {
        path: 'ignoreFields',
      });
    return i;
  });
}

/** The change rows' columns as the schema metadata describes them. */
export function changeColumnsDescription(
  schema: ColumnSchema,
  lineage: TableLineage,
): Array<{ name: string; type: string }> {
  const columns = schema.describe();
  const extra = columns.pop()!;
  const types = { _change: 'VARCHAR', _changed_at: 'TIMESTAMP WITH TIME ZONE', _run_id: 'VARCHAR' };
  return [...columns, ...lineage.changeColumns().map((name) => ({ name, type: types[name] })), extra];
}

export type ChangeTimestampKind = 'timestamp-micros' | 'timestamp-millis';

/** The Parquet columns of the change rows: the snapshot's with the change columns before `_extra`. */
export function changeParquetColumns(
  planned: readonly TypedColumn[],
  timestampKind: ChangeTimestampKind,
  lineage: TableLineage,
): TypedColumn[] {
  const extraAt = planned.length - 1;
  // With lineage the row's own `_run_id` column is the change's: the run that saw the change.
  const kinds = { _change: 'string', _changed_at: timestampKind, _run_id: 'string' } as const;
  return [
    ...planned.slice(0, extraAt),
    ...lineage.changeColumns().map((name) => ({ name, type: { kind: kinds[name] } })),
    planned[extraAt]!,
  ];
}

/**
 * A table keeps one naming: its snapshots are read together (`dt=*`), and a column renamed
 * from one version to the next would read as NULL from the older files. So a `columnNames`
 * that differs from the one the current version was written with fails before anything is read.
 */
export function checkColumnNames(
  previous: PreviousVersion,
  schema: ColumnSchema,
  columnNames: ResolvedConfig['columnNames'],
  commitPoint: string,
): void {
  const stored = previous.columnNames;
  if (!stored) return;
  const names = schema.columns.map((c) => c.name);
  const renamed = stored.flatMap((was) => {
    if (names.includes(was)) return [];
    const now = names.find((n) => snakeCase(n) === snakeCase(was));
    return now === undefined ? [] : [`${was} -> ${now}`];
  });
  const wrote = stored.every((n) => snakeCase(n) === n) ? 'snake_case' : 'as-is';
  // Names that differ otherwise (a field the schema renamed) are not a change of naming.
  if (renamed.length === 0 || wrote === columnNames) return;
  throw new SinkError(
    `table: ${commitPoint} was written with columnNames: ${wrote}, this sink has columnNames: ${columnNames} ` +
      `(${renamed.slice(0, 3).join(', ')}${renamed.length > 3 ? `, and ${renamed.length - 3} more` : ''}); ` +
      `set columnNames: ${wrote} to keep writing this table, or point path at a new folder to start a table with columnNames: ${columnNames}`,
    { code: 'table.column_names_changed' },
  );
}

/**
 * The previous version's columns against this run's: a naming switched is refused
 * (checkColumnNames), any other change is said (`sink.schema_changed`, listed by the summary).
 */
export function checkPreviousColumns(
  previous: PreviousVersion,
  schema: ColumnSchema,
  config: ResolvedConfig,
  where: { commitPoint: string; location: string; events: RunEvents },
): void {
  checkColumnNames(previous, schema, config.columnNames, where.commitPoint);
  const changed = schemaChange(previous.schema, { hash: schema.hash, columns: schema.describe() });
  if (changed) reportSchemaChange(where.events, 'table', where.location, changed);
}

/** A shaper of incoming records that warns (`sink.parquet.extra`) of each field it puts in `_extra`. */
export function recordShaper(schema: ColumnSchema, events: RunEvents): RecordShaper {
  const shaper = new RecordShaper(schema);
  shaper.onNewExtraField = (field, value) => {
    events.emit('warning', {
      code: 'sink.parquet.extra',
      message: `table: field "${field}" (${typeof value}) is not in the Parquet schema or does not fit its column; kept in the ${EXTRA_COLUMN} JSON column`,
    });
  };
  return shaper;
}
