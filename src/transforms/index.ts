// The transform stages: definitions for the registry (pipeline files, the
// `stages` command); the code API's factories are made from them in pipeline/code-api.ts.
import type { StageDefinition } from '../core/stage.js';
import { customStage } from './custom.js';
import { dedupeStage } from './dedupe.js';
import { dropStage } from './drop.js';
import { explodeStage } from './explode.js';
import { extractStage } from './extract.js';
import { flattenLocalesStage } from './flatten-locales.js';
import { flattenStage } from './flatten.js';
import { normalizeCodesStage } from './normalize-codes.js';
import { pickStage } from './pick.js';
import { renameStage } from './rename.js';
import { selectMediaFormatStage } from './select-media-format.js';
import { validateStage } from './validate.js';

/** Every transform stage, registered under its type name. */
export const transformStages: StageDefinition[] = [
  validateStage,
  flattenLocalesStage,
  selectMediaFormatStage,
  normalizeCodesStage,
  pickStage,
  renameStage,
  dropStage,
  extractStage,
  flattenStage,
  explodeStage,
  dedupeStage,
  customStage,
];

export { RecordTransform, type RecordOutput, type StageStats } from './record-transform.js';
export { defaultStageContext } from '../core/default-context.js';
export {
  INVALID_ACTIONS,
  InvalidRecordError,
  type DeadLetter,
  type InvalidAction,
  type RecordIssue,
} from './dead-letter.js';
export {
  FindTransform,
  findStages,
  findTransform,
  mediaFindOptions,
  productsFindOptions,
  type FindOptions,
} from './find-stage.js';
export {
  validateStage,
  ValidateTransform,
  ValidateOptionsSchema,
  type ValidateOptions,
  type ValidateStats,
} from './validate.js';
export {
  flattenLocalesStage,
  withRegionLocales,
  FlattenLocalesTransform,
  FlattenLocalesOptionsSchema,
  type FlattenLocalesOptions,
} from './flatten-locales.js';
export {
  selectMediaFormatStage,
  SelectMediaFormatTransform,
  SelectMediaFormatOptionsSchema,
  MEDIA_FORMAT_NAMES,
  MEDIA_SIZES,
  type MediaFormatName,
  type MediaSize,
  type SelectMediaFormatOptions,
} from './select-media-format.js';
export {
  normalizeCodesStage,
  NormalizeCodesTransform,
  NormalizeCodesOptionsSchema,
  type NormalizeCodesOptions,
} from './normalize-codes.js';
export { pickStage, PickTransform, PickOptionsSchema, type PickOptions } from './pick.js';
export { renameStage, RenameTransform, RenameOptionsSchema, type RenameOptions } from './rename.js';
export { dropStage, DropTransform, DropOptionsSchema, type DropOptions } from './drop.js';
export { extractStage, ExtractTransform, ExtractOptionsSchema, type ExtractOptions } from './extract.js';
export { flattenStage, FlattenTransform, FlattenOptionsSchema, type FlattenOptions } from './flatten.js';
export { explodeStage, ExplodeTransform, ExplodeOptionsSchema, type ExplodeOptions } from './explode.js';
export { dedupeStage, DedupeTransform, DedupeOptionsSchema, type DedupeOptions, type DedupeStats } from './dedupe.js';
export { customStage, CustomOptionsSchema, type CustomOptions } from './custom.js';
export {
  map,
  filter,
  flatMap,
  FunctionTransform,
  type FunctionKind,
  type MapFunction,
  type FilterFunction,
  type FlatMapFunction,
  type RecordFunctionContext,
} from './functional.js';
