// drop: removes fields, at the top level or inside objects and lists
// (`meta.createdAt`, `photos[].organizations`). Objects on the way are copied;
// the input record is not changed.
import { z } from 'zod';
import { defineStage, type StageContext } from '../pipeline/stage.js';
import { keepOrigin } from '../sources/origin.js';
import { defaultStageContext, parseStageOptions } from './code-api.js';
import { buildPathTree, parseFieldPath, rewriteAtPaths, type PathNode } from './field-path.js';
import { RecordTransform, type RecordOutput } from './record-transform.js';

export const DropOptionsSchema = z.strictObject({
  fields: z
    .array(z.string().min(1))
    .min(1)
    .describe('Fields to remove: top-level names or paths with objects and lists (meta.createdAt, photos[].organizations)'),
});

export type DropOptions = z.input<typeof DropOptionsSchema>;

const dropLeaf = (): void => {};

export class DropTransform extends RecordTransform {
  readonly #tree: PathNode<true>;

  constructor(options: z.output<typeof DropOptionsSchema>, ctx: StageContext) {
    super('drop', ctx);
    this.#tree = buildPathTree(
      options.fields.map((f, i) => [parseFieldPath(f, `fields[${i}]`), true] as const),
      'fields',
    );
  }

  processRecord(record: object): RecordOutput {
    return keepOrigin(record, rewriteAtPaths(record, this.#tree, dropLeaf, false));
  }
}

export const dropStage = defineStage({
  kind: 'transform',
  type: 'drop',
  description: 'Removes fields, also inside objects and lists (meta.createdAt, photos[].organizations)',
  options: DropOptionsSchema,
  create: (options, ctx) => new DropTransform(options, ctx),
});

/** Code API: `drop({fields: ['embedUrl', 'photos[].organizations']})`. */
export function drop(options: DropOptions, ctx: StageContext = defaultStageContext()): DropTransform {
  return new DropTransform(parseStageOptions('drop', DropOptionsSchema, options), ctx);
}
