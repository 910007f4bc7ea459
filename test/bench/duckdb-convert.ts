// Bench scenario: DuckDB (in this process, @duckdb/node-api) converting a JSONL
// file to Parquet, the baseline "the same records written as Parquet by a
// native engine". The JSONL is written beforehand by another scenario and not
// timed here. CPU is the whole process's (all of DuckDB's threads).
//
//   node --expose-gc dist/test/bench/duckdb-convert.js '{"jsonl":"/tmp/x/raw.jsonl","parquet":"/tmp/x/duck.parquet"}'
import { stat } from 'node:fs/promises';
import { DuckDBInstance } from '@duckdb/node-api';
import { sqlString } from '../helpers/duckdb.js';
import { type Measurement, measure, scenarioMain } from './measure.js';

export interface DuckdbConvertArgs {
  jsonl: string;
  parquet: string;
  /** DuckDB threads (default: its own default, every core). */
  threads?: number;
}

export type DuckdbConvertResult = Measurement & { threads: string; bytes: number };

export async function duckdbConvert(args: DuckdbConvertArgs): Promise<DuckdbConvertResult> {
  const instance = await DuckDBInstance.create(':memory:', args.threads ? { threads: String(args.threads) } : {});
  const connection = await instance.connect();
  try {
    const threads = String(
      (await connection.runAndReadAll("SELECT current_setting('threads') AS t")).getRowObjectsJS()[0]!.t,
    );
    const result = await measure(async () => {
      // COPY answers one row: the number of rows it wrote.
      const copied = await connection.runAndReadAll(
        `COPY (SELECT * FROM read_json_auto(${sqlString(args.jsonl)}, format = 'newline_delimited')) TO ${sqlString(args.parquet)} (FORMAT parquet)`,
      );
      return { records: Number(Object.values(copied.getRowObjectsJS()[0] ?? {})[0] ?? 0) };
    });
    return { ...result, threads, bytes: (await stat(args.parquet)).size };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

scenarioMain(import.meta.url, duckdbConvert);
