// The `hive` layout (the default): Hive-style `dt=` folders of Parquet and `_table.json`, which
// lists every version and is written last, in one atomic write (the commit point).
// ARCHITECTURE.md, "The table sink".
import { SinkError } from '../../errors.js';
import type { Fence } from '../../core/lock.js';
import { isTableFile, TABLE_FOLDERS, type TableStore } from './table-store.js';
import type {
  CleanupWarning,
  NewVersion,
  PreviousVersion,
  PublishedFile,
  TableColumns,
  TableFile,
  TableLayout,
  TableMode,
} from './table-layout.js';

export const TABLE_MANIFEST = '_table.json';

/** What marks a folder as the Iceberg layout's (iceberg-layout.ts), which this layout must not take for its own. */
const ICEBERG_HINT = 'current/metadata/version-hint.text';

export type { TableFile };

export interface TableVersion {
  runId: string;
  /** The `dt=` partition: the run's start date (UTC). */
  date: string;
  mode: TableMode;
  startedAt: string;
  committedAt: string;
  schemaHash: string;
  /** Snapshot rows. */
  rows: number;
  counts: { inserted: number; updated: number; deleted: number; unchanged: number };
  /** Records of another id whose key an earlier record of the run had (a key that is a shared code); only the last was kept. */
  sharedKeys?: number;
  /** Empty once a later run of the same day replaced this snapshot (`replacedBy`). */
  snapshot: TableFile[];
  changes: TableFile[];
  replacedBy?: string;
}

export interface TableManifest {
  format: 'catalog-streams.table';
  version: 1;
  key: string;
  /** The current version's run id. */
  current: string;
  /** The current version's merge state (relative path). */
  state: string;
  schemas: Record<string, Array<{ name: string; type: string }>>;
  versions: TableVersion[];
}

/** The names `manifest` lists (the merge state, every version's files) and `_table.json` itself. */
function listedBy(manifest: TableManifest | undefined): Set<string> {
  const listed = new Set<string>([TABLE_MANIFEST]);
  if (!manifest) return listed;
  listed.add(manifest.state);
  for (const v of manifest.versions) for (const f of [...v.snapshot, ...v.changes]) listed.add(f.path);
  return listed;
}

/**
 * Whether `rel`, which a version of run `runId` listed, is a file that run wrote by the table's
 * naming, for tables written before journals: a part or state file carrying that run id. A
 * foreign file with a table-like name (`part-00000-<uuid>-c000.snappy.parquet`) carries no run
 * id of the table and fails.
 */
function legacyOwned(rel: unknown, runId: string): boolean {
  if (typeof rel !== 'string' || !isTableFile(rel)) return false;
  return rel === `_table/state-${runId}.v8.gz` || rel.endsWith(`-${runId}.parquet`);
}

export class HiveLayout implements TableLayout {
  readonly name = 'hive' as const;
  readonly #store: TableStore;
  readonly #key: string;
  #manifestText: string | undefined;
  #manifest: TableManifest | undefined;
  #published = false;
  /**
   * What the published `_table.json` no longer lists (a same-day snapshot, the older state), with
   * the run that wrote it by `_table.json`: removed by the settle when a journal proves it ours.
   */
  #superseded: Array<{ rel: string; runId: string }> = [];
  /** What the published `_table.json` lists (and `_table.json` itself): what the settle keeps. */
  #listed = new Set<string>();

  constructor(store: TableStore, key: string) {
    this.#store = store;
    this.#key = key;
  }

  get commitPoint(): string {
    return this.#store.location(TABLE_MANIFEST);
  }

  async open(): Promise<{ previous: PreviousVersion | undefined; removed: string[]; foreign: string[] }> {
    this.#manifestText = await this.#store.objects.readText(TABLE_MANIFEST);
    if (this.#manifestText === undefined && (await this.#store.objects.readText(ICEBERG_HINT)) !== undefined) {
      throw new SinkError(
        `table: ${this.#store.location('')} holds Iceberg tables (${ICEBERG_HINT}), written with format: iceberg; set format: iceberg to keep writing them, or point path at a new folder for a table of the hive layout`,
        { code: 'table.layout_mismatch' },
      );
    }
    if (this.#manifestText !== undefined) this.#manifest = this.#parse(this.#manifestText);
    const manifest = this.#manifest;
    // What killed runs left: files their journals name that _table.json does not list. A file no
    // journal names stays, whatever its name (a Spark part, a README): reported, never removed.
    // A table written before journals has none: its unlisted leftovers stay (docs/security.md).
    const listed = listedBy(manifest);
    const { removed, foreign, ignored } = await this.#store.sweep((rel) => listed.has(rel), TABLE_FOLDERS);
    const notes = [...foreign, ...ignored];
    if (!manifest) return { previous: undefined, removed, foreign: notes };
    const current = manifest.versions.find((v) => v.runId === manifest.current);
    if (!current) return { previous: undefined, removed, foreign: notes };
    const columns = manifest.schemas?.[current.schemaHash];
    const columnNames = columns?.map((c) => c.name);
    const schema = columns ? { hash: current.schemaHash, columns } : undefined;
    return { previous: { runId: current.runId, state: manifest.state, columnNames, schema }, removed, foreign: notes };
  }

  #parse(text: string): TableManifest {
    let manifest: TableManifest;
    try {
      manifest = JSON.parse(text) as TableManifest;
    } catch (err) {
      throw new SinkError(
        `table: ${this.commitPoint} is not valid JSON (${(err as Error).message}); restore it from a backup or move the table away`,
        { code: 'table.manifest' },
      );
    }
    if (manifest.format !== 'catalog-streams.table' || !Array.isArray(manifest.versions)) {
      throw new SinkError(
        `table: ${this.commitPoint} is not a table manifest (format catalog-streams.table); point path at a table's folder`,
        { code: 'table.manifest' },
      );
    }
    if (manifest.key !== this.#key) {
      throw new SinkError(
        `table: ${this.commitPoint} is keyed by "${manifest.key}", the sink by "${this.#key}"; keep key: ${manifest.key} or write to a new path`,
        { code: 'table.key_changed' },
      );
    }
    // The merge reads the state it names: only the table's own state file, never a path elsewhere.
    if (typeof manifest.state !== 'string' || !isTableFile(manifest.state) || !manifest.state.startsWith('_table/')) {
      throw new SinkError(
        `table: ${this.commitPoint} names the state ${JSON.stringify(manifest.state)}, which is not a state file of this table (_table/state-<run>.v8.gz); restore _table.json from a backup or move the table away`,
        { code: 'table.manifest' },
      );
    }
    return manifest;
  }

  async close(): Promise<void> {}

  dataFile(kind: 'snapshot' | 'changes', date: string, part: number, runId: string): string {
    return `${kind}/dt=${date}/part-${String(part).padStart(5, '0')}-${runId}.parquet`;
  }

  columns(planned: TableColumns): TableColumns {
    return planned;
  }

  fileMetadata(): Record<string, string> {
    return {};
  }

  async publish(version: NewVersion, fence: Fence): Promise<PublishedFile[]> {
    const entry: TableVersion = {
      runId: version.runId,
      date: version.date,
      mode: version.mode,
      startedAt: version.startedAt.toISOString(),
      committedAt: new Date().toISOString(),
      schemaHash: version.schema.hash,
      rows: version.rows,
      counts: version.counts,
      ...(version.sharedKeys ? { sharedKeys: version.sharedKeys } : {}),
      snapshot: version.snapshot,
      changes: version.changes,
    };
    const replaced: Array<{ rel: string; runId: string }> = [];
    const versions = (this.#manifest?.versions ?? []).map((v) => {
      if (v.date !== version.date || v.snapshot.length === 0) return v;
      replaced.push(...v.snapshot.map((f) => ({ rel: f.path, runId: v.runId })));
      return { ...v, snapshot: [], replacedBy: version.runId };
    });
    const manifest: TableManifest = {
      format: 'catalog-streams.table',
      version: 1,
      key: this.#key,
      current: version.runId,
      state: version.state,
      schemas: { ...this.#manifest?.schemas, [version.schema.hash]: version.schema.describe() },
      versions: [...versions, entry],
    };
    await fence.assertHeld();
    this.#published = true;
    const text = `${JSON.stringify(manifest, null, 2)}\n`;
    await this.#store.write(TABLE_MANIFEST, text);
    const previous = this.#manifest;
    this.#superseded = [...replaced, ...(previous ? [{ rel: previous.state, runId: previous.current }] : [])];
    this.#listed = listedBy(manifest);
    return [{ location: this.#store.location(TABLE_MANIFEST), bytes: Buffer.byteLength(text) }];
  }

  async settle(warn: CleanupWarning): Promise<void> {
    if (this.#superseded.length === 0) return;
    let journaled: ReadonlySet<string>;
    try {
      ({ journaled } = await this.#store.sweep((rel) => this.#listed.has(rel), []));
    } catch (err) {
      warn(
        'sink.cleanup',
        `table sink could not remove the files ${TABLE_MANIFEST} no longer lists: ${(err as Error).message}; the next run of the table removes them`,
      );
      return;
    }
    // Journaled files went with the sweep (or stayed, not proven ours); the rest were written
    // before journals: ours only by the table's own naming with the run id of the version that
    // listed them.
    for (const { rel, runId } of this.#superseded) {
      if (journaled.has(rel)) continue;
      if (!legacyOwned(rel, runId)) {
        warn(
          'table.cleanup_refused',
          `table sink did not remove ${JSON.stringify(rel)}, which ${this.commitPoint} listed: no journal of the table names it and it is not a file of run ${runId} (snapshot/dt=YYYY-MM-DD/part-NNNNN-<run>.parquet, changes/..., _table/state-<run>.v8.gz under ${this.#store.location('')})`,
        );
        continue;
      }
      await this.#store.objects
        .remove(rel)
        .catch((err: unknown) =>
          warn(
            'sink.cleanup',
            `table sink could not remove ${this.#store.location(rel)}, which ${TABLE_MANIFEST} no longer lists: ${(err as Error).message}; remove it by hand`,
          ),
        );
    }
  }

  /**
   * The earlier `_table.json` comes back (or goes, on a first run) before the sink removes this
   * run's files, so the manifest never lists a missing file. Nothing it listed was removed yet
   * (that waits for the settle), so the earlier version is whole.
   */
  async revoke(warn: CleanupWarning): Promise<boolean> {
    if (!this.#published) return true;
    const restore =
      this.#manifestText === undefined
        ? this.#store.objects.remove(TABLE_MANIFEST)
        : this.#store.write(TABLE_MANIFEST, this.#manifestText);
    return restore.then(
      () => true,
      (err: unknown) => {
        warn('sink.cleanup', `table sink could not restore ${this.commitPoint}: ${(err as Error).message}`);
        return false;
      },
    );
  }
}
