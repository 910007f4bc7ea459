// `catalog-streams schema <pipeline-file>`: the schema each sink will write,
// derived without the network (the source's resource declaration through the
// transforms, then the sink's options), as a Parquet schema and as DuckDB, Spark
// and Athena/Glue DDL, so a lake table can be created before the first run.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, UsageError } from '../errors.js';
import { createRegistry } from '../pipeline/builtins.js';
import { loadPipelineFile, type LoadedPipeline } from '../pipeline/loader.js';
import type { ColumnSchema } from '../sinks/shared/column-schema.js';
import { columnSchemaFor, type ParquetFormatOptions } from '../sinks/parquet/parquet-encoding.js';
import { csvColumnSchema, csvDelimiter, type CsvFormatOptions } from '../sinks/csv/csv-format.js';
import { PathTemplate } from '../sinks/shared/path-template.js';
import {
  athenaCreateTable,
  duckdbCreateTable,
  duckdbReadCsv,
  type CsvDialect,
  parquetSchemaText,
  sinkLayout,
  sparkCreateTable,
  type SinkLayout,
} from '../sinks/shared/schema-ddl.js';
import { type Command, parseOptions } from './command.js';
import type { CliIO } from './io.js';
import { jsonLogLine, levelEnabled, logSettingsOf } from './log.js';

const FORMATS = ['all', 'parquet', 'duckdb', 'spark', 'athena', 'json'] as const;
type Format = (typeof FORMATS)[number];

const SCHEMA_USAGE = `Usage: catalog-streams schema <pipeline-file> [--format all|parquet|duckdb|spark|athena|json]

Prints, without touching the network, the schema each Parquet or CSV sink of
the file will write: the columns derived from the source's resource declaration through
the transforms (and the sink's columns: option), as a Parquet schema, a DuckDB
CREATE TABLE (with the INSERT that loads the written files), a Spark CREATE
TABLE and an Athena/Glue CREATE EXTERNAL TABLE over the sink's partition folders;
for a CSV sink, DuckDB's read_csv with every column's type (columns = {...}).
The same file gives the same schema (and schema hash) on every run.
A variable the file uses without a default that is unset (LAKE_BUCKET) is
printed as \${LAKE_BUCKET} where it goes (said once on stderr).
--format json prints [{pipeline, sink, format, table, hash, layout, columns, ddl}]
(a CSV sink's ddl has duckdb only: its read_csv).
`;

export interface SinkSchema {
  pipeline: string;
  /** `sinks[0]` */
  sink: string;
  table: string;
  schema: ColumnSchema;
  layout: SinkLayout;
  /** Set for a CSV sink: its files are read with DuckDB's typed read_csv, not created as a Parquet table. */
  csv?: CsvDialect;
}

function tableName(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9_]/g, '_');
  return /^[A-Za-z_]/.test(cleaned) ? cleaned : `t_${cleaned}`;
}

/** A sink the schema command has nothing to print for, and why (said on stderr, never silently left out). */
export interface SkippedSink {
  pipeline: string;
  /** `sinks[1]` */
  sink: string;
  type: string;
  reason: string;
}

/** Every sink of the pipelines: the Parquet ones' schemas, and the others with the reason they have none. */
export function describeSinks(pipelines: readonly LoadedPipeline[]): {
  schemas: SinkSchema[];
  csv: SinkSchema[];
  skipped: SkippedSink[];
} {
  const csv: SinkSchema[] = [];
  const out: SinkSchema[] = [];
  const skipped: SkippedSink[] = [];
  for (const loaded of pipelines) {
    const { config, plan } = loaded;
    const records = plan.recordSchema;
    const skip = (i: number, type: string, reason: string) => {
      skipped.push({ pipeline: config.name, sink: `sinks[${i}]`, type, reason });
      return [];
    };
    const parquetSinks = plan.sinks.flatMap((spec, i) => {
      const options = spec.options as ParquetFormatOptions & {
        path?: string;
        format?: string;
        bucket?: string;
        key?: string;
      };
      if (spec.type === 'parquet' && options.path && options.path !== '-') {
        const file = path.resolve(loaded.baseDir, options.path);
        return [
          {
            i,
            options,
            template: options.path,
            layout: sinkLayout(path.relative(path.parse(file).root, file), path.parse(file).root),
          },
        ];
      }
      if (spec.type === 's3' && options.format === 'parquet' && options.key && options.bucket) {
        return [{ i, options, template: options.key, layout: sinkLayout(options.key, `s3://${options.bucket}/`) }];
      }
      const csvFiles = csvLayout(spec.type, options, loaded.baseDir);
      if (csvFiles) {
        const csvOptions = spec.options as CsvFormatOptions;
        const excluded = templateFields(config.name, csvFiles.template, spec.type);
        csv.push({
          pipeline: config.name,
          sink: `sinks[${i}]`,
          table: tableName(config.name),
          schema: csvColumnSchema(records, csvOptions, excluded),
          layout: csvFiles.layout,
          csv: { delimiter: csvDelimiter(csvOptions.delimiter), header: csvOptions.header !== false },
        });
        return [];
      }
      return skip(i, spec.type, skipReason(spec.type, options.format, options.path));
    });
    for (const { i, options, template, layout } of parquetSinks) {
      const excluded = templateFields(config.name, template, config.sinks[i]!.type);
      out.push({
        pipeline: config.name,
        sink: `sinks[${i}]`,
        table: tableName(parquetSinks.length > 1 ? `${config.name}_${i}` : config.name),
        schema: columnSchemaFor(records, options, excluded),
        layout,
      });
    }
  }
  return { schemas: out, csv, skipped };
}

/** The `key={field}` partitions of a template: record fields the files' columns leave out. */
function templateFields(name: string, template: string, type: string): Set<string> {
  const run = { name, id: 'schema', startedAt: new Date(0) };
  return new Set(PathTemplate.parse(template, run, spec(type)).fields.map((f) => f.key));
}

/** Where a CSV sink (local, or s3 with format: csv) writes; none for stdout or a gzip file (read_csv takes it, but a glob of .gz is the reader's call). */
function csvLayout(
  type: string,
  options: { path?: string; format?: string; bucket?: string; key?: string },
  baseDir: string,
): { template: string; layout: SinkLayout } | undefined {
  if (type === 'csv' && options.path && options.path !== '-') {
    const file = path.resolve(baseDir, options.path);
    const root = path.parse(file).root;
    return { template: options.path, layout: sinkLayout(path.relative(root, file), root) };
  }
  if (type === 's3' && options.format === 'csv' && options.key && options.bucket)
    return { template: options.key, layout: sinkLayout(options.key, `s3://${options.bucket}/`) };
  return undefined;
}

function skipReason(type: string, format: string | undefined, file: string | undefined): string {
  if (type === 'parquet' && file === '-')
    return 'it writes Parquet to stdout: there are no files to create a table over';
  if (type === 'jsonl' || (type === 's3' && format === 'jsonl'))
    return 'JSON Lines has no column schema: each record is written as it is';
  if (type === 'csv' || (type === 's3' && format === 'csv'))
    return 'it writes CSV to stdout: there are no files to read';
  if (type === 'table')
    return 'its snapshots and change rows are read through its _table.json manifest (format: hive) or as Iceberg tables (format: iceberg, docs/iceberg.md), not as a folder of files: this command prints no DDL for them';
  return `the schema command describes Parquet outputs only (parquet sinks, s3 sinks with format: parquet), not ${type}${format ? ` with format: ${format}` : ''}`;
}

function spec(type: string): string {
  return type === 's3' ? 'key' : 'path';
}

function render(s: SinkSchema, format: Exclude<Format, 'json'>): string {
  const parts: string[] = [];
  if (format === 'all') {
    parts.push(
      `-- pipeline "${s.pipeline}", ${s.sink}: ${s.schema.columns.length} columns, schema ${s.schema.hash}` +
        (s.layout.partitions.length ? `, partitioned by ${s.layout.partitions.join(', ')}` : ''),
    );
  }
  if (format === 'all' || format === 'parquet')
    parts.push(...(format === 'all' ? ['-- Parquet schema'] : []), parquetSchemaText(s.schema));
  if (format === 'all' || format === 'duckdb')
    parts.push(...(format === 'all' ? ['-- DuckDB'] : []), duckdbCreateTable(s.table, s.schema, s.layout));
  if (format === 'all' || format === 'spark')
    parts.push(...(format === 'all' ? ['-- Spark'] : []), sparkCreateTable(s.table, s.schema, s.layout));
  if (format === 'all' || format === 'athena')
    parts.push(...(format === 'all' ? ['-- Athena / Glue'] : []), athenaCreateTable(s.table, s.schema, s.layout));
  return `${parts.join('\n\n')}\n`;
}

const REQUIRED_REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * The file loaded with a stand-in value for each variable it uses without a default that is unset,
 * so a table's DDL can be printed (and reviewed) before the lake's settings exist; the stand-ins map
 * back to their names. A stand-in is a word a bucket, key or path takes; where one does not fit (a
 * number option), the file is loaded as it is and reports the unset variable as `run` would.
 */
async function loadWithPlaceholders(
  file: string,
  env: NodeJS.ProcessEnv,
): Promise<{ pipelines: LoadedPipeline[]; placeholders: Map<string, string> }> {
  const placeholders = new Map<string, string>();
  const text = await readFile(file, 'utf8').catch(() => '');
  for (const [, name] of text.matchAll(REQUIRED_REFERENCE))
    if (!env[name!] && ![...placeholders.values()].includes(name!))
      placeholders.set(`unset-${placeholders.size}-${name!.toLowerCase().replace(/_/g, '-')}-placeholder`, name!);
  const load = (given: NodeJS.ProcessEnv) => loadPipelineFile(file, createRegistry(), { env: given });
  if (placeholders.size === 0) return { pipelines: await load(env), placeholders };
  const standIns = Object.fromEntries([...placeholders].map(([value, name]) => [name, value]));
  try {
    return { pipelines: await load({ ...env, ...standIns }), placeholders };
  } catch (err) {
    if (err instanceof ConfigError) return { pipelines: await load(env), placeholders: new Map() };
    throw err;
  }
}

function unplaceholder(text: string, placeholders: Map<string, string>): string {
  let out = text;
  for (const [value, name] of placeholders) out = out.replaceAll(value, `\${${name}}`);
  return out;
}

/** The CSV sinks `format` prints (DuckDB's read_csv: all, duckdb, json); the others are said skipped. */
function csvShown(
  described: ReturnType<typeof describeSinks>,
  format: Format,
): { csv: SinkSchema[]; skipped: SkippedSink[] } {
  if (format === 'all' || format === 'duckdb' || format === 'json') return described;
  const skipped = described.csv.map((s) => ({
    pipeline: s.pipeline,
    sink: s.sink,
    type: 'csv',
    reason: 'a CSV sink has a typed DuckDB read_csv (--format duckdb or all), no table DDL',
  }));
  return { csv: [], skipped: [...described.skipped, ...skipped] };
}

/** A CSV sink: its columns and the DuckDB read_csv that reads its files with their types. */
function renderCsv(s: SinkSchema, format: Exclude<Format, 'json'>): string {
  const parts: string[] = [];
  if (format === 'all')
    parts.push(
      `-- pipeline "${s.pipeline}", ${s.sink}: CSV, ${s.schema.columns.length} columns, schema ${s.schema.hash}` +
        (s.layout.partitions.length ? `, partitioned by ${s.layout.partitions.join(', ')}` : ''),
    );
  parts.push(
    `-- DuckDB: the CSV files with their column types (a guessing reader turns 0065699514566 into a number)`,
    duckdbReadCsv(s.schema, s.layout, s.csv!),
  );
  return `${parts.join('\n')}\n`;
}

async function schemaCommand(argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseOptions(
    'schema',
    argv,
    { format: { type: 'string' } },
    { exactly: 1, what: 'one pipeline file' },
  );
  const format = (values.format ?? 'all') as Format;
  if (!FORMATS.includes(format))
    throw new UsageError(`schema: --format must be one of ${FORMATS.join(', ')}, got "${values.format}"`);
  const { pipelines, placeholders } = await loadWithPlaceholders(positionals[0]!, io.env);
  const log = logSettingsOf(io);
  if (placeholders.size > 0 && levelEnabled(log.level, 'warn')) {
    const names = [...placeholders.values()];
    const message = `${names.join(', ')} ${names.length > 1 ? 'are' : 'is'} not set: printed as ${names.map((n) => `\${${n}}`).join(', ')} where used (set ${names.length > 1 ? 'them' : 'it'} to print the real locations)`;
    io.stderr.write(
      `${log.format === 'json' ? jsonLogLine('warn', 'schema.placeholders', { command: 'schema', variables: names, message }) : `catalog-streams schema: ${message}`}\n`,
    );
  }
  const write = (text: string) => io.stdout.write(unplaceholder(text, placeholders));
  const described = describeSinks(pipelines);
  const { schemas } = described;
  const { csv, skipped } = csvShown(described, format);
  // On stderr, so stdout stays the schema a script reads; said for every format.
  if (levelEnabled(log.level, 'info'))
    for (const k of skipped) {
      const message = `skipped pipeline "${k.pipeline}" ${k.sink} (${k.type}): ${k.reason}`;
      io.stderr.write(
        `${log.format === 'json' ? jsonLogLine('info', 'schema.skipped', { command: 'schema', pipeline: k.pipeline, sink: k.sink, type: k.type, message }) : `catalog-streams schema: ${message}`}\n`,
      );
    }
  if (format === 'json') {
    const doc = schemas.map((s) => ({
      pipeline: s.pipeline,
      sink: s.sink,
      format: 'parquet',
      table: s.table,
      hash: s.schema.hash,
      layout: s.layout,
      columns: s.schema.describe(),
      ddl: {
        duckdb: duckdbCreateTable(s.table, s.schema, s.layout),
        spark: sparkCreateTable(s.table, s.schema, s.layout),
        athena: athenaCreateTable(s.table, s.schema, s.layout),
      },
    }));
    const csvDoc = csv.map((s) => ({
      pipeline: s.pipeline,
      sink: s.sink,
      format: 'csv',
      table: s.table,
      hash: s.schema.hash,
      layout: s.layout,
      columns: s.schema.describe(),
      ddl: { duckdb: duckdbReadCsv(s.schema, s.layout, s.csv!) },
    }));
    write(`${JSON.stringify([...doc, ...csvDoc], null, 2)}\n`);
    return 0;
  }
  if (schemas.length + csv.length === 0) {
    write(
      `${positionals[0]}: no Parquet or CSV sink, so no column schema to print (the sinks it skipped are named on stderr)\n`,
    );
    return 0;
  }
  write([...schemas.map((s) => render(s, format)), ...csv.map((s) => renderCsv(s, format))].join('\n'));
  return 0;
}

export const schemaCommandDefinition: Command = {
  name: 'schema',
  summary: 'print the Parquet schema and lake DDL each sink will write, without touching the network',
  usage: SCHEMA_USAGE,
  run: schemaCommand,
};
