// The run history of a pipeline: one compact JSON line per finished run, so `catalog-streams
// history` can show runs over time (the metrics file and the Pushgateway keep only the last run,
// and `--summary-file` is overwritten by every run).
//
// Where: beside the state file when the pipeline has one (`<state folder>/history/<name>.jsonl`,
// local or on S3: the state is what a scheduled pipeline already keeps somewhere durable), else
// `<output folder>/.catalog-streams/history/<name>.jsonl`. The file is rewritten whole through the
// storage layer (temp file and rename locally, one PUT on S3), so a reader never sees half a line;
// it keeps the last MAX_HISTORY_RUNS runs, so it stays a few hundred KB at most.
import path from 'node:path';
import { CatalogStreamsError } from '../errors.js';
import { LocalObjectStore, type ObjectStore } from '../storage/object-store.js';
import { createS3Client, type S3Env } from '../storage/s3-client.js';
import { S3ObjectStore } from '../storage/s3-object-store.js';
import type { S3Feature } from '../storage/s3-sdk.js';
import type { TableManifest, TableVersion } from '../sinks/index.js';
import type { LoadedPipeline } from './loader.js';
import type { RunSummary } from './runner.js';

/** Runs a history file keeps (about 300 bytes each). */
export const MAX_HISTORY_RUNS = 500;

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
): ObjectStore {
  const s3 = /^s3:\/\/([^/]+)\/?(.*)$/.exec(location);
  if (s3) {
    const prefix = s3[2]!.replace(/\/+$/, '');
    return new S3ObjectStore({
      bucket: s3[1]!,
      prefix: prefix ? `${prefix}/` : '',
      client: () => createS3Client({ maxAttempts: 3 }, env, feature),
      feature,
    });
  }
  return new LocalObjectStore(path.resolve(baseDir, location));
}

/** Where a pipeline's history file is: a store and the name in it. */
export function historyLocation(loaded: LoadedPipeline, env?: S3Env): { store: ObjectStore; rel: string } {
  const name = `${safeName(loaded.config.name)}.jsonl`;
  const baseDir = loaded.outputDir ?? loaded.baseDir;
  const state = loaded.config.state?.path;
  if (state) {
    const slash = state.lastIndexOf('/');
    const folder = slash < 0 ? '.' : state.slice(0, slash + 1);
    // The history lives beside the state: on S3 when the state is.
    return { store: folderStore(folder, baseDir, env, 's3-state'), rel: `history/${name}` };
  }
  return { store: folderStore('.', baseDir, env, 's3-state'), rel: `.catalog-streams/history/${name}` };
}

/** A pipeline name as one file name segment. */
function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_') || '_';
}

/** Adds the run to its pipeline's history file, keeping the last MAX_HISTORY_RUNS. */
export async function appendHistory(loaded: LoadedPipeline, summary: RunSummary, env?: S3Env): Promise<string> {
  const { store, rel } = historyLocation(loaded, env);
  try {
    const previous = (await store.readText(rel)) ?? '';
    const lines = previous.split('\n').filter((l) => l.trim() !== '');
    lines.push(JSON.stringify(historyEntry(summary)));
    await store.write(rel, `${lines.slice(-MAX_HISTORY_RUNS).join('\n')}\n`, { contentType: 'application/x-ndjson' });
    return store.location(rel);
  } finally {
    await store.close();
  }
}

/** The history of a pipeline, oldest first (empty when it has none); lines that do not parse are skipped. */
export async function readHistory(
  loaded: LoadedPipeline,
  env?: S3Env,
): Promise<{ location: string; entries: HistoryEntry[]; skipped: number }> {
  const { store, rel } = historyLocation(loaded, env);
  try {
    const text = (await store.readText(rel)) ?? '';
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
    return { location: store.location(rel), entries, skipped };
  } finally {
    await store.close();
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
      if (text === undefined) continue;
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
