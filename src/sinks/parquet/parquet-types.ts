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
  | { kind: 'list'; element: ParquetType }
  | { kind: 'struct'; fields: readonly ParquetColumn[] };

export interface ParquetColumn {
  name: string;
  type: ParquetType;
}
