// Turns zod issues into one-line messages a user can act on: the path in the
// pipeline file or options (`transforms[1].locales[0]`), what was expected, and
// for an unknown key the closest valid name.
import type { z } from 'zod';
import { closestName } from '../closest-name.js';
import { ConfigError } from '../errors.js';

export interface LocatedIssue {
  /** Path relative to the validated value. */
  path: (string | number)[];
  message: string;
  /**
   * What is wrong at `path`: a key that is not allowed (point at the key), a
   * required key that is absent (point at the object holding it), or a value.
   */
  kind?: 'unknown-key' | 'missing' | 'value';
}

export function joinPath(prefix: string, path: ReadonlyArray<PropertyKey>): string {
  let out = prefix;
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out;
}

type Def = { type: string; [k: string]: any };
const defOf = (s: z.ZodType): Def => (s as any)._zod.def as Def;

/** The object keys a schema declares at `path` (through optional/default/array/pipe), if it is an object there. */
export function keysAt(schema: z.ZodType | undefined, path: ReadonlyArray<PropertyKey>): string[] | undefined {
  let s = schema;
  let i = 0;
  while (s) {
    const def = defOf(s);
    if (['optional', 'nullable', 'default', 'prefault', 'readonly', 'nonoptional', 'catch'].includes(def.type))
      s = def.innerType;
    else if (def.type === 'pipe') s = def.in;
    else if (def.type === 'lazy') s = def.getter();
    else if (i === path.length) return def.type === 'object' ? Object.keys(def.shape) : undefined;
    else if (def.type === 'object') s = def.shape[String(path[i++])];
    else if (def.type === 'array' && typeof path[i] === 'number') {
      i++;
      s = def.element;
    } else return undefined;
  }
  return undefined;
}

const NOTHING = Symbol('nothing');

/** The value at `path` inside `input`, or NOTHING when the path does not exist. */
function valueAt(input: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let v = input;
  for (const key of path) {
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, key)) return NOTHING;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

/** A value as a message shows it: short JSON. */
export function showValue(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

const TYPE_NAMES: Record<string, string> = {
  array: 'a list',
  object: 'a mapping',
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
};

/** A zod issue in the words of a pipeline file: what was expected, and what was found there. */
function describeIssue(issue: z.core.$ZodIssue, value: unknown): { message: string; kind: LocatedIssue['kind'] } {
  // NOTHING: the input is not known (a caller without it); undefined: the key is absent.
  const found = value === NOTHING ? '' : `, got ${showValue(value)}`;
  if (issue.code === 'invalid_type') {
    const expected = TYPE_NAMES[issue.expected] ?? issue.expected;
    if (value === undefined || (value === NOTHING && /received undefined$/.test(issue.message))) {
      return { message: `required, but missing (expected ${expected})`, kind: 'missing' };
    }
    if (value === NOTHING) return { message: issue.message, kind: 'value' };
    if (issue.expected === 'array' && value !== null && typeof value !== 'object') {
      return { message: `expected a list${found}; write [${String(value)}] for a list of one`, kind: 'value' };
    }
    return { message: `expected ${expected}${found}`, kind: 'value' };
  }
  if (issue.code === 'invalid_value' && issue.values.length > 0) {
    const values = issue.values.map((v) => (typeof v === 'string' ? v : showValue(v)));
    if (value === undefined)
      return {
        message: `required, but missing (expected ${values.length === 1 ? values[0] : `one of ${values.join(', ')}`})`,
        kind: 'missing',
      };
    return {
      message:
        issue.values.length === 1 ? `must be ${values[0]}${found}` : `expected one of ${values.join(', ')}${found}`,
      kind: 'value',
    };
  }
  // A refinement (a filter check) that fails on an absent value: the key is required.
  if (issue.code === 'custom' && value === undefined) return { message: 'required, but missing', kind: 'missing' };
  return unknownName(issue.message) ?? { message: issue.message, kind: 'value' };
}

/**
 * A custom issue about an unknown name (the catalog's filter and sorting checks:
 * `unknown filter "staus"; did you mean "status"? this endpoint's filters are:
 * id, search, ...`): it points at the key.
 */
function unknownName(message: string): { message: string; kind: LocatedIssue['kind'] } | undefined {
  return /^unknown (?:filter|sorting) "[^"]+"; /.test(message) ? { message, kind: 'unknown-key' } : undefined;
}

/**
 * Flattens unions to the branch closest to the value, words each issue for a
 * pipeline file (given the validated `input`, it says what was found), and adds
 * key suggestions. Unknown keys come first: a misspelt key usually also makes a
 * required one missing, and the misspelling is the cause.
 */
export function explainIssues(error: z.ZodError, schema?: z.ZodType, input: unknown = NOTHING): LocatedIssue[] {
  const out: LocatedIssue[] = [];
  const visit = (issue: z.core.$ZodIssue, base: PropertyKey[]) => {
    const path = [...base, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      const score = (b: readonly z.core.$ZodIssue[]) =>
        Math.min(...b.map((i) => i.path.length)) * 2 +
        (b.some((i) => i.code === 'invalid_type' && i.path.length === 0) ? 0 : 1);
      const branch = issue.errors.reduce((best, b) => (score(b) > score(best) ? b : best));
      for (const i of branch) visit(i, path);
      return;
    }
    if (issue.code === 'unrecognized_keys') {
      const known = keysAt(schema, path) ?? [];
      for (const key of issue.keys) {
        const hint = closestName(key, known);
        out.push({
          path: [...(path as (string | number)[]), key],
          message: `unknown key "${key}"${hint ? `; did you mean "${hint}"?` : ''}${known.length ? ` (allowed: ${known.join(', ')})` : ''}`,
          kind: 'unknown-key',
        });
      }
      return;
    }
    // With the input known, a path that leads nowhere is an absent key (undefined).
    const value = input === NOTHING ? NOTHING : valueAt(input, path);
    out.push({
      path: path as (string | number)[],
      ...describeIssue(issue, value === NOTHING && input !== NOTHING ? undefined : value),
    });
  };
  for (const issue of error.issues) visit(issue, []);
  return [...out.filter((i) => i.kind === 'unknown-key'), ...out.filter((i) => i.kind !== 'unknown-key')];
}

/** `transforms[1].locales[0]: expected a string, got 3` for the first issue, plus a count. */
export function formatIssues(error: z.ZodError, prefix = '', schema?: z.ZodType, input?: unknown): string {
  const lines = explainIssues(error, schema, input === undefined ? NOTHING : input).map((i) => {
    const at = joinPath(prefix, i.path);
    return `${at ? `${at}: ` : ''}${i.message}`;
  });
  return lines.length <= 1
    ? (lines[0] ?? 'invalid')
    : `${lines[0]} (and ${lines.length - 1} more: ${lines.slice(1).join('; ')})`;
}

/**
 * A stage's options checked against its schema, for the code API (`validate({...})`,
 * `parquetSink({...})`, `productsQuery(client, {...})`): the errors read like a pipeline file's.
 */
export function parseStageOptions<S extends z.ZodType>(type: string, schema: S, options: unknown): z.output<S> {
  const parsed = schema.safeParse(options ?? {});
  if (!parsed.success) throw new ConfigError(formatIssues(parsed.error, type), { path: type }, { cause: parsed.error });
  return parsed.data;
}
