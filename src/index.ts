// The public code API of catalog-streams: the API as code, the client, the
// sources, transforms and sinks as typed factories, and the pipeline runner.
// A pipeline file and this API are the same stages seen twice.
export * from './catalog/index.js';
export * from './errors.js';
export * from './events.js';
export * from './core/stage.js';
export { compileGetter, parseFieldPath, type FieldPath, type Getter, type PathStep } from './core/field-path.js';
export { StageRegistry } from './core/registry.js';
export { createRegistry, builtinStages } from './pipeline/builtins.js';
export { defaultStageContext, type PartialStageContext } from './core/default-context.js';
export { stageFactory, type StageFactory } from './core/stage-factory.js';
export { loadPipelineFile, parsePipelines, type LoadedPipeline } from './pipeline/loader.js';
export { runPipeline, RunFailedError, type RunOptions, type RunSummary } from './pipeline/runner.js';
export { PipelineFile } from './pipeline/pipeline-file.js';
export * from './client/index.js';
export * from './sources/index.js';
export * from './transforms/index.js';
export * from './sinks/index.js';
export { startSandbox, type Sandbox, type SandboxOptions } from './sandbox/index.js';
