// The StageContext of a stage built in code without a runner: a developer
// composing with stream.pipeline calls `validate({...})` or `parquetSink({path})`
// and gets a fresh run (id, name, start date), cwd as the base directory, its
// own event bus, a signal that never fires unless given, and dead-letter sinks
// built from the code API's sink registry. Whatever the caller passes in wins.
import { ConfigError } from '../errors.js';
import { RunEvents } from '../events.js';
import type { StageRegistry } from './registry.js';
import { newRunId } from './run-id.js';
import type { SinkStream, StageContext } from './stage.js';

/** A StageContext given in part (or not at all) by a code-API caller. */
export type PartialStageContext = Partial<StageContext>;

// The core layer knows no sink; the layer that assembles the built-in stages (pipeline/builtins.ts) hands
// its registry here, so a code-API dead letter `{type: 'jsonl', ...}` finds the same sinks a pipeline file does.
let codeApiSinks: (() => StageRegistry) | undefined;

/** Sets the registry that default contexts build dead-letter sinks from (called once by pipeline/builtins.ts). */
export function setCodeApiSinks(registry: () => StageRegistry): void {
  codeApiSinks = registry;
}

export function defaultStageContext(partial: Partial<StageContext> = {}): StageContext {
  if (isComplete(partial)) return partial;
  const run = partial.run ?? { id: newRunId(), name: 'catalog-streams', startedAt: new Date() };
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
        if (!codeApiSinks) {
          throw new ConfigError(
            `deadLetter: no sink registry to build "${spec.type}" from; import the stages from 'catalog-streams' or pass ctx.createSink`,
            { path: 'deadLetter' },
          );
        }
        return codeApiSinks().create<SinkStream>('sink', spec, ctx, 'deadLetter');
      }),
    describeRun: partial.describeRun ?? (() => ({ runId: run.id, name: run.name, startedAt: run.startedAt })),
  };
  return ctx;
}

function isComplete(ctx: Partial<StageContext>): ctx is StageContext {
  return !!(ctx.run && ctx.baseDir && ctx.signal && ctx.events && ctx.createSink && ctx.describeRun && ctx.services);
}
