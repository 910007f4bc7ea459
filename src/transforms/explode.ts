// explode: one output row per element of a list (one row per photo), carrying
// the parent's id and any other parent values asked for. Object elements
// become the row's fields; other elements (codes, strings) go into one column.
import { z } from 'zod';
import { defineStage, type StageContext } from '../core/stage.js';
import { keepOrigin } from '../core/origin.js';
import { compileGetter, parseFieldPath, type Getter } from '../core/field-path.js';
import { RecordTransform, type RecordOutput } from './record-transform.js';
import {
  JSON_TYPE,
  typeAtPath,
  upsertFields,
  type RecordField,
  type RecordSchema,
  type SchemaEnv,
} from '../core/record-schema.js';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';

export const ExplodeOptionsSchema = z.strictObject({
  field: z.string().min(1).describe('The list to explode: photos, frontals, cannabisData.terpenes'),
  parentId: z.string().min(1).default('id').describe("Path of the parent value that identifies each row's parent"),
  parentIdColumn: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Column for the parent id; default: <resource>Id (productId for products), or parentId when the resource is unknown',
    ),
  carry: z
    .record(z.string().min(1), z.string().min(1))
    .optional()
    .describe('More parent values to copy into every row: column -> path, e.g. {productStatus: status}'),
  indexColumn: z
    .string()
    .min(1)
    .optional()
    .describe("Also write the element's position in the list (0-based) in this column"),
  valueColumn: z.string().min(1).default('value').describe('Column for elements that are not objects (codes, strings)'),
  keepEmpty: z
    .boolean()
    .default(false)
    .describe('A parent whose list is empty or missing gives one row with only the parent columns (default: no row)'),
});

/** Options as a caller writes them; each key documented on hover (src/generated/stage-option-docs.ts). */
export type ExplodeOptions = WithOptionDocs<'explode', z.input<typeof ExplodeOptionsSchema>>;

function idColumnFor(resource: string | undefined): string {
  if (!resource) return 'parentId';
  return `${resource.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())}Id`;
}

/** Parent id, carried columns, index, then the element's fields (or the value column), as #row builds them. */
function explodeSchema(
  input: RecordSchema,
  options: z.output<typeof ExplodeOptionsSchema>,
  env: SchemaEnv,
): RecordSchema {
  const idColumn = options.parentIdColumn ?? idColumnFor(env.resource);
  const typeOf = (path: string, option: string) => typeAtPath(input, parseFieldPath(path, option).steps) ?? JSON_TYPE;
  let fields: RecordField[] = [{ name: idColumn, type: typeOf(options.parentId, 'parentId') }];
  for (const [column, path] of Object.entries(options.carry ?? {}))
    fields = upsertFields(fields, [{ name: column, type: typeOf(path, `carry.${column}`) }]);
  if (options.indexColumn !== undefined)
    fields = upsertFields(fields, [{ name: options.indexColumn, type: { kind: 'int64' } }]);
  const list = typeAtPath(input, parseFieldPath(options.field, 'field').steps);
  let element = list?.kind === 'list' ? list.element : undefined;
  while (element?.kind === 'list' && parseFieldPath(options.field).multi) element = element.element;
  if (element?.kind === 'struct')
    fields = upsertFields(
      fields,
      element.fields.filter((f) => f.name !== idColumn),
    );
  else fields = upsertFields(fields, [{ name: options.valueColumn, type: element ?? JSON_TYPE }]);
  return { fields };
}

export class ExplodeTransform extends RecordTransform {
  readonly #list: Getter;
  readonly #parentId: Getter;
  readonly #idColumn: string;
  readonly #carry: Array<readonly [string, Getter]>;
  readonly #indexColumn: string | undefined;
  readonly #valueColumn: string;
  readonly #keepEmpty: boolean;

  constructor(options: z.output<typeof ExplodeOptionsSchema>, ctx: StageContext) {
    super('explode', ctx);
    this.#list = compileGetter(parseFieldPath(options.field, 'field'));
    this.#parentId = compileGetter(options.parentId, 'parentId');
    this.#idColumn = options.parentIdColumn ?? idColumnFor(ctx.source?.resource);
    this.#carry = Object.entries(options.carry ?? {}).map(
      ([column, path]) => [column, compileGetter(path, `carry.${column}`)] as const,
    );
    this.#indexColumn = options.indexColumn;
    this.#valueColumn = options.valueColumn;
    this.#keepEmpty = options.keepEmpty;
  }

  processRecord(record: object): RecordOutput {
    const list = this.#list(record);
    const id = this.#parentId(record) ?? null;
    if (!Array.isArray(list) || list.length === 0) return this.#keepEmpty ? this.#row(record, id, undefined, -1) : null;
    const rows = new Array<object>(list.length);
    for (let i = 0; i < list.length; i++) rows[i] = this.#row(record, id, list[i], i);
    return rows;
  }

  #row(record: object, id: unknown, element: unknown, index: number): object {
    const row: Record<string, unknown> = { [this.#idColumn]: id };
    for (const [column, get] of this.#carry) {
      const v = get(record);
      row[column] = v === undefined ? null : v;
    }
    if (this.#indexColumn !== undefined) row[this.#indexColumn] = index < 0 ? null : index;
    if (typeof element === 'object' && element !== null && !Array.isArray(element)) Object.assign(row, element);
    else if (index >= 0) row[this.#valueColumn] = element;
    // the parent id wins over an element field of the same name
    row[this.#idColumn] = id;
    return keepOrigin(record, row);
  }
}

export const explodeStage = defineStage({
  kind: 'transform',
  type: 'explode',
  description:
    'One row per element of a list (one row per photo), carrying the parent id (productId) and other parent values',
  options: ExplodeOptionsSchema,
  schema: explodeSchema,
  create: (options, ctx) => new ExplodeTransform(options, ctx),
});
