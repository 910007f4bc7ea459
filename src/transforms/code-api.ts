// What the code API needs to build a stage without a pipeline runner: option
// parsing with the stage's own schema (same errors as a pipeline file) and a
// default StageContext for `validate({...})` called inside stream.pipeline.
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { ConfigError } from '../errors.js';
import { RunEvents } from '../events.js';
import { formatIssues } from '../pipeline/registry.js';
import type { StageContext } from '../pipeline/stage.js';

/** Validates code-API options against the stage's schema; errors read like pipeline-file ones. */
export function parseStageOptions<S extends z.ZodType>(type: string, schema: S, options: unknown): z.output<S> {
  const parsed = schema.safeParse(options ?? {});
  if (!parsed.success) throw new ConfigError(formatIssues(parsed.error, type), { path: type }, { cause: parsed.error });
  return parsed.data;
}

/**
 * A context for stages built in code without one: a fresh run id, cwd as the
 * base directory, its own event bus and an AbortSignal that never fires. It has
 * no sink registry, so a dead-letter sink needs a context from the runner.
 */
export function defaultStageContext(): StageContext {
  const run = { id: randomUUID(), name: 'catalog-streams', startedAt: new Date() };
  return {
    run,
    baseDir: process.cwd(),
    signal: new AbortController().signal,
    events: new RunEvents(),
    services: {},
    createSink(spec) {
      throw new ConfigError(
        `cannot create the sink "${spec.type}": this stage was built without a StageContext; pass the run's context (its createSink builds registered sinks) as the second argument`,
        { path: 'deadLetter' },
        { code: 'config.no_sink_registry' },
      );
    },
    describeRun: () => ({ runId: run.id, name: run.name, startedAt: run.startedAt }),
  };
}
