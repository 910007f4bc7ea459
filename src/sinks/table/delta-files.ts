// The data files of an Iceberg `current/` snapshot as a row delta (ARCHITECTURE.md, "The table
// sink: Iceberg"): a run writes its new rows (inserted and updated keys) into new data files and
// names the rows they replace, and the deleted keys' rows, in one position-delete file; the
// previous files stay as they are. The merge state knows each current row's file and position
// (merge-positions.ts: one entry per state frame, in key order), so the merge, walking the keys in
// that order, knows where each previous key's row is without reading a data file.
//
// A file is rewritten instead (copy-on-write: its live rows written again into the run's new
// files, it and the deletes naming it dropped) when, at the start of the run, its deleted share
// has passed REWRITE_DELETED_SHARE, or when SMALL_FILES or more files hold fewer than half of
// `fileRows` live rows (compaction: incrementals leave small files). The decision is made before
// the merge because the merge is one pass: a file that passes the threshold during a run is
// rewritten by the next.
import { SinkError } from '../../errors.js';
import type { ShapedRow } from '../shared/column-types.js';
import type { WrittenPart } from './snapshot-files.js';
import type { DeltaDataFile, DeltaDeleteFile, MergePositions } from './merge-positions.js';
import type { RowOrigin } from './table-merge.js';

/** A data file whose deleted rows pass this share of its rows is rewritten by the next run. */
export const REWRITE_DELETED_SHARE = 0.2;
/** Files with fewer live rows than half of fileRows are small; this many of them are compacted. */
export const SMALL_FILES = 8;

/** A position-delete file this run writes: (file index in the previous version, position) pairs. */
export interface DeleteWriter {
  write(deletes: ReadonlyArray<{ path: string; pos: number }>): Promise<{ path: string; rows: number; bytes: number }>;
}

/** What the run's snapshot is: the data files live in it, and the delete files. */
export interface DeltaResult {
  files: DeltaDataFile[];
  deleteFiles: DeltaDeleteFile[];
  /** This run's delete file, among `deleteFiles`. */
  addedDeletes: string | undefined;
  /** Per row of the new snapshot, in key order: index into `files`, position. */
  positions: Uint32Array;
}

class PositionList {
  #values = new Uint32Array(1024);
  length = 0;

  push(file: number, pos: number): void {
    if (this.length + 2 > this.#values.length) {
      const grown = new Uint32Array(this.#values.length * 2);
      grown.set(this.#values);
      this.#values = grown;
    }
    this.#values[this.length++] = file;
    this.#values[this.length++] = pos;
  }

  get values(): Uint32Array {
    return this.#values.subarray(0, this.length);
  }
}

export class DeltaFiles<P extends WrittenPart & { path(): string; bytes(): number }> {
  readonly #previous: MergePositions | undefined;
  readonly #fileRows: number;
  readonly #open: (part: number) => Promise<P>;
  readonly #deleteWriter: DeleteWriter;
  /** Previous file indices whose live rows this run writes again. */
  readonly #rewrite = new Set<number>();
  /** This run's deletes per previous file index (position list). */
  readonly #deletes = new Map<number, number[]>();
  readonly written: P[] = [];
  readonly #positions = new PositionList();
  #part: P | undefined;
  /** The next previous row (index into the previous positions). */
  #next = 0;
  #result: DeltaResult | undefined;
  #addedDeletes: string | undefined;

  constructor(
    previous: MergePositions | undefined,
    fileRows: number,
    open: (part: number) => Promise<P>,
    deletes: DeleteWriter,
  ) {
    this.#previous = previous;
    this.#fileRows = fileRows;
    this.#open = open;
    this.#deleteWriter = deletes;
    if (previous) this.#chooseRewrites(previous.files);
  }

  #chooseRewrites(files: readonly DeltaDataFile[]): void {
    const small: number[] = [];
    files.forEach((f, i) => {
      if (f.deleted > f.rows * REWRITE_DELETED_SHARE) this.#rewrite.add(i);
      else if (f.rows - f.deleted < this.#fileRows / 2) small.push(i);
    });
    if (small.length >= SMALL_FILES) for (const i of small) this.#rewrite.add(i);
  }

  /** The files of the previous version this run rewrites (compaction), for the run's report. */
  get rewritten(): number {
    return this.#rewrite.size;
  }

  /** A row of the new snapshot, in key order. */
  async row(row: ShapedRow, origin: RowOrigin): Promise<void> {
    if (!this.#previous || origin === 'inserted') return this.#write(row);
    const [file, pos] = this.#previousRow();
    if (origin === 'updated' || this.#rewrite.has(file)) {
      if (origin === 'updated') this.#delete(file, pos);
      return this.#write(row);
    }
    this.#positions.push(file, pos);
  }

  /** A previous key the run deleted: a position delete of its row. */
  deleted(): void {
    if (!this.#previous) return;
    const [file, pos] = this.#previousRow();
    this.#delete(file, pos);
  }

  #previousRow(): [number, number] {
    const positions = this.#previous!.positions;
    if (2 * this.#next + 1 >= positions.length) this.#mismatch();
    const at = 2 * this.#next++;
    return [positions[at]!, positions[at + 1]!];
  }

  /** A row of a rewritten file is not copied: nothing names it. */
  #delete(file: number, pos: number): void {
    if (this.#rewrite.has(file)) return;
    let list = this.#deletes.get(file);
    if (!list) this.#deletes.set(file, (list = []));
    list.push(pos);
  }

  /** Written into the run's files, rotated at fileRows; the position is the row's index in its file. */
  async #write(row: ShapedRow): Promise<void> {
    if (!this.#part) {
      this.#part = await this.#open(this.written.length);
      this.written.push(this.#part);
    }
    const base = this.#previous?.files.length ?? 0;
    this.#positions.push(base + this.written.length - 1, this.#part.encoder.rows);
    const pending = this.#part.encoder.write(row);
    if (pending) await pending;
    if (this.#part.encoder.rows >= this.#fileRows) await this.#endPart();
  }

  async #endPart(): Promise<void> {
    const part = this.#part;
    this.#part = undefined;
    await part?.encoder.end();
  }

  /** Ends the run's files, writes its delete file, and says what the new snapshot is. */
  async end(): Promise<DeltaResult> {
    const previous = this.#previous;
    if (previous && 2 * this.#next !== previous.positions.length) this.#mismatch();
    await this.#endPart();
    const prevFiles = previous?.files ?? [];
    // Previous files kept: not rewritten, with a live row left.
    const keptIndex = new Map<number, number>();
    const files: DeltaDataFile[] = [];
    prevFiles.forEach((f, i) => {
      const deleted = f.deleted + (this.#deletes.get(i)?.length ?? 0);
      if (this.#rewrite.has(i) || deleted >= f.rows) return;
      keptIndex.set(i, files.length);
      files.push({ ...f, deleted });
    });
    const keptOfRun = files.length;
    for (const part of this.written)
      files.push({ path: part.path(), rows: part.encoder.rows, bytes: part.bytes(), deleted: 0 });
    // A snapshot of no row gets one empty file (its schema).
    if (files.length === 0) {
      const part = await this.#open(this.written.length);
      this.written.push(part);
      await part.encoder.end();
      files.push({ path: part.path(), rows: 0, bytes: part.bytes(), deleted: 0 });
    }
    const positions = this.#positions.values;
    for (let i = 0; i < positions.length; i += 2) {
      const f = positions[i]!;
      positions[i] = f < prevFiles.length ? keptIndex.get(f)! : keptOfRun + (f - prevFiles.length);
    }
    const deleteFiles = await this.#deleteFiles(prevFiles, keptIndex, files);
    this.#result = { files, deleteFiles, positions, addedDeletes: this.#addedDeletes };
    return this.#result;
  }

  /** The previous delete files naming a kept file, and this run's (sorted by file_path, pos as the spec requires). */
  async #deleteFiles(
    prevFiles: readonly DeltaDataFile[],
    keptIndex: ReadonlyMap<number, number>,
    files: readonly DeltaDataFile[],
  ): Promise<DeltaDeleteFile[]> {
    const live = new Set(files.map((f) => f.path));
    const kept = (this.#previous?.deleteFiles ?? []).filter((d) => d.refs.some((r) => live.has(r)));
    const rows: Array<{ path: string; pos: number }> = [];
    for (const [file, list] of this.#deletes) {
      if (!keptIndex.has(file)) continue;
      const path = prevFiles[file]!.path;
      for (const pos of list) rows.push({ path, pos });
    }
    if (rows.length === 0) return kept;
    rows.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.pos - b.pos));
    const written = await this.#deleteWriter.write(rows);
    this.#addedDeletes = written.path;
    const refs = [...new Set(rows.map((r) => r.path))];
    return [...kept, { ...written, refs }];
  }

  get result(): DeltaResult | undefined {
    return this.#result;
  }

  #mismatch(): never {
    throw new SinkError(
      'table: the merge state and the row positions of the current Iceberg snapshot do not hold the same number of rows; nothing was published. ' +
        'Run once with --full-refresh, or report it as a bug',
      { code: 'table.manifest' },
    );
  }
}
