// CSV (RFC 4180) as a sink format. The columns are the lake contract's (column-schema.ts), as a
// flat table: objects flattened into `parent_child` columns, lists and open values as JSON text,
// codes as digit strings with their leading zeros, timestamps as ISO 8601 UTC, prices in integer
// minor units (or decimal), `_extra` (JSON) last. So a CSV file has the same columns in every run whatever the
// data, and its header is known before the first record. CSV carries no types: a reader that
// guesses them (a spreadsheet, DuckDB's sniffer) turns `0065699514566` into a number; the s3
// manifest lists the column types, README "CSV" shows how to read with them, and `catalog-streams
// schema` prints DuckDB's read_csv with every column's type.
import { z } from 'zod';
import { sinkRecordSchema } from '../../core/zod-column-hints.js';
import type { RecordSchema } from '../../core/record-schema.js';
import { ConfigError } from '../../errors.js';
import {
  ColumnSchema,
  type ColumnDef,
  describeColumnValue,
  EXTRA_COLUMN,
  RecordShaper,
} from '../shared/column-schema.js';
import { stringifyJson } from '../shared/json-text.js';
import { gzipFor, gzipOption, pricesOption } from '../shared/option-schemas.js';
import { columnNamesOption, type ColumnNaming } from '../shared/column-names.js';
import { DECIMAL_SCALE, type ColumnType } from '../shared/column-types.js';
import { COLUMNS_ONLY, lineageFor, lineageOption } from '../shared/lineage.js';
import type { RecordEncoding } from '../shared/record-sink.js';
import { defineSinkFormat, type FormatEnv } from '../shared/output-format.js';
import { TextLinesEncoder } from '../shared/text-lines-encoder.js';
import { csvPublishedSchema } from './csv-header.js';

const DELIMITERS = { comma: ',', semicolon: ';', tab: '\t', pipe: '|' } as const;

/** Renders one physical value of a column (as RecordShaper makes it for Parquet) as CSV field text. */
type Render = (value: unknown) => string;

function timestampRender(unitsPerMs: bigint): Render {
  return (v) => {
    const ms = (v as bigint) / unitsPerMs;
    const date = new Date(Number(ms));
    return Number.isNaN(date.getTime()) ? String(v) : date.toISOString();
  };
}

function decimalRender(v: unknown): string {
  const minor = v as bigint;
  const sign = minor < 0n ? '-' : '';
  const digits = (minor < 0n ? -minor : minor).toString().padStart(DECIMAL_SCALE + 1, '0');
  return `${sign}${digits.slice(0, -DECIMAL_SCALE)}.${digits.slice(-DECIMAL_SCALE)}`;
}

function renderFor(type: ColumnType): Render {
  switch (type.kind) {
    case 'string':
    case 'json':
      return (v) => v as string;
    case 'timestamp-millis':
      return timestampRender(1n);
    case 'timestamp-micros':
      return timestampRender(1000n);
    case 'decimal':
      return decimalRender;
    case 'list':
    case 'struct':
      // Lists (of codes, tags, timestamps...) and the rare struct as JSON text of their values.
      return (v) => stringifyJson(v);
    default:
      return (v) => String(v);
  }
}

/** RFC 4180: a field with the delimiter, a quote, CR or LF is quoted, its quotes doubled. */
function quoter(delimiter: string): (text: string) => string {
  const needs = new RegExp(`[${delimiter === '\t' ? '\\t' : `\\${delimiter}`}"\\r\\n]`);
  // An empty string is quoted so that it reads back as '' and an empty field as null.
  return (text) => (text === '' ? '""' : needs.test(text) ? `"${text.replaceAll('"', '""')}"` : text);
}

export interface CsvFormatOptions {
  delimiter?: keyof typeof DELIMITERS | undefined;
  header?: boolean | undefined;
  gzip?: boolean | undefined;
  prices?: 'minor-units' | 'decimal' | undefined;
  columnNames?: ColumnNaming | undefined;
  lineage?: boolean | undefined;
}

/**
 * The columns a CSV sink writes, in order: the `schema` command prints them as DuckDB's typed
 * `read_csv(..., columns = {...})` from this same schema, so the reader's types are the writer's.
 */
export function csvColumnSchema(
  recordSchema: RecordSchema,
  options: Pick<CsvFormatOptions, 'prices' | 'columnNames' | 'lineage'>,
  excluded: ReadonlySet<string>,
  run: { id: string; startedAt: Date } = COLUMNS_ONLY,
): ColumnSchema {
  return new ColumnSchema(recordSchema, {
    nested: 'flatten',
    lists: 'json',
    timestamps: 'millis',
    timestampInput: 'seconds',
    prices: options.prices ?? 'minor-units',
    excluded,
    columnNames: options.columnNames,
    lineage: lineageFor(options.lineage, run),
  });
}

/** The delimiter character of the `delimiter` option. */
export function csvDelimiter(name: CsvFormatOptions['delimiter']): string {
  return DELIMITERS[name ?? 'comma'];
}

/** The CSV format for one sink: records shaped into the contract's columns, one line each. */
export function csvFormat(options: CsvFormatOptions, env: FormatEnv): RecordEncoding<string> {
  const { ctx, stage, template, schemaHint } = env;
  const recordSchema = sinkRecordSchema(ctx, schemaHint);
  if (!recordSchema) {
    throw new ConfigError(
      `${stage}: the records' schema is unknown (the source names no resource and no schemaHint was given), so the CSV columns are unknown; ` +
        'add a custom stage with columns, pass schemaHint in code, or write jsonl',
      { path: 'format' },
      { code: 'config.schema_unknown' },
    );
  }
  const schema = csvColumnSchema(recordSchema, options, new Set(template?.fields.map((f) => f.key) ?? []), ctx.run);
  const shaper = new RecordShaper(schema);
  shaper.onNewExtraField = (path, value) => {
    ctx.events.emit('warning', {
      code: 'sink.csv.extra',
      message:
        `${stage}: field "${path}" (${describeColumnValue(value)}) is not in the CSV columns or does not fit its column; ` +
        `kept in the ${EXTRA_COLUMN} JSON column`,
    });
  };
  const delimiter = csvDelimiter(options.delimiter);
  const quote = quoter(delimiter);
  const renders = schema.columns.map((c: ColumnDef) => renderFor(c.type));
  const line = (values: unknown[]): string => {
    let out = '';
    for (let i = 0; i < values.length; i++) {
      if (i > 0) out += delimiter;
      const v = values[i];
      if (v !== null && v !== undefined) out += quote(renders[i]!(v));
    }
    return `${out}\r\n`;
  };
  const header =
    options.header === false ? undefined : `${schema.columns.map((c) => quote(c.name)).join(delimiter)}\r\n`;
  const gzip = gzipFor(options as Record<string, unknown>, env.target);
  return {
    accept: (record, _ordinal, emit) => emit(record, line(shaper.shape(record).values)),
    flush: async () => {},
    createEncoder: (destination) =>
      new TextLinesEncoder<string>(destination, { gzip, line: (text) => text, ...(header ? { header } : {}) }),
    canWriteEmpty: () => true,
    describeSchema: () => ({ hash: schema.hash, columns: schema.describe() }),
    // Without a header line an earlier file names no columns to compare with.
    ...(header
      ? { readPublishedSchema: (file: string) => csvPublishedSchema(file, delimiter, schema.describe()) }
      : {}),
    close: async () => {
      if (shaper.extraFields.size === 0) return;
      ctx.events.emit('info', {
        code: 'sink.csv.extra_fields',
        message: `${stage}: fields kept in ${EXTRA_COLUMN}: ${[...shaper.extraFields.keys()].join(', ')}`,
        fields: Object.fromEntries(shaper.extraFields),
      });
    },
    abort: async () => {},
  };
}

export const csvSinkFormat = defineSinkFormat({
  name: 'csv',
  title: 'CSV',
  pathNote: 'A path ending in .gz is gzip-compressed',
  needsColumns: true,
  description:
    'Writes records as CSV (RFC 4180, CRLF, header line): the lake contract as flat columns (objects flattened, lists and open values as JSON text, codes with their leading zeros, timestamps ISO 8601 UTC), _extra, gzip, Hive partitions, rotation, atomic commit',
  options: (target) => ({
    delimiter: z
      .enum(Object.keys(DELIMITERS) as [keyof typeof DELIMITERS, ...(keyof typeof DELIMITERS)[]])
      .optional()
      .describe(`${target === 'key' ? 'format csv: ' : ''}Field delimiter: comma (default), semicolon, tab or pipe`),
    header: z
      .boolean()
      .optional()
      .describe(`${target === 'key' ? 'format csv: ' : ''}Write the column names as the first line (default: true)`),
    prices: pricesOption,
    columnNames: columnNamesOption,
    lineage: lineageOption,
    gzip: gzipOption(target),
  }),
  optionsSet: (options) => [
    ...['delimiter', 'header', 'gzip'].filter((key) => options[key] !== undefined),
    ...(options.prices === 'decimal' ? ['prices'] : []),
    ...(options.columnNames === 'snake_case' ? ['columnNames'] : []),
  ],
  contentType: (options, target) => (gzipFor(options, target) ? 'application/gzip' : 'text/csv; charset=utf-8'),
  create: (options, env) => csvFormat(options as CsvFormatOptions, env) as RecordEncoding<unknown>,
});
