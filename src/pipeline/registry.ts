// The registry of stage factories keyed by type name. The pipeline loader, the
// code API and `catalog-streams stages` all read it, so the three never drift.
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import type { StageContext, StageDefinition, StageKind } from './stage.js';

export class StageRegistry {
  readonly #byType = new Map<string, StageDefinition>();

  register(...defs: StageDefinition[]): this {
    for (const def of defs) {
      if (this.#byType.has(def.type)) {
        throw new ConfigError(`stage type "${def.type}" is registered twice`, {}, { code: 'registry.duplicate' });
      }
      this.#byType.set(def.type, def);
    }
    return this;
  }

  get(type: string): StageDefinition | undefined {
    return this.#byType.get(type);
  }

  list(kind?: StageKind): StageDefinition[] {
    const all = [...this.#byType.values()];
    return kind ? all.filter((d) => d.kind === kind) : all;
  }

  types(kind?: StageKind): string[] {
    return this.list(kind).map((d) => d.type);
  }

  /**
   * Validates `{type, ...options}` against the stage's schema and builds it.
   * `path` names the spot in a pipeline file (`transforms[1]`) for error messages.
   */
  create<T = unknown>(kind: StageKind, spec: { type: string; [k: string]: unknown }, ctx: StageContext, path: string = kind): T {
    const def = this.#byType.get(spec.type);
    if (!def || def.kind !== kind) {
      const names = this.types(kind);
      const hint = closestName(spec.type, names);
      throw new ConfigError(
        `${path}.type: unknown ${kind} type "${spec.type}"${hint ? `; did you mean "${hint}"?` : ''} (known: ${names.join(', ')})`,
        { path: `${path}.type` },
        { code: 'config.unknown_type' },
      );
    }
    const { type: _type, ...options } = spec;
    const parsed = def.options.safeParse(options);
    if (!parsed.success) {
      throw new ConfigError(formatIssues(parsed.error, path), { path }, { cause: parsed.error });
    }
    return def.create(parsed.data, ctx) as T;
  }
}

/** `transforms[1].locales[0]: expected string, received number` for the first issue, plus a count. */
export function formatIssues(error: z.ZodError, prefix = ''): string {
  const lines = error.issues.map((issue) => {
    const at = joinPath(prefix, issue.path);
    return `${at ? `${at}: ` : ''}${issue.message}`;
  });
  return lines.length <= 1 ? (lines[0] ?? 'invalid') : `${lines[0]} (and ${lines.length - 1} more: ${lines.slice(1).join('; ')})`;
}

export function joinPath(prefix: string, path: ReadonlyArray<PropertyKey>): string {
  let out = prefix;
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out;
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
