// A sink's column schema as the lake tools spell it, so a table can be created
// before the first run: the Parquet schema (as parquet-tools prints it), a DuckDB
// CREATE TABLE, a Spark CREATE TABLE and an Athena/Glue CREATE EXTERNAL TABLE over
// the sink's partition layout (`dt={date}` folders become partition columns).
import { DECIMAL_PRECISION, DECIMAL_SCALE, type ParquetType } from '../parquet/parquet-encoder.js';
import { duckdbType, quoteAlways, quoteDuckdb, type ColumnSchema } from './column-schema.js';

/** Where a sink writes: the folder above the partition folders, and the partition keys in path order. */
export interface SinkLayout {
  /** `s3://bucket/catalog/products/` or an absolute local folder ending in `/`. */
  location: string;
  partitions: string[];
  /** The glob that reads every file the sink writes (`.../dt=*\/*.parquet`). */
  glob: string;
}

const PARTITION_SEGMENT = /^([A-Za-z_][\w-]*)=\{[^}]+\}$/;

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
  return {
    location,
    partitions,
    glob: `${location}${rest.map((s) => `${s}/`).join('')}${file.replace(/\{[^}]+\}/g, '*')}`,
  };
}

/** `message schema { optional binary id (STRING); ... }`. */
export function parquetSchemaText(schema: ColumnSchema): string {
  const lines = ['message schema {'];
  const emit = (name: string, type: ParquetType, indent: string) => {
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

type Leaf = Exclude<ParquetType['kind'], 'list' | 'struct'>;
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

/** DuckDB: the file's columns, then the partition columns as VARCHAR, and the INSERT that loads the files. */
export function duckdbCreateTable(table: string, schema: ColumnSchema, layout: SinkLayout): string {
  const columns = [
    ...schema.columns.map((c) => `  ${quoteAlways(c.name)} ${duckdbType(c.type, quoteAlways)}`),
    ...layout.partitions.map((p) => `  ${quoteAlways(p)} VARCHAR`),
  ];
  const hive =
    layout.partitions.length > 0
      ? ', hive_partitioning = true, hive_types_autocast = false'
      : ', hive_partitioning = false';
  return [
    `CREATE TABLE ${quoteDuckdb(table)} (`,
    columns.join(',\n'),
    ');',
    `-- INSERT INTO ${quoteDuckdb(table)} BY NAME SELECT * FROM read_parquet('${layout.glob.replace(/'/g, "''")}'${hive});`,
  ].join('\n');
}

function sparkType(type: ParquetType, athena: boolean): string {
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
      return `${t('STRUCT', 'struct')}<${type.fields.map((f) => `${athena ? f.name.toLowerCase() : backtick(f.name)}${athena ? ':' : ': '}${sparkType(f.type, athena)}`).join(athena ? ',' : ', ')}>`;
  }
}

function backtick(name: string): string {
  return `\`${name.replace(/`/g, '``')}\``;
}

/** Spark SQL (also Databricks): a Parquet table over the sink's folder, partitioned like its paths. */
export function sparkCreateTable(table: string, schema: ColumnSchema, layout: SinkLayout): string {
  const columns = [
    ...schema.columns.map((c) => `  ${backtick(c.name)} ${sparkType(c.type, false)}${comment(c.description)}`),
    ...layout.partitions.map((p) => `  ${backtick(p)} STRING`),
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
    (c) => `  ${backtick(c.name.toLowerCase())} ${sparkType(c.type, true)}${comment(c.description)}`,
  );
  return [
    `CREATE EXTERNAL TABLE IF NOT EXISTS ${backtick(table.toLowerCase())} (`,
    columns.join(',\n'),
    ')',
    ...(layout.partitions.length
      ? [`PARTITIONED BY (${layout.partitions.map((p) => `${backtick(p.toLowerCase())} string`).join(', ')})`]
      : []),
    'STORED AS PARQUET',
    `LOCATION '${layout.location}'`,
    `TBLPROPERTIES ('catalog-streams.schema-hash' = '${schema.hash}');`,
    ...(layout.partitions.length ? [`-- then: MSCK REPAIR TABLE ${backtick(table.toLowerCase())};`] : []),
  ].join('\n');
}
