// What the code API needs to build a stage without a pipeline runner: option
// parsing with the stage's own schema (same errors as a pipeline file) and a
// default StageContext (src/pipeline/default-context.ts) for `validate({...})`
// called inside stream.pipeline.
import type { z } from 'zod';
import { ConfigError } from '../errors.js';
import { formatIssues } from '../pipeline/issues.js';

/** Validates code-API options against the stage's schema; errors read like pipeline-file ones. */
export function parseStageOptions<S extends z.ZodType>(type: string, schema: S, options: unknown): z.output<S> {
  const parsed = schema.safeParse(options ?? {});
  if (!parsed.success) throw new ConfigError(formatIssues(parsed.error, type), { path: type }, { cause: parsed.error });
  return parsed.data;
}

export { defaultStageContext } from '../pipeline/default-context.js';
