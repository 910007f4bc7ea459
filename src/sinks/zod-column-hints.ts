// Column hints from a zod (v4) resource schema: when the pipeline knows which
// resource its source produces (ctx.source.resource), the parquet sink types
// columns from the schema instead of guessing from values. This fixes what a
// sample cannot show: `vat` is a double even if the first 1000 rates are whole
// numbers, `cannabisData_*` exist even if every sampled product had null there,
// codes stay strings.
//
// Mapping: string/enum/string literal -> string; int (safeint) -> int64, int32 -> int32
// (integers named like timestamps become timestamps, see column-schema.ts);
// number -> double; bigint -> int64; boolean -> boolean; date -> timestamp;
// object -> its fields (flattened); array of a scalar -> list; array of objects,
// unions of different types -> JSON text; record, unknown, any -> no hint (the values
// decide). optional/nullable/default/readonly/catch/lazy are looked through; a pipe
// uses its output side.
import type { z } from 'zod';
import { catalogKindOf } from '../catalog/primitives.js';
import type { StageContext } from '../pipeline/stage.js';
import type { ColumnDecl, ColumnHint } from './column-schema.js';

/** Key in `ctx.services` under which the runner may put the resource schemas. */
export const RESOURCE_SCHEMAS_SERVICE = 'resourceSchemas';

/** What `ctx.services.resourceSchemas` may hold: a lookup or a map by resource name. */
export type ResourceSchemas = ((resource: string) => z.ZodType | undefined) | Record<string, z.ZodType | undefined>;

/** The zod schema of the pipeline's source resource, if the runner provided one. */
export function resourceSchemaFromContext(ctx: Pick<StageContext, 'source' | 'services'>): z.ZodType | undefined {
  const resource = ctx.source?.resource;
  const schemas = ctx.services[RESOURCE_SCHEMAS_SERVICE] as ResourceSchemas | undefined;
  if (!resource || !schemas) return undefined;
  return typeof schemas === 'function' ? schemas(resource) : schemas[resource];
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

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'catch', 'readonly', 'nonoptional', 'success']);

/** The column hint for a zod schema (an object schema gives an object hint), or undefined. */
export function columnHintFromZod(schema: z.ZodType): ColumnHint | undefined {
  return hintOf(schema as unknown as ZodLike, 0);
}

function hintOf(schema: ZodLike, depth: number): ColumnHint | undefined {
  if (depth > 32) return undefined;
  const def = schema._zod.def;
  // Codes arrive as integers or digit strings; normalize-codes makes them strings with their zeros.
  const kind = catalogKindOf(schema as unknown as z.ZodType);
  if (kind === 'gtin' || kind === 'code') return leaf({ type: 'string', list: false });
  if (WRAPPERS.has(def.type) && def.innerType) return hintOf(def.innerType, depth + 1);
  switch (def.type) {
    case 'lazy':
      return def.getter ? hintOf(def.getter(), depth + 1) : undefined;
    case 'pipe':
      return def.out && def.out._zod.def.type !== 'transform' ? hintOf(def.out, depth + 1) : undefined;
    case 'object': {
      const shape = schema.shape ?? def.shape ?? {};
      const fields = new Map<string, ColumnHint>();
      for (const [key, value] of Object.entries(shape)) {
        const hint = hintOf(value, depth + 1);
        if (hint) fields.set(key, hint);
      }
      return { kind: 'object', fields };
    }
    case 'array': {
      const element = def.element ? hintOf(def.element, depth + 1) : undefined;
      if (element?.kind === 'leaf' && !element.decl.list && element.decl.type !== 'json') {
        return leaf({ type: element.decl.type, list: true });
      }
      return leaf({ type: 'json', list: false });
    }
    case 'union': {
      const hints = (def.options ?? []).filter((o) => !isNullish(o)).map((o) => hintOf(o, depth + 1));
      const first = hints[0];
      if (first?.kind === 'leaf' && hints.every((h) => h?.kind === 'leaf' && sameDecl(h.decl, first.decl))) return first;
      return leaf({ type: 'json', list: false });
    }
    case 'literal': {
      const values = (def.values ?? []).filter((v) => v !== null && v !== undefined);
      if (values.length && values.every((v) => typeof v === 'string')) return leaf({ type: 'string', list: false });
      if (values.length && values.every((v) => typeof v === 'boolean')) return leaf({ type: 'boolean', list: false });
      if (values.length && values.every((v) => Number.isSafeInteger(v) || typeof v === 'bigint')) return leaf({ type: 'int64', list: false });
      if (values.length && values.every((v) => typeof v === 'number')) return leaf({ type: 'double', list: false });
      return undefined;
    }
    case 'string':
    case 'enum':
    case 'template_literal':
      return leaf({ type: 'string', list: false });
    case 'number': {
      const format = schema.format ?? def.format;
      if (format === 'int32') return leaf({ type: 'int32', list: false });
      if (schema.isInt || format === 'safeint' || format === 'uint32') return leaf({ type: 'int64', list: false });
      return leaf({ type: 'double', list: false });
    }
    case 'bigint':
      return leaf({ type: 'int64', list: false });
    case 'boolean':
      return leaf({ type: 'boolean', list: false });
    case 'date':
      return leaf({ type: 'timestamp', list: false });
    default:
      return undefined;
  }
}

function leaf(decl: ColumnDecl): ColumnHint {
  return { kind: 'leaf', decl };
}

function sameDecl(a: ColumnDecl, b: ColumnDecl): boolean {
  return a.type === b.type && a.list === b.list;
}

function isNullish(schema: ZodLike): boolean {
  const type = schema._zod.def.type;
  return type === 'null' || type === 'undefined' || type === 'void';
}
