// flatten: nested objects become top-level columns joined by a separator
// (`meta.createdAt` -> `meta_createdAt`, `weightWithUnit.value` ->
// `weightWithUnit_value`). Lists stay lists (Parquet list columns); null stays
// null under the object's own name.
import { z } from 'zod';
import { defineStage, type StageContext } from '../core/stage.js';
import { keepOrigin } from '../core/origin.js';
import { RecordTransform, type RecordOutput } from './record-transform.js';
import type { RecordField, RecordSchema } from '../core/record-schema.js';
import { isPlainObject } from '../values.js';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';

export const FlattenOptionsSchema = z.strictObject({
  fields: z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .describe('Top-level object fields to flatten; default: every object-valued field'),
  separator: z.string().default('_').describe('Joins the names of the levels: meta_createdAt'),
  maxDepth: z
    .int()
    .positive()
    .optional()
    .describe('Levels to flatten (1: only the first level of nesting); deeper objects stay objects; default: all'),
});

/** Options as a caller writes them; each key documented on hover (src/generated/stage-option-docs.ts). */
export type FlattenOptions = WithOptionDocs<'flatten', z.input<typeof FlattenOptionsSchema>>;

function flattenSchema(input: RecordSchema, options: z.output<typeof FlattenOptionsSchema>): RecordSchema {
  const only = options.fields ? new Set(options.fields) : undefined;
  const maxDepth = options.maxDepth ?? Number.POSITIVE_INFINITY;
  const out: RecordField[] = [];
  const into = (prefix: string, fields: readonly RecordField[], depth: number) => {
    for (const f of fields) {
      const name = prefix + options.separator + f.name;
      if (f.type.kind === 'struct' && depth < maxDepth) into(name, f.type.fields, depth + 1);
      else out.push({ name, type: f.type });
    }
  };
  for (const f of input.fields) {
    if (f.type.kind === 'struct' && (only === undefined || only.has(f.name))) into(f.name, f.type.fields, 1);
    else out.push(f);
  }
  return { fields: out };
}

export class FlattenTransform extends RecordTransform {
  readonly #fields: ReadonlySet<string> | undefined;
  readonly #separator: string;
  readonly #maxDepth: number;

  constructor(options: z.output<typeof FlattenOptionsSchema>, ctx: StageContext) {
    super('flatten', ctx);
    this.#fields = options.fields ? new Set(options.fields) : undefined;
    this.#separator = options.separator;
    this.#maxDepth = options.maxDepth ?? Number.POSITIVE_INFINITY;
  }

  processRecord(record: object): RecordOutput {
    const src = record as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    const fields = this.#fields;
    for (const key in src) {
      const v = src[key];
      if (isPlainObject(v) && (fields === undefined || fields.has(key))) this.#into(out, key, v, 1);
      else out[key] = v;
    }
    return keepOrigin(record, out);
  }

  #into(out: Record<string, unknown>, prefix: string, value: Record<string, unknown>, depth: number): void {
    for (const key in value) {
      const v = value[key];
      const name = prefix + this.#separator + key;
      if (isPlainObject(v) && depth < this.#maxDepth) this.#into(out, name, v, depth + 1);
      else out[name] = v;
    }
  }
}

export const flattenStage = defineStage({
  kind: 'transform',
  type: 'flatten',
  description: 'Flattens nested objects into top-level columns (meta.createdAt -> meta_createdAt); lists stay lists',
  options: FlattenOptionsSchema,
  schema: flattenSchema,
  create: (options, ctx) => new FlattenTransform(options, ctx),
});
