// The public code API of catalog-streams, listed name by name: the API as code (record schemas,
// endpoints, request checks), the client, the sources, transforms and sinks as typed factories with
// their option types and stage definitions, the pipeline runner, errors and run events. Everything
// else is internal and may change without notice; api/catalog-streams.api.md records this surface
// (`npm run api`). The sandbox is `catalog-streams/sandbox`: a test server has no place in a
// production import. A pipeline file and this API are the same stages seen twice.

// Errors: every class a caller may catch, each with a stable `code`.
export {
  AbortedError,
  CatalogStreamsError,
  ConfigError,
  DataError,
  MissingDependencyError,
  RequestValidationError,
  SinkError,
  StorageError,
  UsageError,
} from './errors.js';
export {
  ApiError,
  AuthError,
  NetworkError,
  RateLimitError,
  ResponseTooLargeError,
  StreamProtocolError,
  type ApiErrorBody,
  type ApiErrorDetails,
  type NetworkFailure,
  type StreamProblem,
} from './client/errors.js';
export { SlowBodyError } from './client/catalog-client.js';
// What each code means and whether running again may pass (docs/errors.md is generated from it).
export {
  ERROR_CODES,
  ERROR_CODE_FAMILIES,
  EXIT_CODES,
  describeCode,
  describeExitCode,
  type CodeEntry,
  type CodeFamily,
  type CodeKind,
  type ExitCodeEntry,
  type Remedy,
} from './error-codes.js';

// Run events; where the warnings of stages and clients made in code go without a bus of the caller's.
export { RUN_EVENT_NAMES, RunEvents, type OutputRecord, type RunEventMap, type RunEventName } from './events.js';
export { setDefaultWarnings, warningEvents, type CodeWarning, type WarningOutput } from './code-warnings.js';

// The API as code: record schemas (zod schemas and their types), filters, endpoints, request checks.
export * from './catalog/resources/index.js';
export type * from './catalog/index.js';
export {
  DEFAULT_PAGE_SIZE,
  DEFAULT_RATE_LIMIT_PER_MINUTE,
  MAX_CODES_PER_FILTER,
  MAX_REACHABLE_RESULTS,
  PAGE_SIZES,
} from './catalog/limits.js';
export {
  ENDPOINT_NAMES,
  checkRequest,
  endpoints,
  getEndpoint,
  toWireRequest,
  validateRequest,
} from './catalog/endpoints/index.js';
export { FIND_ENDPOINT_NAMES, findEndpoints } from './catalog/endpoints/find.js';
export { TimestampFilter } from './catalog/filters.js';
export { TIMESTAMP_FORMS, Timestamp, isoSeconds, toUnixSeconds } from './catalog/timestamp.js';
export { describeSchema, type FieldInfo } from './catalog/schema-fields.js';

// The client.
export {
  CatalogClient,
  type CatalogClientOptions,
  type CatalogRecord,
  type CatalogStream,
  type ClientStats,
  type ClientTimeouts,
  type LazyPage,
  type PageMeta,
  type QueryEndpointName,
  type QueryPage,
  type RequestBody,
  type RequestOptions,
  type StreamEndpointName,
} from './client/catalog-client.js';
export type { ApiCredential } from './client/credentials.js';
export { DEFAULT_RETRY_OPTIONS, type RetryOptions } from './client/retry-policy.js';

// Stages: the contract, the registry and the factories' shared context.
export * from './core/stage.js';
export { StageRegistry } from './core/registry.js';
export { stageFactory, type StageFactory } from './core/stage-factory.js';
export { defaultStageContext, type PartialStageContext } from './core/default-context.js';
export { type FieldPath } from './core/field-path.js';
export { originOf, type RecordOrigin } from './core/origin.js';
export type { AnyRecord, RecordStream } from './core/record-stream.js';

// Sources.
export {
  sourceStages,
  activeIngredientsQuery,
  atcCategoriesQuery,
  brandsQuery,
  catalogCategoriesQuery,
  colorsQuery,
  correctionsQuery,
  dietaryRestrictionsQuery,
  mediaQuery,
  mediaStream,
  organizationsQuery,
  ospCategoriesQuery,
  productFamiliesQuery,
  productsQuery,
  productsStream,
  publicCategoriesQuery,
  updatesQuery,
  CatalogSource,
  estimateSource,
  type PlannedSlice,
  type ProductsQueryOptions,
  type ProductsStreamOptions,
  type QueryOptions,
  type SourceMeta,
  type SourcePlan,
  type SourceRunOptions,
  type SourceType,
  type StreamOptions,
  type QuerySourceStream,
  PagedQuerySource,
  CreatedAtQuerySource,
  NdjsonStreamSource,
} from './sources/index.js';

// Transforms.
export {
  transformStages,
  findStages,
  RecordTransform,
  InvalidRecordError,
  INVALID_ACTIONS,
  type DeadLetter,
  type InvalidAction,
  type RecordIssue,
  type RecordOutput,
  type StageStats,
  customStage,
  type CustomOptions,
  dedupeStage,
  DedupeTransform,
  type DedupeOptions,
  type DedupeStats,
  dropStage,
  DropTransform,
  type DropOptions,
  explodeStage,
  ExplodeTransform,
  type ExplodeOptions,
  extractStage,
  ExtractTransform,
  type ExtractOptions,
  findTransform,
  FindTransform,
  type FindOptions,
  flattenStage,
  FlattenTransform,
  type FlattenOptions,
  flattenLocalesStage,
  FlattenLocalesTransform,
  type FlattenLocalesOptions,
  normalizeCodesStage,
  NormalizeCodesTransform,
  type NormalizeCodesOptions,
  pickStage,
  PickTransform,
  type PickOptions,
  renameStage,
  RenameTransform,
  type RenameOptions,
  selectMediaFormatStage,
  SelectMediaFormatTransform,
  MEDIA_FORMAT_NAMES,
  type MediaFormatName,
  type SelectMediaFormatOptions,
  validateStage,
  ValidateTransform,
  type ValidateOptions,
  type ValidateStats,
  map,
  filter,
  flatMap,
  FunctionTransform,
  type FilterFunction,
  type FlatMapFunction,
  type MapFunction,
  type RecordFunctionContext,
} from './transforms/index.js';
// The transforms' factories for code, with the built-in sinks for their dead letters.
export {
  custom,
  dedupe,
  drop,
  explode,
  extract,
  flatten,
  flattenLocales,
  normalizeCodes,
  pick,
  rename,
  selectMediaFormat,
  validate,
} from './pipeline/code-api.js';

// Sinks.
export {
  sinkStages,
  csvSink,
  csvSinkStage,
  jsonlSink,
  jsonlSinkStage,
  parquetSink,
  parquetSinkStage,
  s3Sink,
  s3SinkStage,
  tableSink,
  tableSinkStage,
  mediaMirror,
  mediaMirrorStage,
  type MediaMirrorConfig,
  type MediaMirrorOptions,
  defineSinkFormat,
  type OutputFormat,
  type CsvSinkConfig,
  type CsvSinkOptions,
  type JsonlSinkConfig,
  type JsonlSinkOptions,
  type ParquetSchemaHint,
  type ParquetSinkConfig,
  type ParquetSinkOptions,
  type S3Manifest,
  type S3SinkConfig,
  type S3SinkOptions,
  type SinkCodeExtras,
  type TableManifest,
  type TableSinkConfig,
  type TableSinkOptions,
  type TableVersion,
} from './sinks/index.js';

// Pipelines: loading files, planning and running them.
export { createRegistry, builtinStages } from './pipeline/builtins.js';
export { loadPipelineFile, parsePipelines, type LoadedPipeline } from './pipeline/loader.js';
export {
  runPipeline,
  RunFailedError,
  type ConnectionOverride,
  type RegionOutcome,
  type RunnablePipeline,
  type RunOptions,
  type RunSummary,
} from './pipeline/runner.js';
export {
  planFromStreams,
  planPipeline,
  type PipelinePlan,
  type PlannedNestedSink,
  type PlannedOutput,
  type PlanProblem,
  type StreamPlanOptions,
} from './pipeline/plan.js';
export { plannedStage, stageOf, upstreamStages, type PlannedStage, type StagePosition } from './core/planned-stage.js';
export { PipelineFile } from './pipeline/pipeline-file.js';
// Composing in code: one stream to several sinks, and a chain whose callbacks know their record type.
export { tee, TeeSink } from './pipeline/tee.js';
export { chain, RecordChain } from './pipeline/chain.js';
