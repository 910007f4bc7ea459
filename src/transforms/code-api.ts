// What the code API needs to build a stage without a pipeline runner: option
// parsing with the stage's own schema (same errors as a pipeline file) and a
// default StageContext (src/pipeline/default-context.ts) for `validate({...})`
// called inside stream.pipeline.
export { parseStageOptions } from '../core/issues.js';

export { defaultStageContext } from '../core/default-context.js';
