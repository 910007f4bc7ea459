// The built-in stages, registered explicitly in one place. A user registers
// their own stages on a registry made here (`createRegistry().register(...)`).
import { StageRegistry } from '../core/registry.js';
import type { StageDefinition } from '../core/stage.js';
import { sinkStages } from '../sinks/index.js';
import { sourceStages } from '../sources/index.js';
import { findStages, transformStages } from '../transforms/index.js';

export const builtinStages: readonly StageDefinition[] = [
  ...sourceStages,
  ...transformStages,
  // The lookup transforms (products.find, media.find) call the API; listed after the record transforms.
  ...findStages,
  ...sinkStages,
];

/** A registry holding every built-in stage. */
export function createRegistry(): StageRegistry {
  return new StageRegistry().register(...builtinStages);
}
