// Reads files back with DuckDB, the way a data engineer would check an output:
// an in-memory instance per call, closed afterwards.
import { DuckDBInstance } from '@duckdb/node-api';

export interface QueryResult {
  /** Rows as JS values (BIGINT as bigint, TIMESTAMP as Date, lists as arrays). */
  rows: Record<string, unknown>[];
  /** Column name -> DuckDB type as DuckDB prints it (`VARCHAR`, `BIGINT`, `VARCHAR[]`, `TIMESTAMP WITH TIME ZONE`). */
  types: Record<string, string>;
}

/** Runs one or more statements; returns the rows and column types of the last. */
export async function duckdbQuery(sql: string): Promise<QueryResult> {
  const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
  try {
    const connection = await instance.connect();
    try {
      const reader = await connection.runAndReadAll(sql);
      const names = reader.columnNames();
      const types = reader.columnTypes();
      return {
        rows: reader.getRowObjectsJS() as Record<string, unknown>[],
        types: Object.fromEntries(names.map((name, i) => [name, String(types[i])])),
      };
    } finally {
      connection.closeSync();
    }
  } finally {
    instance.closeSync();
  }
}

/** A SQL string literal (for file paths in queries). */
export function sqlString(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

/** Column name -> DuckDB type of a Parquet file (its own columns: no Hive partition columns from the path). */
export async function parquetColumnTypes(file: string): Promise<Record<string, string>> {
  const { rows } = await duckdbQuery(
    `DESCRIBE SELECT * FROM read_parquet(${sqlString(file)}, hive_partitioning = false)`,
  );
  return Object.fromEntries(rows.map((r) => [String(r.column_name), String(r.column_type)]));
}
