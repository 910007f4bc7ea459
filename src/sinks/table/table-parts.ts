// The Parquet files one table run writes: snapshot parts and changes parts, rotated at `maxRows`
// (shared/rotation.ts), staged under the layout's names, with the run in their footer.
import type { ColumnSchema } from '../shared/column-schema.js';
import { SequentialParts } from '../shared/rotation.js';
import { SCHEMA_HASH_METADATA_KEY, SCHEMA_METADATA_KEY } from '../parquet/parquet-encoding.js';
import {
  ChunkCopyEncoder,
  CompressionRatio,
  ParquetEncoder,
  type RowGroupListener,
} from '../parquet/parquet-encoder.js';
import { type TypedColumn, type ShapedRow } from '../shared/column-types.js';
import { changeColumnsDescription, changeParquetColumns } from './table-columns.js';
import type { TableLineage } from './table-lineage.js';
import { currentFileRows, type CHANGE_COLUMNS, type ResolvedConfig } from './table-options.js';
import type { NewVersion, TableLayout } from './table-layout.js';
import type { StagedFile } from './table-store.js';
import type { ChangeKind, RowOrigin } from './table-merge.js';
import { SnapshotFiles } from './snapshot-files.js';
import { DeltaFiles, type DeleteWriter } from './delta-files.js';
import { encodePositions, type MergePositions } from './merge-positions.js';

type Folder = 'snapshot' | 'changes';

/**
 * The changes files of a first run: every row is an insert, so each changes part is its snapshot
 * part's row groups with `_change`, `_changed_at` and `_run_id` added (ChunkCopyEncoder): the
 * rows are encoded once. A part is opened at its snapshot part's first row group, so an empty
 * snapshot (a run without records) has no changes file, as before.
 */
class FirstRunChanges {
  readonly files: Array<{ staged: StagedFile; encoder: ChunkCopyEncoder }> = [];
  readonly #open: (part: number) => Promise<{ staged: StagedFile; encoder: ChunkCopyEncoder }>;

  constructor(open: (part: number) => Promise<{ staged: StagedFile; encoder: ChunkCopyEncoder }>) {
    this.#open = open;
  }

  /** What the snapshot part numbered `part` tells of its row groups. */
  listener(part: number): RowGroupListener {
    let current: { staged: StagedFile; encoder: ChunkCopyEncoder } | undefined;
    return {
      rowGroup: async (group) => {
        if (!current) {
          current = await this.#open(part);
          this.files.push(current);
        }
        await current.encoder.rowGroup(group);
      },
      end: async () => {
        await current?.encoder.end();
      },
    };
  }
}

export interface TablePartsInput {
  config: ResolvedConfig;
  schema: ColumnSchema;
  layout: TableLayout;
  run: { id: string; name: string; startedAt: Date };
  /** A first run: its change rows are its snapshot's row groups, copied. */
  first: boolean;
  /** The lineage columns (lineage: true): which change columns a change row adds. */
  lineage: TableLineage;
  /** Stages a file of the table (`rel` from its root). */
  stage(rel: string): Promise<StagedFile>;
  /**
   * Iceberg `current/`: every row's file and position in the previous snapshot, when this run
   * writes a row delta (an incremental run: delta-files.ts); undefined: every row is written.
   */
  previousDelta?: MergePositions | undefined;
}

/** The reserved Iceberg field ids of a position-delete file's columns (the spec's "Position Delete Files"). */
const DELETE_FILE_PATH_ID = 2147483546;
const DELETE_POS_ID = 2147483545;

type SnapshotPart = { staged: StagedFile; encoder: ParquetEncoder; path(): string; bytes(): number };

/** The run's snapshot and changes parts, and how a merged row goes into them. */
export class TableParts {
  readonly #snapshot: SnapshotFiles<SnapshotPart> | DeltaFiles<SnapshotPart>;
  readonly #input: TablePartsInput;
  readonly #changes: SequentialParts<ShapedRow, { staged: StagedFile; encoder: ParquetEncoder }>;
  readonly #copied: FirstRunChanges | undefined;
  readonly #extraAt: number;
  readonly #changedAt: bigint;
  readonly #runId: string;
  readonly #changeNames: ReadonlyArray<(typeof CHANGE_COLUMNS)[number]>;
  /** What the snapshot's rows are written as: the next run keeps these files only if its own match. */
  readonly filesKey: string;

  constructor(input: TablePartsInput) {
    const { config, schema, layout, run } = input;
    this.#input = input;
    // Iceberg has only microsecond timestamps, whatever the record columns keep (timestamps: raw).
    const timestampKind =
      config.timestamps === 'micros' || config.format === 'iceberg' ? 'timestamp-micros' : 'timestamp-millis';
    this.#changedAt = BigInt(run.startedAt.getTime()) * (timestampKind === 'timestamp-micros' ? 1000n : 1n);
    this.#runId = run.id;
    this.#changeNames = input.lineage.changeColumns();
    const planned = schema.parquetColumns();
    this.#extraAt = planned.length - 1;
    const { snapshot: columns, changes: changeColumns } = layout.columns({
      snapshot: planned,
      changes: changeParquetColumns(planned, timestampKind, input.lineage),
    });
    const ratio = new CompressionRatio();
    const encoderOptions = (folder: Folder, listener?: RowGroupListener) => ({
      rowGroupListener: listener,
      compression: config.compression,
      rowGroupRows: config.rowGroupRows,
      rowGroupBytes: config.rowGroupBytes,
      compressionRatio: ratio,
      metadata: {
        'catalog-streams.run': run.id,
        'catalog-streams.name': run.name,
        [SCHEMA_HASH_METADATA_KEY]: schema.hash,
        [SCHEMA_METADATA_KEY]: JSON.stringify(
          folder === 'snapshot' ? schema.describe() : changeColumnsDescription(schema, input.lineage),
        ),
        ...layout.fileMetadata(folder),
      },
    });
    const date = run.startedAt.toISOString().slice(0, 10);
    const stage = (folder: Folder, part: number) => input.stage(layout.dataFile(folder, date, part, run.id));
    this.#copied = input.first
      ? new FirstRunChanges(async (part) => {
          const staged = await stage('changes', part);
          const constants = this.#changeNames.map((name, i) => ({
            column: changeColumns[this.#extraAt + i]!,
            value: this.#changeValue(name, 'insert'),
          }));
          const encoder = new ChunkCopyEncoder(staged.file, changeColumns, constants, encoderOptions('changes'));
          return { staged, encoder };
        })
      : undefined;
    const opener = (folder: Folder, cols: readonly TypedColumn[]) => async (part: number) => {
      const staged = await stage(folder, part);
      const listener = folder === 'snapshot' ? this.#copied?.listener(part) : undefined;
      const encoder = new ParquetEncoder(staged.file, cols, encoderOptions(folder, listener));
      return { staged, encoder, path: () => staged.rel, bytes: () => staged.file.bytes };
    };
    const rotation = { maxRows: config.maxRows };
    this.filesKey = `${schema.hash} timestamps=${config.timestamps}`;
    const fileRows = config.format === 'iceberg' ? currentFileRows(config) : config.maxRows;
    this.#snapshot =
      config.format === 'iceberg'
        ? new DeltaFiles(
            input.previousDelta?.filesKey === this.filesKey ? input.previousDelta : undefined,
            fileRows,
            opener('snapshot', columns),
            this.#deleteWriter(encoderOptions('snapshot')),
          )
        : new SnapshotFiles(fileRows, opener('snapshot', columns));
    this.#changes = new SequentialParts(opener('changes', changeColumns), rotation);
  }

  current(row: ShapedRow, origin: RowOrigin): Promise<void> {
    return this.#snapshot.row(row, origin);
  }

  /** A change row: the row with `_change`, `_changed_at` and `_run_id` before `_extra`. */
  async change(row: ShapedRow, kind: ChangeKind): Promise<void> {
    if (kind === 'delete') await this.#snapshot.deleted();
    // A first run's change rows are its snapshot's (FirstRunChanges).
    if (this.#copied) return;
    const values = row.values.slice(0, this.#extraAt);
    for (const name of this.#changeNames) values.push(this.#changeValue(name, kind));
    values.push(row.values[this.#extraAt]);
    await this.#changes.write({ values, bytes: row.bytes + 48 });
  }

  #changeValue(name: (typeof CHANGE_COLUMNS)[number], kind: ChangeKind): string | bigint {
    return name === '_change' ? kind : name === '_changed_at' ? this.#changedAt : this.#runId;
  }

  /** The run's position-delete file (Parquet, `file_path` and `pos`, rows sorted by both). */
  #deleteWriter(options: ConstructorParameters<typeof ParquetEncoder>[2]): DeleteWriter {
    const { layout, run } = this.#input;
    return {
      write: async (rows) => {
        const names = layout.positionDeletes!;
        const staged = await this.#input.stage(names.file(run.id));
        const columns: TypedColumn[] = [
          { name: 'file_path', type: { kind: 'string' }, fieldId: DELETE_FILE_PATH_ID },
          { name: 'pos', type: { kind: 'int64' }, fieldId: DELETE_POS_ID },
        ];
        const { metadata: _metadata, rowGroupListener: _listener, ...rest } = options;
        const encoder = new ParquetEncoder(staged.file, columns, rest);
        for (const { path, pos } of rows) {
          const pending = encoder.write({ values: [names.location(path), BigInt(pos)], bytes: path.length + 8 });
          if (pending) await pending;
        }
        await encoder.end();
        return { path: staged.rel, rows: rows.length, bytes: staged.file.bytes };
      },
    };
  }

  /**
   * Ends the open parts: a snapshot has at least one file (its schema), changes may have none.
   * A row delta writes its delete file and the new positions (`positionsRel`) here.
   */
  async end(positionsRel?: string): Promise<void> {
    const snapshot = this.#snapshot;
    if (snapshot instanceof DeltaFiles) {
      const result = await snapshot.end();
      if (positionsRel) {
        const staged = await this.#input.stage(positionsRel);
        const { files, deleteFiles, positions } = result;
        const pending = staged.file.write(encodePositions({ filesKey: this.filesKey, files, deleteFiles, positions }));
        if (pending) await pending;
        this.positions = positionsRel;
      }
    } else await snapshot.end();
    await this.#changes.end(false);
  }

  /** The positions file this run wrote, when it wrote one. */
  positions: string | undefined;

  /** The snapshot files this run wrote, as a version lists them; once the files are complete. */
  snapshotEntries(): TableFileEntry[] {
    return this.#snapshot.written.map(fileEntry);
  }

  /** Every file of the new snapshot in key order: the previous files kept and this run's. */
  currentFiles(): NewVersion['currentFiles'] {
    const snapshot = this.#snapshot;
    if (snapshot instanceof DeltaFiles) {
      const result = snapshot.result!;
      const mine = new Set(snapshot.written.map((p) => p.staged.rel));
      return {
        filesKey: this.filesKey,
        files: result.files.map((f) => ({ path: f.path, rows: f.rows, bytes: f.bytes, kept: !mine.has(f.path) })),
        deleteFiles: result.deleteFiles.map((d) => ({
          path: d.path,
          rows: d.rows,
          bytes: d.bytes,
          kept: d.path !== result.addedDeletes,
        })),
        ...(this.positions ? { positions: this.positions } : {}),
      };
    }
    return { filesKey: this.filesKey, files: snapshot.written.map((p) => ({ ...fileEntry(p), kept: false })) };
  }

  /** The changes files as a version lists them. */
  changeEntries(): TableFileEntry[] {
    return (this.#copied ?? this.#changes).files.map(fileEntry);
  }
}

export interface TableFileEntry {
  path: string;
  rows: number;
  bytes: number;
}

function fileEntry(f: { staged: StagedFile; encoder: { rows: number } }): TableFileEntry {
  return { path: f.staged.rel, rows: f.encoder.rows, bytes: f.staged.file.bytes };
}
