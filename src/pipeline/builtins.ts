// The built-in stages, registered explicitly in one place. A user registers
// their own stages on a registry made here (`createRegistry().register(...)`).
import { sinkStages } from '../sinks/index.js';
import { sourceStages } from '../sources/index.js';
import { transformStages } from '../transforms/index.js';
import { StageRegistry } from './registry.js';
import type { StageDefinition } from './stage.js';

export const builtinStages: readonly StageDefinition[] = [...sourceStages, ...transformStages, ...sinkStages];

/** A registry holding every built-in stage. */
export function createRegistry(): StageRegistry {
  return new StageRegistry().register(...builtinStages);
}
