// rename: renames top-level fields, keeping every field's position.
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { defineStage, type StageContext } from '../core/stage.js';
import { keepOrigin } from '../core/origin.js';
import { RecordTransform, type RecordOutput } from './record-transform.js';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';
import { UnseenPaths } from './unseen-paths.js';

export const RenameOptionsSchema = z.strictObject({
  fields: z
    .record(z.string().min(1), z.string().min(1))
    .refine((m) => Object.keys(m).length > 0, { message: 'name at least one field to rename' })
    .describe(
      'Old name -> new name, for top-level fields, e.g. {name_en: title}; a renamed field replaces a field of the new name',
    ),
});

/** Options as a caller writes them; each key documented on hover (src/generated/stage-option-docs.ts). */
export type RenameOptions = WithOptionDocs<'rename', z.input<typeof RenameOptionsSchema>>;

export class RenameTransform extends RecordTransform {
  readonly #names: Record<string, string>;
  /** target -> the field renamed to it: a record's own `target` is left out when that field is there. */
  readonly #overwrittenBy: Record<string, string>;
  readonly #unseen: UnseenPaths;

  constructor(options: z.output<typeof RenameOptionsSchema>, ctx: StageContext) {
    super('rename', ctx);
    this.#unseen = new UnseenPaths(
      'rename',
      Object.keys(options.fields).map((from) => ({
        label: 'fields',
        source: from,
        steps: [{ kind: 'key' as const, key: from }],
      })),
    );
    this.#names = Object.assign(Object.create(null) as Record<string, string>, options.fields);
    this.#overwrittenBy = Object.create(null) as Record<string, string>;
    const seen = new Map<string, string>();
    for (const [from, to] of Object.entries(options.fields)) {
      const other = seen.get(to);
      if (other !== undefined) {
        throw new ConfigError(
          `rename: "${from}" and "${other}" are both renamed to "${to}"`,
          { path: `fields.${from}` },
          { code: 'config.rename_conflict' },
        );
      }
      seen.set(to, from);
      if (!(to in this.#names)) this.#overwrittenBy[to] = from;
    }
  }

  processRecord(record: object): RecordOutput {
    this.#unseen.look(record);
    const src = record as Record<string, unknown>;
    const names = this.#names;
    const overwrittenBy = this.#overwrittenBy;
    const out: Record<string, unknown> = {};
    for (const key in src) {
      const to = names[key];
      if (to !== undefined) {
        out[to] = src[key];
        continue;
      }
      const from = overwrittenBy[key];
      if (from === undefined || !(from in src)) out[key] = src[key];
    }
    return keepOrigin(record, out);
  }

  protected override finish(): void {
    this.#unseen.report(this.ctx.events);
  }
}

export const renameStage = defineStage({
  kind: 'transform',
  type: 'rename',
  description: 'Renames top-level fields, keeping their position',
  options: RenameOptionsSchema,
  // A renamed field keeps its position and takes the place of a field already named like its target.
  schema: (input, options) => {
    const names = new Map(Object.entries(options.fields));
    const targets = new Set(names.values());
    const fields = input.fields
      .filter((f) => names.has(f.name) || !targets.has(f.name))
      .map((f) => (names.has(f.name) ? { name: names.get(f.name)!, type: f.type } : f));
    return { fields };
  },
  create: (options, ctx) => new RenameTransform(options, ctx),
});
