// The StageContext of a stage built in code without a runner: a developer
// composing with stream.pipeline calls `validate({...})` or `parquetSink({path})`
// and gets a fresh run (id, name, start date), cwd as the base directory, its
// own event bus, a signal that never fires unless given, and dead-letter sinks
// built from the built-in sink stages. Whatever the caller passes in wins.
import { RunEvents } from '../events.js';
import { sinkStages } from '../sinks/index.js';
import { StageRegistry } from './registry.js';
import { newRunId } from './run-id.js';
import type { SinkStream, StageContext } from './stage.js';

/** A StageContext given in part (or not at all) by a code-API caller. */
export type PartialStageContext = Partial<StageContext>;

export function defaultStageContext(partial: Partial<StageContext> = {}): StageContext {
  if (isComplete(partial)) return partial;
  const run = partial.run ?? { id: newRunId(), name: 'catalog-streams', startedAt: new Date() };
  let registry: StageRegistry | undefined;
  const ctx: StageContext = {
    run,
    baseDir: partial.baseDir ?? process.cwd(),
    signal: partial.signal ?? new AbortController().signal,
    events: partial.events ?? new RunEvents(),
    client: partial.client,
    source: partial.source,
    services: partial.services ?? {},
    createSink:
      partial.createSink ??
      ((spec) => {
        // Built on first use: the sinks module is only needed once a dead letter is written.
        registry ??= new StageRegistry().register(...sinkStages);
        return registry.create<SinkStream>('sink', spec, ctx, 'deadLetter');
      }),
    describeRun: partial.describeRun ?? (() => ({ runId: run.id, name: run.name, startedAt: run.startedAt })),
  };
  return ctx;
}

function isComplete(ctx: Partial<StageContext>): ctx is StageContext {
  return !!(ctx.run && ctx.baseDir && ctx.signal && ctx.events && ctx.createSink && ctx.describeRun && ctx.services);
}
