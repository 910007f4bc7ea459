// Turns zod issues into one-line messages a user can act on: the path in the
// pipeline file or options (`transforms[1].locales[0]`), what was expected, and
// for an unknown key the closest valid name.
import type { z } from 'zod';

export interface LocatedIssue {
  /** Path relative to the validated value. */
  path: (string | number)[];
  message: string;
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
    if (['optional', 'nullable', 'default', 'prefault', 'readonly', 'nonoptional', 'catch'].includes(def.type)) s = def.innerType;
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

/** Flattens unions to the branch closest to the value, and adds key suggestions. */
export function explainIssues(error: z.ZodError, schema?: z.ZodType): LocatedIssue[] {
  const out: LocatedIssue[] = [];
  const visit = (issue: z.core.$ZodIssue, base: PropertyKey[]) => {
    const path = [...base, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      const score = (b: readonly z.core.$ZodIssue[]) =>
        Math.min(...b.map((i) => i.path.length)) * 2 + (b.some((i) => i.code === 'invalid_type' && i.path.length === 0) ? 0 : 1);
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
        });
      }
      return;
    }
    out.push({ path: path as (string | number)[], message: issue.message });
  };
  for (const issue of error.issues) visit(issue, []);
  return out;
}

/** `transforms[1].locales[0]: expected string, received number` for the first issue, plus a count. */
export function formatIssues(error: z.ZodError, prefix = '', schema?: z.ZodType): string {
  const lines = explainIssues(error, schema).map((i) => {
    const at = joinPath(prefix, i.path);
    return `${at ? `${at}: ` : ''}${i.message}`;
  });
  return lines.length <= 1 ? (lines[0] ?? 'invalid') : `${lines[0]} (and ${lines.length - 1} more: ${lines.slice(1).join('; ')})`;
}

/** The closest candidate by edit distance, if it is close enough to be a typo. */
export function closestName(input: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(input.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(input.length / 3)) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = prev[j]!;
      prev[j] = Math.min(prev[j]! + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = tmp;
    }
  }
  return prev[b.length]!;
}
