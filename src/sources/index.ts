// Readable object-mode sources, one factory per endpoint, and their stage
// definitions for the registry (`sourceStages`).
import type { StageDefinition } from '../core/stage.js';
import { queryStages } from './query-sources.js';
import { streamStages } from './stream-sources.js';

/** Every source stage: products.query, products.stream, media.stream, organizations.query, ... */
export const sourceStages: StageDefinition[] = [...queryStages, ...streamStages];

export {
  activeIngredientsQuery,
  activeIngredientsQueryOptions,
  atcCategoriesQuery,
  atcCategoriesQueryOptions,
  ospCategoriesQuery,
  ospCategoriesQueryOptions,
  productFamiliesQuery,
  productFamiliesQueryOptions,
  brandsQuery,
  brandsQueryOptions,
  catalogCategoriesQuery,
  catalogCategoriesQueryOptions,
  colorsQuery,
  colorsQueryOptions,
  dietaryRestrictionsQuery,
  dietaryRestrictionsQueryOptions,
  mediaQuery,
  mediaQueryOptions,
  publicCategoriesQuery,
  publicCategoriesQueryOptions,
  correctionsQuery,
  correctionsQueryOptions,
  organizationsQuery,
  organizationsQueryOptions,
  productsQuery,
  productsQueryOptions,
  querySource,
  updatesQuery,
  updatesQueryOptions,
  type ProductsQueryOptions,
  type QueryOptions,
  type QuerySourceStream,
} from './query-sources.js';
export {
  mediaStream,
  mediaStreamOptions,
  productsStream,
  productsStreamOptions,
  streamSource,
  type ProductsStreamOptions,
  type StreamOptions,
} from './stream-sources.js';
export { estimateSource, type PlannedSlice, type SourcePlan, type SourceType } from './plan.js';
export { chunkFilter, checkChunkableFilter, type ChunkPlan, type FilterChunk } from './code-chunks.js';
export { CatalogSource, type SourceMeta, type SourceRunOptions } from './source-stream.js';
export { PagedQuerySource, type Segment } from './paged-query.js';
export { CreatedAtQuerySource } from './createdat-query.js';
export { readWindow, secondBefore, type ReadWindow } from './read-window.js';
export { NdjsonStreamSource, type StreamSegment } from './ndjson-stream.js';
export { ORIGIN, originOf, setOrigin, keepOrigin, type RecordOrigin } from '../core/origin.js';
