// The Parquet column schema of a sink, derived from the record contract (the
// pipeline's record schema, see src/core/record-schema.ts) and the sink's
// options, before the first record: the same pipeline file writes the same
// columns, in the same order and with the same types, in every file of every run,
// whatever the data. No sample decides a type.
//
// Columns:
// - top-level fields in declaration order; objects flattened into `parent_child`
//   columns (`nested: flatten`), kept as STRUCT (`nested: struct`) or as one JSON
//   column each (`nested: json`);
// - lists of scalars -> LIST of that type; lists of objects -> LIST<STRUCT> with
//   typed members, nested objects inside as STRUCT (`lists: native`), or JSON text
//   (`lists: json`);
// - codes (EAN/GTIN, CNK...) -> VARCHAR, an integer code zero-padded to its digits;
//   prices -> BIGINT minor units, or DECIMAL(18,2) with `prices: decimal`;
//   timestamps (declared, or integers named `...At`) -> TIMESTAMP WITH TIME ZONE,
//   also inside lists; localized objects and other open values -> JSON;
// - `_extra` (JSON), always last: an object of every value the schema does not name,
//   or that does not fit its column, keyed by its path (`cnk`, `brands[2].logo`), so
//   nothing is lost and nothing undeclared fails a run.
// Hive partition keys of the path template are left out (their values live in the path).
// Column and STRUCT member names follow `columnNames` (column-names.ts): the record's names as
// they are, or snake_case; record paths (`_extra` keys, `columns:`) stay the record's names.
import { createHash } from 'node:crypto';
import { ConfigError } from '../../errors.js';
import {
  declaredType,
  type CodeInfo,
  type DeclaredTypeName,
  type FieldType,
  type RecordField,
  type RecordSchema,
} from '../../core/record-schema.js';
import { integerCode } from '../../core/integer-code.js';
import { stringifyJson } from './json-text.js';
import type { ColumnType, ShapedRow, TypedColumn } from './column-types.js';
import { isPlainObject } from '../../values.js';
import { columnNamer, type ColumnNaming } from './column-names.js';
import { checkNoLineageField, extractedAtValue, LINEAGE_COLUMNS, lineageClash, type LineageValues } from './lineage.js';

export {
  DECLARED_TYPE_NAMES as COLUMN_TYPE_NAMES,
  type DeclaredTypeName as ColumnTypeName,
} from '../../core/record-schema.js';

/** The JSON column that holds what the schema does not name. */
export const EXTRA_COLUMN = '_extra';

export interface ColumnSchemaSettings {
  /** Objects outside lists: flattened into parent_child columns, STRUCT columns, or one JSON column each. */
  nested: 'flatten' | 'struct' | 'json';
  /** Lists of objects: LIST<STRUCT>, or JSON text. */
  lists: 'native' | 'json';
  /** Integer fields (dotted paths) stored as timestamps; default: declared timestamps and names ending in `At`. */
  timestampFields?: readonly string[] | undefined;
  /** `raw` keeps timestamps as the integers given (INT64). */
  timestamps: 'millis' | 'micros' | 'raw';
  /** Unit of integer timestamps in the records. */
  timestampInput: 'seconds' | 'milliseconds';
  /** Prices: BIGINT minor units (cents) as the API sends them, or DECIMAL(18,2). */
  prices: 'minor-units' | 'decimal';
  /** Column names left out of the data: Hive partition keys, whose values live in the path. */
  excluded: ReadonlySet<string>;
  /** Column and STRUCT member names: the record's field names (default), or snake_case. */
  columnNames?: ColumnNaming | undefined;
  /** `lineage: true`: `_run_id` and `_extracted_at` before `_extra`, the same in every row (lineage.ts). */
  lineage?: LineageValues | undefined;
}

/** A top-level column: its Parquet name and type, the record path it reads and what it means. */
export interface ColumnDef {
  name: string;
  /** Field path in the record (one key unless flattened). */
  path: string[];
  type: ColumnType;
  description?: string | undefined;
}

/** `columns: {cnk: string, "meta.source": string, "brands[].logo": string}` on top of the contract. */
export function withDeclaredColumns(
  schema: RecordSchema,
  columns: Record<string, DeclaredTypeName> | undefined,
): RecordSchema {
  if (!columns) return schema;
  let fields = schema.fields;
  for (const [key, typeName] of Object.entries(columns)) {
    const steps = parseDeclaredPath(key);
    fields = setAt(fields, steps, declaredType(typeName), key);
  }
  return { fields };
}

function parseDeclaredPath(key: string): Array<{ key: string; each: boolean }> {
  const parts = key.split('.');
  return parts.map((part) => {
    const each = part.endsWith('[]');
    const name = each ? part.slice(0, -2) : part;
    if (name === '' || /[[\]]/.test(name))
      throw new ConfigError(`columns: "${key}" is not a field path (a.b.c, or brands[].name into a list)`, {
        path: `columns.${key}`,
      });
    return { key: name, each };
  });
}

function setAt(
  fields: readonly RecordField[],
  steps: ReadonlyArray<{ key: string; each: boolean }>,
  type: FieldType,
  source: string,
): readonly RecordField[] {
  const [step, ...rest] = steps;
  const at = fields.findIndex((f) => f.name === step!.key);
  if (rest.length === 0 && !step!.each) {
    const out = [...fields];
    if (at >= 0) out[at] = { name: step!.key, type };
    else out.push({ name: step!.key, type });
    return out;
  }
  const existing = at >= 0 ? fields[at]!.type : undefined;
  let inner: FieldType | undefined = existing;
  if (step!.each) {
    if (existing && existing.kind !== 'list')
      throw new ConfigError(`columns: "${source}": "${step!.key}" is not a list in the schema`, {
        path: `columns.${source}`,
      });
    inner = existing?.kind === 'list' ? existing.element : undefined;
  }
  let replaced: FieldType;
  if (rest.length === 0) replaced = type;
  else {
    if (inner && inner.kind !== 'struct')
      throw new ConfigError(`columns: "${source}": "${step!.key}" is not an object in the schema`, {
        path: `columns.${source}`,
      });
    replaced = { kind: 'struct', fields: setAt(inner?.kind === 'struct' ? inner.fields : [], rest, type, source) };
  }
  const value: FieldType = step!.each ? { kind: 'list', element: replaced } : replaced;
  const out = [...fields];
  if (at >= 0) out[at] = { name: step!.key, type: value };
  else out.push({ name: step!.key, type: value });
  return out;
}

// ---------------------------------------------------------------------------
// The column schema

/** Two fields under one column (or STRUCT member) name: a config error naming both, and the way out. */
export class ColumnNameClashError extends ConfigError {
  constructor(name: string, first: string, second: string, settings: Pick<ColumnSchemaSettings, 'columnNames'>) {
    const snake = settings.columnNames === 'snake_case';
    super(
      `column "${name}" would hold both "${first}" and "${second}"` +
        (snake ? ' (columnNames: snake_case maps both to that name)' : '') +
        `; rename one of them (the rename transform)${snake ? ', or set columnNames: as-is' : ', or use nested: struct'}`,
      { path: snake ? 'columnNames' : 'columns' },
      { code: 'config.column_name_clash' },
    );
  }
}

/** How a record value becomes the physical value of its column (or MISMATCH). */
type Converter = (value: unknown, shaper: RecordShaper) => unknown;

/** `list`: the column beside it that takes a list sent where one code is declared (`eanGtin13List`). */
type LeafNode = { column: number; convert: Converter; list?: { column: number; convert: Converter } };
type ExcludedNode = { excluded: true };
/** An object flattened into columns. `prefix`: its dotted path, for the `_extra` keys. */
type ObjectNode = { children: Map<string, SchemaNode>; prefix: string };
type SchemaNode = LeafNode | ExcludedNode | ObjectNode;

const MISMATCH = Symbol('mismatch');
/** The name of the list column beside a code column that also takes lists (`eanGtin13List`). */
export const LIST_SUFFIX = 'List';
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

type BuiltColumn = { type: ColumnType; convert: Converter; description?: string | undefined };

/** Walks a RecordSchema once into a ColumnSchema's columns, converters and node tree. */
class ColumnBuilder {
  readonly columns: ColumnDef[] = [];
  readonly #settings: ColumnSchemaSettings;
  readonly #converters: Converter[];
  readonly #timestampPaths: ReadonlySet<string> | undefined;
  readonly #rename: (name: string) => string;

  constructor(settings: ColumnSchemaSettings, converters: Converter[]) {
    this.#settings = settings;
    this.#converters = converters;
    this.#timestampPaths = settings.timestampFields ? new Set(settings.timestampFields) : undefined;
    this.#rename = columnNamer(settings.columnNames);
  }

  #isTimestamp(path: readonly string[], type: FieldType): boolean {
    if (type.kind === 'timestamp') return true;
    if (type.kind !== 'int64' && type.kind !== 'int32') return false;
    if (this.#timestampPaths) return this.#timestampPaths.has(path.join('.'));
    return /[a-z0-9]At$/.test(path[path.length - 1]!);
  }

  // A STRUCT member's name; two members of one struct under one name is a config error naming both.
  #memberName(path: readonly string[], key: string, siblings: readonly RecordField[]): string {
    const rename = this.#rename;
    const name = rename(key);
    const before = siblings.slice(
      0,
      siblings.findIndex((f) => f.name === key),
    );
    const other = before.find((f) => rename(f.name) === name);
    if (other)
      throw new ColumnNameClashError(name, [...path, other.name].join('.'), [...path, key].join('.'), this.#settings);
    return name;
  }

  build(type: FieldType, path: string[]): BuiltColumn {
    if (this.#isTimestamp(path, type)) return timestampColumn(this.#settings);
    switch (type.kind) {
      case 'list':
        return this.#list(type, path);
      case 'struct':
        return this.#struct(type, path);
      default:
        return scalarColumn(type, this.#settings);
    }
  }

  #list(type: FieldType & { kind: 'list' }, path: string[]): BuiltColumn {
    const { element } = type;
    const { lists } = this.#settings;
    if (element.kind === 'struct' && lists === 'json') return { type: { kind: 'json' }, convert: jsonConverter };
    if (element.kind === 'list' && element.element.kind === 'struct' && lists === 'json')
      return { type: { kind: 'json' }, convert: jsonConverter };
    const inner = this.build(element, path);
    return {
      type: { kind: 'list', element: inner.type },
      convert: listConverter(inner.convert),
      description: inner.description,
    };
  }

  #struct(type: FieldType & { kind: 'struct' }, path: string[]): BuiltColumn {
    const members = type.fields.map((f) => ({
      key: f.name,
      name: this.#memberName(path, f.name, type.fields),
      ...this.build(f.type, [...path, f.name]),
    }));
    const convert = structConverter(members.map((m) => [m.key, m.name, m.convert] as const));
    const { bareKey } = type;
    return {
      type: { kind: 'struct', fields: members.map((m) => ({ name: m.name, type: m.type })) },
      // A bare id where the object is declared (brands: [411]) is that object with only its id.
      convert: bareKey === undefined ? convert : (v, s) => convert(isPlainObject(v) ? v : { [bareKey]: v }, s),
    };
  }

  #addColumn(path: string[], node: ObjectNode, key: string, built: BuiltColumn): void {
    const { columns } = this;
    const recordName = path.join('_');
    const name = path.map(this.#rename).join('_');
    // Partition keys name the record's field (`status={status}`), whichever naming the columns have.
    if (this.#settings.excluded.has(recordName) || this.#settings.excluded.has(name)) {
      node.children.set(key, { excluded: true });
      return;
    }
    const clash = columns.find((c) => c.name === name);
    if (clash) throw new ColumnNameClashError(name, clash.path.join('.'), path.join('.'), this.#settings);
    node.children.set(key, { column: columns.length, convert: built.convert });
    this.#converters.push(built.convert);
    columns.push({ name, path, type: built.type, description: built.description });
  }

  addFields(fields: readonly RecordField[], prefix: string[], node: ObjectNode): void {
    const { nested } = this.#settings;
    for (const f of fields) {
      const path = [...prefix, f.name];
      if (f.type.kind === 'struct' && !this.#isTimestamp(path, f.type) && nested !== 'struct') {
        if (nested === 'json') {
          this.#addColumn(path, node, f.name, { type: { kind: 'json' }, convert: jsonConverter });
          continue;
        }
        const child: ObjectNode = { children: new Map(), prefix: `${path.join('.')}.` };
        node.children.set(f.name, child);
        this.addFields(f.type.fields, path, child);
        continue;
      }
      this.#addColumn(path, node, f.name, this.build(f.type, path));
      if (f.type.kind === 'string' && f.type.alsoList) this.#addListBeside(path, node, f.name, f.type);
    }
  }

  // `eanGtin13List` beside `eanGtin13`: every code when the service sent several (lake contract, "Codes").
  #addListBeside(path: string[], node: ObjectNode, key: string, type: FieldType & { kind: 'string' }): void {
    const leaf = node.children.get(key);
    if (leaf === undefined || !('column' in leaf)) return;
    const listPath = [...path.slice(0, -1), `${key}${LIST_SUFFIX}`];
    const built = this.build({ kind: 'list', element: { ...type, alsoList: false } }, listPath);
    const column = this.columns.length;
    this.#addColumn(listPath, { children: new Map(), prefix: '' }, key, {
      ...built,
      description: `every code when the service sent a list of several (the first is in ${path.map(this.#rename).join('_')}); null otherwise`,
    });
    if (this.columns.length > column) leaf.list = { column, convert: built.convert };
  }

  /** The columns with `_extra` last. */
  finish(): ColumnDef[] {
    const { columns } = this;
    if (columns.some((c) => c.name === EXTRA_COLUMN)) {
      throw new ConfigError(`a field named "${EXTRA_COLUMN}" clashes with the column of undeclared fields; rename it`, {
        path: 'columns',
      });
    }
    columns.push({
      name: EXTRA_COLUMN,
      path: [EXTRA_COLUMN],
      type: { kind: 'json' },
      description: 'fields the schema does not name, keyed by path (JSON object)',
    });
    return columns;
  }
}

function timestampColumn(settings: ColumnSchemaSettings): BuiltColumn {
  const { timestamps } = settings;
  const type: ColumnType = {
    kind: timestamps === 'raw' ? 'int64' : timestamps === 'micros' ? 'timestamp-micros' : 'timestamp-millis',
  };
  return { type, convert: timestampConverter(settings) };
}

/** A scalar field's column: its type, converter and, for codes, prices, measures and text booleans, what it holds. */
function scalarColumn(
  type: Exclude<FieldType, { kind: 'list' | 'struct' }>,
  settings: ColumnSchemaSettings,
): BuiltColumn {
  switch (type.kind) {
    case 'timestamp':
      return timestampColumn(settings);
    case 'string':
      return type.code
        ? { type: { kind: 'string' }, convert: codeConverter(type.code), description: codeDescription(type.code) }
        : { type: { kind: 'string' }, convert: stringConverter };
    case 'int32':
      return { type: { kind: 'int32' }, convert: int32Converter };
    case 'int64':
      if (!type.price) return { type: { kind: 'int64' }, convert: int64Converter };
      return settings.prices === 'decimal'
        ? {
            type: { kind: 'decimal' },
            convert: int64Converter,
            description: 'price, DECIMAL(18,2) from the integer minor units (cents) the API sends',
          }
        : {
            type: { kind: 'int64' },
            convert: int64Converter,
            description: 'price in integer minor units (cents), as the API sends it',
          };
    case 'double':
      return type.unit
        ? {
            type: { kind: 'double' },
            convert: measureConverter(type.unit),
            description: `in ${type.unit} (the live service's {value, unit} written as its value)`,
          }
        : { type: { kind: 'double' }, convert: doubleConverter };
    case 'boolean':
      return type.text
        ? {
            type: { kind: 'boolean' },
            convert: booleanTextConverter,
            description: 'sent as text "true"/"false"; other text is kept in _extra',
          }
        : { type: { kind: 'boolean' }, convert: booleanConverter };
    case 'json':
      return {
        type: { kind: 'json' },
        convert: jsonConverter,
        description: type.localized ? 'localized text: {"en": ..., "nl": ...}' : undefined,
      };
  }
}

export class ColumnSchema {
  /** The columns as written, `_extra` last. */
  readonly columns: readonly ColumnDef[];
  readonly settings: ColumnSchemaSettings;
  /** @internal */
  readonly root: ObjectNode;
  /** @internal converters by column index */
  readonly converters: Converter[] = [];
  /** Columns every row holds the same value in (lineage), set after the record's: [column, value]. */
  readonly constants: ReadonlyArray<readonly [number, unknown]>;
  #hash: string | undefined;

  constructor(schema: RecordSchema, settings: ColumnSchemaSettings) {
    this.settings = settings;
    this.root = { children: new Map(), prefix: '' };
    const builder = new ColumnBuilder(settings, this.converters);
    builder.addFields(schema.fields, [], this.root);
    this.constants = settings.lineage ? addLineageColumns(builder.columns, settings.lineage) : [];
    this.columns = builder.finish();
  }

  /** Columns as the encoder needs them. */
  parquetColumns(): TypedColumn[] {
    return this.columns.map((c) => ({ name: c.name, type: c.type }));
  }

  /** For manifests, the footer and the `schema` command: `[{name, type (DuckDB spelling), description?}]`. */
  describe(): Array<{ name: string; type: string; description?: string }> {
    return this.columns.map((c) => ({
      name: c.name,
      type: duckdbType(c.type),
      ...(c.description ? { description: c.description } : {}),
    }));
  }

  /** A short hash of the column names and types: equal hashes, identical Parquet schemas. */
  get hash(): string {
    this.#hash ??= createHash('sha256')
      .update(JSON.stringify(this.columns.map((c) => [c.name, duckdbType(c.type)])))
      .digest('hex')
      .slice(0, 16);
    return this.#hash;
  }
}

/** The lineage columns (lineage.ts) after the record's: a record field of that name is a config error. */
function addLineageColumns(columns: ColumnDef[], lineage: LineageValues): Array<readonly [number, unknown]> {
  for (const c of columns)
    if ((LINEAGE_COLUMNS as readonly string[]).includes(c.name)) throw lineageClash(c.path.join('.'));
  const at = columns.length;
  columns.push(
    {
      name: LINEAGE_COLUMNS[0],
      path: [LINEAGE_COLUMNS[0]],
      type: { kind: 'string' },
      description: 'the run that wrote the row (the run id of the summary and the manifest)',
    },
    {
      name: LINEAGE_COLUMNS[1],
      path: [LINEAGE_COLUMNS[1]],
      type: { kind: lineage.micros ? 'timestamp-micros' : 'timestamp-millis' },
      description: "the start of that run's extraction (one instant per run)",
    },
  );
  return [
    [at, lineage.runId],
    [at + 1, extractedAtValue(lineage)],
  ];
}

/** The DuckDB spelling of a column type: `VARCHAR`, `STRUCT(id BIGINT, name_en VARCHAR)[]`, `TIMESTAMP WITH TIME ZONE`. */
export function duckdbType(type: ColumnType, quote: (name: string) => string = quoteDuckdb): string {
  switch (type.kind) {
    case 'string':
      return 'VARCHAR';
    case 'json':
      return 'JSON';
    case 'int32':
      return 'INTEGER';
    case 'int64':
      return 'BIGINT';
    case 'double':
      return 'DOUBLE';
    case 'boolean':
      return 'BOOLEAN';
    case 'decimal':
      return 'DECIMAL(18,2)';
    case 'timestamp-millis':
    case 'timestamp-micros':
      return 'TIMESTAMP WITH TIME ZONE';
    case 'list':
      return `${duckdbType(type.element, quote)}[]`;
    case 'struct':
      return `STRUCT(${type.fields.map((f) => `${quote(f.name)} ${duckdbType(f.type, quote)}`).join(', ')})`;
  }
}

const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** SQL keywords DuckDB (and Spark, Athena) do not take as bare names (`order` is a catalog category field). */
const RESERVED = new Set(
  (
    'all analyse analyze and any array as asc asymmetric both by case cast check collate column constraint create ' +
    'current_date current_time current_timestamp current_user default deferrable desc distinct do else end except ' +
    'false fetch for foreign from grant group having in initially intersect into lateral leading limit localtime ' +
    'localtimestamp not null offset on only or order placing primary qualify references returning select session_user ' +
    'some symmetric table then to trailing true union unique user using variadic when where window with pivot unpivot'
  ).split(' '),
);

/** A column name as DuckDB takes it: bare when it is a plain identifier and no keyword, else double-quoted. */
export function quoteDuckdb(name: string): string {
  return PLAIN_IDENTIFIER.test(name) && !RESERVED.has(name.toLowerCase()) ? name : `"${name.replace(/"/g, '""')}"`;
}

// ---------------------------------------------------------------------------
// Converters: record values to physical values (bigints for INT64, strings...)

function stringConverter(v: unknown, s: RecordShaper): unknown {
  if (typeof v !== 'string') return MISMATCH;
  s.bytes += v.length + 4;
  return v;
}

/** The column comment: what a reader may assume of the code's digits. */
function codeDescription(code: CodeInfo): string {
  if (code.padTo) return `code of ${code.padTo} digits, leading zeros kept`;
  if (code.evenDigits) return 'HS code: an even number of digits, leading zero kept';
  return 'code, digits as sent';
}

/**
 * A string is written exactly as sent (the service sent its zeros: a shorter string is another
 * code, not one to pad); an integer gets back the zeros JSON dropped (core/integer-code.ts).
 */
function codeConverter(code: CodeInfo): Converter {
  return (v, s) => {
    let digits: string;
    if (typeof v === 'string') {
      s.bytes += v.length + 4;
      return v;
    } else if (typeof v === 'number') {
      if (!Number.isSafeInteger(v) || v < 0) return MISMATCH;
      digits = String(v);
    } else if (typeof v === 'bigint') {
      if (v < 0n) return MISMATCH;
      digits = v.toString();
    } else return MISMATCH;
    const out = integerCode(digits, code);
    s.bytes += out.length + 4;
    return out;
  };
}

function int32Converter(v: unknown, s: RecordShaper): unknown {
  s.bytes += 4;
  if (typeof v === 'number') return Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31 ? v : MISMATCH;
  if (typeof v === 'bigint') return v >= -(2n ** 31n) && v < 2n ** 31n ? Number(v) : MISMATCH;
  return MISMATCH;
}

function int64Converter(v: unknown, s: RecordShaper): unknown {
  s.bytes += 8;
  if (typeof v === 'number') return Number.isSafeInteger(v) ? BigInt(v) : MISMATCH;
  if (typeof v === 'bigint') return v >= INT64_MIN && v <= INT64_MAX ? v : MISMATCH;
  return MISMATCH;
}

function doubleConverter(v: unknown, s: RecordShaper): unknown {
  s.bytes += 8;
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return v >= -(2n ** 53n) && v <= 2n ** 53n ? Number(v) : MISMATCH;
  return MISMATCH;
}

function booleanConverter(v: unknown, s: RecordShaper): unknown {
  s.bytes += 1;
  return typeof v === 'boolean' ? v : MISMATCH;
}

/** Exactly "true" and "false" (the spec's and the service's spelling); "yes", "1", "True" stay text in `_extra`. */
function booleanTextConverter(v: unknown, s: RecordShaper): unknown {
  s.bytes += 1;
  if (typeof v === 'boolean') return v;
  return v === 'true' ? true : v === 'false' ? false : MISMATCH;
}

/**
 * A number, or `{value, unit}` with exactly the column's unit: the unit is the column's, so only the
 * number is written. Another unit or another member and the object is kept whole in `_extra`.
 */
function measureConverter(unit: string): Converter {
  return (v, s) => {
    if (!isPlainObject(v)) return doubleConverter(v, s);
    let members = 0;
    for (const _ in v) members++;
    if (members !== 2 || v.unit !== unit || typeof v.value !== 'number') return MISMATCH;
    return doubleConverter(v.value, s);
  };
}

function jsonConverter(v: unknown, s: RecordShaper): unknown {
  const text = stringifyJson(v);
  s.bytes += text.length + 4;
  return text;
}

/**
 * Integers (and bigints) in `timestampInput` units, Dates and ISO-8601 strings, to the
 * stored unit: milliseconds or microseconds since the epoch, or (raw) the integer as given.
 */
function timestampConverter({ timestamps, timestampInput }: ColumnSchemaSettings): Converter {
  if (timestamps === 'raw') {
    return (v, s) => {
      if (v instanceof Date) {
        const ms = v.getTime();
        s.bytes += 8;
        return Number.isNaN(ms) ? MISMATCH : BigInt(timestampInput === 'seconds' ? Math.floor(ms / 1000) : ms);
      }
      return int64Converter(v, s);
    };
  }
  const inputPerSecond = timestampInput === 'seconds' ? 1 : 1000;
  const outputPerSecond = timestamps === 'micros' ? 1_000_000 : 1000;
  const fromMillis = (ms: number) =>
    Number.isFinite(ms) ? BigInt(Math.round(ms * (outputPerSecond / 1000))) : MISMATCH;
  return (v, s) => {
    s.bytes += 8;
    if (typeof v === 'number') {
      if (!Number.isFinite(v) || (Number.isInteger(v) && !Number.isSafeInteger(v))) return MISMATCH;
      return BigInt(Math.round((v * outputPerSecond) / inputPerSecond));
    }
    if (typeof v === 'bigint')
      return inputPerSecond === 1 ? v * BigInt(outputPerSecond) : (v * BigInt(outputPerSecond)) / 1000n;
    if (v instanceof Date) return fromMillis(v.getTime());
    if (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}/.test(v)) return fromMillis(Date.parse(v));
    return MISMATCH;
  };
}

/**
 * Estimated heap bytes per member of a nested value beyond its own: the slot that holds it,
 * and the value, definition and repetition level entries the Dremel shredding makes of it.
 * Counting only the values' bytes let a row group of LIST<STRUCT> products hold about three
 * times the heap its estimate said, and broke the memory bound of a constrained container.
 */
const NESTED_MEMBER_BYTES = 32;

/** Elements converted one by one; an element that does not fit is null in the list and kept in `_extra` (`ean[3]`). */
function listConverter(element: Converter): Converter {
  return (v, s) => {
    if (!Array.isArray(v)) return MISMATCH;
    // Heap, not file bytes: the array and its slots wait in the row group, and hyparquet-writer's
    // shredding adds a definition and a repetition level per element (see NESTED_MEMBER_BYTES).
    s.bytes += 16 + NESTED_MEMBER_BYTES * v.length;
    const out = new Array<unknown>(v.length);
    const path = s.path;
    for (let i = 0; i < v.length; i++) {
      const e: unknown = v[i];
      if (e === null || e === undefined) {
        out[i] = null;
        continue;
      }
      path.push(i);
      const converted = element(e, s);
      if (converted === MISMATCH) {
        s.keepExtra(e);
        out[i] = null;
      } else out[i] = converted;
      path.pop();
    }
    return out;
  };
}

/**
 * A new object with the declared members converted, under their column names; undeclared members
 * and misfits go to `_extra` (keyed by the record's names). Members: [record key, member name, converter].
 */
function structConverter(members: ReadonlyArray<readonly [string, string, Converter]>): Converter {
  const index = new Map(members.map(([key], i) => [key, i]));
  return (v, s) => {
    if (!isPlainObject(v)) return MISMATCH;
    s.bytes += 24 + NESTED_MEMBER_BYTES * members.length;
    const out: Record<string, unknown> = {};
    for (let i = 0; i < members.length; i++) out[members[i]![1]] = null;
    const path = s.path;
    for (const key in v) {
      const value = v[key];
      if (value === null || value === undefined) continue;
      path.push(key);
      const at = index.get(key);
      if (at === undefined) s.keepExtra(value);
      else {
        const member = members[at]!;
        const converted = member[2](value, s);
        if (converted === MISMATCH) s.keepExtra(value);
        else out[member[1]] = converted;
      }
      path.pop();
    }
    return out;
  };
}

// ---------------------------------------------------------------------------
// Shaping records into rows

/** Turns records into rows of physical values for the encoder; what the schema does not name goes to `_extra`. */
export class RecordShaper {
  readonly schema: ColumnSchema;
  /** @internal estimated bytes of the row being shaped */
  bytes = 0;
  /** @internal path of the value being converted (keys and list indexes) */
  readonly path: Array<string | number> = [];
  readonly #extraColumn: number;
  #extra: Record<string, unknown> | undefined;
  /** Generic paths (`brands[].logo`) seen in `_extra`, with the records that had them. */
  readonly extraFields = new Map<string, number>();
  readonly #seenInRecord = new Set<string>();
  /**
   * Called the first time a path lands in `_extra`; `declared`: the schema has a column for it and
   * this value does not fit it (a field without a column is not declared).
   */
  onNewExtraField: ((path: string, value: unknown, declared: boolean) => void) | undefined;
  #undeclared = false;

  constructor(schema: ColumnSchema) {
    this.schema = schema;
    this.#extraColumn = schema.columns.length - 1;
  }

  /** The row for `record`, in column order. */
  shape(record: Record<string, unknown>): ShapedRow {
    const values: unknown[] = new Array(this.schema.columns.length).fill(null);
    this.bytes = 0;
    this.#extra = undefined;
    this.#walk(this.schema.root, record, values);
    if (this.schema.constants.length > 0) {
      // A record's own `_run_id` would otherwise go to `_extra` beside the column of that name.
      checkNoLineageField(record, 'a sink with lineage: true');
      for (const [column, value] of this.schema.constants) values[column] = value;
    }
    if (this.#extra !== undefined) {
      const text = stringifyJson(this.#extra);
      values[this.#extraColumn] = text;
      this.bytes += text.length + 4;
      this.#extra = undefined;
      this.#seenInRecord.clear();
    }
    return { values, bytes: this.bytes };
  }

  #walk(node: ObjectNode, obj: Record<string, unknown>, values: unknown[]): void {
    const path = this.path;
    for (const key in obj) {
      const value = obj[key];
      if (value === null || value === undefined) continue;
      const child = node.children.get(key);
      if (child === undefined) {
        path.push(key);
        this.#undeclared = true;
        this.#keepAt(node, value);
        this.#undeclared = false;
        path.pop();
        continue;
      }
      if ('excluded' in child) continue;
      path.push(key);
      if ('column' in child) {
        if (child.list !== undefined && Array.isArray(value)) this.#codeList(child, child.list, value, values);
        else {
          const converted = child.convert(value, this);
          if (converted === MISMATCH) this.#keepAt(node, value);
          else values[child.column] = converted;
        }
      } else if (isPlainObject(value)) {
        this.#walk(child, value, values);
      } else {
        this.#keepAt(node, value);
      }
      path.pop();
    }
  }

  /**
   * A list of codes where one is declared: its first code in the column, and the whole list in the
   * list column beside it when it has more than one; a code that does not fit keeps the list in `_extra`.
   */
  #codeList(leaf: LeafNode, list: { column: number; convert: Converter }, value: unknown[], values: unknown[]): void {
    const first = value.find((v) => v !== null && v !== undefined);
    if (first === undefined) return;
    // Whole or not at all: one value that is no code keeps the list as sent, in `_extra` only.
    if (!value.every(isCodeValue)) {
      this.keepExtra(value);
      return;
    }
    const converted = leaf.convert(first, this);
    const all = value.length > 1 ? list.convert(value, this) : null;
    if (converted === MISMATCH || all === MISMATCH) {
      this.keepExtra(value);
      return;
    }
    values[leaf.column] = converted;
    values[list.column] = all;
  }

  /** Keeps `value` in `_extra` under the current path (an object is kept whole when it carries data). */
  #keepAt(_node: ObjectNode, value: unknown): void {
    if (isPlainObject(value) && !carriesData(value)) return;
    this.keepExtra(value);
  }

  /** @internal Keeps `value` in `_extra` under the current path. */
  keepExtra(value: unknown): void {
    const key = formatPath(this.path, false);
    (this.#extra ??= {})[key] = value;
    const generic = formatPath(this.path, true);
    if (this.#seenInRecord.has(generic)) return;
    this.#seenInRecord.add(generic);
    const count = this.extraFields.get(generic);
    this.extraFields.set(generic, (count ?? 0) + 1);
    if (count === undefined) this.onNewExtraField?.(generic, value, !this.#undeclared);
  }
}

/** A value a code column takes: a string, a non-negative safe integer or bigint; null in a list. */
function isCodeValue(v: unknown): boolean {
  if (v === null || typeof v === 'string') return true;
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0;
  return typeof v === 'bigint' && v >= 0n;
}

function formatPath(path: ReadonlyArray<string | number>, generic: boolean): string {
  let out = '';
  for (const step of path) {
    if (typeof step === 'number') out += generic ? '[]' : `[${step}]`;
    else out += out === '' ? step : `.${step}`;
  }
  return out;
}

function carriesData(value: unknown): boolean {
  if (value === null || value === undefined) return false;
  if (isPlainObject(value)) {
    for (const key in value) if (carriesData(value[key])) return true;
    return false;
  }
  return true;
}

/** `string "0012…"`, `integer 9007199254740993 (…)`, `array [3 items]`, … : a value as a column type sees it. */
export function describeColumnValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return `array [${v.length} item${v.length === 1 ? '' : 's'}]`;
  if (v instanceof Date) return `date ${v.toISOString()}`;
  switch (typeof v) {
    case 'string':
      return `string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
    case 'number':
      if (!Number.isInteger(v)) return `number ${v}`;
      return Number.isSafeInteger(v)
        ? `integer ${v}`
        : `integer ${v} (beyond 2^53 as a JS number, so it may have lost precision; parse it as a BigInt)`;
    case 'bigint':
      return `bigint ${v}`;
    case 'boolean':
      return `boolean ${v}`;
    case 'object':
      return 'object';
    default:
      return typeof v;
  }
}
