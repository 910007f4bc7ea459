// flatten-locales: turns localized objects (`name: {en, nl, ...}`) into plain
// string columns: one per listed locale (`name_en`, `name_nl`; null when the
// locale is missing) and/or one holding the first locale of a fallback chain
// that has a value (`name`). A plain string in a localized field (live brand
// and organization names) is locale-independent: it fills every column. Locales
// not asked for are left out by design (keepOriginal keeps them). Localized fields inside lists are rewritten inside
// each element (`brands[].name` -> `brands[i].name_en`), so every element keeps
// its own values and the list stays a clean list of structs; `extract` turns
// one into a plain list column (`brands_name_en: brands[].name_en`).
import { z } from 'zod';
import { localizedFieldPaths, regionLocales, resourceSchemas } from '../catalog/index.js';
import { ConfigError } from '../errors.js';
import { closestName } from '../closest-name.js';
import { defineStage, type StageContext } from '../core/stage.js';
import type { PartialStageContext } from '../core/default-context.js';
import { keepOrigin } from '../core/origin.js';
import { buildPathTree, parseFieldPath, rewriteAtPaths, type PathNode } from '../core/field-path.js';
import { RecordTransform, type RecordOutput } from './record-transform.js';
import { ResourceOption, resolveResource } from './resource.js';
import {
  rewriteContainer,
  schemaSteps,
  withField,
  type RecordField,
  type RecordSchema,
  type SchemaEnv,
} from '../core/record-schema.js';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';

const LocaleList = z.array(z.string().min(1, { message: 'a locale code cannot be empty' }));

export const FlattenLocalesOptionsSchema = z
  .strictObject({
    resource: ResourceOption,
    locales: LocaleList.min(1)
      .optional()
      .describe('One column per locale, named by `columns` (name_en, name_nl...); null where the locale is missing'),
    fallback: LocaleList.min(1)
      .optional()
      .describe(
        'One column (named by `fallbackColumn`) with the first of these locales that has a non-empty value, e.g. [en, nl, fr]; null when none has',
      ),
    fields: z
      .array(z.string())
      .min(1)
      .optional()
      .describe(
        'Localized fields to flatten, as paths: name, seoName, brands[].name, descriptions[].content; default: every localized field of the resource schema',
      ),
    columns: z
      .string()
      .default('{field}_{locale}')
      .describe('Name of the per-locale columns; {field} is the field name (name), {locale} the locale code'),
    fallbackColumn: z.string().default('{field}').describe('Name of the fallback column; {field} is the field name'),
    fallbackLocaleColumn: z
      .string()
      .optional()
      .describe(
        'Also write which locale the fallback column came from, in this column (e.g. "{field}_locale"); default: not written',
      ),
    keepOriginal: z
      .boolean()
      .default(false)
      .describe('Keep the localized object beside the new columns (default: it is replaced by them)'),
  })
  .superRefine((o, ctx) => {
    if (!o.locales && !o.fallback)
      ctx.addIssue({
        code: 'custom',
        path: ['locales'],
        message: 'set locales (one column per locale), fallback (one column), or both',
      });
    if (!o.columns.includes('{field}') || !o.columns.includes('{locale}')) {
      ctx.addIssue({
        code: 'custom',
        path: ['columns'],
        message: 'the column template must contain {field} and {locale}',
      });
    }
    if (!o.fallbackColumn.includes('{field}'))
      ctx.addIssue({ code: 'custom', path: ['fallbackColumn'], message: 'the template must contain {field}' });
    if (o.fallbackLocaleColumn !== undefined && !o.fallbackLocaleColumn.includes('{field}')) {
      ctx.addIssue({ code: 'custom', path: ['fallbackLocaleColumn'], message: 'the template must contain {field}' });
    }
    if (o.fallback && o.keepOriginal && o.fallbackColumn === '{field}') {
      ctx.addIssue({
        code: 'custom',
        path: ['fallbackColumn'],
        message:
          'with keepOriginal the fallback column cannot take the field\'s own name; set fallbackColumn, e.g. "{field}_default"',
      });
    }
  });

/** Options as a caller writes them; each key documented on hover (src/generated/stage-option-docs.ts). */
export type FlattenLocalesOptions = WithOptionDocs<'flatten-locales', z.input<typeof FlattenLocalesOptionsSchema>>;

/** The columns written for one localized field, computed once. */
interface LocalizedPlan {
  keepOriginal: boolean;
  /** [column, locale] pairs. */
  columns: Array<readonly [string, string]>;
  fallbackColumn: string | undefined;
  fallbackLocaleColumn: string | undefined;
  fallback: readonly string[];
}

/**
 * Writes the columns of one localized field. A plain string is locale-independent text (the live
 * service sends brand and organization names so): it fills every locale column and the fallback.
 * A value that is neither (a number, a list) is not interpreted: it stays under its own name.
 */
function writeColumns(out: Record<string, unknown>, key: string, value: unknown, plan: LocalizedPlan): void {
  const text = typeof value === 'string' ? value : undefined;
  const localized =
    text === undefined && typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  if (text === undefined && localized === undefined && value !== null && value !== undefined) {
    out[key] = value;
    return;
  }
  if (plan.keepOriginal) out[key] = value;
  const columns = plan.columns;
  for (let i = 0; i < columns.length; i++) {
    const [column, locale] = columns[i]!;
    const s = text !== undefined ? text : localized === undefined ? undefined : localized[locale];
    out[column] = s === undefined ? null : s;
  }
  if (plan.fallbackColumn !== undefined) {
    let chosen: unknown = null;
    let from: string | null = null;
    if (text !== undefined) chosen = text === '' ? null : text;
    else if (localized !== undefined) {
      for (const locale of plan.fallback) {
        const s = localized[locale];
        if (typeof s === 'string' && s !== '') {
          chosen = s;
          from = locale;
          break;
        }
      }
    }
    out[plan.fallbackColumn] = chosen;
    if (plan.fallbackLocaleColumn !== undefined) out[plan.fallbackLocaleColumn] = from;
  }
}

/** The localized fields the stage rewrites: `fields`, checked against the resource when it is known, else all of the resource's. */
function localizedFields(
  options: z.output<typeof FlattenLocalesOptionsSchema>,
  sourceResource: string | undefined,
): { fields: string[]; resource: string | undefined } {
  const schemaKnown =
    !options.fields ||
    options.resource !== undefined ||
    (sourceResource !== undefined && sourceResource in resourceSchemas);
  const source = sourceResource === undefined ? undefined : { type: '', resource: sourceResource };
  const resource = schemaKnown
    ? resolveResource('flatten-locales', options.resource, { source }, 'product')
    : undefined;
  const known = resource ? localizedFieldPaths(resource.schema) : undefined;
  if (known && options.fields) {
    options.fields.forEach((f, i) => {
      if (!known.includes(f)) {
        const hint = closestName(f, known);
        throw new ConfigError(
          `flatten-locales: fields[${i}]: "${f}" is not a localized field of ${resource!.name}${hint ? `; did you mean "${hint}"?` : ''} (localized: ${known.join(', ')})`,
          { path: `fields[${i}]` },
          { code: 'config.unknown_field' },
        );
      }
    });
  }
  return { fields: options.fields ?? known ?? [], resource: resource?.name };
}

/** Each localized field replaced, in its place, by its string columns (added where the record lacks it, as at run time). */
function flattenLocalesSchema(
  input: RecordSchema,
  options: z.output<typeof FlattenLocalesOptionsSchema>,
  env: SchemaEnv,
): RecordSchema {
  let out = input.fields;
  for (const [i, f] of localizedFields(options, env.resource).fields.entries()) {
    const steps = schemaSteps(parseFieldPath(f, `fields[${i}]`), `fields[${i}]`);
    const last = steps.at(-1);
    if (last?.kind !== 'key') continue;
    const name = (template: string) => template.replaceAll('{field}', last.key);
    out = rewriteContainer(out, steps.slice(0, -1), (container) => {
      const original = container.find((c) => c.name === last.key);
      const columns: RecordField[] = [];
      if (options.keepOriginal && original) columns.push(original);
      for (const locale of options.locales ?? [])
        columns.push({ name: name(options.columns).replaceAll('{locale}', locale), type: { kind: 'string' } });
      if (options.fallback) {
        columns.push({ name: name(options.fallbackColumn), type: { kind: 'string' } });
        if (options.fallbackLocaleColumn)
          columns.push({ name: name(options.fallbackLocaleColumn), type: { kind: 'string' } });
      }
      return withField(container, last.key, columns);
    });
  }
  return { fields: out };
}

export class FlattenLocalesTransform extends RecordTransform {
  /** The localized field paths this stage rewrites. */
  readonly fields: readonly string[];
  readonly #tree: PathNode<LocalizedPlan>;

  constructor(options: z.output<typeof FlattenLocalesOptionsSchema>, ctx: StageContext) {
    super('flatten-locales', ctx);
    // Listed fields are checked against the schema when the resource is known; without a list the schema gives them.
    const { fields, resource } = localizedFields(options, ctx.source?.resource);
    if (fields.length === 0) {
      ctx.events.emit('warning', {
        code: 'flatten-locales.no_fields',
        message: `flatten-locales: ${resource ?? 'the resource'} has no localized fields; the stage passes records unchanged`,
      });
    }
    this.fields = fields;
    this.#tree = buildPathTree(
      fields.map((f, i) => {
        const path = parseFieldPath(f, `fields[${i}]`);
        const last = path.steps.at(-1);
        const key = last?.kind === 'key' ? last.key : f;
        const name = (template: string) => template.replaceAll('{field}', key);
        const plan: LocalizedPlan = {
          keepOriginal: options.keepOriginal,
          columns: (options.locales ?? []).map((l) => [name(options.columns).replaceAll('{locale}', l), l] as const),
          fallbackColumn: options.fallback ? name(options.fallbackColumn) : undefined,
          fallbackLocaleColumn:
            options.fallback && options.fallbackLocaleColumn ? name(options.fallbackLocaleColumn) : undefined,
          fallback: options.fallback ?? [],
        };
        return [path, plan] as const;
      }),
      'fields',
    );
  }

  protected override get returnsOwnedRecords(): boolean {
    return true;
  }

  processRecord(record: object): RecordOutput {
    return keepOrigin(record, rewriteAtPaths(record, this.#tree, writeColumns, true));
  }
}

export const flattenLocalesStage = defineStage({
  kind: 'transform',
  type: 'flatten-locales',
  description:
    'Turns localized objects (name.{en,nl,...}) into string columns: one per locale (name_en) and/or a fallback chain (name); inside lists the elements are rewritten (brands[].name_en)',
  options: FlattenLocalesOptionsSchema,
  schema: flattenLocalesSchema,
  create: (options, ctx) => new FlattenLocalesTransform(options, ctx),
});

/**
 * The factory given neither locales nor fallback, with a context whose client has a region
 * (`new CatalogClient({region})`), writes the region's locales, as a pipeline file with
 * `connection.region` does.
 */
export function withRegionLocales<F extends (options?: any, ctx?: PartialStageContext) => unknown>(factory: F): F {
  return ((options?: { locales?: unknown; fallback?: unknown }, ctx?: PartialStageContext) => {
    const region = ctx?.client?.region;
    const preset =
      region !== undefined && options?.locales === undefined && options?.fallback === undefined
        ? { ...options, locales: [...regionLocales(region)] }
        : options;
    return factory(preset, ctx);
  }) as F;
}
