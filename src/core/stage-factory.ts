// The code-API twin of a stage, derived from its definition: `pick({fields: [...]})` parses the
// options with the stage's own schema (the errors a pipeline file gets) and completes a missing
// or partial context (default-context.ts). One convention for every transform: `(options, ctx?)`.
import type { z } from 'zod';
import { defaultStageContext, type PartialStageContext } from './default-context.js';
import { parseStageOptions } from './issues.js';
import type { StageContext } from './stage.js';

/** A stage's factory for code; the options may be left out when the stage needs none. */
export type StageFactory<S extends z.ZodType, Out> =
  object extends z.input<S>
    ? (options?: z.input<S>, ctx?: PartialStageContext) => Out
    : (options: z.input<S>, ctx?: PartialStageContext) => Out;

export function stageFactory<S extends z.ZodType, Out>(def: {
  type: string;
  options: S;
  create(options: z.output<S>, ctx: StageContext): Out;
}): StageFactory<S, Out> {
  const factory = (options?: z.input<S>, ctx?: PartialStageContext): Out =>
    def.create(parseStageOptions(def.type, def.options, options), defaultStageContext(ctx));
  return factory as StageFactory<S, Out>;
}
