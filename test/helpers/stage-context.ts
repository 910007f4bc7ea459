// A StageContext for unit and integration tests of single stages: real events,
// a real AbortController, and createSink backed by a registry of the caller's choice.
import { RunEvents } from '../../src/events.js';
import { StageRegistry } from '../../src/core/registry.js';
import type { RunDescription, SinkStream, StageContext, StageDefinition } from '../../src/core/stage.js';

export interface TestContext extends StageContext {
  events: RunEvents;
  controller: AbortController;
  registry: StageRegistry;
}

export function testContext(
  opts: {
    baseDir?: string;
    stages?: StageDefinition[];
    source?: StageContext['source'];
    /** Typed context fields a test sets (recordSchema, recordLookup, stdout, mode...). */
    fields?: Partial<StageContext>;
    run?: Partial<RunDescription>;
  } = {},
): TestContext {
  const controller = new AbortController();
  const events = new RunEvents();
  const registry = new StageRegistry().register(...(opts.stages ?? []));
  const run = { id: 'test-run', name: 'test', startedAt: new Date('2026-01-02T03:04:05Z') };
  const ctx: TestContext = {
    run,
    baseDir: opts.baseDir ?? process.cwd(),
    signal: controller.signal,
    events,
    controller,
    registry,
    source: opts.source,
    mode: { incremental: opts.run?.cursor?.previous !== undefined, allowDeletes: false },
    ...opts.fields,
    createSink: (spec) => registry.create<SinkStream>('sink', spec, ctx, 'deadLetter'),
    describeRun: () => ({ runId: run.id, name: run.name, startedAt: run.startedAt, ...opts.run }),
  };
  return ctx;
}
