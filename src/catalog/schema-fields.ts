// Reads the resource zod schemas as data: which fields exist, their kind
// (timestamp, GTIN code, localized string...), nullability and nesting. Stages
// use it instead of hard-coded field lists: flatten-locales finds localized
// fields, Parquet picks column types, validate reports unknown fields.
import type { z } from 'zod';
import { catalogMetaOf } from './primitives.js';

export type FieldKind =
  | 'string'
  | 'integer'
  | 'float'
  | 'boolean'
  | 'timestamp'
  | 'gtin'
  | 'code'
  | 'localized'
  | 'enum'
  | 'object'
  | 'array'
  | 'unknown';

export interface FieldInfo {
  kind: FieldKind;
  nullable: boolean;
  optional: boolean;
  enumValues?: string[];
  /** Declared digit count of a GTIN/EAN or national code (most digits it may have). */
  digits?: number;
  /** A national code of fixed length: lost leading zeros are restored to `digits`. */
  pad?: boolean;
  /** An integer of an odd digit count lost one leading zero (hsCode), restored; never padded further. */
  evenDigits?: boolean;
  /** Other shapes an `orAlso` field accepts besides the one described (a list beside one code). */
  alternatives?: FieldInfo[];
  /** Known fields of an object (loose objects accept more). */
  fields?: Record<string, FieldInfo>;
  /** Element of an array. */
  element?: FieldInfo;
}

type Def = { type: string; [k: string]: any };
const defOf = (s: z.ZodType): Def => (s as any)._zod.def as Def;

export function describeSchema(schema: z.ZodType): FieldInfo {
  let nullable = false;
  let optional = false;
  let s = schema;
  // Unwrap modifiers; the catalog kind marker may sit on any layer.
  for (;;) {
    const meta = catalogMetaOf(s);
    const kind = meta?.catalogKind;
    if (kind === 'timestamp' || kind === 'localized' || kind === 'gtin' || kind === 'code') {
      return {
        kind,
        nullable,
        optional,
        ...(meta?.digits ? { digits: meta.digits } : {}),
        ...(meta?.pad !== undefined ? { pad: meta.pad } : {}),
        ...(meta?.evenDigits === true ? { evenDigits: true } : {}),
      };
    }
    if (meta?.catalogPrimary) {
      const [primary, ...others] = defOf(s).options as z.ZodType[];
      return { ...describeSchema(primary!), nullable, optional, alternatives: others.map((o) => describeSchema(o)) };
    }
    const def = defOf(s);
    if (def.type === 'optional' || def.type === 'default' || def.type === 'prefault') {
      optional = true;
      s = def.innerType;
    } else if (def.type === 'nullable') {
      nullable = true;
      s = def.innerType;
    } else if (def.type === 'pipe') {
      s = def.in;
    } else if (def.type === 'lazy') {
      s = def.getter();
    } else break;
  }
  const def = defOf(s);
  const base = { nullable, optional };
  switch (def.type) {
    case 'string':
      return { kind: 'string', ...base };
    case 'number':
      return { kind: (s as any).format === 'safeint' || (s as any).isInt ? 'integer' : 'float', ...base };
    case 'boolean':
      return { kind: 'boolean', ...base };
    case 'enum':
      return { kind: 'enum', enumValues: Object.values(def.entries as Record<string, string>), ...base };
    case 'object': {
      const fields: Record<string, FieldInfo> = {};
      for (const [k, v] of Object.entries(def.shape as Record<string, z.ZodType>)) fields[k] = describeSchema(v);
      return { kind: 'object', fields, ...base };
    }
    case 'array':
      return { kind: 'array', element: describeSchema(def.element), ...base };
    case 'record':
      return { kind: 'object', ...base };
    case 'union': {
      const kinds = new Set((def.options as z.ZodType[]).map((o) => describeSchema(o).kind));
      if (kinds.size === 1) return { ...describeSchema(def.options[0]), ...base };
      return { kind: 'unknown', ...base };
    }
    default:
      return { kind: 'unknown', ...base };
  }
}

/**
 * Paths of every localized field, `[]` marking an array step:
 * `name`, `brands[].name`, `descriptions[].content`.
 */
export function localizedFieldPaths(schema: z.ZodType): string[] {
  const out: string[] = [];
  const walk = (info: FieldInfo, path: string) => {
    if (info.kind === 'localized') out.push(path);
    else if (info.kind === 'object' && info.fields) {
      for (const [k, v] of Object.entries(info.fields)) walk(v, path ? `${path}.${k}` : k);
    } else if (info.kind === 'array' && info.element) walk(info.element, `${path}[]`);
  };
  walk(describeSchema(schema), '');
  return out;
}
