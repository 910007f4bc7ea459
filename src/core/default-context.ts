// The StageContext of a stage built in code without a runner: a developer
// composing with stream.pipeline calls `validate({...})` or `parquetSink({path})`
// and gets a fresh run (id, name, start date), cwd as the base directory, its
// own event bus (its warnings on stderr unless `warnings` says otherwise: src/code-warnings.ts),
// a signal that never fires unless given, and a full run
// (FULL_RUN). Dead-letter sinks come from the sink registry the factory was
// made with (the code API's factories get the built-in sinks: pipeline/code-api.ts);
// a stage made without one asks its caller for ctx.createSink. Whatever the caller passes in wins.
import { ConfigError } from '../errors.js';
import { warningEvents, type WarningOutput } from '../code-warnings.js';
import type { StageRegistry } from './registry.js';
import { newRunId } from './run-id.js';
import { FULL_RUN, type SinkStream, type StageContext } from './stage.js';

/**
 * A StageContext given in part (or not at all) by a code-API caller. Without `events`, the stage's
 * warnings go to `warnings` (default stderr, see setDefaultWarnings).
 */
export type PartialStageContext = Partial<StageContext> & { warnings?: WarningOutput };

export function defaultStageContext(partial: PartialStageContext = {}, sinks?: StageRegistry): StageContext {
  if (isComplete(partial)) return partial;
  const run = partial.run ?? { id: newRunId(), name: 'catalog-streams', startedAt: new Date() };
  const ctx: StageContext = {
    ...partial,
    run,
    baseDir: partial.baseDir ?? process.cwd(),
    signal: partial.signal ?? new AbortController().signal,
    events: partial.events ?? warningEvents(partial.warnings),
    mode: partial.mode ?? FULL_RUN,
    createSink:
      partial.createSink ??
      ((spec) => {
        if (!sinks) {
          throw new ConfigError(
            `deadLetter: no sink registry to build "${spec.type}" from; import the stage from 'catalog-streams' or pass ctx.createSink`,
            { path: 'deadLetter' },
          );
        }
        return sinks.create<SinkStream>('sink', spec, ctx, 'deadLetter');
      }),
    describeRun: partial.describeRun ?? (() => ({ runId: run.id, name: run.name, startedAt: run.startedAt })),
  };
  return ctx;
}

function isComplete(ctx: Partial<StageContext>): ctx is StageContext {
  return !!(ctx.run && ctx.baseDir && ctx.signal && ctx.events && ctx.createSink && ctx.describeRun && ctx.mode);
}
