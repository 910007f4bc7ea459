// The lake's columns (TypedColumn[], as the Parquet writer writes them) as an Iceberg schema, and the same
// columns annotated with the Iceberg field ids the Parquet files must carry: Iceberg readers
// match a data file's columns to the table schema by id, never by name or position.
//
// Ids are stable by name path across runs: a column kept keeps its id (so files of earlier
// snapshots still read under the new schema), a new column gets the next id after the table's
// `last-column-id` (ids are never reused, as the spec requires), a dropped column is absent from
// the new schema and its id stays retired. A kept name whose type changed in a way Iceberg does
// not promote (only int -> long among ours) gets a new id: to a reader it is a new column, so the
// old files' values of another type are not read as the new type.
import { ConfigError } from '../../../errors.js';
import { DECIMAL_PRECISION, DECIMAL_SCALE, type ColumnType, type TypedColumn } from '../../shared/column-types.js';
import type { IcebergField, IcebergSchema, IcebergType } from './iceberg-types.js';

export interface IcebergSchemaResult {
  /** The schema to commit: the previous one itself (same id) when nothing changed. */
  schema: IcebergSchema;
  /** The input columns with `fieldId` (and `elementId` on lists) for the Parquet writer. */
  columns: TypedColumn[];
  /** The table's `last-column-id` after this schema. */
  lastColumnId: number;
  /** Whether `schema` differs from the previous one (the commit then adds it and makes it current). */
  changed: boolean;
}

/** The previous schema's ids and types, by name path (JSON of the names: a name may hold a dot). */
type IdsByPath = Map<string, { id: number; type: IcebergType }>;

function collect(ids: IdsByPath, path: string[], id: number, type: IcebergType): void {
  ids.set(JSON.stringify(path), { id, type });
  if (typeof type === 'string') return;
  if (type.type === 'list') collect(ids, [...path, 'element'], type['element-id'], type.element);
  else for (const f of type.fields) collect(ids, [...path, f.name], f.id, f.type);
}

function primitiveOf(kind: Exclude<ColumnType['kind'], 'list' | 'struct'>, path: string[]): string {
  switch (kind) {
    case 'string':
    case 'json':
      return 'string';
    case 'int32':
      return 'int';
    case 'int64':
      return 'long';
    case 'double':
      return 'double';
    case 'boolean':
      return 'boolean';
    case 'decimal':
      return `decimal(${DECIMAL_PRECISION},${DECIMAL_SCALE})`;
    case 'timestamp-micros':
      return 'timestamptz';
    case 'timestamp-millis':
      throw new ConfigError(
        `column ${path.join('.')} is a millisecond timestamp; Iceberg timestamps are microseconds: set the sink's timestamps option to micros`,
        { path: 'timestamps' },
        { code: 'config.iceberg_timestamps' },
      );
  }
}

/** Whether a field of type `before` may keep its id as `after` (the spec's allowed promotions, of the types we write). */
function keepsId(before: IcebergType, after: ColumnType, afterPrimitive: string | undefined): boolean {
  if (typeof before === 'string')
    return (
      afterPrimitive !== undefined && (before === afterPrimitive || (before === 'int' && afterPrimitive === 'long'))
    );
  return before.type === after.kind;
}

class Assigner {
  readonly #previous: IdsByPath;
  lastColumnId: number;

  constructor(previous: IdsByPath, lastColumnId: number) {
    this.#previous = previous;
    this.lastColumnId = lastColumnId;
  }

  #id(path: string[], type: ColumnType, primitive: string | undefined): number {
    const before = this.#previous.get(JSON.stringify(path));
    if (before && keepsId(before.type, type, primitive)) return before.id;
    return ++this.lastColumnId;
  }

  /** The Iceberg field and the annotated column of `column` at `path`. */
  column(column: TypedColumn, path: string[]): { field: IcebergField; column: TypedColumn } {
    const primitive = scalar(column.type) ? primitiveOf(column.type.kind, path) : undefined;
    const id = this.#id(path, column.type, primitive);
    const { type, annotated } = this.#type(column.type, path, primitive);
    return {
      field: { id, name: column.name, required: false, type },
      column: { name: column.name, type: annotated, fieldId: id },
    };
  }

  #type(type: ColumnType, path: string[], primitive: string | undefined): { type: IcebergType; annotated: ColumnType } {
    if (type.kind === 'list') {
      const elementPath = [...path, 'element'];
      const elementPrimitive = scalar(type.element) ? primitiveOf(type.element.kind, elementPath) : undefined;
      const elementId = this.#id(elementPath, type.element, elementPrimitive);
      const element = this.#type(type.element, elementPath, elementPrimitive);
      return {
        type: { type: 'list', 'element-id': elementId, 'element-required': false, element: element.type },
        annotated: { kind: 'list', element: element.annotated, elementId },
      };
    }
    if (type.kind === 'struct') {
      const members = type.fields.map((f) => this.column(f, [...path, f.name]));
      return {
        type: { type: 'struct', fields: members.map((m) => m.field) },
        annotated: { kind: 'struct', fields: members.map((m) => m.column) },
      };
    }
    return { type: primitive!, annotated: type };
  }
}

function scalar(
  type: ColumnType,
): type is Extract<ColumnType, { kind: Exclude<ColumnType['kind'], 'list' | 'struct'> }> {
  return type.kind !== 'list' && type.kind !== 'struct';
}

/**
 * The fields as text, keys in one order and without what we never write (docs, defaults): a
 * schema a REST catalog sends back in its own key order compares equal to the one we built.
 */
function canonical(fields: readonly IcebergField[]): string {
  const type = (t: IcebergType): unknown =>
    typeof t === 'string'
      ? t.replace(/\s+/g, '')
      : t.type === 'list'
        ? ['list', t['element-id'], t['element-required'], type(t.element)]
        : ['struct', t.fields.map((f) => [f.id, f.name, f.required, type(f.type)])];
  return JSON.stringify(type({ type: 'struct', fields: [...fields] }));
}

/**
 * The Iceberg schema of `columns`, ids stable by name path against `previous` (the table's
 * current schema) and `lastColumnId` (the table's `last-column-id`; 0 for a new table). Every
 * field is optional: the sink's columns are all nullable. `nextSchemaId`: the id a changed schema
 * gets (one above every schema id of the table; default one above `previous`'s).
 */
export function icebergSchema(
  columns: readonly TypedColumn[],
  previous: IcebergSchema | undefined,
  lastColumnId: number,
  nextSchemaId: number = previous ? previous['schema-id'] + 1 : 0,
): IcebergSchemaResult {
  const ids: IdsByPath = new Map();
  for (const f of previous?.fields ?? []) collect(ids, [f.name], f.id, f.type);
  const assigner = new Assigner(ids, lastColumnId);
  const built = columns.map((c) => assigner.column(c, [c.name]));
  const fields = built.map((b) => b.field);
  const changed = !previous || canonical(previous.fields) !== canonical(fields);
  const schema: IcebergSchema = !changed && previous ? previous : { type: 'struct', 'schema-id': nextSchemaId, fields };
  return { schema, columns: built.map((b) => b.column), lastColumnId: assigner.lastColumnId, changed };
}

/**
 * The Parquet footer entry Iceberg's own writers add to every data file: the schema it was
 * written with, by which readers such as icebird map a file's columns to the table's by id (an
 * older file lacks a column added since: it reads as null). For ParquetEncoderOptions.metadata.
 */
export function parquetFooterMetadata(schema: IcebergSchema): Record<string, string> {
  return { [`iceberg.schema`]: JSON.stringify(schema) };
}
