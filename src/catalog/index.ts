// The API as code: limits, resource schemas, endpoints with their filters and sortings.
export * from './limits.js';
export * from './primitives.js';
export * from './filters.js';
export * from './resources/index.js';
export * from './endpoints/index.js';
export * from './schema-fields.js';
export * from './timestamp.js';
export * from './regions.js';
