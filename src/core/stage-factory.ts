// The code-API twin of a stage, derived from its definition: `pick({fields: [...]})` parses the
// options with the stage's own schema (the errors a pipeline file gets) and completes a missing
// or partial context (default-context.ts). One convention for every transform: `(options, ctx?)`.
import type { z } from 'zod';
import type { StageOptionDocs, WithOptionDocs } from '../generated/stage-option-docs.js';
import { defaultStageContext, type PartialStageContext } from './default-context.js';
import { parseStageOptions } from './issues.js';
import type { StageContext } from './stage.js';

/** Options as a caller writes them, each key documented on hover when `npm run docs` generated its JSDoc. */
export type DocumentedInput<T extends string, Input> = T extends keyof StageOptionDocs
  ? WithOptionDocs<T, Input>
  : Input;

/** A stage's factory for code; the options may be left out when the stage needs none. */
export type StageFactory<T extends string, S extends z.ZodType, Out> =
  object extends z.input<S>
    ? (options?: DocumentedInput<T, z.input<S>>, ctx?: PartialStageContext) => Out
    : (options: DocumentedInput<T, z.input<S>>, ctx?: PartialStageContext) => Out;

export function stageFactory<const T extends string, S extends z.ZodType, Out>(def: {
  type: T;
  options: S;
  create(options: z.output<S>, ctx: StageContext): Out;
}): StageFactory<T, S, Out> {
  const factory = (options?: z.input<S>, ctx?: PartialStageContext): Out =>
    def.create(parseStageOptions(def.type, def.options, options), defaultStageContext(ctx));
  return factory as StageFactory<T, S, Out>;
}
