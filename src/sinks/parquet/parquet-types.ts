// The column types the Parquet encoder writes, in a file of their own so that the encoder and
// its shredder (column-shredder.ts) both read them without importing each other.

/** A column's type: a scalar, a LIST of a type, or a STRUCT of named columns. */
export type ParquetType =
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
  | { kind: 'list'; element: ParquetType; elementId?: number }
  | { kind: 'struct'; fields: readonly ParquetColumn[] };

export interface ParquetColumn {
  name: string;
  type: ParquetType;
  /**
   * The Iceberg field id (the SchemaElement's field_id), by which Iceberg readers match a file's
   * columns to the table schema; without it a file is written exactly as before.
   */
  fieldId?: number;
}
