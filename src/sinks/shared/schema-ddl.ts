// A sink's column schema as the lake tools spell it, so a table can be created
// before the first run: the Parquet schema (as parquet-tools prints it), a DuckDB
// CREATE TABLE, a Spark CREATE TABLE and an Athena/Glue CREATE EXTERNAL TABLE over
// the sink's partition layout (`dt={date}` folders become partition columns).
//
// Names are quoted where they must be, per dialect, so the DDL reads like the SQL a person writes
// and shows which names a query will have to quote: a name that is not a plain lowercase
// identifier, or is a keyword of any of the dialects, is double-quoted for DuckDB (and Postgres,
// Snowflake) and backticked for Spark and Athena/Hive DDL. Athena also backticks a leading
// underscore (`_extra`), and lowercases every name (Glue stores them so; its Parquet reader
// matches file columns case-insensitively): `columnNames: snake_case` keeps them readable there.
import { DECIMAL_PRECISION, DECIMAL_SCALE, type ColumnType } from './column-types.js';
import { duckdbType, type ColumnSchema } from './column-schema.js';

export type SqlDialect = 'duckdb' | 'spark' | 'athena';

const PLAIN = /^[a-z_][a-z0-9_]*$/;
const PLAIN_ATHENA = /^[a-z][a-z0-9_]*$/;
/**
 * Keywords a column may not bear unquoted in one of the dialects: DuckDB's reserved keywords
 * (`SELECT keyword_name FROM duckdb_keywords() WHERE keyword_category = 'reserved'`, checked by
 * test/sinks/schema-ddl.test.ts), Spark's ANSI reserved words, Hive DDL's and Athena (Trino) DML's.
 * Quoting a word that one dialect would have taken bare is harmless; one list serves them all.
 */
const RESERVED = new Set(
  (
    'all alter analyse analyze and anti any array as asc asymmetric authorization between bigint binary boolean both by ' +
    'case cast char check collate column commit conf constraint create cross cube current current_date current_path ' +
    'current_role current_time current_timestamp current_user cursor database date deallocate decimal default deferrable ' +
    'delete desc describe distinct do double drop else end escape except exchange execute exists extended external extract ' +
    'false fetch filter first float following for foreign from full function grant group grouping having if import in ' +
    'initially inner insert int intersect interval into is join last lateral leading left less like limit local localtime ' +
    'lambda localtimestamp macro map more natural none normalize not null of offset on only or order out outer over overlaps ' +
    'partialscan partition percent pivot pivot_longer pivot_wider placing preceding prepare preserve primary procedure ' +
    'qualify range reads recursive reduce references regexp returning revoke right rlike rollup row rows select semi ' +
    'session_user set show similar smallint some summarize symmetric table tablesample then time timestamp to trailing transform trigger ' +
    'true truncate uescape unbounded union unique uniquejoin unnest unpivot update user using utc_timestamp values varchar ' +
    'variadic when where window with'
  ).split(' '),
);

/** `name` as `dialect` takes it: bare when a plain lowercase identifier and no keyword, else quoted. */
export function quoteIdentifier(name: string, dialect: SqlDialect): string {
  const plain = (dialect === 'athena' ? PLAIN_ATHENA : PLAIN).test(name) && !RESERVED.has(name);
  if (plain) return name;
  return dialect === 'duckdb' ? `"${name.replace(/"/g, '""')}"` : `\`${name.replace(/`/g, '``')}\``;
}

const quoteDuck = (name: string) => quoteIdentifier(name, 'duckdb');
const backtick = (name: string) => quoteIdentifier(name, 'spark');
const athenaName = (name: string) => quoteIdentifier(name.toLowerCase(), 'athena');

/** Where a sink writes: the folder above the partition folders, and the partition keys in path order. */
export interface SinkLayout {
  /** `s3://bucket/catalog/products/` or an absolute local folder ending in `/`. */
  location: string;
  partitions: string[];
  /** The glob that reads every file the sink writes (`.../dt=*\/*.parquet`). */
  glob: string;
  /**
   * The partition keys whose folders hold the run's `{date}` (`dt=2026-11-27`): DATE columns, as every
   * reader's hive partitioning types such a folder; the others (`run={run}`, `key={field}`) are strings.
   */
  dates: string[];
}

const PARTITION_SEGMENT = /^([A-Za-z_][\w-]*)=\{[^}]+\}$/;
const DATE_SEGMENT = /^([A-Za-z_][\w-]*)=\{date\}$/;

/** The layout of a path/key template: `catalog/products/dt={date}/part-{part}.parquet`. */
export function sinkLayout(template: string, root: string): SinkLayout {
  const segments = template.split('/');
  const file = segments.pop() ?? '';
  const first = segments.findIndex((s) => PARTITION_SEGMENT.test(s));
  const fixed = first < 0 ? segments : segments.slice(0, first);
  const partitions =
    first < 0
      ? []
      : segments
          .slice(first)
          .map((s) => PARTITION_SEGMENT.exec(s)?.[1] ?? '*')
          .filter((k) => k !== '*');
  const location = `${root}${fixed.map((s) => `${s}/`).join('')}`;
  const rest =
    first < 0
      ? []
      : segments
          .slice(first)
          .map((s) =>
            PARTITION_SEGMENT.test(s) ? `${PARTITION_SEGMENT.exec(s)![1]}=*` : s.replace(/\{[^}]+\}/g, '*'),
          );
  const dates = first < 0 ? [] : segments.slice(first).flatMap((s) => DATE_SEGMENT.exec(s)?.[1] ?? []);
  return {
    location,
    partitions,
    dates,
    glob: `${location}${rest.map((s) => `${s}/`).join('')}${file.replace(/\{[^}]+\}/g, '*')}`,
  };
}

/** `message schema { optional binary id (STRING); ... }`. */
export function parquetSchemaText(schema: ColumnSchema): string {
  const lines = ['message schema {'];
  const emit = (name: string, type: ColumnType, indent: string) => {
    switch (type.kind) {
      case 'list':
        lines.push(`${indent}optional group ${name} (LIST) {`, `${indent}  repeated group list {`);
        emit('element', type.element, `${indent}    `);
        lines.push(`${indent}  }`, `${indent}}`);
        return;
      case 'struct':
        lines.push(`${indent}optional group ${name} {`);
        for (const f of type.fields) emit(f.name, f.type, `${indent}  `);
        lines.push(`${indent}}`);
        return;
      default:
        lines.push(`${indent}optional ${PARQUET_LEAF[type.kind]} ${name}${PARQUET_ANNOTATION[type.kind]};`);
    }
  };
  for (const c of schema.columns) emit(c.name, c.type, '  ');
  lines.push('}');
  return lines.join('\n');
}

type Leaf = Exclude<ColumnType['kind'], 'list' | 'struct'>;
const PARQUET_LEAF: Record<Leaf, string> = {
  string: 'binary',
  json: 'binary',
  int32: 'int32',
  int64: 'int64',
  double: 'double',
  boolean: 'boolean',
  decimal: 'int64',
  'timestamp-millis': 'int64',
  'timestamp-micros': 'int64',
};
const PARQUET_ANNOTATION: Record<Leaf, string> = {
  string: ' (STRING)',
  json: ' (JSON)',
  int32: '',
  int64: '',
  double: '',
  boolean: '',
  decimal: ` (DECIMAL(${DECIMAL_PRECISION},${DECIMAL_SCALE}))`,
  'timestamp-millis': ' (TIMESTAMP(MILLIS,true))',
  'timestamp-micros': ' (TIMESTAMP(MICROS,true))',
};

function comment(text: string | undefined): string {
  return text ? ` COMMENT '${text.replace(/'/g, "''")}'` : '';
}

/** The type of a partition column: DATE for a `{date}` folder, else a string (`STRING`, `VARCHAR`). */
function partitionType(layout: SinkLayout, key: string, date: string, text: string): string {
  return layout.dates.includes(key) ? date : text;
}

/**
 * The read_parquet options that read the sink's files as the DDL declares them: the `{date}` folders
 * as DATE, every other partition value as VARCHAR (no autocast: `run=20261127...` stays text).
 */
export function duckdbHiveOptions(layout: SinkLayout): string {
  if (layout.partitions.length === 0) return 'hive_partitioning = false';
  const types = layout.dates.map((d) => `${sqlString(d)}: DATE`).join(', ');
  return `hive_partitioning = true${types ? `, hive_types = {${types}}` : ''}, hive_types_autocast = false`;
}

const sqlString = (text: string) => `'${text.replace(/'/g, "''")}'`;

/** DuckDB: the file's columns, then the partition columns (DATE or VARCHAR), and the INSERT that loads the files. */
export function duckdbCreateTable(table: string, schema: ColumnSchema, layout: SinkLayout): string {
  const columns = [
    ...schema.columns.map((c) => `  ${quoteDuck(c.name)} ${duckdbType(c.type, quoteDuck)}`),
    ...layout.partitions.map((p) => `  ${quoteDuck(p)} ${partitionType(layout, p, 'DATE', 'VARCHAR')}`),
  ];
  const hive = `, ${duckdbHiveOptions(layout)}`;
  return [
    `CREATE TABLE ${quoteDuck(table)} (`,
    columns.join(',\n'),
    ');',
    `-- INSERT INTO ${quoteDuck(table)} BY NAME SELECT * FROM read_parquet('${layout.glob.replace(/'/g, "''")}'${hive});`,
  ].join('\n');
}

function sparkType(type: ColumnType, athena: boolean): string {
  const t = (spark: string, glue: string) => (athena ? glue : spark);
  switch (type.kind) {
    case 'string':
    case 'json':
      return t('STRING', 'string');
    case 'int32':
      return t('INT', 'int');
    case 'int64':
      return t('BIGINT', 'bigint');
    case 'double':
      return t('DOUBLE', 'double');
    case 'boolean':
      return t('BOOLEAN', 'boolean');
    case 'decimal':
      return t(`DECIMAL(${DECIMAL_PRECISION},${DECIMAL_SCALE})`, `decimal(${DECIMAL_PRECISION},${DECIMAL_SCALE})`);
    case 'timestamp-millis':
    case 'timestamp-micros':
      return t('TIMESTAMP', 'timestamp');
    case 'list':
      return `${t('ARRAY', 'array')}<${sparkType(type.element, athena)}>`;
    case 'struct':
      return `${t('STRUCT', 'struct')}<${type.fields.map((f) => `${athena ? athenaName(f.name) : backtick(f.name)}${athena ? ':' : ': '}${sparkType(f.type, athena)}`).join(athena ? ',' : ', ')}>`;
  }
}

/** Spark SQL (also Databricks): a Parquet table over the sink's folder, partitioned like its paths. */
export function sparkCreateTable(table: string, schema: ColumnSchema, layout: SinkLayout): string {
  const columns = [
    ...schema.columns.map((c) => `  ${backtick(c.name)} ${sparkType(c.type, false)}${comment(c.description)}`),
    ...layout.partitions.map((p) => `  ${backtick(p)} ${partitionType(layout, p, 'DATE', 'STRING')}`),
  ];
  return [
    `CREATE TABLE ${backtick(table)} (`,
    columns.join(',\n'),
    ')',
    'USING parquet',
    ...(layout.partitions.length ? [`PARTITIONED BY (${layout.partitions.map(backtick).join(', ')})`] : []),
    `LOCATION '${layout.location}';`,
  ].join('\n');
}

/** Athena / Glue: an external Parquet table; partitions are added with MSCK REPAIR TABLE (or partition projection). */
export function athenaCreateTable(table: string, schema: ColumnSchema, layout: SinkLayout): string {
  const columns = schema.columns.map(
    (c) => `  ${athenaName(c.name)} ${sparkType(c.type, true)}${comment(c.description)}`,
  );
  return [
    `CREATE EXTERNAL TABLE IF NOT EXISTS ${athenaName(table)} (`,
    columns.join(',\n'),
    ')',
    ...(layout.partitions.length
      ? [
          `PARTITIONED BY (${layout.partitions.map((p) => `${athenaName(p)} ${partitionType(layout, p, 'date', 'string')}`).join(', ')})`,
        ]
      : []),
    'STORED AS PARQUET',
    `LOCATION '${layout.location}'`,
    `TBLPROPERTIES ('catalog-streams.schema-hash' = '${schema.hash}');`,
    ...(layout.partitions.length ? [`-- then: MSCK REPAIR TABLE ${athenaName(table)};`] : []),
  ].join('\n');
}

/** How a CSV sink writes its files: what a reader must be told besides the columns. */
export interface CsvDialect {
  delimiter: string;
  header: boolean;
}

/**
 * DuckDB: the CSV files read with the sink's column types (`columns = {...}` turns the sniffer off,
 * so `0065699514566` stays text and a timestamp is a timestamp), `dt` folders as DATE; a quoted
 * empty field (`""`) is the empty string the sink wrote, not a null.
 */
export function duckdbReadCsv(schema: ColumnSchema, layout: SinkLayout, dialect: CsvDialect): string {
  const columns = schema.columns.map((c) => `    ${sqlString(c.name)}: ${sqlString(duckdbType(c.type, quoteDuck))}`);
  return [
    `SELECT * FROM read_csv(${sqlString(layout.glob)}, header = ${dialect.header}, delim = ${sqlString(dialect.delimiter)}, quote = '"', escape = '"', allow_quoted_nulls = false, ${duckdbHiveOptions(layout)}, columns = {`,
    columns.join(',\n'),
    '  });',
  ].join('\n');
}
