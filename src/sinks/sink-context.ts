// A StageContext for sinks used from code without a pipeline: a developer
// composing with stream.pipeline calls `parquetSink({path})` and gets a sink
// whose run id, name and date come from here. Whatever the caller passes in
// (a signal, events, a run) wins over the defaults.
import { randomUUID } from 'node:crypto';
import { RunEvents } from '../events.js';
import { StageRegistry } from '../pipeline/registry.js';
import type { SinkStream, StageContext, StageDefinition } from '../pipeline/stage.js';

export type PartialStageContext = Partial<StageContext>;

/**
 * Completes a partial context. `sinkStages` lists the stage definitions that
 * `createSink` (dead-letter outputs) may build when the caller gave none.
 */
export function resolveSinkContext(ctx: PartialStageContext | undefined, sinkStages: () => StageDefinition[]): StageContext {
  if (ctx && isFullContext(ctx)) return ctx;
  const run = ctx?.run ?? { id: defaultRunId(), name: 'catalog-streams', startedAt: new Date() };
  let registry: StageRegistry | undefined;
  const resolved: StageContext = {
    run,
    baseDir: ctx?.baseDir ?? process.cwd(),
    signal: ctx?.signal ?? new AbortController().signal,
    events: ctx?.events ?? new RunEvents(),
    source: ctx?.source,
    services: ctx?.services ?? {},
    createSink:
      ctx?.createSink ??
      ((spec) => {
        registry ??= new StageRegistry().register(...sinkStages());
        return registry.create<SinkStream>('sink', spec, resolved, 'deadLetter');
      }),
    describeRun: ctx?.describeRun ?? (() => ({ runId: run.id, name: run.name, startedAt: run.startedAt })),
  };
  return resolved;
}

function isFullContext(ctx: PartialStageContext): ctx is StageContext {
  return !!(ctx.run && ctx.baseDir && ctx.signal && ctx.events && ctx.createSink && ctx.describeRun && ctx.services);
}

/** `20260102T030405Z-1a2b3c4d`: sortable by time, unique enough for a code-API run. */
function defaultRunId(now = new Date()): string {
  return `${now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}-${randomUUID().slice(0, 8)}`;
}
