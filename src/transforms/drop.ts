// drop: removes fields, at the top level or inside objects and lists
// (`meta.createdAt`, `photos[].organizations`). Objects on the way are copied;
// the input record is not changed.
import { z } from 'zod';
import { defineStage, type StageContext } from '../core/stage.js';
import { keepOrigin } from '../core/origin.js';
import { buildPathTree, parseFieldPath, rewriteAtPaths, type PathNode } from '../core/field-path.js';
import { RecordTransform, type RecordOutput } from './record-transform.js';
import { rewriteContainer, schemaSteps, type RecordSchema } from '../core/record-schema.js';
import type { WithOptionDocs } from '../generated/stage-option-docs.js';
import { UnseenPaths } from './unseen-paths.js';

export const DropOptionsSchema = z.strictObject({
  fields: z
    .array(z.string().min(1))
    .min(1)
    .describe(
      'Fields to remove: top-level names or paths with objects and lists (meta.createdAt, photos[].organizations)',
    ),
});

/** Options as a caller writes them; each key documented on hover (src/generated/stage-option-docs.ts). */
export type DropOptions = WithOptionDocs<'drop', z.input<typeof DropOptionsSchema>>;

const dropLeaf = (): void => {};

function dropSchema(input: RecordSchema, fields: readonly string[]): RecordSchema {
  let out = input.fields;
  fields.forEach((f, i) => {
    const steps = schemaSteps(parseFieldPath(f, `fields[${i}]`), `fields[${i}]`);
    const last = steps.at(-1)?.kind === 'each' ? steps.length - 2 : steps.length - 1;
    const leaf = steps[last];
    if (leaf?.kind !== 'key') return;
    out = rewriteContainer(out, steps.slice(0, last), (container) => container.filter((c) => c.name !== leaf.key));
  });
  return { fields: out };
}

export class DropTransform extends RecordTransform {
  readonly #tree: PathNode<true>;
  readonly #unseen: UnseenPaths;

  constructor(options: z.output<typeof DropOptionsSchema>, ctx: StageContext) {
    super('drop', ctx);
    this.#unseen = new UnseenPaths(
      'drop',
      options.fields.map((f, i) => ({
        label: `fields[${i}]`,
        source: f,
        steps: parseFieldPath(f, `fields[${i}]`).steps,
      })),
    );
    this.#tree = buildPathTree(
      options.fields.map((f, i) => [parseFieldPath(f, `fields[${i}]`), true] as const),
      'fields',
    );
  }

  processRecord(record: object): RecordOutput {
    this.#unseen.look(record);
    return keepOrigin(record, rewriteAtPaths(record, this.#tree, dropLeaf, false));
  }

  protected override finish(): void {
    this.#unseen.report(this.ctx.events);
  }
}

export const dropStage = defineStage({
  kind: 'transform',
  type: 'drop',
  description: 'Removes fields, also inside objects and lists (meta.createdAt, photos[].organizations)',
  options: DropOptionsSchema,
  schema: (input, options) => dropSchema(input, options.fields),
  create: (options, ctx) => new DropTransform(options, ctx),
});
