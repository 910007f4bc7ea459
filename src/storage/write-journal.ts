// A per-run journal of the files a run writes: the proof of ownership every clean-up needs.
//
// Folders are shared: other engines write into a table's folders (Spark parts, a compaction job's
// files, a README), and a name or "no metadata references it" proves nothing about who wrote a
// file (issue 36). So a run records a name in its journal, durably, BEFORE it creates the file,
// and a later clean-up deletes only what some run's journal names: a file that no journal names
// is foreign and stays, whatever its name. A run killed between recording and writing leaves a
// name with no file; the sweep simply finds it gone.
//
// Layout, under the store (a local folder or an S3 prefix, object-store.ts):
//
//   <prefix>_journal/<runId>.json   {"format":"catalog-streams.journal","version":1,"run":..,"files":[..]}
//
// `files` are store-relative names under `<prefix>` (never under `_journal/`). The document is
// replaced whole on every `record` (atomically locally, one PUT on S3): journals are small (one
// name per file written), so a rewrite is cheap and a reader never sees half of one.
//
// On S3 a journal is a plain object anyone with write access can plant, so it is not proof on
// its own: every object a run writes carries the user metadata `catalog-streams-run: <runId>`
// (`writeOptions()`), and the sweep deletes an S3 object only when its metadata names the run
// whose journal lists it. A planted journal naming a foreign object deletes nothing. Locally a
// file has no such metadata; whoever can plant a journal in the folder can delete its files
// anyway, and every name is still resolved under the store's root (checkedSegments).
//
// Every journal is read bounded (READ_LIMITS.journal bytes, MAX_FILES names) and validated: one
// that is not a journal of this form is ignored (reported), never acted upon.
import { lstat } from 'node:fs/promises';
import { StorageError } from '../errors.js';
import { READ_LIMITS } from './bounded-read.js';
import { checkedSegments, type ObjectStore, type ObjectWriteOptions } from './object-store.js';
import type { S3ObjectStore } from './s3-object-store.js';

/** The folder, under a journal's prefix, that holds the journals (reserved: never a file of a run). */
export const JOURNAL_FOLDER = '_journal/';
/** The S3 user metadata key (`x-amz-meta-catalog-streams-run`) naming the run that wrote an object. */
export const RUN_METADATA = 'catalog-streams-run';
/** The most names one journal may hold (a run writes far fewer files). */
export const MAX_FILES = 100_000;
/** The most journals one sweep reads (one per run that left files); the rest wait for the next sweep. */
export const MAX_JOURNALS = 5_000;

const FORMAT = 'catalog-streams.journal';
/** A run id as a journal's file name: no separators, so the name cannot leave the journal folder. */
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export interface JournalDocument {
  format: typeof FORMAT;
  version: 1;
  run: string;
  files: string[];
}

/** Another run's journal, as `ownedBy` read it. */
export interface RunJournal {
  readonly runId: string;
  /** Store-relative names, each checked to be under the prefix and outside `_journal/`. */
  readonly files: readonly string[];
}

export interface SweepOptions {
  /** The sweeping run's own id: its journal is never swept. */
  self?: string;
  /** Only the journals whose id this accepts (several datasets sharing one root keep apart). */
  only?: (runId: string) => boolean;
  /** Told once per journal that was not used (unreadable, not a journal, a name outside the prefix). */
  ignored?: (location: string, reason: string) => void;
}

export interface SweepResult {
  /** Locations of the files removed (temp files of killed writers included). */
  removed: string[];
  /** Journals whose files are all gone, removed with them (run ids). */
  dropped: string[];
}

function journalRel(prefix: string, runId: string): string {
  return `${prefix}${JOURNAL_FOLDER}${runId}.json`;
}

function checkPrefix(prefix: string): void {
  if (prefix !== '' && (!prefix.endsWith('/') || checkedSegments(prefix.slice(0, -1), prefix).length === 0))
    throw new StorageError('use', prefix, 'a journal prefix is empty or a folder name ending with "/"', {
      code: 'storage.outside_root',
    });
}

function checkRunId(runId: string): void {
  if (!RUN_ID.test(runId))
    throw new StorageError(
      'use',
      JSON.stringify(runId),
      'it is not a run id a journal can be named by (letters, digits, ".", "_", "-"; at most 128)',
      { code: 'storage.outside_root' },
    );
}

/** Why `rel` cannot be a journaled name under `prefix` of `store`, or undefined when it can. */
function badName(store: ObjectStore, prefix: string, rel: unknown): string | undefined {
  if (typeof rel !== 'string') return `${JSON.stringify(rel)} is not a name`;
  try {
    checkedSegments(rel, store.location(''));
  } catch (err) {
    return (err as Error).message;
  }
  if (!rel.startsWith(prefix) || rel.startsWith(`${prefix}${JOURNAL_FOLDER}`))
    return `${JSON.stringify(rel)} is not a file under ${store.location(prefix)} outside ${JOURNAL_FOLDER}`;
  return undefined;
}

/**
 * One run's journal. `open` it before the run writes anything, `record` names before creating
 * their files, and write those files with `writeOptions()` (S3 metadata).
 */
export class WriteJournal {
  readonly store: ObjectStore;
  readonly runId: string;
  readonly prefix: string;
  readonly #files: string[] = [];
  readonly #known = new Set<string>();
  /** Records are chained: two concurrent `record` calls write the document in order, the last whole. */
  #writing: Promise<void> = Promise.resolve();

  private constructor(store: ObjectStore, runId: string, prefix: string) {
    this.store = store;
    this.runId = runId;
    this.prefix = prefix;
  }

  /**
   * The journal of `runId` under `prefix` ('' or a folder ending with '/') of `store`. Nothing is
   * written until the first `record`; a run id that already has a journal (a run resumed in the
   * same process) continues it.
   */
  static async open(store: ObjectStore, runId: string, prefix = ''): Promise<WriteJournal> {
    checkPrefix(prefix);
    checkRunId(runId);
    const journal = new WriteJournal(store, runId, prefix);
    const existing = await readJournal(store, prefix, runId);
    if (existing && typeof existing !== 'string') for (const rel of existing.files) journal.#add(rel);
    return journal;
  }

  /** Where the journal document is. */
  get location(): string {
    return this.store.location(journalRel(this.prefix, this.runId));
  }

  /** The names recorded so far. */
  get files(): readonly string[] {
    return this.#files;
  }

  /** Options for every write of a journaled file: on S3 the metadata naming this run. */
  writeOptions(options: ObjectWriteOptions = {}): ObjectWriteOptions {
    return { ...options, metadata: { ...options.metadata, [RUN_METADATA]: this.runId } };
  }

  /**
   * Records `rels` (store-relative names under the prefix) durably; resolves once the document
   * holding them is written. Names already recorded cost nothing.
   */
  async record(rels: readonly string[]): Promise<void> {
    for (const rel of rels) {
      const bad = badName(this.store, this.prefix, rel);
      if (bad) throw new StorageError('record', this.location, bad, { code: 'storage.outside_root' });
    }
    const fresh = rels.filter((rel) => !this.#known.has(rel));
    if (fresh.length === 0) return this.#writing;
    for (const rel of fresh) this.#add(rel);
    if (this.#files.length > MAX_FILES)
      throw new StorageError('record', this.location, `a journal holds at most ${MAX_FILES} names`, {
        code: 'storage.too_large',
      });
    const body = documentText(this.runId, this.#files);
    const write = this.#writing.then(() => this.store.write(journalRel(this.prefix, this.runId), body));
    this.#writing = write.catch(() => {});
    return write;
  }

  #add(rel: string): void {
    if (this.#known.has(rel)) return;
    this.#known.add(rel);
    this.#files.push(rel);
  }

  /** Whether `rel` is a name this run recorded. */
  has(rel: string): boolean {
    return this.#known.has(rel);
  }

  /**
   * The journals of other runs under `prefix` (sorted by run id), each validated; `ignored` is
   * told about every document that is not a valid journal (it is left as it is).
   */
  static async ownedBy(
    store: ObjectStore,
    prefix = '',
    options: Pick<SweepOptions, 'self' | 'ignored' | 'only'> = {},
  ): Promise<RunJournal[]> {
    checkPrefix(prefix);
    const journals: RunJournal[] = [];
    const folder = `${prefix}${JOURNAL_FOLDER}`;
    for await (const { rel } of store.list(folder, folder.split('/').length)) {
      const name = rel.slice(folder.length);
      if (!name.endsWith('.json')) continue;
      const runId = name.slice(0, -'.json'.length);
      if (runId === options.self || (options.only && !options.only(runId))) continue;
      if (!RUN_ID.test(runId)) {
        options.ignored?.(store.location(rel), 'its name is not a run id');
        continue;
      }
      if (journals.length >= MAX_JOURNALS) break;
      const read = await readJournal(store, prefix, runId).catch((err: Error) => err.message);
      if (read === undefined) continue;
      if (typeof read === 'string') options.ignored?.(store.location(rel), read);
      else journals.push(read);
    }
    return journals;
  }

  /**
   * Removes the files other runs' journals under `prefix` list and `keep` rejects, and locally
   * the temp files of those names whose writer is dead. A file is removed only with proof: its
   * name in the journal and, on S3, the object's `catalog-streams-run` metadata naming that
   * journal's run (an object without it is foreign: left, and struck from the journal). A journal
   * whose files are all gone is removed; one with kept files is rewritten to list only those.
   */
  static async sweep(
    store: ObjectStore,
    prefix: string,
    keep: (rel: string) => boolean,
    options: SweepOptions = {},
  ): Promise<SweepResult> {
    const result: SweepResult = { removed: [], dropped: [] };
    const journals = await WriteJournal.ownedBy(store, prefix, options);
    const sweepable = new Set(journals.flatMap((j) => j.files.filter((rel) => !keep(rel))));
    const depth = Math.max(0, ...[...sweepable].map((rel) => rel.split('/').length));
    if (depth > 0) result.removed.push(...(await store.removeAbandoned(prefix, (rel) => sweepable.has(rel), depth)));
    for (const journal of journals) {
      const left: string[] = [];
      for (const rel of journal.files) {
        if (keep(rel)) left.push(rel);
        else if (await removeOwned(store, rel, journal.runId)) result.removed.push(store.location(rel));
      }
      const at = journalRel(prefix, journal.runId);
      if (left.length === 0) {
        await store.remove(at);
        result.dropped.push(journal.runId);
      } else if (left.length < journal.files.length) await store.write(at, documentText(journal.runId, left));
    }
    return result;
  }
}

function documentText(runId: string, files: readonly string[]): string {
  const doc: JournalDocument = { format: FORMAT, version: 1, run: runId, files: [...files] };
  return `${JSON.stringify(doc)}\n`;
}

/** A run's journal, undefined when it has none, or a string saying why it is not a valid one. */
async function readJournal(
  store: ObjectStore,
  prefix: string,
  runId: string,
): Promise<RunJournal | string | undefined> {
  const text = await store.readText(journalRel(prefix, runId), { maxBytes: READ_LIMITS.journal });
  if (text === undefined) return undefined;
  let doc: Partial<JournalDocument>;
  try {
    doc = JSON.parse(text) as Partial<JournalDocument>;
  } catch (err) {
    return `it is not valid JSON (${(err as Error).message})`;
  }
  if (doc?.format !== FORMAT || doc.version !== 1 || doc.run !== runId || !Array.isArray(doc.files))
    return `it is not a journal of run ${runId} (format ${FORMAT}, version 1)`;
  if (doc.files.length > MAX_FILES) return `it lists more than ${MAX_FILES} names`;
  for (const rel of doc.files) {
    const bad = badName(store, prefix, rel);
    if (bad) return bad;
  }
  return { runId, files: doc.files as string[] };
}

/** Whether `rel` was removed: only when present and, on S3, written by `runId` (its metadata says so). */
async function removeOwned(store: ObjectStore, rel: string, runId: string): Promise<boolean> {
  if (store.kind === 'object') {
    // A store without object metadata cannot prove anything: nothing is removed from it.
    const metadata = (store as Partial<Pick<S3ObjectStore, 'metadata'>>).metadata;
    if (typeof metadata !== 'function' || (await metadata.call(store, rel))?.[RUN_METADATA] !== runId) return false;
    await store.remove(rel);
    return true;
  }
  // Locally: only a regular file (lstat: a link at the name is not the file the run wrote).
  const info = await lstat(store.location(rel)).catch(() => undefined);
  if (!info?.isFile()) return false;
  await store.remove(rel);
  return true;
}
