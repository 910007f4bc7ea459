// The code API's factories of the built-in transforms: the same definitions a pipeline file
// names, made with the built-in sinks for their dead letters (`validate({onInvalid:
// 'dead-letter', deadLetter: {type: 'jsonl', path}})` builds the jsonl sink a file would). The
// transforms cannot import the sinks (a stage folder knows no other), so the layer that knows
// both binds them here, explicitly, instead of through a global the core would read.
import { StageRegistry } from '../core/registry.js';
import { stageFactory } from '../core/stage-factory.js';
import { sinkStages } from '../sinks/index.js';
import {
  customStage,
  dedupeStage,
  dropStage,
  explodeStage,
  extractStage,
  flattenLocalesStage,
  flattenStage,
  normalizeCodesStage,
  pickStage,
  renameStage,
  selectMediaFormatStage,
  validateStage,
  withRegionLocales,
} from '../transforms/index.js';

const deadLetterSinks = new StageRegistry().register(...sinkStages);

export const custom = stageFactory(customStage, deadLetterSinks);
export const dedupe = stageFactory(dedupeStage, deadLetterSinks);
export const drop = stageFactory(dropStage, deadLetterSinks);
export const explode = stageFactory(explodeStage, deadLetterSinks);
export const extract = stageFactory(extractStage, deadLetterSinks);
export const flatten = stageFactory(flattenStage, deadLetterSinks);
export const flattenLocales = withRegionLocales(stageFactory(flattenLocalesStage, deadLetterSinks));
export const normalizeCodes = stageFactory(normalizeCodesStage, deadLetterSinks);
export const pick = stageFactory(pickStage, deadLetterSinks);
export const rename = stageFactory(renameStage, deadLetterSinks);
export const selectMediaFormat = stageFactory(selectMediaFormatStage, deadLetterSinks);
export const validate = stageFactory(validateStage, deadLetterSinks);
