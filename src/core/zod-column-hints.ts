// The record schema of a zod (v4) declaration, read as data: the resource schemas
// of src/catalog/resources give a source's fields and types before any record is
// seen (the lake contract: no sample decides a type).
//
// Mapping: string/enum/string literal -> string; a field marked as a code (catalogKind
// gtin/code, or `digits` in its meta) -> string, an integer code zero-padded to its
// digits when written; int -> int64 (a field named like a price, `publicPrice`, is
// integer minor units); number -> double; bigint -> int64; boolean; date and fields
// marked as timestamps -> timestamp; object -> struct of its fields (an object without
// declared fields, a record, unknown/any -> json); a localized object -> json marked
// localized; a measure (a number or {value, unit}) -> double in its unit, a flag sent as text
// ("true"/"false") -> boolean, both marked in catalog/primitives.ts so that the union they are
// does not fall to json; array -> list of its element. A union of number kinds is the widest
// (int + number -> double); a union of one kind is that kind; any other union is json,
// so every value it accepts is kept. optional/nullable/default/readonly/catch/lazy are
// looked through; a pipe uses its output side unless that is a transform.
import type { z } from 'zod';
import { catalogMetaOf, type CatalogMeta } from '../catalog/primitives.js';
import type { ResourceSchemas, StageContext } from './stage.js';
import type { FieldType, RecordField, RecordSchema } from './record-schema.js';

export type { ResourceSchemas };

/** The zod schema of the pipeline's source resource, if the runner provided one. */
export function resourceSchemaFromContext(
  ctx: Pick<StageContext, 'source' | 'resourceSchemas'>,
): z.ZodType | undefined {
  const resource = ctx.source?.resource;
  const schemas = ctx.resourceSchemas;
  if (!resource || !schemas) return undefined;
  return typeof schemas === 'function' ? schemas(resource) : schemas[resource];
}

/**
 * The schema of the records a sink receives, as every sink finds it: a zod hint given in code,
 * else the schema the plan derived through the transforms (ctx.recordSchema), else the source's
 * resource (a dead-letter sink receives records as a stage got them). Undefined: unknown.
 */
export function sinkRecordSchema(
  ctx: Pick<StageContext, 'source' | 'resourceSchemas' | 'recordSchema'>,
  hint?: z.ZodType,
): RecordSchema | undefined {
  if (hint) return recordSchemaFromZod(hint);
  if (ctx.recordSchema) return ctx.recordSchema;
  const resource = resourceSchemaFromContext(ctx);
  return resource ? recordSchemaFromZod(resource) : undefined;
}

interface ZodDef {
  type: string;
  innerType?: ZodLike;
  getter?: () => ZodLike;
  in?: ZodLike;
  out?: ZodLike;
  shape?: Record<string, ZodLike>;
  element?: ZodLike;
  options?: ZodLike[];
  values?: unknown[];
  format?: string;
}
interface ZodLike {
  _zod: { def: ZodDef };
  shape?: Record<string, ZodLike>;
  isInt?: boolean;
  format?: string | null;
}

const WRAPPERS = new Set([
  'optional',
  'nullable',
  'default',
  'prefault',
  'catch',
  'readonly',
  'nonoptional',
  'success',
]);
const PRICE_NAME = /(^p|P)rice$/;

const cache = new WeakMap<object, RecordSchema>();

/** The record schema a zod object schema declares (fields of any other schema: none). Cached per schema. */
export function recordSchemaFromZod(schema: z.ZodType): RecordSchema {
  const known = cache.get(schema);
  if (known) return known;
  const type = typeOf(schema as unknown as ZodLike, 0, '');
  const result: RecordSchema = { fields: type?.kind === 'struct' ? type.fields : [] };
  cache.set(schema, result);
  return result;
}

function typeOf(schema: ZodLike, depth: number, name: string): FieldType | undefined {
  if (depth > 32) return { kind: 'json' };
  const meta = catalogMetaOf(schema as unknown as z.ZodType);
  const declared = meta ? metaType(meta) : undefined;
  if (declared) return declared;
  const def = schema._zod.def;
  if (meta?.catalogPrimary && def.type === 'union' && def.options?.[0]) return primaryType(def.options, depth, name);
  if (WRAPPERS.has(def.type) && def.innerType) return typeOf(def.innerType, depth + 1, name);
  switch (def.type) {
    case 'lazy':
      return def.getter ? typeOf(def.getter(), depth + 1, name) : { kind: 'json' };
    case 'pipe': {
      const side = def.out && def.out._zod.def.type !== 'transform' ? def.out : def.in;
      return side ? typeOf(side, depth + 1, name) : { kind: 'json' };
    }
    case 'object':
      return objectType(schema.shape ?? def.shape ?? {}, depth);
    case 'array':
      return def.element ? listType(typeOf(def.element, depth + 1, name)) : { kind: 'json' };
    case 'union':
      return unionType(
        (def.options ?? []).filter((o) => !isNullish(o)),
        depth,
        name,
      );
    case 'literal':
      return literalType(def.values ?? []);
    default:
      return scalarType(schema, name);
  }
}

/** The type a catalog declaration names in its metadata (codes, timestamps, localized text, measures). */
function metaType(meta: CatalogMeta): FieldType | undefined {
  const kind = meta.catalogKind;
  if (kind === 'gtin' || kind === 'code') {
    // GTINs and fixed-length national codes (pad) lost their leading zeros as integers, an HS code
    // at most one (evenDigits); others are kept as sent. Strings are always kept as sent.
    const digits = meta.digits ?? (kind === 'gtin' ? 14 : undefined);
    const pad = kind === 'gtin' || (meta.pad === true && digits !== undefined);
    const code = { digits, padTo: pad ? digits! : 0 };
    return { kind: 'string', code: meta.evenDigits === true ? { ...code, evenDigits: true } : code };
  }
  // A string column; an integer is written as its digits (codeConverter with nothing to pad).
  if (kind === 'text-id') return { kind: 'string', code: { digits: undefined, padTo: 0 } };
  if (kind === 'timestamp') return { kind: 'timestamp' };
  if (kind === 'localized') return { kind: 'json', localized: true };
  // Not a union of two kinds (which would be json): the column holds the number, or the flag.
  if (kind === 'measure')
    return typeof meta.unit === 'string' ? { kind: 'double', unit: meta.unit } : { kind: 'double' };
  if (kind === 'boolean-text') return { kind: 'boolean', text: true };
  return undefined;
}

function objectType(shape: Record<string, ZodLike>, depth: number): FieldType {
  const fields: RecordField[] = [];
  for (const [key, value] of Object.entries(shape)) {
    const type = typeOf(value, depth + 1, key);
    if (type) fields.push({ name: key, type });
  }
  return fields.length > 0 ? { kind: 'struct', fields } : { kind: 'json' };
}

function listType(element: FieldType | undefined): FieldType {
  if (!element) return { kind: 'json' };
  // A list of codes holds 13-digit EANs, or 14 digits for a code that has 14 (ARCHITECTURE.md, API rules).
  if (element.kind === 'string' && element.code?.padTo) {
    return {
      kind: 'list',
      element: { kind: 'string', code: { digits: element.code.digits, padTo: Math.min(13, element.code.padTo) } },
    };
  }
  return { kind: 'list', element };
}

function literalType(literals: readonly unknown[]): FieldType {
  const values = literals.filter((v) => v !== null && v !== undefined);
  if (values.length && values.every((v) => typeof v === 'string')) return { kind: 'string' };
  if (values.length && values.every((v) => typeof v === 'boolean')) return { kind: 'boolean' };
  if (values.length && values.every((v) => Number.isSafeInteger(v) || typeof v === 'bigint')) return { kind: 'int64' };
  if (values.length && values.every((v) => typeof v === 'number')) return { kind: 'double' };
  return { kind: 'json' };
}

/** A leaf zod type; undefined for one that holds no value (null, undefined, void, never). */
function scalarType(schema: ZodLike, name: string): FieldType | undefined {
  const def = schema._zod.def;
  switch (def.type) {
    case 'string':
    case 'enum':
    case 'template_literal':
      return { kind: 'string' };
    case 'number': {
      const format = schema.format ?? def.format;
      if (format === 'int32') return { kind: 'int32' };
      if (schema.isInt || format === 'safeint' || format === 'uint32')
        return PRICE_NAME.test(name) ? { kind: 'int64', price: true } : { kind: 'int64' };
      return { kind: 'double' };
    }
    case 'bigint':
      return { kind: 'int64' };
    case 'boolean':
      return { kind: 'boolean' };
    case 'date':
      return { kind: 'timestamp' };
    case 'null':
    case 'undefined':
    case 'void':
    case 'never':
      return undefined;
    default:
      return { kind: 'json' };
  }
}

/**
 * An `orAlso` field: the first option's type, told which other shapes its column takes too (a
 * list of its codes, a bare id for an object with an `id`), so that a declared field keeps its
 * column whatever shape the live service sends it in.
 */
function primaryType(options: ZodLike[], depth: number, name: string): FieldType | undefined {
  const primary = typeOf(options[0]!, depth + 1, name);
  const others = options.slice(1).map((o) => typeOf(o, depth + 1, name));
  if (primary?.kind === 'string' && primary.code) {
    const list = others.some((o) => o?.kind === 'list' && o.element.kind === 'string' && o.element.code);
    return list ? { ...primary, alsoList: true } : primary;
  }
  if (primary?.kind === 'struct') {
    const id = primary.fields.find((f) => f.name === 'id');
    const bare = others.some((o) => o !== undefined && id !== undefined && o.kind === id.type.kind);
    return bare ? { ...primary, bareKey: 'id' } : primary;
  }
  return primary;
}

function unionType(options: ZodLike[], depth: number, name: string): FieldType {
  const types = options.map((o) => typeOf(o, depth + 1, name)).filter((t): t is FieldType => t !== undefined);
  if (types.length === 0) return { kind: 'json' };
  // A code given as an integer or as a digit string is a code.
  const code = types.find((t) => t.kind === 'string' && t.code);
  if (code && types.every((t) => t.kind === 'string' || t.kind === 'int64')) return code;
  if (types.every((t) => t.kind === 'int64' || t.kind === 'int32' || t.kind === 'double')) {
    if (types.some((t) => t.kind === 'double')) return { kind: 'double' };
    return types.some((t) => t.kind === 'int64') ? types.find((t) => t.kind === 'int64')! : { kind: 'int32' };
  }
  const first = JSON.stringify(types[0]);
  if (types.every((t) => JSON.stringify(t) === first)) return types[0]!;
  return { kind: 'json' };
}

function isNullish(schema: ZodLike): boolean {
  const type = schema._zod.def.type;
  return type === 'null' || type === 'undefined' || type === 'void';
}
