// A dataset whose path or key has {run} in it (`dt={date}/run={run}/part-{part}.parquet`): each
// run adds its own files and replaces nothing, so no later run supersedes a killed run's files. A
// glob reader would count them for ever. So such a dataset keeps a write journal
// (storage/write-journal.ts) under its root, the folder above the first {run} or {date}:
//
// - a run takes the dataset's lock for its whole life (one run writes into the dataset at a time,
//   so every other journal is a run that ended), then sweeps the journals earlier runs left;
// - it records each file's name in its own journal before creating the file (on S3 the object
//   also carries the run in its metadata: the proof a sweep asks for);
// - once the run's outputs are published and settled, it drops its journal: what it wrote is the
//   dataset's now. A journal still there at the next run is a run that did not get that far (killed,
//   failed, revoked): its files go, unless it had published its manifest (killed in between), in
//   which case its files are kept and its journal dropped.
//
// Nothing is removed that a journal does not name, and on S3 nothing whose metadata does not name
// that journal's run: another pipeline's files under the same root stay.
import { createHash } from 'node:crypto';
import { rmdir } from 'node:fs/promises';
import type { RunEvents } from '../../events.js';
import { type LockBackend, RunLock } from '../../core/lock.js';
import type { ObjectStore, ObjectWriteOptions } from '../../storage/object-store.js';
import { JOURNAL_FOLDER, type RunJournal, WriteJournal } from '../../storage/write-journal.js';
import { PathTemplate, type RunValues } from './path-template.js';

const RUN_FIELD = /\{\s*(?:run|date)\s*\}/;

/** The root every run of a `{run}` template writes under: the literal folder above its first {run} or {date}. */
export function runKeyedRoot(source: string, run: RunValues, option: string): string {
  const m = RUN_FIELD.exec(source);
  return PathTemplate.parse(m ? source.slice(0, m.index) : source, run, option).fixedPrefix();
}

/**
 * The name this dataset's journals and lock carry: several `{run}` datasets can share a root (a
 * sink and its dead letters in one folder), each with its own lock and journals.
 */
export function datasetTag(source: string): string {
  return createHash('sha256').update(source).digest('hex').slice(0, 8);
}

export interface RunKeyedDatasetOptions {
  /** The store the template's names are relative to, and the dataset's root in it. */
  store: ObjectStore;
  root: string;
  /** `datasetTag` of the template. */
  tag: string;
  run: RunValues;
  events: RunEvents;
  /** The dataset's lock, under the root. */
  lock: LockBackend;
  /** What the lock guards, for messages: `dataset s3://lake/catalog/nightly/`. */
  what: string;
  onLost(error: Error): void;
  /** Whether an earlier run's journal belongs to a run that published (its manifest exists). */
  published?(journal: RunJournal): Promise<boolean>;
}

export class RunKeyedDataset {
  readonly #options: RunKeyedDatasetOptions;
  #lock: RunLock | undefined;
  #journal: WriteJournal | undefined;

  constructor(options: RunKeyedDatasetOptions) {
    this.#options = options;
  }

  /** The store the journaled names are relative to. */
  get store(): ObjectStore {
    return this.#options.store;
  }

  get root(): string {
    return this.#options.root;
  }

  /** Takes the lock, sweeps what ended runs left, opens this run's journal. */
  async prepare(): Promise<void> {
    const { store, root, run, events } = this.#options;
    this.#lock = await RunLock.acquire(
      this.#options.lock,
      { runId: run.id, pipeline: run.name },
      { what: this.#options.what, code: 'publish.locked', onLost: this.#options.onLost },
    );
    const removed = await this.#sweep();
    if (removed.length > 0)
      events.emit('info', {
        code: 'stale_temp_removed',
        message: `removed ${removed.length} file(s) that killed or failed runs left: ${removed.join(', ')}`,
      });
    this.#journal = await WriteJournal.open(store, `${run.id}.${this.#options.tag}`, root);
  }

  async #sweep(): Promise<string[]> {
    const { store, root, events, published } = this.#options;
    const ignored = (location: string, reason: string) =>
      events.emit('warning', { code: 'sink.cleanup_record', message: `${location}: ${reason}; not used` });
    const only = (id: string) => id.endsWith(`.${this.#options.tag}`);
    const journals = await WriteJournal.ownedBy(store, root, { ignored, only });
    const kept = new Set<string>();
    const done: string[] = [];
    for (const journal of journals) {
      if (!(await published?.(journal))) continue;
      for (const rel of journal.files) kept.add(rel);
      done.push(journal.runId);
    }
    const { removed } = await WriteJournal.sweep(store, root, (rel) => kept.has(rel), { ignored: () => {}, only });
    for (const runId of done) await store.remove(`${root}${JOURNAL_FOLDER}${runId}.json`);
    return removed;
  }

  /** The dataset lock as a fence for the sink's commit points (core/lock.ts, Fencing). */
  async assertHeld(): Promise<void> {
    await this.#lock?.assertHeld();
  }

  /** Records a file's name (relative to the store) before it is created. */
  async record(rel: string): Promise<void> {
    await this.#journal!.record([rel]);
  }

  /** Options for writing a journaled file: on S3 the metadata naming this run. */
  writeOptions(options: ObjectWriteOptions = {}): ObjectWriteOptions {
    return this.#journal!.writeOptions(options);
  }

  /** The run's outputs are published and settled: its files are the dataset's; the journal goes. */
  async settle(): Promise<void> {
    const journal = this.#journal;
    this.#journal = undefined;
    if (journal && journal.files.length > 0) await this.#drop(journal);
  }

  /**
   * Releases the lock. A run that did not settle (it failed, or was stopped) keeps its journal for
   * the next run's sweep, unless nothing it names is left (its outputs were discarded).
   */
  async release(): Promise<void> {
    const journal = this.#journal;
    this.#journal = undefined;
    try {
      if (journal && (await journal.dropIfGone())) await this.#removeEmptyFolder();
    } finally {
      await this.#lock?.release();
      this.#lock = undefined;
    }
  }

  async #drop(journal: WriteJournal): Promise<void> {
    const { store, root } = this.#options;
    await store.remove(`${root}${JOURNAL_FOLDER}${journal.runId}.json`);
    await this.#removeEmptyFolder();
  }

  /** Locally an empty journal folder is left out of the user's dataset folder. */
  async #removeEmptyFolder(): Promise<void> {
    const { store, root } = this.#options;
    if (store.kind === 'file') await rmdir(store.location(`${root}${JOURNAL_FOLDER}`.slice(0, -1))).catch(() => {});
  }
}
