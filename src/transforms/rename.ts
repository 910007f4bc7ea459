// rename: renames top-level fields, keeping every field's position.
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { defineStage, type StageContext } from '../pipeline/stage.js';
import { keepOrigin } from '../sources/origin.js';
import { defaultStageContext, parseStageOptions } from './code-api.js';
import { RecordTransform, type RecordOutput } from './record-transform.js';

export const RenameOptionsSchema = z.strictObject({
  fields: z
    .record(z.string().min(1), z.string().min(1))
    .refine((m) => Object.keys(m).length > 0, { message: 'name at least one field to rename' })
    .describe('Old name -> new name, for top-level fields, e.g. {name_en: title}; a renamed field replaces a field of the new name'),
});

export type RenameOptions = z.input<typeof RenameOptionsSchema>;

export class RenameTransform extends RecordTransform {
  readonly #names: Record<string, string>;
  /** Fields overwritten by a renamed one; left out where they stand. */
  readonly #targets: Record<string, true>;

  constructor(options: z.output<typeof RenameOptionsSchema>, ctx: StageContext) {
    super('rename', ctx);
    this.#names = Object.assign(Object.create(null) as Record<string, string>, options.fields);
    this.#targets = Object.create(null) as Record<string, true>;
    const seen = new Map<string, string>();
    for (const [from, to] of Object.entries(options.fields)) {
      const other = seen.get(to);
      if (other !== undefined) {
        throw new ConfigError(`rename: "${from}" and "${other}" are both renamed to "${to}"`, { path: `fields.${from}` }, { code: 'config.rename_conflict' });
      }
      seen.set(to, from);
      if (!(to in this.#names)) this.#targets[to] = true;
    }
  }

  processRecord(record: object): RecordOutput {
    const src = record as Record<string, unknown>;
    const names = this.#names;
    const targets = this.#targets;
    const out: Record<string, unknown> = {};
    for (const key in src) {
      const to = names[key];
      if (to !== undefined) out[to] = src[key];
      else if (targets[key] === undefined || !this.#renamedPresent(src, key)) out[key] = src[key];
    }
    return keepOrigin(record, out);
  }

  /** Whether the field renamed to `target` exists on the record (then it wins over `target`). */
  #renamedPresent(src: Record<string, unknown>, target: string): boolean {
    for (const from in this.#names) if (this.#names[from] === target && from in src) return true;
    return false;
  }
}

export const renameStage = defineStage({
  kind: 'transform',
  type: 'rename',
  description: 'Renames top-level fields, keeping their position',
  options: RenameOptionsSchema,
  create: (options, ctx) => new RenameTransform(options, ctx),
});

/** Code API: `rename({fields: {name_en: 'title'}})`. */
export function rename(options: RenameOptions, ctx: StageContext = defaultStageContext()): RenameTransform {
  return new RenameTransform(parseStageOptions('rename', RenameOptionsSchema, options), ctx);
}
