// The Parquet encoder's names for the neutral column types (shared/column-types.ts): the encoder
// and its shredder (column-shredder.ts) write exactly those columns.
import type { ColumnType, ShapedRow, TypedColumn } from '../shared/column-types.js';

export type ParquetType = ColumnType;
export type ParquetColumn = TypedColumn;
export type ParquetRow = ShapedRow;
