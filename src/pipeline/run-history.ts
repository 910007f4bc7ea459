// The run history of a pipeline: one compact JSON document per finished run, so `catalog-streams
// history` can show runs over time (the metrics file and the Pushgateway keep only the last run,
// and `--summary-file` is overwritten by every run).
//
// Where: beside the state file when the pipeline has one (`<state folder>/history/`, local or on
// S3: the state is what a scheduled pipeline already keeps somewhere durable), else
// `.catalog-streams/history/` in the working directory (or `history/` in CATALOG_STREAMS_STATE_DIR). Not in the pipeline file's folder: that
// folder is often a package's (`npm pack` shipped the runs of whoever packed it) or a git
// checkout (the runs landed in commits and in the test suite's copies of pipelines/), while the
// working directory is the project the runs belong to, as for the shipped pipelines' outputs run
// from node_modules. In that folder:
//   <name>/<run id>.json   one per run, created with putIfAbsent (a run id is unique to its run)
//   <name>.jsonl           older runs, compacted: the last MAX_HISTORY_RUNS, one line each
//   <name>.jsonl.lock      held while a run compacts
// Why not append to one file: "read, add a line, rewrite" loses a line when two runs of a pipeline
// (two pipelines of one file without a state, a rerun beside a scheduled run) finish together and
// both read before either wrote. A file per run is never rewritten, so nothing is lost whatever the
// interleaving; a run that finds COMPACT_AFTER_RUNS of them folds them into `<name>.jsonl` under a
// lock (two compactions at once could each drop the other's lines), then removes only the files
// it folded in. A reader merges both, by run id, so a crash between the fold and the removal shows
// each run once.
//
// A history folder can hold files of others (a config someone keeps there, a copy of another
// tool's output): a compaction removes only a file it can show is a run file of this pipeline, by
// its name (`<run id>.json`, the form newRunId makes) and its content (one entry whose run id is
// that name and whose pipeline is this one). Anything else stays and is reported (info
// `history.foreign_files`). A symbolic link where the history folder or file should be fails
// (`storage.symlink`); every file is read bounded (READ_LIMITS), a few at a time.
import path from 'node:path';
import { CatalogStreamsError } from '../errors.js';
import { READ_LIMITS } from '../storage/bounded-read.js';
import { assertNoSymlinks } from '../storage/no-symlink.js';
import { LocalObjectStore, type ObjectStore } from '../storage/object-store.js';
import { createS3Client, parseS3Location, type S3Env } from '../storage/s3-client.js';
import { S3ObjectStore } from '../storage/s3-object-store.js';
import type { S3Feature } from '../storage/s3-sdk.js';
import { RunLock, storeLockBackend } from '../core/lock.js';
import {
  type S3Manifest,
  type TableManifest,
  type TableVersion,
  icebergTableVersions,
  manifestKeyPattern,
} from '../sinks/index.js';
import type { LoadedPipeline } from './loader.js';
import type { RunSummary } from './runner.js';

/** Runs a history file keeps (about 300 bytes each). */
export const MAX_HISTORY_RUNS = 500;

/** Per-run files a run lets pile up before it folds them into the history file. */
export const COMPACT_AFTER_RUNS = 20;

/** Per-run files read at once: enough to be quick, few enough for any open-file limit. */
const READ_CONCURRENCY = 16;

/**
 * Per-run files one compaction folds in (the oldest first) and one read of the history looks at
 * (the newest): a folder that thousands of failed compactions let grow is worked off a slice per
 * run, never read whole.
 */
export const MAX_RUN_FILES_READ = 1_000;

/** A per-run file's name: a run id as newRunId makes it (`20260101T000000Z-0a1b2c`), `.json`. */
const RUN_FILE = /^\d{8}T\d{6}Z-[0-9a-f]{6}\.json$/;

/** One run, as a line of the history file. Short names: the file is meant to stay small. */
export interface HistoryEntry {
  runId: string;
  pipeline: string;
  status: RunSummary['status'];
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  read: number;
  /** Rows per sink type. */
  written: Record<string, number>;
  invalid: number;
  requests: number;
  retries: number;
  throttles: number;
  /** The error's code of a run that did not succeed. */
  error?: string;
}

export function historyEntry(s: RunSummary): HistoryEntry {
  return {
    runId: s.runId,
    pipeline: s.pipeline,
    status: s.status,
    startedAt: s.startedAt,
    finishedAt: s.finishedAt,
    durationMs: s.durationMs,
    read: s.records.read,
    written: s.records.written,
    invalid: s.records.invalid,
    requests: s.requests,
    retries: s.retries,
    throttles: s.throttles,
    ...(s.error ? { error: s.error.code } : {}),
  };
}

/** A folder (local path or `s3://bucket/prefix`) as an object store. */
export function folderStore(
  location: string,
  baseDir: string,
  env: S3Env | undefined,
  feature: S3Feature,
  checkedFrom?: string,
): ObjectStore {
  const s3 = parseS3Location(location);
  if (s3) {
    return new S3ObjectStore({
      bucket: s3.bucket,
      prefix: s3.prefix,
      client: () => createS3Client({ maxAttempts: 3 }, env, feature),
      feature,
    });
  }
  return new LocalObjectStore(path.resolve(baseDir, location), { checkedFrom });
}

/** Where a pipeline's history is: a store and the names in it (see the top of this file). */
export interface HistoryFiles {
  store: ObjectStore;
  /** The compacted history, one line per run. */
  file: string;
  /** The folder of the per-run files, ending in `/`. */
  runs: string;
  /** The lock a compaction holds. */
  lock: string;
}

/** The history folder of a pipeline without a state, relative to the run-state folder. */
export const DEFAULT_HISTORY_FOLDER = 'history/';

/**
 * The folder of run state for pipelines without a state: CATALOG_STREAMS_STATE_DIR when set (a
 * container whose working directory is read-only, a test suite that keeps its runs apart), else
 * `.catalog-streams/` in the working directory.
 */
export function runStateDir(env: S3Env | undefined, cwd = process.cwd()): string {
  const set = env?.CATALOG_STREAMS_STATE_DIR;
  return set ? path.resolve(cwd, set) : path.join(cwd, '.catalog-streams');
}

export function historyLocation(loaded: LoadedPipeline, env?: S3Env, cwd = process.cwd()): HistoryFiles {
  const name = safeName(loaded.config.name);
  const state = loaded.config.state?.path;
  let store: ObjectStore;
  let folder: string;
  if (state) {
    const slash = state.lastIndexOf('/');
    // The history lives beside the state: on S3 when the state is; through no link the state may
    // not be reached through either (a relative state.path is checked from the folder it is relative to).
    const base = loaded.outputDir ?? loaded.baseDir;
    const checkedFrom = path.isAbsolute(state) ? undefined : base;
    store = folderStore(slash < 0 ? '.' : state.slice(0, slash + 1), base, env, 's3-state', checkedFrom);
    folder = 'history/';
  } else {
    store = new LocalObjectStore(runStateDir(env, cwd));
    folder = DEFAULT_HISTORY_FOLDER;
  }
  return { store, file: `${folder}${name}.jsonl`, runs: `${folder}${name}/`, lock: `${folder}${name}.jsonl.lock` };
}

/** A pipeline name as one file name segment. */
function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_') || '_';
}

/** Adds the run to its pipeline's history; returns where the history is. */
export async function appendHistory(
  loaded: LoadedPipeline,
  summary: RunSummary,
  env?: S3Env,
  onForeign?: (locations: string[]) => void,
): Promise<string> {
  const files = historyLocation(loaded, env);
  try {
    await recordRun(files, historyEntry(summary), { onForeign });
    return files.store.location(files.file);
  } finally {
    await files.store.close();
  }
}

/**
 * Writes the run's own history file, then folds the per-run files into the history file when
 * `compactAfter` of them are waiting. Safe beside any number of runs of the same pipeline.
 */
export async function recordRun(
  files: HistoryFiles,
  entry: HistoryEntry,
  options: { compactAfter?: number } & CompactOptions = {},
): Promise<void> {
  await checkNoLinks(files);
  // putIfAbsent: a file per run is never overwritten; the same run recorded twice keeps its first.
  await files.store.putIfAbsent(`${files.runs}${safeName(entry.runId)}.json`, `${JSON.stringify(entry)}\n`, {
    contentType: 'application/json',
  });
  if ((await listRunFiles(files)).own.length >= (options.compactAfter ?? COMPACT_AFTER_RUNS))
    await compactHistory(files, { runId: entry.runId, pipeline: entry.pipeline }, options);
}

export interface CompactOptions {
  /** Told the locations of files in the per-run folder that are not this pipeline's run files (left alone). */
  onForeign?: (locations: string[]) => void;
}

/** A local history reached through a symbolic link fails (`storage.symlink`) before any I/O in it. */
async function checkNoLinks(files: HistoryFiles): Promise<void> {
  if (!(files.store instanceof LocalObjectStore)) return;
  await assertNoSymlinks(files.store.root, files.runs);
  await assertNoSymlinks(files.store.root, files.file);
  await assertNoSymlinks(files.store.root, files.lock);
}

/**
 * Folds the per-run files into the history file (the last MAX_HISTORY_RUNS runs) and removes the
 * files it folded in. False when another run holds the lock: it is compacting, and the files stay
 * until it or a later run folds them in; nothing is lost either way.
 */
export async function compactHistory(
  files: HistoryFiles,
  who: { runId: string; pipeline: string },
  options: CompactOptions = {},
): Promise<boolean> {
  await checkNoLinks(files);
  let lock: RunLock;
  try {
    lock = await RunLock.acquire(storeLockBackend(files.store, files.lock), who, {
      what: `history ${files.store.location(files.file)}`,
      code: 'history.locked',
    });
  } catch (err) {
    if ((err as { code?: string }).code === 'history.locked') return false;
    throw err;
  }
  try {
    // Only the files read here as this pipeline's runs are removed below: a run that writes its
    // file meanwhile keeps it, and a file of someone else is never removed.
    await removeHistoryTemps(files);
    const listed = await listRunFiles(files);
    const perRun = await readRunFiles(files, listed.own.slice(0, MAX_RUN_FILES_READ));
    const compacted = parseLines((await readHistoryFile(files)) ?? '');
    const entries = mergeEntries(compacted.entries, perRun.entries).slice(-MAX_HISTORY_RUNS);
    await files.store.write(files.file, entries.map((e) => `${JSON.stringify(e)}\n`).join(''), {
      contentType: 'application/x-ndjson',
    });
    for (const rel of perRun.folded) await files.store.remove(rel);
    const foreign = [...listed.foreign, ...perRun.foreign];
    if (foreign.length > 0) options.onForeign?.(foreign.map((rel) => files.store.location(rel)));
    return true;
  } finally {
    await lock.release();
  }
}

/**
 * Temp files of the history file and of this pipeline's run files that a killed writer left (its
 * process gone, or untouched for a day); under the compaction lock, so no live fold loses its temp.
 */
async function removeHistoryTemps(files: HistoryFiles): Promise<void> {
  const folder = files.file.slice(0, files.file.lastIndexOf('/') + 1);
  const ours = (rel: string): boolean =>
    rel === files.file || (rel.startsWith(files.runs) && RUN_FILE.test(rel.slice(files.runs.length)));
  await files.store.removeAbandoned(folder, ours, files.runs.split('/').length);
}

/**
 * The per-run files waiting to be folded in, by name: `own` named as a run file, `foreign` any
 * other file (temp files of a writer in progress left out).
 */
async function listRunFiles(files: HistoryFiles): Promise<{ own: string[]; foreign: string[] }> {
  const own: string[] = [];
  const foreign: string[] = [];
  const depth = files.runs.split('/').length;
  for await (const { rel } of files.store.list(files.runs, depth)) {
    const base = rel.slice(files.runs.length);
    if (base.includes('/') || base.startsWith('.')) continue;
    (RUN_FILE.test(base) ? own : foreign).push(rel);
  }
  return { own, foreign };
}

/** The compacted history file's text (bounded), or undefined when there is none. */
function readHistoryFile(files: HistoryFiles): Promise<string | undefined> {
  return files.store.readText(files.file, { maxBytes: READ_LIMITS.historyFile });
}

/**
 * The entries of per-run files, read a few at a time and bounded. `folded`: the files shown to be
 * this pipeline's runs (one entry whose run id names the file); `foreign`: the others, which stay.
 */
async function readRunFiles(
  files: HistoryFiles,
  rels: readonly string[],
): Promise<{ entries: HistoryEntry[]; skipped: number; folded: string[]; foreign: string[] }> {
  const out = { entries: [] as HistoryEntry[], skipped: 0, folded: [] as string[], foreign: [] as string[] };
  const pipeline = files.runs.split('/').at(-2);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < rels.length) {
      const rel = rels[next++]!;
      const entry = await readRunFile(files, rel).catch(() => undefined);
      const base = rel.slice(files.runs.length);
      if (entry && `${safeName(entry.runId)}.json` === base && safeName(entry.pipeline) === pipeline) {
        out.entries.push(entry);
        out.folded.push(rel);
      } else if (entry !== null) {
        // Not one of ours (or unreadable: too large, not a regular file): never removed.
        out.foreign.push(rel);
        out.skipped++;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, rels.length) }, worker));
  return out;
}

/** A per-run file's one entry; undefined when it holds something else, null when it is gone. */
async function readRunFile(files: HistoryFiles, rel: string): Promise<HistoryEntry | undefined | null> {
  const text = await files.store.readText(rel, { maxBytes: READ_LIMITS.historyRun });
  if (text === undefined) return null;
  const parsed = parseLines(text);
  return parsed.entries.length === 1 && parsed.skipped === 0 && typeof parsed.entries[0]!.pipeline === 'string'
    ? parsed.entries[0]
    : undefined;
}

/** Entries of both sources, one per run id (a per-run file wins: it is the run's own), oldest first. */
function mergeEntries(...lists: HistoryEntry[][]): HistoryEntry[] {
  const byRun = new Map<string, HistoryEntry>();
  for (const list of lists) for (const e of list) byRun.set(e.runId, e);
  return [...byRun.values()].sort((a, b) => a.startedAt.localeCompare(b.startedAt) || a.runId.localeCompare(b.runId));
}

function parseLines(text: string): { entries: HistoryEntry[]; skipped: number } {
  const entries: HistoryEntry[] = [];
  let skipped = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const e = JSON.parse(line) as HistoryEntry;
      if (typeof e.runId === 'string' && typeof e.startedAt === 'string') entries.push(e);
      else skipped++;
    } catch {
      // A hand-edited or truncated line: the others still tell the history.
      skipped++;
    }
  }
  return { entries, skipped };
}

/** Every run of the history (compacted and per-run), oldest first; lines that do not parse are skipped. */
export async function readRuns(files: HistoryFiles): Promise<{ entries: HistoryEntry[]; skipped: number }> {
  // Per-run files first, then the history file: a compaction in between moves a run from the first
  // to the second, where this read still finds it (the other order could miss it in both).
  await checkNoLinks(files);
  const perRun = await readRunFiles(files, (await listRunFiles(files)).own.slice(-MAX_RUN_FILES_READ));
  const compacted = parseLines((await readHistoryFile(files)) ?? '');
  return {
    entries: mergeEntries(compacted.entries, perRun.entries),
    skipped: compacted.skipped + perRun.skipped,
  };
}

/** The history of a pipeline, oldest first (empty when it has none). */
export async function readHistory(
  loaded: LoadedPipeline,
  env?: S3Env,
): Promise<{ location: string; entries: HistoryEntry[]; skipped: number }> {
  const files = historyLocation(loaded, env);
  try {
    return { location: files.store.location(files.file), ...(await readRuns(files)) };
  } finally {
    await files.store.close();
  }
}

/** The versions of every table sink of the pipeline (none for a table not yet published). */
export async function readTableVersions(
  loaded: LoadedPipeline,
  env?: S3Env,
): Promise<Array<{ location: string; versions: TableVersion[] }>> {
  const tables: Array<{ location: string; versions: TableVersion[] }> = [];
  for (const sink of loaded.config.sinks) {
    if (sink.type !== 'table' || typeof sink.path !== 'string') continue;
    const store = folderStore(sink.path, loaded.outputDir ?? loaded.baseDir, env, 's3-table');
    try {
      const text = await store.readText('_table.json');
      if (text === undefined) {
        const current = folderStore(
          `${sink.path.replace(/\/+$/, '')}/current`,
          loaded.outputDir ?? loaded.baseDir,
          env,
          's3-table',
        );
        try {
          const versions = await icebergTableVersions(current);
          if (versions) tables.push({ location: current.location('metadata/version-hint.text'), versions });
        } finally {
          await current.close();
        }
        continue;
      }
      let manifest: TableManifest;
      try {
        manifest = JSON.parse(text) as TableManifest;
      } catch {
        throw new CatalogStreamsError(
          'history.table_manifest',
          `${store.location('_table.json')} is not valid JSON; restore it from a backup (the table's readers need it too)`,
        );
      }
      tables.push({ location: store.location('_table.json'), versions: manifest.versions ?? [] });
    } finally {
      await store.close();
    }
  }
  return tables;
}

/** One run of an s3 sink, as its `_manifest.json` tells it. */
export interface S3ManifestRun {
  runId: string;
  startedAt: string;
  /** Data objects the manifest lists. */
  objects: number;
  rows: number;
  bytes: number;
}

/**
 * The runs the manifests of every s3 sink of the pipeline still describe. A key template with
 * `{date}` keeps a manifest per day (the day's last run), with `{run}` one per run, with neither
 * only the latest run's: a superseded run has no manifest left to read.
 */
export async function readS3Manifests(
  loaded: LoadedPipeline,
  env?: S3Env,
): Promise<Array<{ location: string; runs: S3ManifestRun[] }>> {
  const sinks: Array<{ location: string; runs: S3ManifestRun[] }> = [];
  for (const sink of loaded.config.sinks) {
    if (sink.type !== 's3' || typeof sink.bucket !== 'string' || typeof sink.key !== 'string') continue;
    const where = manifestKeyPattern(
      {
        key: sink.key,
        manifest: typeof sink.manifest === 'boolean' ? sink.manifest : undefined,
        manifestKey: typeof sink.manifestKey === 'string' ? sink.manifestKey : undefined,
      },
      loaded.config.name,
    );
    if (!where) continue;
    const store = folderStore(`s3://${sink.bucket}`, loaded.baseDir, env, 's3-sink');
    try {
      const runs: S3ManifestRun[] = [];
      for await (const { rel } of store.list(where.prefix)) {
        if (!where.pattern.test(rel)) continue;
        const text = await store.readText(rel);
        let manifest: Partial<S3Manifest>;
        try {
          manifest = JSON.parse(text ?? '') as Partial<S3Manifest>;
        } catch {
          throw new CatalogStreamsError(
            'history.s3_manifest',
            `${store.location(rel)} is not valid JSON; restore it or rerun the pipeline (the lake's readers trust only what a manifest lists)`,
          );
        }
        // Another dataset's manifest in a shared folder is not this sink's history.
        if (manifest.keyTemplate !== sink.key || typeof manifest.runId !== 'string') continue;
        runs.push({
          runId: manifest.runId,
          startedAt: manifest.startedAt ?? '',
          objects: manifest.files?.length ?? 0,
          rows: manifest.rows ?? 0,
          bytes: manifest.bytes ?? 0,
        });
      }
      sinks.push({ location: `s3://${sink.bucket}/${where.prefix}`, runs });
    } finally {
      await store.close();
    }
  }
  return sinks;
}
