// The files of a local dataset: every path its template renders, for any partition value, part
// number (and run id). Two chores of the publication protocol work on them:
// - before the first record, the temp files that killed runs of this dataset left behind
//   (`.<name>.<host>-<pid>-<random>.tmp`) are removed: only those of a process of this host
//   that no longer exists, or untouched for a day; never a live run's;
// - after a run published, the files of earlier runs that this run replaces (same template
//   without {run}: a same-day rerun of `dt={date}/part-{part}.parquet`) are removed, so a
//   glob over the dataset counts each record once.
//
// A name alone cannot say whose a file is: `out/p200000.jsonl` is part 200000 of
// `out/p{part}.jsonl` and part 0 of `out/p2{part}.jsonl`. So each published run of a replacing
// dataset leaves a record of the files it wrote (`.catalog-streams.<hash>.json` in the dataset's
// folder, `datasetRecordPath`), and a later run removes only files an earlier record lists that
// still resolve under the dataset's folder and match its template. Files the template matches
// that no record lists (another pipeline's, or a dataset published before records existed) stay,
// named in a `sink.cleanup_unlisted` warning.
//
// Every file of the dataset is reached through its folder's store (storage/object-store.ts), so no
// symbolic link below the dataset's folder is followed: a partition folder that is a link fails
// the run before the first request when the record lists a file in it (`assertRecordedFolders`),
// and is never written into or removed from.
import { createHash } from 'node:crypto';
import { unlink } from 'node:fs/promises';
import path from 'node:path';
import { StorageError } from '../../errors.js';
import type { RunEvents } from '../../events.js';
import { LocalObjectStore } from '../../storage/object-store.js';
import type { PathTemplate } from '../shared/path-template.js';

/** How many path segments the template's names have below its fixed prefix. */
function templateDepth(template: PathTemplate): number {
  const sample = template.render(
    template.fields.map(() => 'x'),
    0,
  );
  return sample.slice(template.fixedPrefix().length).split('/').length;
}

/**
 * Where a template's no-symlink check starts: the folder it names before its first placeholder.
 * That folder may be a link; below it none (`dt={date}/` is a partition folder, even though each
 * run renders it as a fixed name).
 */
export function templateCheckedFrom(source: string, baseDir: string): string {
  const open = source.indexOf('{');
  const literal = open < 0 ? source : source.slice(0, open);
  return path.resolve(baseDir, literal.slice(0, literal.lastIndexOf('/') + 1));
}

/** The dataset's folder (the template's fixed prefix) as a store. */
export function datasetStore(template: PathTemplate, baseDir: string): LocalObjectStore {
  return new LocalObjectStore(path.resolve(baseDir, template.fixedPrefix()), {
    checkedFrom: templateCheckedFrom(template.source, baseDir),
  });
}

/** `file` (absolute) relative to the store's root, with `/`. */
function relativeTo(store: LocalObjectStore, file: string): string {
  return path.relative(store.root, file).split(path.sep).join('/');
}

/** Removes this dataset's temp files whose writer is gone; returns their paths. */
export async function removeStaleTemps(template: PathTemplate, baseDir: string): Promise<string[]> {
  const prefix = template.fixedPrefix();
  return datasetStore(template, baseDir).removeAbandoned(
    '',
    (finalRel) => template.pattern.test(`${prefix}${finalRel}`),
    templateDepth(template),
  );
}

/** The record of the files the last published run of this dataset wrote, in the dataset's folder. */
export function datasetRecordPath(template: PathTemplate, baseDir: string): string {
  return path.join(path.resolve(baseDir, template.fixedPrefix()), recordName(template));
}

/** The record's name in the dataset's folder. */
function recordName(template: PathTemplate): string {
  // The pattern holds the template with its run values (name, date) rendered: one record per dataset.
  const id = createHash('sha256').update(template.pattern.source).digest('hex').slice(0, 16);
  return `.catalog-streams.${id}.json`;
}

/**
 * Fails with `storage.symlink` when a folder of a file the dataset's record lists is a symbolic
 * link (before the first request: the run would remove that file through it). Names outside the
 * dataset are left to `removeSuperseded`, which refuses them with a warning.
 */
export async function assertRecordedFolders(template: PathTemplate, baseDir: string): Promise<void> {
  const store = datasetStore(template, baseDir);
  // A record that cannot be read is reported once, by removeSuperseded.
  for (const rel of await readDatasetRecord(store, template, undefined)) {
    const file = path.resolve(store.root, rel);
    if (isInside(store.root, file)) await store.assertNoLinks(relativeTo(store, file), true);
  }
}

interface DatasetRecord {
  format: 'catalog-streams.dataset';
  version: 1;
  template: string;
  runId: string;
  /** Files of the dataset, relative to its folder, with `/`. */
  files: string[];
}

export interface SupersedeResult {
  removed: string[];
  /** Earlier files this run did not write that `keep` kept (a failed region's): still recorded. */
  kept: string[];
  /** Files the template matches that no record of this dataset lists: left in place. */
  unlisted: string[];
}

/**
 * Before a run renames its files into place: records them beside the earlier runs' (`written`:
 * absolute paths), so whatever step a kill stops the renames at, every file of the dataset is one
 * a record claims, and the next run's `removeSuperseded` removes what it does not write again.
 */
export async function recordPending(
  template: PathTemplate,
  baseDir: string,
  written: ReadonlySet<string>,
  runId: string,
  events: RunEvents,
): Promise<void> {
  const store = datasetStore(template, baseDir);
  const ours = [...written].map((file) => relativeTo(store, file));
  const previous = await readDatasetRecord(store, template, events);
  await writeDatasetRecord(store, template, {
    template: template.source,
    runId,
    files: [...new Set([...previous, ...ours])],
  });
}

/**
 * Removes the dataset's files that an earlier run of it recorded and this run did not write
 * (`written`: absolute paths), and records this run's files for the next run. `keep` (a path as
 * the template renders it) spares earlier files: a failed region's (shared/failed-regions.ts),
 * which stay recorded, so the run that next reads the region replaces them.
 */
export async function removeSuperseded(
  template: PathTemplate,
  baseDir: string,
  written: ReadonlySet<string>,
  runId: string,
  events: RunEvents,
  keep?: (rendered: string) => boolean,
): Promise<SupersedeResult> {
  const store = datasetStore(template, baseDir);
  const root = store.root;
  const ours = [...written].map((file) => relativeTo(store, file));
  const previous = await readDatasetRecord(store, template, events);
  const earlier = previous.filter((rel) => !ours.includes(rel));
  const spared = keep ? earlier.filter((rel) => keep(`${template.fixedPrefix()}${rel}`)) : [];
  const stale = earlier.filter((rel) => !spared.includes(rel));
  // Recorded before anything goes: a run killed during the removal leaves the rest listed.
  const record = (files: string[]) => writeDatasetRecord(store, template, { template: template.source, runId, files });
  await record([...ours, ...earlier]);
  const removed: string[] = [];
  for (const rel of stale) {
    const file = await removeStale(store, template, rel, events);
    if (file) removed.push(file);
  }
  await record([...ours, ...spared]);
  const kept = new Set([...written, ...earlier.map((rel) => path.resolve(root, rel))]);
  const unlisted: string[] = [];
  const depth = templateDepth(template);
  for await (const { rel } of store.list('', depth)) {
    const segments = rel.split('/');
    const file = path.resolve(root, rel);
    if (segments.length !== depth || segments.at(-1)!.startsWith('.') || kept.has(file)) continue;
    if (template.pattern.test(`${template.fixedPrefix()}${rel}`)) unlisted.push(file);
  }
  return { removed, kept: spared.map((rel) => path.resolve(root, rel)), unlisted };
}

/**
 * Removes one file an earlier run recorded: its path when removed; undefined when already gone, or
 * refused with a warning: not a file of the dataset, or a folder above it is a link (it became one
 * after the check before the first request; whatever it points to is never touched).
 */
async function removeStale(
  store: LocalObjectStore,
  template: PathTemplate,
  rel: string,
  events: RunEvents,
): Promise<string | undefined> {
  const file = path.resolve(store.root, rel);
  const recordFile = path.join(store.root, recordName(template));
  if (!isInside(store.root, file) || !template.pattern.test(`${template.fixedPrefix()}${relativeTo(store, file)}`)) {
    events.emit('warning', {
      code: 'sink.cleanup_refused',
      message: `${recordFile} lists "${rel}", which is not a file of the dataset ${template.source} under ${store.root}${path.sep}; not removed`,
    });
    return undefined;
  }
  try {
    await store.assertNoLinks(relativeTo(store, file), true);
  } catch (err) {
    if (!(err instanceof StorageError) || err.code !== 'storage.symlink') throw err;
    events.emit('warning', { code: 'sink.cleanup_refused', message: `${file} not removed: ${err.message}` });
    return undefined;
  }
  return unlink(file).then(
    () => file,
    (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    },
  );
}

function isInside(root: string, file: string): boolean {
  const rel = path.relative(root, file);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

/** The files an earlier run recorded; none when there is no record, or one that cannot be read (a warning). */
async function readDatasetRecord(
  store: LocalObjectStore,
  template: PathTemplate,
  events: RunEvents | undefined,
): Promise<string[]> {
  const name = recordName(template);
  const text = await store.readText(name);
  if (text === undefined) return [];
  try {
    const record = JSON.parse(text) as Partial<DatasetRecord>;
    if (record.format === 'catalog-streams.dataset' && Array.isArray(record.files))
      return record.files.filter((f): f is string => typeof f === 'string');
  } catch {
    // Reported below, as for a record of another shape.
  }
  events?.emit('warning', {
    code: 'sink.cleanup_record',
    message: `${store.location(name)} is not a dataset record (catalog-streams.dataset); the files of earlier runs it would list are not removed`,
  });
  return [];
}

async function writeDatasetRecord(
  store: LocalObjectStore,
  template: PathTemplate,
  record: Omit<DatasetRecord, 'format' | 'version'>,
): Promise<void> {
  const document: DatasetRecord = { format: 'catalog-streams.dataset', version: 1, ...record };
  await store.write(recordName(template), `${JSON.stringify(document, null, 2)}\n`);
}
