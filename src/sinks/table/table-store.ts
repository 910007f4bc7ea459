// Where a table lives (a local folder or an S3 prefix, storage/object-store.ts) and the names it
// writes there (ARCHITECTURE.md, "The table sink"). Data files are staged (a hidden temp file
// renamed at publication; on S3 uploaded under their final keys, which carry the run id, before
// `_table.json` lists them); `_table.json` is one atomic write, the commit point.
import type { LockBackend } from '../../core/lock.js';
import { storeLockBackend } from '../../core/lock.js';
import { JournaledStore } from '../../storage/journaled-store.js';
import type { ObjectStore, StagedObject } from '../../storage/object-store.js';
import { WriteJournal } from '../../storage/write-journal.js';

/**
 * The names a table writes, relative to its root: a part number as written (five digits, more
 * without a leading zero) and a run id, in the table's own folders. A name is no proof of
 * ownership (Spark names its parts `part-00000-<uuid>-c000.snappy.parquet`): clean-up removes
 * what the run journals name (storage/write-journal.ts); this pattern only checks what a
 * `_table.json` names as the merge state, and which files a table written before journals
 * listed (legacyOwned, hive-layout.ts).
 */
const TABLE_FILE =
  /^(?:(?:snapshot|changes)\/dt=\d{4}-\d{2}-\d{2}\/part-(?:\d{5}|[1-9]\d{5,})-[A-Za-z0-9][\w.-]*\.parquet|_table\/state-[A-Za-z0-9][\w.-]*\.v8\.gz)$/;

/** Whether `rel` (relative to the table's root, with `/`) is a name the table writes. */
export function isTableFile(rel: string): boolean {
  return TABLE_FILE.test(rel);
}

export type StagedFile = StagedObject;

/**
 * Whether `rel` is a commit point every run rewrites (`_table.json`, an Iceberg table's version
 * hint): journaled like every write, never removed by a sweep, and no reason to keep a journal.
 */
export function isCommitPoint(rel: string): boolean {
  return (
    rel === '_table.json' ||
    rel === 'current/metadata/version-hint.text' ||
    rel === 'changes/metadata/version-hint.text'
  );
}

/** The folders that hold the table's files (hive layout). */
export const TABLE_FOLDERS = ['snapshot/', 'changes/', '_table/'];

/** What a clean-up at the start of a run found: what it removed, and files it left as not the table's. */
export interface Leftovers {
  /** Locations removed (files killed or superseded runs of this table wrote, proven by their journals). */
  removed: string[];
  /** Store-relative names in the table's folders that no journal of the table names and no version lists. */
  foreign: string[];
  /** Every name a valid journal of an earlier run listed (removed or kept). */
  journaled: ReadonlySet<string>;
  /** Why documents under `_journal/` were not used (not journals of this table). */
  ignored: string[];
}

export class TableStore {
  readonly objects: ObjectStore;
  /** A sharded table's shard (table option `shard`): its own lock and journals beside the other shards'. */
  readonly shard: string | undefined;
  #journal: WriteJournal | undefined;

  constructor(objects: ObjectStore, options: { shard?: string | undefined } = {}) {
    this.objects = objects;
    this.shard = options.shard;
  }

  /**
   * The journal id of a run: its run id, and with a shard `<run>.shard-<shard>`, so a run sweeps
   * only its own shard's journals: another shard's run may be writing at the same time.
   */
  #journalId(runId: string): string {
    return this.shard === undefined ? runId : `${runId}.shard-${this.shard}`;
  }

  get kind(): 'file' | 'object' {
    return this.objects.kind;
  }

  location(rel: string): string {
    return this.objects.location(rel);
  }

  /** Where the table's publication lock lives (one run publishes into a table at a time). */
  lockBackend(): LockBackend {
    // The names earlier versions used: a hidden file locally, `_publish.lock` on S3.
    // A shard's runs exclude each other; the shards commit beside each other (iceberg-shard.ts).
    const name = this.shard === undefined ? 'publish' : `publish-${this.shard}`;
    return storeLockBackend(this.objects, this.objects.kind === 'file' ? `.${name}.lock` : `_${name}.lock`);
  }

  /**
   * Opens this run's journal of files written (`_journal/<run>.json` in the table's root), under
   * the table's lock and before anything is written: every later write through `stage`, `write`
   * or a `journaled` store records its name first.
   */
  async openJournal(runId: string): Promise<WriteJournal> {
    this.#journal = await WriteJournal.open(this.objects, this.#journalId(runId), '');
    return this.#journal;
  }

  get journal(): WriteJournal | undefined {
    return this.#journal;
  }

  /** `inner` (a store rooted at `under` of the table's root), its writes journaled in this run's journal. */
  journaled(inner: ObjectStore, under: string): ObjectStore {
    return new JournaledStore(inner, () => this.#journal, under);
  }

  /** Stages `rel` once its name is in the run's journal (on S3 with the run's metadata). */
  async stage(rel: string): Promise<StagedFile> {
    const journal = this.#requireJournal();
    await journal.record([rel]);
    return this.objects.stage(rel, journal.writeOptions());
  }

  /** Writes `rel` once its name is in the run's journal. */
  async write(rel: string, body: string): Promise<void> {
    const journal = this.#requireJournal();
    await journal.record([rel]);
    await this.objects.write(rel, body, journal.writeOptions({ contentType: 'application/json' }));
  }

  #requireJournal(): WriteJournal {
    if (!this.#journal) throw new Error('table: the run wrote before opening its journal (a bug of the table sink)');
    return this.#journal;
  }

  /**
   * Removes the files earlier runs' journals name and `keep` rejects (killed runs' parts, what a
   * published version superseded), locally with their dead writers' temp files; on S3 only
   * objects whose metadata names the journal's run. `folders`: where foreign files are looked
   * for (reported, never removed): every file there that `keep` rejects and no journal names.
   */
  async sweep(keep: (rel: string) => boolean, folders: readonly string[]): Promise<Leftovers> {
    const self = this.#journal?.runId;
    const ignored: string[] = [];
    const suffix = this.shard === undefined ? undefined : `.shard-${this.shard}`;
    const result = await WriteJournal.sweep(this.objects, '', keep, {
      ...(self !== undefined ? { self } : {}),
      ...(suffix !== undefined ? { only: (id: string) => id.endsWith(suffix) } : {}),
      ignored: (at, reason) => ignored.push(`${at} (${reason})`),
      shared: isCommitPoint,
    });
    const foreign: string[] = [];
    for (const folder of folders)
      for await (const { rel } of this.objects.list(folder, folder.split('/').length + 2))
        if (!keep(rel) && !result.journaled.has(rel) && !this.#journal?.has(rel)) foreign.push(rel);
    return { removed: result.removed, foreign, journaled: result.journaled, ignored };
  }
}
