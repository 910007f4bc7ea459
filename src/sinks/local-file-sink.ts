// Local files for the jsonl and parquet sinks: a path template resolved against
// ctx.baseDir, atomic temp+rename files committed together when the sink
// finishes, or stdout for `-` (ctx.services.stdout, if set, replaces
// process.stdout; tests and embedding callers use it).
import { resolve } from 'node:path';
import type { Writable } from 'node:stream';
import { ConfigError } from '../errors.js';
import type { StageContext } from '../pipeline/stage.js';
import { AtomicFile } from './atomic-file.js';
import { StdoutDestination } from './byte-destination.js';
import { PathTemplate } from './path-template.js';
import { RecordSink, type RecordFormat } from './record-sink.js';
import type { RotationOptions } from './rotation.js';

export const STDOUT_PATH = '-';

export interface LocalFileSinkSetup<Item> {
  sinkType: string;
  ctx: StageContext;
  path: string;
  rotation: RotationOptions;
  format: RecordFormat<Item>;
}

/** Parses the path template (undefined for stdout), rejecting options stdout cannot honour. */
export function localPathTemplate(path: string, rotation: RotationOptions, ctx: StageContext): PathTemplate | undefined {
  if (path !== STDOUT_PATH) return PathTemplate.parse(path, ctx.run, 'path');
  if (rotation.maxRows !== undefined || rotation.maxBytes !== undefined) {
    throw new ConfigError('path "-" (stdout) is one stream: maxRows/maxBytes rotation needs a file path', { path: 'path' });
  }
  return undefined;
}

export function createLocalFileSink<Item>(setup: LocalFileSinkSetup<Item>, template: PathTemplate | undefined): RecordSink<Item> {
  const { ctx } = setup;
  const stdout = ctx.services.stdout as Writable | undefined;
  return new RecordSink<Item>({
    sinkType: setup.sinkType,
    ctx,
    format: setup.format,
    template,
    templateOption: 'path',
    locate: (rendered) => (template ? resolve(ctx.baseDir, rendered) : STDOUT_PATH),
    openDestination: (location) => (template ? AtomicFile.create(location) : new StdoutDestination(stdout)),
    rotation: setup.rotation,
    commitOnClose: false,
    writeEmpty: !template || template.fields.length === 0,
  });
}
