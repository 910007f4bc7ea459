// The record contract: what the records reaching a stage look like, known before
// the first record. A source's schema comes from its resource declaration
// (src/catalog/resources, read by core/zod-column-hints.ts); each transform
// definition states how it changes it (`schema` in its StageDefinition), and
// sinks turn the result into their column schema. Nothing here looks at data.
//
// The schema is open: records may carry fields it does not name. Sinks keep those
// losslessly (the Parquet `_extra` column), so a schema only has to be right about
// what it names.
import { ConfigError } from '../errors.js';
import type { FieldPath, PathStep } from './field-path.js';

/**
 * A code (EAN/GTIN, CNK...): a string column. A string is written as sent; an integer gets back the
 * leading zeros JSON dropped (core/integer-code.ts): zero-padded to `padTo` digits (0: none), or
 * to an even digit count (`evenDigits`, HS codes).
 */
export interface CodeInfo {
  /** Most digits, when the code has a limit. */
  digits?: number | undefined;
  padTo: number;
  /** HS codes: an integer of an odd digit count lost one leading zero (chapters 01-09), never more. */
  evenDigits?: boolean | undefined;
}

export type FieldType =
  /**
   * `alsoList`: the live service may send a list of these codes instead of one (eanGtin13 for one
   * client): the first (or only) code fills the column, and a list of more than one also fills the
   * `<name>List` column a sink puts beside it (docs/lake-contract.md, "Codes").
   */
  | { kind: 'string'; code?: CodeInfo; alsoList?: boolean }
  | { kind: 'int32' | 'timestamp' }
  /** `unit`: a measure the service may send as `{value, unit}` (the live conservation temperatures), written as its value. */
  | { kind: 'double'; unit?: string }
  /** `text`: a flag the service sends as "true"/"false" (GS1 category `active`), written as a boolean. */
  | { kind: 'boolean'; text?: boolean }
  /** `price`: integer minor units (cents), written as DECIMAL on request. */
  | { kind: 'int64'; price?: boolean }
  /** Any JSON value; `localized`: an object keyed by locale code (flatten-locales turns it into strings). */
  | { kind: 'json'; localized?: boolean }
  /**
   * `bareKey`: the live service may send the bare value of this member instead of the object
   * (brand ids `[411, 412]` for brand objects): it is written as `{[bareKey]: value}`.
   */
  | { kind: 'struct'; fields: readonly RecordField[]; bareKey?: string }
  | { kind: 'list'; element: FieldType };

export interface RecordField {
  readonly name: string;
  readonly type: FieldType;
}

export interface RecordSchema {
  readonly fields: readonly RecordField[];
}

/** What a transform's `schema` function may know besides its input and options. */
export interface SchemaEnv {
  /** The resource of the pipeline's source (`product`, `media`...), when it names one. */
  resource?: string | undefined;
}

export const EMPTY_SCHEMA: RecordSchema = { fields: [] };
export const JSON_TYPE: FieldType = { kind: 'json' };
export const STRING_TYPE: FieldType = { kind: 'string' };

/** Type names accepted where a user declares a field (`columns:` of a sink or a custom stage); `T[]` is a list. */
export const DECLARED_TYPE_NAMES = [
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
export type DeclaredTypeName = (typeof DECLARED_TYPE_NAMES)[number];

export function declaredType(name: DeclaredTypeName): FieldType {
  if (name.endsWith('[]')) return { kind: 'list', element: declaredType(name.slice(0, -2) as DeclaredTypeName) };
  return { kind: name as Exclude<DeclaredTypeName, `${string}[]`> } as FieldType;
}

/** The fields with `replacement` put where `name` was (or appended when it was absent). */
export function withField(
  fields: readonly RecordField[],
  name: string,
  replacement: readonly RecordField[],
): RecordField[] {
  const at = fields.findIndex((f) => f.name === name);
  const rest = fields.filter((f) => f.name !== name && !replacement.some((r) => r.name === f.name));
  if (at < 0) return [...rest, ...replacement];
  const before = fields.slice(0, at).filter((f) => !replacement.some((r) => r.name === f.name)).length;
  return [...rest.slice(0, before), ...replacement, ...rest.slice(before)];
}

/** Sets (adds or replaces in place) each field; fields that replace keep the old position. */
export function upsertFields(fields: readonly RecordField[], updates: readonly RecordField[]): RecordField[] {
  const out = [...fields];
  for (const update of updates) {
    const at = out.findIndex((f) => f.name === update.name);
    if (at >= 0) out[at] = update;
    else out.push(update);
  }
  return out;
}

/** Steps of a path made of keys and `[]` only (`brands[].name`), for schema rewrites. */
export type SchemaStep = { kind: 'key'; key: string } | { kind: 'each' };

export function schemaSteps(path: FieldPath, optionPath?: string): SchemaStep[] {
  return path.steps.map((s) => {
    if (s.kind === 'key' || s.kind === 'each') return s;
    throw new ConfigError(
      `${optionPath ? `${optionPath}: ` : ''}"${path.source}": only field names and [] are allowed here`,
      optionPath ? { path: optionPath } : {},
    );
  });
}

/**
 * The fields with the container at `parent` (keys and `[]` steps) rewritten by `fn`, which
 * gets the container's fields and returns the new ones. Structs on the way are copied; a
 * path through something that is not a struct (or a list of structs) leaves the schema as it is.
 */
export function rewriteContainer(
  fields: readonly RecordField[],
  parent: readonly SchemaStep[],
  fn: (fields: readonly RecordField[]) => readonly RecordField[],
): readonly RecordField[] {
  if (parent.length === 0) return fn(fields);
  const [first, ...rest] = parent;
  if (first!.kind !== 'key') return fields;
  const key = first!.key;
  const at = fields.findIndex((f) => f.name === key);
  if (at < 0) return fields;
  const type = rewriteType(fields[at]!.type, rest, fn);
  if (type === fields[at]!.type) return fields;
  const out = [...fields];
  out[at] = { name: key, type };
  return out;
}

function rewriteType(
  type: FieldType,
  rest: readonly SchemaStep[],
  fn: (fields: readonly RecordField[]) => readonly RecordField[],
): FieldType {
  if (rest[0]?.kind === 'each') {
    if (type.kind !== 'list') return type;
    const element = rewriteType(type.element, rest.slice(1), fn);
    return element === type.element ? type : { kind: 'list', element };
  }
  if (type.kind !== 'struct') return type;
  const fields = rewriteContainer(type.fields, rest, fn);
  return fields === type.fields ? type : { ...type, fields };
}

/**
 * The type a path reads (`meta.updatedAt`, `brands[].id` a list, `photos[0].formats.large`),
 * or undefined when the schema does not know it. A key into a localized object is a string.
 */
export function typeAtPath(schema: RecordSchema, steps: readonly PathStep[]): FieldType | undefined {
  let type: FieldType = { kind: 'struct', fields: schema.fields };
  let lists = 0;
  for (const step of steps) {
    if (step.kind === 'key') {
      if (type.kind === 'json' && type.localized) type = STRING_TYPE;
      else if (type.kind === 'json') type = JSON_TYPE;
      else if (type.kind === 'struct') {
        const found: RecordField | undefined = type.fields.find((f) => f.name === step.key);
        if (!found) return undefined;
        type = found.type;
      } else return undefined;
    } else {
      if (type.kind === 'json') continue;
      if (type.kind !== 'list') return undefined;
      type = type.element;
      if (step.kind !== 'index') lists++;
    }
  }
  for (let i = 0; i < lists; i++) type = { kind: 'list', element: type };
  return type;
}

/** Every leaf path of the schema with its type, `[]` marking list steps (for listings and tests). */
export function leafPaths(schema: RecordSchema): Array<{ path: string; type: FieldType }> {
  const out: Array<{ path: string; type: FieldType }> = [];
  const walk = (fields: readonly RecordField[], prefix: string) => {
    for (const f of fields) {
      const path = prefix ? `${prefix}.${f.name}` : f.name;
      let type = f.type;
      let p = path;
      while (type.kind === 'list') {
        type = type.element;
        p += '[]';
      }
      if (type.kind === 'struct') walk(type.fields, p);
      else out.push({ path: p, type });
    }
  };
  walk(schema.fields, '');
  return out;
}
