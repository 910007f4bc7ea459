// The Parquet column schema of a sink: declared (`columns:`), hinted (a resource
// zod schema, see zod-column-hints.ts) or inferred from a leading sample of
// records, then locked for the whole run. RecordShaper turns each record into a
// row of physical values for parquet-encoder.ts and reports what does not fit.
//
// Inference rules (value-based; a hint overrides them field by field):
// - strings -> string; integers -> int64; integers mixed with fractions -> double;
//   bigint -> int64; booleans -> boolean; Date -> timestamp.
// - an integer field is a unix timestamp when its path is in `timestampFields`, or, when
//   that option is not set, when its name ends in `At` after a lowercase letter or digit
//   (`createdAt`, `updatedAt`, `officialDeletionAt`).
// - nested objects: flattened into `parent_child` columns (`nested: flatten`), or one JSON
//   text column per top-level object (`nested: json`).
// - arrays of scalars -> LIST of that type (an array that was empty in every sampled record
//   -> string list); arrays of objects or of mixed types -> JSON text.
// - a field that was null in every sampled record, or mixes types (string and number),
//   -> JSON text, with a warning, so no later value can break the run; declare it to do better.
// - codes such as EAN/GTIN arrive as strings ("0012345678905") and stay strings; the
//   schema never turns a string into a number.
// - column order: first appearance in the sample; fields only a hint knows come last.
import { ConfigError, SinkError } from '../errors.js';
import { stringifyJson } from './jsonl-encoding.js';
import type { ParquetColumn, ParquetRow } from './parquet-encoder.js';

export const COLUMN_TYPES = ['string', 'int32', 'int64', 'double', 'boolean', 'timestamp', 'json'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];
/** Type names accepted in `columns:`; `T[]` is a LIST of T. */
export const COLUMN_TYPE_NAMES = [
  'string',
  'int32',
  'int64',
  'double',
  'boolean',
  'timestamp',
  'json',
  'string[]',
  'int32[]',
  'int64[]',
  'double[]',
  'boolean[]',
  'timestamp[]',
] as const;
export type ColumnTypeName = (typeof COLUMN_TYPE_NAMES)[number];

export interface ColumnDecl {
  type: ColumnType;
  list: boolean;
}

export interface ColumnDef extends ColumnDecl {
  /** Parquet column name: the field path joined with `_`. */
  name: string;
  /** Field path in the record. */
  path: string[];
}

/** What a resource schema says about a field before any record is seen. */
export type ColumnHint = { kind: 'leaf'; decl: ColumnDecl } | { kind: 'object'; fields: ReadonlyMap<string, ColumnHint> };

export interface ColumnSchemaSettings {
  nested: 'flatten' | 'json';
  /** Integer fields stored as timestamps (dotted paths); default: names ending in `At`. */
  timestampFields?: readonly string[] | undefined;
  /** `raw` keeps timestamps as the integers given (INT64). */
  timestamps: 'millis' | 'micros' | 'raw';
  /** Unit of integer timestamps in the records. */
  timestampInput: 'seconds' | 'milliseconds';
  /** Column names left out of the data: Hive partition keys, whose values live in the path. */
  excluded: ReadonlySet<string>;
}

export function parseColumnType(name: ColumnTypeName): ColumnDecl {
  const list = name.endsWith('[]');
  return { type: (list ? name.slice(0, -2) : name) as ColumnType, list };
}

export function describeDecl(decl: ColumnDecl, settings?: Pick<ColumnSchemaSettings, 'timestampInput'>): string {
  const base = decl.type === 'timestamp' && settings ? `timestamp (unix ${settings.timestampInput}, Date or ISO string)` : decl.type;
  return decl.list ? `list of ${base}` : base;
}

// ---------------------------------------------------------------------------
// The locked schema

/** Columns plus the walk tree that maps record fields to them. */
export class ColumnSchema {
  readonly columns: readonly ColumnDef[];
  readonly settings: ColumnSchemaSettings;
  /** @internal */
  readonly root: ObjectNode;

  constructor(columns: ColumnDef[], excludedPaths: string[][], settings: ColumnSchemaSettings) {
    const seen = new Map<string, ColumnDef>();
    for (const c of columns) {
      const other = seen.get(c.name);
      if (other) {
        throw new SinkError(
          `Parquet column "${c.name}" would hold both "${other.path.join('.')}" and "${c.path.join('.')}"; ` +
            `declare columns explicitly or use nested: json`,
          { code: 'sink.parquet.schema' },
        );
      }
      seen.set(c.name, c);
    }
    this.columns = columns;
    this.settings = settings;
    this.root = { children: new Map(), prefix: '' };
    columns.forEach((c, index) => insertNode(this.root, c.path, { leaf: c, index }));
    for (const path of excludedPaths) insertNode(this.root, path, { excluded: true });
  }

  /** Columns as the encoder needs them (timestamps resolved to their physical unit). */
  parquetColumns(): ParquetColumn[] {
    return this.columns.map((c) => ({ name: c.name, list: c.list, type: physicalType(c.type, this.settings) }));
  }

  /** For manifests and logs: `[{name, type, list, from}]`. */
  describe(): Array<{ name: string; type: string; list: boolean; field: string }> {
    return this.columns.map((c) => ({ name: c.name, type: physicalType(c.type, this.settings), list: c.list, field: c.path.join('.') }));
  }
}

type LeafNode = { leaf: ColumnDef; index: number };
type ExcludedNode = { excluded: true };
/** `prefix`: the dotted path of the object's fields (`meta.`), for messages about them. */
type ObjectNode = { children: Map<string, SchemaNode>; prefix: string };
type SchemaNode = LeafNode | ExcludedNode | ObjectNode;

function insertNode(root: ObjectNode, path: readonly string[], node: LeafNode | ExcludedNode): void {
  let parent = root;
  for (let i = 0; i < path.length - 1; i++) {
    const key = path[i]!;
    let next = parent.children.get(key);
    if (!next) {
      next = { children: new Map(), prefix: `${path.slice(0, i + 1).join('.')}.` };
      parent.children.set(key, next);
    }
    if (!('children' in next)) {
      throw new ConfigError(`column "${path.join('.')}" is inside "${path.slice(0, i + 1).join('.')}", which is itself a column`, {
        path: 'columns',
      });
    }
    parent = next;
  }
  const last = path[path.length - 1]!;
  const existing = parent.children.get(last);
  if (existing && !('excluded' in node && 'excluded' in existing)) {
    throw new ConfigError(`column "${path.join('.')}" is declared twice or also has nested columns`, { path: 'columns' });
  }
  parent.children.set(last, node);
}

function physicalType(type: ColumnType, settings: ColumnSchemaSettings): ParquetColumn['type'] {
  if (type !== 'timestamp') return type;
  if (settings.timestamps === 'raw') return 'int64';
  return settings.timestamps === 'micros' ? 'timestamp-micros' : 'timestamp-millis';
}

// ---------------------------------------------------------------------------
// Declared columns

/** `columns: {id: string, "meta.createdAt": timestamp, ean: "string[]"}`: keys are field paths. */
export function declaredSchema(columns: Record<string, ColumnTypeName>, settings: ColumnSchemaSettings): ColumnSchema {
  const defs: ColumnDef[] = [];
  const excluded: string[][] = [];
  for (const [key, typeName] of Object.entries(columns)) {
    const path = key.split('.');
    if (path.some((p) => p === '')) throw new ConfigError(`columns: "${key}" is not a field path (a.b.c)`, { path: `columns.${key}` });
    const def: ColumnDef = { name: path.join('_'), path, ...parseColumnType(typeName) };
    if (settings.excluded.has(def.name)) excluded.push(path);
    else defs.push(def);
  }
  return new ColumnSchema(defs, excluded, settings);
}

// ---------------------------------------------------------------------------
// Inference

const K_NULL = 1;
const K_STRING = 2;
const K_INT = 4;
const K_FLOAT = 8;
const K_BIGINT = 16;
const K_BOOL = 32;
const K_DATE = 64;
const K_OBJECT = 128;
const K_ARRAY = 256;
const K_OTHER = 512;

function kindOf(v: unknown): number {
  if (v === null || v === undefined) return K_NULL;
  switch (typeof v) {
    case 'string':
      return K_STRING;
    case 'number':
      return Number.isInteger(v) ? K_INT : K_FLOAT;
    case 'bigint':
      return K_BIGINT;
    case 'boolean':
      return K_BOOL;
    case 'object':
      if (Array.isArray(v)) return K_ARRAY;
      if (v instanceof Date) return K_DATE;
      return isPlainObject(v) ? K_OBJECT : K_OTHER;
    default:
      return K_OTHER;
  }
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

interface FieldStats {
  path: string[];
  kinds: number;
  elementKinds: number;
  children?: Map<string, FieldStats>;
}

function observe(stats: Map<string, FieldStats>, obj: Record<string, unknown>, prefix: string[], flatten: boolean): void {
  for (const key of Object.keys(obj)) {
    const value = obj[key];
    let s = stats.get(key);
    if (!s) {
      s = { path: [...prefix, key], kinds: 0, elementKinds: 0 };
      stats.set(key, s);
    }
    const kind = kindOf(value);
    s.kinds |= kind;
    if (kind === K_ARRAY) {
      for (const element of value as unknown[]) s.elementKinds |= kindOf(element);
    } else if (kind === K_OBJECT && flatten) {
      observe((s.children ??= new Map()), value as Record<string, unknown>, s.path, flatten);
    }
  }
}

export interface InferredSchema {
  schema: ColumnSchema;
  /** Things a user should know (null-only or mixed fields stored as JSON text). */
  notes: string[];
}

/** Infers the columns from sampled records (and a hint, which wins where it speaks). */
export function inferSchema(
  sample: readonly Record<string, unknown>[],
  settings: ColumnSchemaSettings,
  hint?: ColumnHint,
): InferredSchema {
  const flatten = settings.nested === 'flatten';
  const stats = new Map<string, FieldStats>();
  for (const record of sample) observe(stats, record, [], flatten);
  const notes: string[] = [];
  const timestampFields = settings.timestampFields ? new Set(settings.timestampFields) : undefined;
  const isTimestampField = (path: string[]) =>
    timestampFields ? timestampFields.has(path.join('.')) : /[a-z0-9]At$/.test(path[path.length - 1]!);

  const defs: ColumnDef[] = [];
  const leaf = (path: string[], decl: ColumnDecl) => {
    if (decl.type === 'int64' && isTimestampField(path)) decl = { ...decl, type: 'timestamp' };
    defs.push({ name: path.join('_'), path, ...decl });
  };

  // The hint describes the source resource, but transforms upstream may have
  // picked, renamed or retyped fields (normalize-codes turns integer codes into
  // strings). So the hint never adds a field the sample has (fields seen only as
  // null excepted: there it names the columns), and never overrides what the
  // sampled values show: it only refines it (whole-number `vat` -> double).
  const decideObject = (prefix: string[], fields: Map<string, FieldStats> | undefined, objectHint: ReadonlyMap<string, ColumnHint> | undefined) => {
    const keys = fields ? [...fields.keys()] : [...(objectHint?.keys() ?? [])];
    for (const key of keys) decide([...prefix, key], fields?.get(key), objectHint?.get(key));
  };

  const decide = (path: string[], s: FieldStats | undefined, h: ColumnHint | undefined): void => {
    const name = path.join('_');
    if (h?.kind === 'leaf' && hintFits(h.decl, s)) return leaf(path, h.decl);
    if (h?.kind === 'leaf') h = undefined;
    if (h?.kind === 'object') {
      if (flatten) return decideObject(path, s?.children, h.fields);
      return leaf(path, { type: 'json', list: false });
    }
    const kinds = (s?.kinds ?? K_NULL) & ~K_NULL;
    if (kinds === 0) {
      notes.push(`column "${name}" was null in every sampled record; stored as JSON text (declare it in columns to type it)`);
      return leaf(path, { type: 'json', list: false });
    }
    if (kinds === K_OBJECT) {
      if (s!.children && s!.children.size > 0) return decideObject(path, s!.children, undefined);
      return leaf(path, { type: 'json', list: false });
    }
    if (kinds === K_ARRAY) {
      const scalar = scalarType(s!.elementKinds & ~K_NULL, true);
      return leaf(path, scalar ? { type: scalar, list: true } : { type: 'json', list: false });
    }
    const scalar = scalarType(kinds, false);
    if (scalar) return leaf(path, { type: scalar, list: false });
    notes.push(`column "${name}" mixes ${describeKinds(kinds)} in the sample; stored as JSON text (declare it in columns to type it)`);
    return leaf(path, { type: 'json', list: false });
  };

  decideObject([], stats, hint?.kind === 'object' ? hint.fields : undefined);

  const columns: ColumnDef[] = [];
  const excluded: string[][] = [];
  for (const def of defs) {
    if (settings.excluded.has(def.name)) excluded.push(def.path);
    else columns.push(def);
  }
  return { schema: new ColumnSchema(columns, excluded, settings), notes };
}

/** Whether a hinted column can hold every value the sample showed for the field. */
function hintFits(decl: ColumnDecl, s: FieldStats | undefined): boolean {
  const kinds = ((decl.list ? s?.elementKinds : s?.kinds) ?? K_NULL) & ~K_NULL;
  if (decl.list && s && (s.kinds & ~K_NULL & ~K_ARRAY) !== 0) return false;
  if (!decl.list && (kinds & K_ARRAY) !== 0) return false;
  if (kinds === 0) return true;
  switch (decl.type) {
    case 'json':
      return true;
    case 'string':
      return kinds === K_STRING;
    case 'double':
      return (kinds & ~(K_INT | K_FLOAT)) === 0;
    case 'int32':
    case 'int64':
    case 'timestamp':
      return (kinds & ~(K_INT | K_BIGINT | (decl.type === 'timestamp' ? K_DATE : 0))) === 0;
    case 'boolean':
      return kinds === K_BOOL;
    default:
      return false;
  }
}

/** The column type for a set of value kinds, or undefined when they do not fit one type. */
function scalarType(kinds: number, inList: boolean): ColumnType | undefined {
  switch (kinds) {
    case 0:
      return inList ? 'string' : undefined;
    case K_STRING:
      return 'string';
    case K_INT:
    case K_BIGINT:
    case K_INT | K_BIGINT:
      return 'int64';
    case K_FLOAT:
    case K_INT | K_FLOAT:
      return 'double';
    case K_BOOL:
      return 'boolean';
    case K_DATE:
      return 'timestamp';
    default:
      return undefined;
  }
}

function describeKinds(kinds: number): string {
  const names: Array<[number, string]> = [
    [K_STRING, 'strings'],
    [K_INT, 'integers'],
    [K_FLOAT, 'fractional numbers'],
    [K_BIGINT, 'bigints'],
    [K_BOOL, 'booleans'],
    [K_DATE, 'dates'],
    [K_OBJECT, 'objects'],
    [K_ARRAY, 'arrays'],
    [K_OTHER, 'other values'],
  ];
  return names
    .filter(([k]) => kinds & k)
    .map(([, n]) => n)
    .join(' and ');
}

// ---------------------------------------------------------------------------
// Shaping records into rows

export interface Mismatch {
  /** Column name, or the dotted field path of a field that has no column. */
  column: string;
  kind: 'new-field' | 'type';
  expected: string;
  actual: string;
}

const MISMATCH = Symbol('mismatch');
type Converter = (value: unknown) => unknown;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Turns records into rows of physical values for the encoder, collecting what does not fit. */
export class RecordShaper {
  readonly schema: ColumnSchema;
  readonly #converters: Converter[];
  #bytes = 0;

  constructor(schema: ColumnSchema) {
    this.schema = schema;
    this.#converters = schema.columns.map((c) => {
      const scalar = scalarConverter(c.type, schema.settings);
      return c.list ? listConverter(scalar, c.type) : scalar;
    });
  }

  /**
   * The row for `record`; every value that does not fit (and every field without a
   * column) is pushed onto `problems` and left null in the row.
   */
  shape(record: Record<string, unknown>, problems: Mismatch[]): ParquetRow {
    const values: unknown[] = new Array(this.#converters.length).fill(null);
    this.#bytes = 0;
    this.#walk(this.schema.root, record, values, problems);
    return { values, bytes: this.#bytes };
  }

  #walk(node: ObjectNode, obj: Record<string, unknown>, values: unknown[], problems: Mismatch[]): void {
    for (const key of Object.keys(obj)) {
      const value = obj[key];
      const child = node.children.get(key);
      if (child === undefined) {
        if (carriesData(value)) {
          problems.push({ column: node.prefix + key, kind: 'new-field', expected: 'no such column', actual: describeValue(value) });
        }
        continue;
      }
      if ('excluded' in child || value === null || value === undefined) continue;
      if ('leaf' in child) {
        const converted = this.#converters[child.index]!(value);
        if (converted === MISMATCH) {
          problems.push({ column: child.leaf.name, kind: 'type', expected: describeDecl(child.leaf, this.schema.settings), actual: describeValue(value) });
        } else {
          values[child.index] = converted;
          this.#bytes += estimateSize(converted);
        }
        continue;
      }
      if (!isPlainObject(value)) {
        problems.push({ column: node.prefix + key, kind: 'type', expected: 'an object (flattened into columns)', actual: describeValue(value) });
        continue;
      }
      this.#walk(child, value, values, problems);
    }
  }
}

function carriesData(value: unknown): boolean {
  if (value === null || value === undefined) return false;
  if (isPlainObject(value)) return Object.values(value).some(carriesData);
  return true;
}

function estimateSize(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return value.length + 4;
    case 'boolean':
      return 1;
    case 'object':
      if (Array.isArray(value)) {
        let n = 4;
        for (const v of value) n += estimateSize(v);
        return n;
      }
      return 0;
    default:
      return 8;
  }
}

function scalarConverter(type: ColumnType, settings: ColumnSchemaSettings): Converter {
  switch (type) {
    case 'string':
      return (v) => (typeof v === 'string' ? v : MISMATCH);
    case 'int32':
      return (v) => {
        if (typeof v === 'number') return Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31 ? v : MISMATCH;
        if (typeof v === 'bigint') return v >= -(2n ** 31n) && v < 2n ** 31n ? Number(v) : MISMATCH;
        return MISMATCH;
      };
    case 'int64':
      return int64Converter;
    case 'double':
      return (v) => {
        if (typeof v === 'number') return v;
        if (typeof v === 'bigint') return v >= -(2n ** 53n) && v <= 2n ** 53n ? Number(v) : MISMATCH;
        return MISMATCH;
      };
    case 'boolean':
      return (v) => (typeof v === 'boolean' ? v : MISMATCH);
    case 'json':
      return (v) => stringifyJson(v);
    case 'timestamp':
      return timestampConverter(settings);
  }
}

function int64Converter(v: unknown): unknown {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? BigInt(v) : MISMATCH;
  if (typeof v === 'bigint') return v >= INT64_MIN && v <= INT64_MAX ? v : MISMATCH;
  return MISMATCH;
}

/**
 * Integers (and bigints) in `timestampInput` units, Dates and ISO-8601 strings, to
 * the stored unit: milliseconds or microseconds since the epoch, or (raw) the integer as given.
 */
function timestampConverter({ timestamps, timestampInput }: ColumnSchemaSettings): Converter {
  if (timestamps === 'raw') {
    return (v) => {
      if (v instanceof Date) {
        const ms = v.getTime();
        return Number.isNaN(ms) ? MISMATCH : BigInt(timestampInput === 'seconds' ? Math.floor(ms / 1000) : ms);
      }
      return int64Converter(v);
    };
  }
  const inputPerSecond = timestampInput === 'seconds' ? 1 : 1000;
  const outputPerSecond = timestamps === 'micros' ? 1_000_000 : 1000;
  const fromMillis = (ms: number) => (Number.isFinite(ms) ? BigInt(Math.round(ms * (outputPerSecond / 1000))) : MISMATCH);
  return (v) => {
    if (typeof v === 'number') {
      if (!Number.isFinite(v) || (Number.isInteger(v) && !Number.isSafeInteger(v))) return MISMATCH;
      return BigInt(Math.round((v * outputPerSecond) / inputPerSecond));
    }
    if (typeof v === 'bigint') {
      return inputPerSecond === 1 ? v * BigInt(outputPerSecond) : (v * BigInt(outputPerSecond)) / 1000n;
    }
    if (v instanceof Date) return fromMillis(v.getTime());
    if (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}/.test(v)) return fromMillis(Date.parse(v));
    return MISMATCH;
  };
}

function listConverter(scalar: Converter, type: ColumnType): Converter {
  const identityForStrings = type === 'string';
  return (v) => {
    if (!Array.isArray(v)) return MISMATCH;
    if (identityForStrings && v.every((e) => typeof e === 'string')) return v;
    const out = new Array(v.length);
    for (let i = 0; i < v.length; i++) {
      const e = v[i];
      if (e === null || e === undefined) {
        out[i] = null;
        continue;
      }
      const converted = scalar(e);
      if (converted === MISMATCH) return MISMATCH;
      out[i] = converted;
    }
    return out;
  };
}

/** `string "0012…"`, `integer 9007199254740993 (…)`, `array [3 items]`, … for error messages. */
export function describeValue(v: unknown): string {
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
