// The code-API twin of a stage, derived from its definition: `pick({fields: [...]})` parses the
// options with the stage's own schema (the errors a pipeline file gets), completes a missing
// or partial context (default-context.ts) and marks the stream with its planned stage, so a sink
// piped from it knows the records' schema (planned-stage.ts). One convention for every transform:
// `(options, ctx?)`.
import type { Readable, Writable } from 'node:stream';
import type { z } from 'zod';
import type { StageOptionDocs, WithOptionDocs } from '../generated/stage-option-docs.js';
import { defaultStageContext, type PartialStageContext } from './default-context.js';
import { parseStageOptions } from './issues.js';
import { markStage, plannedStage } from './planned-stage.js';
import type { StageRegistry } from './registry.js';
import type { StageContext, StageDefinition } from './stage.js';

/** Options as a caller writes them, each key documented on hover when `npm run docs` generated its JSDoc. */
export type DocumentedInput<T extends string, Input> = T extends keyof StageOptionDocs
  ? WithOptionDocs<T, Input>
  : Input;

/** A stage's factory for code; the options may be left out when the stage needs none. */
export type StageFactory<T extends string, S extends z.ZodType, Out> =
  object extends z.input<S>
    ? (options?: DocumentedInput<T, z.input<S>>, ctx?: PartialStageContext) => Out
    : (options: DocumentedInput<T, z.input<S>>, ctx?: PartialStageContext) => Out;

/**
 * The factory of `def` for code. `sinks`: where its dead-letter sinks come from (the built-in
 * sinks for the package's own factories); without it a dead letter needs ctx.createSink.
 */
export function stageFactory<const T extends string, S extends z.ZodType, Out>(
  def: StageDefinition & {
    type: T;
    options: S;
    create(options: z.output<S>, ctx: StageContext): Out;
  },
  sinks?: StageRegistry,
): StageFactory<T, S, Out> {
  const factory = (options?: z.input<S>, ctx?: PartialStageContext): Out => {
    const parsed = parseStageOptions(def.type, def.options, options);
    const stream = def.create(parsed, defaultStageContext(ctx, sinks));
    return markStage(stream as Readable | Writable, plannedStage(def, parsed, options, def.kind)) as Out;
  };
  return factory as StageFactory<T, S, Out>;
}
