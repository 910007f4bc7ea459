// The public code API of catalog-streams.
export * from './catalog/index.js';
export * from './errors.js';
export * from './events.js';
export * from './pipeline/stage.js';
export { StageRegistry } from './pipeline/registry.js';
