// The registry of stage factories keyed by type name. The pipeline loader, the
// code API and `catalog-streams stages` all read it, so the three never drift.
import { ConfigError } from '../errors.js';
import { type LocatedIssue, explainIssues, joinPath } from './issues.js';
import { closestName } from '../closest-name.js';
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
   * Validates `{type, ...options}` without building anything: issues carry
   * paths relative to the spec (`['type']`, `['locales', 0]`) so a pipeline
   * file loader can point at the line.
   */
  check(
    kind: StageKind,
    spec: { type: string; [k: string]: unknown },
  ): { ok: true; definition: StageDefinition; options: unknown } | { ok: false; issues: LocatedIssue[] } {
    const def = this.#byType.get(spec.type);
    if (def && def.kind !== kind) {
      const message = `"${def.type}" is a ${def.kind}, not a ${kind} (${kind} types: ${this.types(kind).join(', ')})`;
      return { ok: false, issues: [{ path: ['type'], message, kind: 'value' }] };
    }
    if (!def) {
      const names = this.types(kind);
      const hint = closestName(String(spec.type), names);
      const message = `unknown ${kind} type "${String(spec.type)}"${hint ? `; did you mean "${hint}"?` : ''} (known: ${names.join(', ')})`;
      return { ok: false, issues: [{ path: ['type'], message, kind: 'value' }] };
    }
    const { type: _type, ...options } = spec;
    const parsed = def.options.safeParse(options);
    if (!parsed.success) return { ok: false, issues: explainIssues(parsed.error, def.options, options) };
    return { ok: true, definition: def, options: parsed.data };
  }

  /** Validates a stage spec and builds it; `path` names the spot (`transforms[1]`) in error messages. */
  create<T = unknown>(
    kind: StageKind,
    spec: { type: string; [k: string]: unknown },
    ctx: StageContext,
    path: string = kind,
  ): T {
    const checked = this.check(kind, spec);
    if (!checked.ok) {
      const [first, ...rest] = checked.issues;
      const at = joinPath(path, first!.path);
      throw new ConfigError(
        `${at}: ${first!.message}${rest.length ? ` (and ${rest.length} more)` : ''}`,
        { path: at },
        {
          code: first!.path[0] === 'type' ? 'config.unknown_type' : 'config.invalid',
        },
      );
    }
    return checked.definition.create(checked.options, ctx) as T;
  }
}
