// The column types a sink's ColumnSchema decides (column-schema.ts) and every format writes:
// Parquet (parquet/parquet-encoder.ts), CSV text (csv/csv-format.ts), DDL (schema-ddl.ts) and the
// Iceberg schema (src/sinks/table/iceberg/iceberg-schema.ts). They live in the shared layer, below the
// formats, so a format reads them without importing another format (ARCHITECTURE.md, "Record schema").

/** A column's type: a scalar, a LIST of a type, or a STRUCT of named columns. */
export type ColumnType =
  | {
      kind:
        | 'string'
        | 'json'
        | 'int32'
        | 'int64'
        | 'double'
        | 'boolean'
        | 'timestamp-millis'
        | 'timestamp-micros'
        | 'decimal';
    }
  /** `elementId`: the Iceberg field id of the list's element (written as the element node's field_id). */
  | { kind: 'list'; element: ColumnType; elementId?: number }
  | { kind: 'struct'; fields: readonly TypedColumn[] };

/** A named column of a type (a top-level column or a STRUCT member). */
export interface TypedColumn {
  name: string;
  type: ColumnType;
  /**
   * The Iceberg field id (the Parquet SchemaElement's field_id), by which Iceberg readers match a
   * file's columns to the table schema; without it a file is written exactly as before.
   */
  fieldId?: number;
}

/**
 * One shaped row in physical values, in column order: strings, numbers (int32, double),
 * bigints (int64 and timestamps in their unit), booleans, arrays of those for lists,
 * null/undefined for missing. `bytes` estimates its in-memory size for row-group sizing.
 */
export interface ShapedRow {
  values: unknown[];
  bytes: number;
}

/** Prices are integer minor units (cents): DECIMAL(18,2) stores the same integer with its scale. */
export const DECIMAL_PRECISION = 18;
export const DECIMAL_SCALE = 2;
