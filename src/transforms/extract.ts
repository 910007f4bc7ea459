// extract: adds columns pulled out of the record by path: `brands[].id` gives a
// list of ids, `organizations[type=supplier].name.en` the names of the supplier
// organizations, `meta.updatedAt` one value. `first: true` takes the first
// value of a list path (null when there is none).
import { z } from 'zod';
import { defineStage, type StageContext } from '../core/stage.js';
import { compileGetter, parseFieldPath, shallowCopy, type Getter } from '../core/field-path.js';
import { MissingOption } from './pick.js';
import { RecordTransform, type RecordOutput } from './record-transform.js';
import { JSON_TYPE, typeAtPath, upsertFields, type RecordSchema } from '../core/record-schema.js';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';

const ColumnSpec = z.union([
  z.string().min(1),
  z.strictObject({
    path: z.string().min(1).describe('Path to read'),
    first: z.boolean().default(false).describe('Take the first value of a list path instead of the whole list'),
  }),
]);

export const ExtractOptionsSchema = z.strictObject({
  columns: z
    .record(z.string().min(1), ColumnSpec)
    .refine((m) => Object.keys(m).length > 0, { message: 'name at least one column' })
    .describe(
      'New column -> path: meta.updatedAt (a value), brands[].id (a list), organizations[type=supplier].name.en (a list of the matching elements), photos[0].formats.large; or {path, first: true} for the first value of a list',
    ),
  missing: MissingOption,
});

/** Options as a caller writes them; each key documented on hover (src/generated/stage-option-docs.ts). */
export type ExtractOptions = WithOptionDocs<'extract', z.input<typeof ExtractOptionsSchema>>;

interface ColumnPlan {
  column: string;
  get: Getter;
  first: boolean;
}

/** Each new column typed by the path it reads (a list path: a list; `first`: its element); unknown: JSON. */
function extractSchema(input: RecordSchema, options: z.output<typeof ExtractOptionsSchema>): RecordSchema {
  const added = Object.entries(options.columns).map(([column, spec]) => {
    const source = typeof spec === 'string' ? spec : spec.path;
    const path = parseFieldPath(source, `columns.${column}`);
    let type = typeAtPath(input, path.steps) ?? JSON_TYPE;
    if (typeof spec !== 'string' && spec.first && path.multi) type = type.kind === 'list' ? type.element : JSON_TYPE;
    if (path.multi && type.kind !== 'list' && !(typeof spec !== 'string' && spec.first))
      type = { kind: 'list', element: type };
    return { name: column, type };
  });
  return { fields: upsertFields(input.fields, added) };
}

export class ExtractTransform extends RecordTransform {
  readonly #columns: ColumnPlan[];
  readonly #omit: boolean;
  /** Columns already reported as replacing a record's own field (warned once each). */
  readonly #replacing = new Set<string>();

  constructor(options: z.output<typeof ExtractOptionsSchema>, ctx: StageContext) {
    super('extract', ctx);
    this.#omit = options.missing === 'omit';
    this.#columns = Object.entries(options.columns).map(([column, spec]) => {
      const source = typeof spec === 'string' ? spec : spec.path;
      const path = parseFieldPath(source, `columns.${column}`);
      return { column, get: compileGetter(path), first: typeof spec !== 'string' && spec.first && path.multi };
    });
  }

  processRecord(record: object): RecordOutput {
    const out = shallowCopy(record as Record<string, unknown>);
    const columns = this.#columns;
    for (let i = 0; i < columns.length; i++) {
      const c = columns[i]!;
      let v = c.get(record);
      if (c.first) v = (v as unknown[])[0];
      const next = v !== undefined ? v : this.#omit ? undefined : null;
      if (next === undefined) continue;
      if (!this.#replacing.has(c.column) && Object.hasOwn(out, c.column) && out[c.column] !== next)
        this.#warnReplacing(c.column, record);
      out[c.column] = next;
    }
    return out;
  }

  /** A column replacing a field the record already had is not silent: one warning per column. */
  #warnReplacing(column: string, record: object): void {
    this.#replacing.add(column);
    const id = (record as { id?: unknown }).id;
    this.ctx.events.emit('warning', {
      code: 'extract.replaces_field',
      message: `extract: column "${column}" replaces the record's own field "${column}" (first on record ${JSON.stringify(id ?? null)}); name the column differently to keep both`,
    });
  }
}

export const extractStage = defineStage({
  kind: 'transform',
  type: 'extract',
  description:
    'Adds columns pulled out by path: brands[].id (a list), organizations[type=supplier].name.en, meta.updatedAt',
  options: ExtractOptionsSchema,
  schema: extractSchema,
  create: (options, ctx) => new ExtractTransform(options, ctx),
});
