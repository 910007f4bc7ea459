// A fast yes-or-don't-know check of a value against a zod schema, compiled once
// per schema, for `validate`. zod's safeParse builds a deep copy of every
// record (its output), which validate throws away: on a product that copy and
// its garbage were most of the chain's validation cost (profile of the bench's
// full chain: zod ~22 % of the CPU, and much of the GC). The compiled check
// walks the record without building anything and answers:
//
//   true  -> zod accepts the value (its safeParse would succeed);
//   false -> maybe not: ask zod, which then also gives the exact issues.
//
// So it must never answer true where zod would fail; it may answer false where
// zod would succeed (that only costs speed). It mirrors the type tests of the
// zod types resource schemas are made of (object, record, array, string,
// number, boolean, null, enum, literal, optional, nullable, union, unknown,
// any) and runs the schemas' own checks (min length, int, ranges, regex,
// refinements, in zod's order) through zod's check functions, so their
// semantics are zod's. Anything else (transforms, defaults, pipes, coercion,
// lazy, discriminated or exclusive unions, unknown check kinds) compiles to
// "don't know". test/transforms/schema-check.test.ts compares it with zod.
import type { z } from 'zod';

/** True: zod accepts `value`. False: maybe not (use zod). */
export type SchemaCheck = (value: unknown) => boolean;

interface Def {
  type: string;
  coerce?: boolean;
  checks?: ZodCheck[];
  innerType?: ZodSchema;
  element?: ZodSchema;
  shape?: Record<string, ZodSchema>;
  catchall?: ZodSchema;
  keyType?: ZodSchema;
  valueType?: ZodSchema;
  options?: ZodSchema[];
  discriminator?: string;
  inclusive?: boolean;
  mode?: string;
  check?: string;
}
interface ZodCheck {
  _zod: { def: { check?: string; when?: (payload: Payload) => boolean }; check?: (payload: Payload) => unknown };
}
interface ZodSchema extends ZodCheck {
  _zod: ZodCheck['_zod'] & { def: Def; values?: Set<unknown>; traits?: Set<string>; optin?: string };
}
interface Payload {
  value: unknown;
  issues: unknown[];
}

const never: SchemaCheck = () => false;
/** The check of a schema compiled to "don't know": it always answers false. */
export const DONT_KNOW = never;
const always: SchemaCheck = () => true;

const compiled = new WeakMap<object, SchemaCheck>();

/** The compiled check of `schema` (cached per schema instance). */
export function compileSchemaCheck(schema: z.ZodType): SchemaCheck {
  return compile(schema as unknown as ZodSchema);
}

function compile(schema: ZodSchema): SchemaCheck {
  let check = compiled.get(schema);
  if (!check) {
    // A placeholder while compiling guards against cycles (lazy schemas are not supported anyway).
    compiled.set(schema, never);
    check = withChecks(schema as unknown as z.ZodType, typeCheck(schema));
    compiled.set(schema, check);
  }
  return check;
}

/**
 * The zod checks of a schema (its own, when it is a check itself such as z.int(), then def.checks),
 * run in zod's order. Extra arguments reach `base` (record-check.ts passes the nesting level).
 */
export function withChecks<C extends (value: unknown, ...rest: never[]) => boolean>(schema: z.ZodType, base: C): C;
export function withChecks(zodSchema: z.ZodType, base: (value: unknown, level: number) => boolean) {
  const schema = zodSchema as unknown as ZodSchema;
  if (base === never) return never;
  const checks: ZodCheck[] = [];
  if (schema._zod.traits?.has('$ZodCheck')) checks.push(schema);
  checks.push(...(schema._zod.def.checks ?? []));
  if (checks.length === 0) return base;
  for (const c of checks) if (typeof c._zod.check !== 'function') return never;
  const fns = checks.map((c) => c._zod.check!);
  const whens = checks.map((c) => c._zod.def.when);
  // One payload per check, reused rather than two allocations per value checked. No call nests in
  // another of the same check (that needs a recursive schema, which compiles to "don't know"), and
  // an async check's late issues land after the synchronous walk, which never reads them.
  const payload: Payload = { value: undefined, issues: [] };
  return (value: unknown, level: number) => {
    if (!base(value, level)) return false;
    payload.value = value;
    if (payload.issues.length > 0) payload.issues = [];
    for (let i = 0; i < fns.length; i++) {
      const when = whens[i];
      if (when !== undefined && !when(payload)) continue;
      const result = fns[i]!(payload);
      if (result instanceof Promise) {
        // An async refinement: zod's safeParse refuses it; let zod say so.
        result.catch(() => {});
        return false;
      }
      if (payload.issues.length > 0) return false;
    }
    return true;
  };
}

function typeCheck(schema: ZodSchema): SchemaCheck {
  const def = schema._zod.def;
  if (def.coerce) return never;
  switch (def.type) {
    case 'string':
      return (v) => typeof v === 'string';
    case 'number':
      return (v) => typeof v === 'number' && Number.isFinite(v);
    case 'boolean':
      return (v) => typeof v === 'boolean';
    case 'null':
      return (v) => v === null;
    case 'unknown':
    case 'any':
      return always;
    case 'enum':
    case 'literal': {
      const values = schema._zod.values;
      return values ? (v) => values.has(v) : never;
    }
    case 'optional': {
      const inner = compile(def.innerType!);
      // z.exactOptional() hands undefined to its inner schema; optional() over a default fills it in.
      if (!passesUndefined(schema)) return inner;
      return inner === never ? (v) => v === undefined : (v) => v === undefined || inner(v);
    }
    case 'nullable': {
      const inner = compile(def.innerType!);
      return inner === never ? (v) => v === null : (v) => v === null || inner(v);
    }
    case 'array': {
      const element = compile(def.element!);
      if (element === never) return (v) => Array.isArray(v) && v.length === 0;
      return (v) => {
        if (!Array.isArray(v)) return false;
        for (let i = 0; i < v.length; i++) if (!element(v[i])) return false;
        return true;
      };
    }
    case 'object':
      return objectCheck(def);
    case 'record':
      return recordCheck(def);
    case 'union': {
      // Plain (inclusive) unions only: success when any option accepts the value.
      if (def.discriminator !== undefined || def.inclusive === false) return never;
      const options = def.options!.map(compile).filter((o) => o !== never);
      if (options.length === 0) return never;
      return (v) => {
        for (let i = 0; i < options.length; i++) if (options[i]!(v)) return true;
        return false;
      };
    }
    default:
      return never;
  }
}

/** Whether an optional schema lets undefined through without asking its inner schema, as zod's optional() does. */
export function passesUndefined(schema: { _zod: unknown }): boolean {
  const zod = schema._zod as ZodSchema['_zod'];
  return !zod.traits?.has('$ZodExactOptional') && zod.def.innerType?._zod.optin !== 'defaulted';
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function objectCheck(def: Def): SchemaCheck {
  const keys = Object.keys(def.shape!);
  const fields = keys.map((k) => compile(def.shape![k]!));
  const catchall = def.catchall?._zod.def.type;
  // Extra keys: loose (unknown/any) and strip (no catchall) take them; strict (never) refuses them;
  // another catchall schema must accept each of them.
  let strictKeys: Set<string> | undefined;
  let extra: SchemaCheck | undefined;
  if (catchall === 'never') strictKeys = new Set(keys);
  else if (catchall !== undefined && catchall !== 'unknown' && catchall !== 'any') {
    extra = compile(def.catchall!);
    if (extra === never) return never;
    strictKeys = new Set(keys);
  }
  // zod refuses an absent key whose schema is not optional even where it takes undefined (z.unknown()).
  const present = keys.filter((k, i) => def.shape![k]!._zod.optin === undefined && fields[i]!(undefined));
  return (v) => {
    if (!isObject(v)) return false;
    for (let i = 0; i < keys.length; i++) if (!fields[i]!(v[keys[i]!])) return false;
    for (let i = 0; i < present.length; i++) if (!(present[i]! in v)) return false;
    if (strictKeys) {
      for (const k of Object.keys(v)) {
        if (strictKeys.has(k)) continue;
        if (extra === undefined || k === '__proto__' || !extra(v[k])) return false;
      }
    }
    return true;
  };
}

function recordCheck(def: Def): SchemaCheck {
  // Only records keyed by plain strings (any string key is valid); symbol keys make zod fail.
  const key = def.keyType!._zod;
  if (key.def.type !== 'string' || key.def.coerce || (key.def.checks?.length ?? 0) > 0 || key.values) return never;
  const value = compile(def.valueType!);
  return (v) => {
    if (!isObject(v)) return false;
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) return false;
    if (Object.getOwnPropertySymbols(v).length > 0) return false;
    const own = Object.keys(v);
    for (let i = 0; i < own.length; i++) {
      const k = own[i]!;
      if (k === '__proto__' || !value(v[k])) return false;
    }
    return true;
  };
}
