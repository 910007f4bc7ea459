// What a table's layout decides, apart from its merge: where the previous version is read from,
// what the data files are named, how their columns are identified, and how a version is
// committed, settled or revoked. The merge (table-sink.ts) is the same for every layout; the
// layouts are `hive` (folders and `_table.json`, hive-layout.ts) and `iceberg` (two Iceberg tables,
// iceberg-layout.ts). ARCHITECTURE.md, "The table sink".
import type { Fence } from '../../core/lock.js';
import type { TypedColumn } from '../shared/column-types.js';
import type { ColumnSchema } from '../shared/column-schema.js';
import type { MergePositions } from './merge-positions.js';

export interface TableFile {
  /** Relative to the table's root. */
  path: string;
  rows: number;
  bytes: number;
}

/** The version a run merges into. */
export interface PreviousVersion {
  runId: string;
  /** Its merge state, relative to the table's root (`_table/state-<run>.v8.gz`), already checked to be one. */
  state: string;
  /** The column names it was written with, when the layout records them. */
  columnNames?: readonly string[];
  /**
   * Its columns as `_table.json` describes them (hive layout) or the current table's
   * `catalog-streams.columns` property (iceberg layout), to say when this run's differ.
   */
  schema?: { hash: string; columns: ReadonlyArray<{ name: string; type: string }> };
  /** Iceberg `current/`: each state frame's data file and position, its data and delete files (merge-positions.ts). */
  delta?: MergePositions;
}

export type TableMode = 'first' | 'incremental' | 'full';

/** A version the merge wrote, ready to be committed (its files are in place under their final names). */
export interface NewVersion {
  runId: string;
  runName: string;
  /** The run's start date (UTC), YYYY-MM-DD. */
  date: string;
  mode: TableMode;
  startedAt: Date;
  schema: ColumnSchema;
  /** Snapshot rows. */
  rows: number;
  counts: { inserted: number; updated: number; deleted: number; unchanged: number };
  sharedKeys?: number;
  /** The snapshot files this run wrote. */
  snapshot: TableFile[];
  /** Every file of the new snapshot in key order, the previous ones it kept included, and what its rows were written as. */
  currentFiles?: {
    filesKey: string;
    files: Array<TableFile & { kept: boolean }>;
    /** A row delta's live position-delete files (those of earlier runs kept, this run's new). */
    deleteFiles?: Array<TableFile & { kept: boolean }>;
    /** The row positions beside the state (merge-positions.ts), relative to the table's root. */
    positions?: string;
  };
  changes: TableFile[];
  /** The new merge state, relative to the table's root. */
  state: string;
}

/** The columns of the two kinds of data file, as the encoder writes them. */
export interface TableColumns {
  snapshot: readonly TypedColumn[];
  changes: readonly TypedColumn[];
}

export interface CleanupWarning {
  (code: 'table.cleanup_refused' | 'sink.cleanup', message: string): void;
}

/** A metadata file a layout's commit wrote: where, and its size when the layout wrote the bytes. */
export interface PublishedFile {
  location: string;
  bytes?: number | undefined;
}

/**
 * What a commit did to the files of a table that keeps unchanged files (Iceberg `current/`): the
 * run's cost and the table's size, as the run's summary reports them (`tables`).
 */
export interface TableFilesReport {
  /** The table's location. */
  location: string;
  filesInTable: number;
  bytesInTable: number;
  filesAdded: number;
  filesRemoved: number;
  /** The bytes of the files this run wrote into the table (its data files; metadata aside). */
  bytesWritten: number;
}

export interface TableLayout {
  readonly name: 'hive' | 'iceberg';
  /** Where the commit point is, for messages (`…/_table.json`, `…/current/metadata/version-hint.text`). */
  readonly commitPoint: string;
  /**
   * Reads the current version under the table's lock (undefined for a new table), checks that it
   * is this table's and keyed by `key`, and removes what killed runs left (files their journals
   * name, storage/write-journal.ts). Returns what it removed, what it repaired (a table a killed
   * run left ahead of the commit point), and what it left as not the table's (`foreign`: files no
   * journal names, documents under `_journal/` that are not journals), said to the user.
   */
  open(): Promise<{ previous: PreviousVersion | undefined; removed: string[]; repaired?: string; foreign?: string[] }>;
  /** The relative name of a data file of this run. */
  dataFile(kind: 'snapshot' | 'changes', date: string, part: number, runId: string): string;
  /** A layout that takes position deletes (Iceberg): the delete file's name, and a data file's location as delete rows name it. */
  readonly positionDeletes?: { file(runId: string): string; location(rel: string): string };
  /** The columns the data files are written with (a layout may add field ids); after open. */
  columns(planned: TableColumns): TableColumns;
  /** Key-value metadata for every data file's footer, beside the sink's own. */
  fileMetadata(kind: 'snapshot' | 'changes'): Record<string, string>;
  /**
   * The commit point: after it, readers see the new version. `fence` is asserted right before
   * each write of the commit point (core/lock.ts, Fencing). Returns the metadata files it wrote
   * (for the run's output records), with their size when the layout wrote them itself.
   */
  publish(version: NewVersion, fence: Fence): Promise<PublishedFile[]>;
  /** After `publish`: the files the snapshot table's commit added and removed, when the layout counts them. */
  filesReport?(): TableFilesReport | undefined;
  /** After every sink of the run published: removes what the new version superseded. */
  settle(warn: CleanupWarning): Promise<void>;
  /** Releases what the layout holds beside the table's store (its tables' stores, a catalog's connections). */
  close(): Promise<void>;
  /**
   * A sibling failed (or the run was stopped) after this version was published: the earlier
   * version becomes current again. False when it could not be restored (warned): this run's
   * version stays the table's, and its files must stay.
   */
  revoke(warn: CleanupWarning): Promise<boolean>;
}
