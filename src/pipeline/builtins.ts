// The built-in stages, registered explicitly in one place. A user registers
// their own stages on a registry made here (`createRegistry().register(...)`).
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sinkStages } from '../sinks/index.js';
import { sourceStages } from '../sources/index.js';
// The lookup transforms (products.find, media.find) call the API, so they live beside the sources.
import { findStages } from '../sources/find-stage.js';
import { customStage, transformStages } from '../transforms/index.js';
import type { LocatedIssue } from './issues.js';
import { StageRegistry } from './registry.js';
import type { PreflightEnv, StageDefinition } from './stage.js';

/**
 * `custom`: its module must exist, so `validate` (no network, no code run)
 * catches a wrong path; loading it, which runs its code, waits for the run.
 */
function customModuleExists(options: { module: string }, env: PreflightEnv): LocatedIssue[] {
  const spec = options.module;
  const file = spec.startsWith('file:') ? fileURLToPath(spec) : isAbsolute(spec) ? spec : resolve(env.baseDir, spec);
  if (existsSync(file)) return [];
  return [{ path: ['module'], message: `module "${spec}" does not exist (looked for ${file}; relative paths start at the pipeline file's folder)`, kind: 'value' }];
}

export const builtinStages: readonly StageDefinition[] = [
  ...sourceStages,
  ...transformStages.map((def) => (def === customStage ? { ...def, preflight: customModuleExists } : def)),
  ...findStages,
  ...sinkStages,
];

/** A registry holding every built-in stage. */
export function createRegistry(): StageRegistry {
  return new StageRegistry().register(...builtinStages);
}
