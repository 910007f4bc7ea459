// pick: keeps only the listed fields, in the listed order. A dotted path keeps
// the nesting (`meta.updatedAt` -> {meta: {updatedAt}}). Missing fields become
// null by default, so every output record has the same columns.
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { defineStage, type StageContext } from '../core/stage.js';
import { keepOrigin } from '../core/origin.js';
import { parseFieldPath } from '../core/field-path.js';
import { RecordTransform, type RecordOutput } from './record-transform.js';
import { JSON_TYPE, typeAtPath, type FieldType, type RecordField, type RecordSchema } from '../core/record-schema.js';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';
import { UnseenPaths } from './unseen-paths.js';

export const MissingOption = z
  .enum(['null', 'omit'])
  .default('null')
  .describe('A field missing from a record: written as null (stable columns), or left out (omit)');

export const PickOptionsSchema = z.strictObject({
  fields: z
    .array(z.string().min(1))
    .min(1)
    .describe(
      'Fields to keep, in output order: top-level names or dotted paths into objects (meta.updatedAt keeps {meta: {updatedAt}})',
    ),
  missing: MissingOption,
});

/** Options as a caller writes them; each key documented on hover (src/generated/stage-option-docs.ts). */
export type PickOptions = WithOptionDocs<'pick', z.input<typeof PickOptionsSchema>>;

interface PickPlan {
  key: string;
  /** Dotted path: the nested plan under `key` (absent: the field is kept whole). */
  nested?: PickPlan[];
}

function planOf(fields: readonly string[]): PickPlan[] {
  const plans: PickPlan[] = [];
  fields.forEach((field, i) => {
    const path = parseFieldPath(field, `fields[${i}]`);
    if (path.steps.some((s) => s.kind !== 'key')) {
      throw new ConfigError(
        `pick: fields[${i}]: "${field}" reaches into a list; pick keeps fields and objects, extract pulls values out of lists`,
        {
          path: `fields[${i}]`,
        },
      );
    }
    let level = plans;
    path.steps.forEach((step, depth) => {
      const key = (step as { key: string }).key;
      const last = depth === path.steps.length - 1;
      let plan = level.find((p) => p.key === key);
      if (!plan) level.push((plan = last ? { key } : { key, nested: [] }));
      else if (last || !plan.nested)
        throw new ConfigError(`pick: fields[${i}]: "${field}" overlaps another picked field`, { path: `fields[${i}]` });
      if (!last) level = plan.nested!;
    });
  });
  return plans;
}

function pickInto(record: unknown, plans: readonly PickPlan[], omit: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const src = typeof record === 'object' && record !== null ? (record as Record<string, unknown>) : undefined;
  for (let i = 0; i < plans.length; i++) {
    const plan = plans[i]!;
    if (plan.nested) {
      const inner = src?.[plan.key];
      if (omit && (typeof inner !== 'object' || inner === null)) continue;
      out[plan.key] = pickInto(inner, plan.nested, omit);
      continue;
    }
    const v = src === undefined ? undefined : src[plan.key];
    if (v !== undefined) out[plan.key] = v;
    else if (!omit) out[plan.key] = null;
  }
  return out;
}

/** The picked fields, in the listed order, typed as in the input; a field the input does not know is JSON. */
function pickSchema(input: RecordSchema, plans: readonly PickPlan[]): RecordField[] {
  return plans.map((plan) => {
    const type = typeAtPath(input, [{ kind: 'key', key: plan.key }]);
    if (!plan.nested) return { name: plan.key, type: type ?? JSON_TYPE };
    const inner: RecordSchema = { fields: type?.kind === 'struct' ? type.fields : [] };
    const fields =
      type?.kind === 'json'
        ? plan.nested.map((p) => ({
            name: p.key,
            type: (type.localized ? { kind: 'string' } : JSON_TYPE) as FieldType,
          }))
        : pickSchema(inner, plan.nested);
    return { name: plan.key, type: { kind: 'struct', fields } };
  });
}

export class PickTransform extends RecordTransform {
  readonly #plans: PickPlan[];
  readonly #omit: boolean;
  readonly #unseen: UnseenPaths;

  constructor(options: z.output<typeof PickOptionsSchema>, ctx: StageContext) {
    super('pick', ctx);
    this.#plans = planOf(options.fields);
    this.#unseen = new UnseenPaths(
      'pick',
      options.fields.map((f, i) => ({
        label: `fields[${i}]`,
        source: f,
        steps: parseFieldPath(f, `fields[${i}]`).steps,
      })),
    );
    this.#omit = options.missing === 'omit';
  }

  processRecord(record: object): RecordOutput {
    this.#unseen.look(record);
    return keepOrigin(record, pickInto(record, this.#plans, this.#omit));
  }

  protected override finish(): void {
    this.#unseen.report(this.ctx.events);
  }
}

export const pickStage = defineStage({
  kind: 'transform',
  type: 'pick',
  description:
    'Keeps only the listed fields, in that order (dotted paths keep their nesting); missing fields become null',
  options: PickOptionsSchema,
  schema: (input, options) => ({ fields: pickSchema(input, planOf(options.fields)) }),
  create: (options, ctx) => new PickTransform(options, ctx),
});
