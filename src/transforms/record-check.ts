// validate's common case in one walk of the record: "valid, nothing undeclared to report, not too
// deep". Before, validate walked each record three times (the depth limit, schema-check.ts, then
// the undeclared fields), and the schema check looked up every declared key of an object, most of
// them absent from a given product, through a megamorphic keyed load each (profile of the bench
// chain: ~13 of validate's ~30 µs per product in that loop alone). Here an object's own keys are
// iterated instead and each looked up in a table of its declared fields: absent optional fields
// cost nothing, required ones are counted, and undeclared keys and nesting depth are seen in the
// same loop.
//
// The answer is one-sided, like schema-check.ts's: PASS or UNDECLARED only where zod's safeParse
// succeeds and no field is too deep, UNDECLARED exactly when hasUnknown would find a field the
// schema does not declare; UNSURE sends the record down validate's full path, which decides and
// explains. Leaves are schema-check.ts's checks, and objects and arrays run zod's own checks
// through its withChecks, so the zod semantics are the ones test/transforms/schema-check.test.ts
// holds to; test/transforms/record-check.test.ts compares this walk with validate's three.
//
// Closures, not source generated with new Function: a generated key loop per object (a switch on
// the key's index, a call site per field) measured slower in the bench chain (validate 20-21 µs
// per product against 15-19 µs), and needs no eval.
//
// Only plain objects (prototype Object.prototype or null) take the key loop: for-in yields the own
// enumerable keys there, and an object with other own keys (non-enumerable, which zod would read
// for a declared field) is left to zod.
import type { z } from 'zod';
import type { FieldInfo } from '../catalog/index.js';
import { MAX_RECORD_DEPTH, deeperThan } from '../core/record-depth.js';
import { DONT_KNOW, compileSchemaCheck, passesUndefined, withChecks } from './schema-check.js';

/** The fields a schema declares, with null-prototype maps; `open` objects take any key. */
export interface KnownShape {
  fields?: Record<string, KnownShape>;
  element?: KnownShape;
}

/** The declared fields of `info` to tell others of; undefined where any field is welcome. */
export function knownShapeOf(info: FieldInfo): KnownShape | undefined {
  if (info.kind === 'object' && info.fields && Object.keys(info.fields).length > 0) {
    const fields = Object.create(null) as Record<string, KnownShape>;
    for (const [k, v] of Object.entries(info.fields)) fields[k] = knownShapeOf(v) ?? {};
    return { fields };
  }
  if (info.kind === 'array' && info.element) {
    const element = knownShapeOf(info.element);
    return element ? { element } : undefined;
  }
  return undefined;
}

/** Whether `value` holds a field `shape` does not declare. */
export function hasUnknown(shape: KnownShape, value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (shape.fields) {
    if (Array.isArray(value)) return false;
    const fields = shape.fields;
    for (const k in value as Record<string, unknown>) {
      const f = fields[k];
      if (f === undefined) return true;
      if ((f.fields || f.element) && hasUnknown(f, (value as Record<string, unknown>)[k])) return true;
    }
    return false;
  }
  if (shape.element && Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (hasUnknown(shape.element, value[i])) return true;
  }
  return false;
}

/** Valid, within the depth limit, nothing undeclared. */
export const PASS = 1;
/** Valid, within the depth limit, with a field hasUnknown finds. */
export const UNDECLARED = 2;
/** Maybe invalid or too deep: ask zod. */
export const UNSURE = 0;
export type Verdict = typeof PASS | typeof UNDECLARED | typeof UNSURE;
export type RecordCheck = (record: object) => Verdict;

/** True: `value`, at `level` of its record (the record is 1), is valid and not too deep. */
type Check = (value: unknown, level: number) => boolean;
type ExtraCheck = (value: unknown, level: number, key: string) => boolean;

interface Def {
  type: string;
  coerce?: boolean;
  innerType?: z.ZodType;
  element?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
  discriminator?: string;
  inclusive?: boolean;
}
interface Internals {
  def: Def & { checks?: unknown[] };
  traits?: Set<string>;
  optin?: string;
  optout?: string;
}
const internals = (schema: z.ZodType) => (schema as unknown as { _zod: Internals })._zod;

const no: Check = () => false;
const LEAVES = new Set(['string', 'number', 'boolean', 'null', 'enum', 'literal']);

/**
 * The one-walk check of records of `schema`. `known`: the declared fields to tell others of (as
 * validate's hasUnknown), or undefined when undeclared fields are allowed. `limit`: the levels a
 * record may have (core/record-depth.ts).
 */
export function compileRecordCheck(
  schema: z.ZodType,
  known: KnownShape | undefined,
  limit = MAX_RECORD_DEPTH,
): RecordCheck {
  const compiler = new Compiler(limit);
  const check = compiler.compile(schema, known);
  return (record) => {
    compiler.undeclared = false;
    if (!check(record, 1)) return UNSURE;
    return compiler.undeclared ? UNDECLARED : PASS;
  };
}

interface Field {
  check: Check;
  /** 1 when zod requires the key, else 0. */
  required: number;
  /** A key zod declares and hasUnknown does not. */
  undeclared: boolean;
  /** The field's optional and nullable wrappers, which `check` is inside of. */
  undefinedOk: boolean;
  nullOk: boolean;
}

function hasChecks(schema: z.ZodType): boolean {
  const zod = internals(schema);
  return (zod.def.checks?.length ?? 0) > 0 || zod.traits?.has('$ZodCheck') === true;
}

/** The schema inside optional and nullable wrappers (down to one with checks of its own), and what they let through. */
function unwrap(schema: z.ZodType): { inner: z.ZodType; undefinedOk: boolean; nullOk: boolean } {
  let inner = schema;
  let undefinedOk = false;
  let nullOk = false;
  for (;;) {
    const def = internals(inner).def;
    if (def.type === 'optional') undefinedOk ||= passesUndefined(inner);
    else if (def.type === 'nullable') nullOk = true;
    else return { inner, undefinedOk, nullOk };
    inner = def.innerType!;
    if (hasChecks(inner)) return { inner, undefinedOk, nullOk };
  }
}

class Compiler {
  /**
   * Set when the walk meets a field hasUnknown would find. A union member that then fails may set
   * it too, rightly: hasUnknown reads a value with the same shape whichever member accepts it.
   */
  undeclared = false;
  /** Checks that already run their schema's zod checks. */
  readonly #whole = new WeakSet<Check>();

  constructor(readonly limit: number) {}

  compile(schema: z.ZodType, known: KnownShape | undefined): Check {
    if (LEAVES.has(internals(schema).def.type)) {
      // Values these accept are never objects: nothing to walk. The check has zod's checks.
      const leaf = compileSchemaCheck(schema);
      return leaf === DONT_KNOW ? no : leaf;
    }
    const base = this.typeCheck(schema, known);
    return base === no || this.#whole.has(base) ? base : withChecks(schema, base);
  }

  /** Whether `value`, a value no schema walks, at `level`, stays within the limit. */
  fits(value: unknown, level: number): boolean {
    return typeof value !== 'object' || value === null || !deeperThan(value, this.limit - level + 1);
  }

  /** True; notes what hasUnknown finds in `value`. */
  noteUnknown(known: KnownShape | undefined, value: unknown): boolean {
    if (known !== undefined && !this.undeclared && hasUnknown(known, value)) this.undeclared = true;
    return true;
  }

  typeCheck(schema: z.ZodType, known: KnownShape | undefined): Check {
    const def = internals(schema).def;
    if (def.coerce) return no;
    switch (def.type) {
      case 'unknown':
      case 'any':
        return (v, level) => this.fits(v, level) && this.noteUnknown(known, v);
      case 'optional':
      case 'nullable': {
        const { inner, undefinedOk, nullOk } = unwrap(schema);
        const check = this.compile(inner, known);
        return (v, level) => (v === undefined ? undefinedOk : v === null && nullOk) || check(v, level);
      }
      case 'array':
        return this.arrayCheck(def, known);
      case 'object':
        return this.objectCheck(schema, def, known);
      case 'record':
        return this.recordCheck(schema, known);
      case 'union':
        return this.unionCheck(def, known);
      default:
        return no;
    }
  }

  unionCheck(def: Def, known: KnownShape | undefined): Check {
    if (def.discriminator !== undefined || def.inclusive === false) return no;
    const options = def.options!.map((o) => this.compile(o, known)).filter((o) => o !== no);
    if (options.length === 0) return no;
    return (v, level) => {
      for (let i = 0; i < options.length; i++) if (options[i]!(v, level)) return true;
      return false;
    };
  }

  arrayCheck(def: Def, known: KnownShape | undefined): Check {
    const element = this.compile(def.element!, known?.element);
    const limit = this.limit;
    return (v, level) => {
      if (!Array.isArray(v) || level > limit) return false;
      for (let i = 0; i < v.length; i++) if (!element(v[i], level + 1)) return false;
      return true;
    };
  }

  objectCheck(schema: z.ZodType, def: Def, known: KnownShape | undefined): Check {
    const shape = def.shape!;
    const keys = Object.keys(shape);
    const fields = known?.fields;
    // Cases the key loop does not mirror: zod reads declared keys through the prototype (`key in
    // input`), skips a declared __proto__, reads symbol keys (for-in yields none); a known shape
    // with keys zod does not declare.
    if (
      keys.some((k) => k in Object.prototype) ||
      Object.getOwnPropertySymbols(shape).length > 0 ||
      (fields && Object.keys(fields).some((k) => !(k in shape)))
    )
      return this.exact(schema, known);
    const table = Object.create(null) as Record<string, Field>;
    let required = 0;
    for (const k of keys) {
      const field = shape[k]!;
      // zod lets an absent key pass only when its schema is optional both ways; others must be there.
      const { optin, optout } = internals(field);
      const must = optin === 'optional' && optout === 'optional' ? 0 : 1;
      const undeclared = fields !== undefined && fields[k] === undefined;
      // Most fields are `.nullable().optional()`: the loop answers null and undefined itself.
      const { inner, undefinedOk, nullOk } = hasChecks(field)
        ? { inner: field, undefinedOk: false, nullOk: false }
        : unwrap(field);
      table[k] = { check: this.compile(inner, fields?.[k]), required: must, undeclared, undefinedOk, nullOk };
      required += must;
    }
    return this.keyLoop(table, required, this.extraCheck(def), fields !== undefined);
  }

  keyLoop(table: Record<string, Field>, required: number, extra: ExtraCheck, reported: boolean): Check {
    const limit = this.limit;
    const size = Object.keys(table).length;
    return (v, level) => {
      if (typeof v !== 'object' || v === null || Array.isArray(v) || level > limit) return false;
      // for-in also yields inherited keys, which zod reads otherwise: plain records only.
      const proto = Object.getPrototypeOf(v) as unknown;
      if (proto !== Object.prototype && proto !== null) return false;
      let own = 0;
      let present = 0;
      let seen = 0;
      for (const k in v) {
        own++;
        const value = (v as Record<string, unknown>)[k];
        const f = table[k];
        if (f === undefined) {
          if (reported) this.undeclared = true;
          if (!extra(value, level + 1, k)) return false;
        } else {
          if (f.undeclared) this.undeclared = true;
          const empty = value === undefined ? f.undefinedOk : value === null && f.nullOk;
          if (!empty && !f.check(value, level + 1)) return false;
          present++;
          seen += f.required;
        }
      }
      // zod reads a declared field for-in does not yield when it is a non-enumerable own property.
      return seen === required && (present === size || Object.getOwnPropertyNames(v).length === own);
    };
  }

  /** An undeclared key's check: loose and strip objects take any value (within the depth limit). */
  extraCheck(def: Def): ExtraCheck {
    const catchall = def.catchall === undefined ? undefined : internals(def.catchall).def.type;
    if (catchall === 'never') return no;
    if (catchall === undefined || catchall === 'unknown' || catchall === 'any')
      return (value, level) => this.fits(value, level);
    const check = this.compile(def.catchall!, undefined);
    if (check === no) return no;
    return (value, level, key) => key !== '__proto__' && check(value, level);
  }

  recordCheck(schema: z.ZodType, known: KnownShape | undefined): Check {
    // schema-check.ts's record check (it refuses keys other than plain strings), walking values here.
    if (known?.fields) return this.exact(schema, known);
    if (compileSchemaCheck(schema) === DONT_KNOW) return no;
    const value = this.compile(internals(schema).def.valueType!, undefined);
    const limit = this.limit;
    return (v, level) => {
      if (typeof v !== 'object' || v === null || Array.isArray(v) || level > limit) return false;
      const proto = Object.getPrototypeOf(v) as unknown;
      if (proto !== Object.prototype && proto !== null) return false;
      if (Object.getOwnPropertySymbols(v).length > 0) return false;
      for (const k in v) if (k === '__proto__' || !value((v as Record<string, unknown>)[k], level + 1)) return false;
      return true;
    };
  }

  /** validate's three walks one after the other, for the shapes the key loop does not mirror. */
  exact(schema: z.ZodType, known: KnownShape | undefined): Check {
    const check = compileSchemaCheck(schema);
    if (check === DONT_KNOW) return no;
    const exact: Check = (v, level) => check(v) && this.fits(v, level) && this.noteUnknown(known, v);
    this.#whole.add(exact);
    return exact;
  }
}
