// Local files for the jsonl and parquet sinks: a path template resolved against
// ctx.baseDir, atomic temp+rename files committed together when the sink
// finishes, or stdout for `-` (ctx.stdout, if set, replaces
// process.stdout; tests and embedding callers use it).
import { join, relative, resolve, sep } from 'node:path';
import { ConfigError } from '../../errors.js';
import type { StageContext } from '../../core/stage.js';
import { fileLockBackend, RunLock, storeLockBackend } from '../../core/lock.js';
import { LocalObjectStore } from '../../storage/object-store.js';
import { AtomicFile } from '../../storage/atomic-file.js';
import {
  assertRecordedFolders,
  datasetStore,
  recordPending,
  removeStaleTemps,
  removeSuperseded,
  templateCheckedFrom,
} from './local-dataset.js';
import { failedRegionFiles, reportKept } from '../shared/failed-regions.js';
import { StdoutDestination } from '../shared/byte-destination.js';
import { PathTemplate } from '../shared/path-template.js';
import { RecordSink, type RecordEncoding } from '../shared/record-sink.js';
import { datasetTag, RunKeyedDataset, runKeyedRoot } from '../shared/run-keyed-dataset.js';
import type { RotationOptions } from '../shared/rotation.js';
import { LocalSchemaCheck } from './local-schema-check.js';

export const STDOUT_PATH = '-';

export interface LocalFileSinkSetup<Item> {
  sinkType: string;
  ctx: StageContext;
  path: string;
  rotation: RotationOptions;
  format: RecordEncoding<Item>;
}

/** Parses the path template (undefined for stdout), rejecting options stdout cannot honour. */
export function localPathTemplate(
  path: string,
  rotation: RotationOptions,
  ctx: StageContext,
): PathTemplate | undefined {
  if (path !== STDOUT_PATH) return PathTemplate.parse(path, ctx.run, 'path');
  if (rotation.maxRows !== undefined || rotation.maxBytes !== undefined) {
    throw new ConfigError('path "-" (stdout) is one stream: maxRows/maxBytes rotation needs a file path', {
      path: 'path',
    });
  }
  return undefined;
}

export function createLocalFileSink<Item>(
  setup: LocalFileSinkSetup<Item>,
  template: PathTemplate | undefined,
): RecordSink<Item> {
  const { ctx } = setup;
  const stdout = ctx.stdout;
  const held: { lock?: RunLock | undefined } = {};
  // The dataset's folder: no link below it is written through (storage/no-symlink.ts).
  const store = template && datasetStore(template, ctx.baseDir);
  const runKeyed = template?.hasRun ? runKeyedDataset(setup, () => sink) : undefined;
  // A dataset of several files that each run replaces (no {run}): recorded, locked, and superseded.
  const replaced = template && template.isDynamic && !template.hasRun ? template : undefined;
  // A format that records its columns in its files (Parquet, CSV): the previous output's are compared with this run's.
  const schemaCheck =
    template && setup.format.readPublishedSchema
      ? new LocalSchemaCheck({ sinkType: setup.sinkType, ctx, template, format: setup.format })
      : undefined;
  const sink: RecordSink<Item> = new RecordSink<Item>({
    sinkType: setup.sinkType,
    ctx,
    format: setup.format,
    template,
    templateOption: 'path',
    locate: (rendered) => (template ? resolve(ctx.baseDir, rendered) : STDOUT_PATH),
    openDestination: async (location) => {
      if (!store) return new StdoutDestination(stdout);
      await runKeyed?.record(relative(runKeyed.store.location(''), location).split(sep).join('/'));
      const rel = relative(store.root, location).split(sep).join('/');
      return AtomicFile.create(location, { check: () => store.assertNoLinks(rel, true) });
    },
    rotation: setup.rotation,
    commitOnClose: false,
    writeEmpty: !template || template.fields.length === 0,
    prepare: template ? () => prepareLocal(template, ctx, runKeyed, held, (err) => sink.destroy(err)) : undefined,
    lock: () => runKeyed ?? held.lock,
    // A fan-out region that failed part-way: its files of this run would replace its published ones.
    withhold: replaced && (() => failedRegionLocations(replaced, ctx)),
    beforePublish:
      replaced || schemaCheck
        ? async (written) => {
            // Before the renames: the file this run replaces still holds the previous columns.
            await schemaCheck?.readPrevious(written);
            if (replaced) await recordPending(replaced, ctx.baseDir, written, ctx.run.id, ctx.events);
          }
        : undefined,
    afterCommit: schemaCheck
      ? async () => {
          schemaCheck.report();
          return [];
        }
      : undefined,
    // Without {run} a run replaces the dataset: the files earlier runs of it recorded and this run did not overwrite go.
    // A fixed path is one file, which the run overwrote: nothing to record or remove.
    supersede: runKeyed
      ? () => runKeyed.settle()
      : replaced
        ? (written) => supersedeLocal(replaced, ctx, written)
        : undefined,
    release: async () => {
      await runKeyed?.release();
      await held.lock?.release();
      held.lock = undefined;
    },
  });
  return sink;
}

/** Before the first record: temp files of killed runs go; a replaced dataset is checked and locked. */
async function prepareLocal(
  template: PathTemplate,
  ctx: StageContext,
  runKeyed: RunKeyedDataset | undefined,
  held: { lock?: RunLock | undefined },
  onLost: (err: Error) => void,
): Promise<void> {
  const removed = await removeStaleTemps(template, ctx.baseDir);
  if (removed.length > 0) {
    ctx.events.emit('info', {
      code: 'stale_temp_removed',
      message: `removed ${removed.length} temp file(s) that killed runs left: ${removed.join(', ')}`,
    });
  }
  await runKeyed?.prepare();
  // A dataset of several files that each run replaces: one run publishes into it at a time.
  if (template.isDynamic && !template.hasRun) {
    // Before the first request (and before the lock, which a failure here would leave to
    // the heartbeat): a file this run would remove must not lie behind a link.
    await assertRecordedFolders(template, ctx.baseDir);
    const dir = resolve(ctx.baseDir, template.fixedPrefix());
    held.lock = await RunLock.acquire(
      fileLockBackend(join(dir, LOCAL_LOCK_NAME)),
      { runId: ctx.run.id, pipeline: ctx.run.name },
      { what: `dataset ${dir}${sep}`, code: 'publish.locked', onLost },
    );
  }
}

/** Which absolute paths of a replaced dataset lie in a failed fan-out region's partition, if any region failed. */
function failedRegionLocations(template: PathTemplate, ctx: StageContext): ((location: string) => boolean) | undefined {
  const failed = failedRegionFiles(ctx, [template]);
  if (!failed) return undefined;
  const root = resolve(ctx.baseDir, template.fixedPrefix());
  return (location) => failed(`${template.fixedPrefix()}${relative(root, location).split(sep).join('/')}`);
}

/** The files earlier runs of a replaced dataset recorded that this run did not write: removed, and said. */
async function supersedeLocal(template: PathTemplate, ctx: StageContext, written: ReadonlySet<string>): Promise<void> {
  // A fan-out region that failed this run keeps its partition's earlier files (shared/failed-regions.ts).
  const keep = failedRegionFiles(ctx, [template]);
  const { removed, kept, unlisted } = await removeSuperseded(
    template,
    ctx.baseDir,
    written,
    ctx.run.id,
    ctx.events,
    keep,
  );
  reportKept(ctx, 'local', kept);
  if (removed.length > 0)
    ctx.events.emit('info', {
      code: 'superseded',
      message: `removed ${removed.length} file(s) of earlier runs: ${removed.join(', ')}`,
    });
  if (unlisted.length > 0)
    ctx.events.emit('warning', {
      code: 'sink.cleanup_unlisted',
      message:
        `${unlisted.length} file(s) match the path ${template.source} but no earlier run of this dataset recorded them ` +
        `(another pipeline's files, or written by a version without dataset records); not removed: ${unlisted.join(', ')}`,
    });
}

/**
 * A `{run}` dataset's journal and lock (sinks/shared/run-keyed-dataset.ts), in the folder above
 * its first {run} or {date}; names in the journal are relative to that folder (its store's root).
 */
function runKeyedDataset<Item>(setup: LocalFileSinkSetup<Item>, sinkOf: () => RecordSink<Item>): RunKeyedDataset {
  const { ctx } = setup;
  const dir = resolve(ctx.baseDir, runKeyedRoot(setup.path, ctx.run, 'path'));
  const store = new LocalObjectStore(dir, { checkedFrom: templateCheckedFrom(setup.path, ctx.baseDir) });
  const tag = datasetTag(setup.path);
  return new RunKeyedDataset({
    store,
    root: '',
    tag,
    run: ctx.run,
    events: ctx.events,
    lock: storeLockBackend(store, `.publish.${tag}.lock`),
    what: `dataset ${dir}${sep}`,
    onLost: (err) => sinkOf().destroy(err),
  });
}

/** The lock file of a local dataset that each run replaces, in its folder. */
export const LOCAL_LOCK_NAME = '.publish.lock';
