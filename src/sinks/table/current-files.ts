// The data files of a table snapshot in key-range files, copy-on-write per file (ARCHITECTURE.md, "The
// table sink: Iceberg"): the rows are in key order and each file holds a range of keys, so the
// merge, which walks the keys in that order, knows which previous file a key was in by counting
// the previous keys (the previous files' row counts, in order: the merge state holds one frame
// per snapshot row, in the same order). A range whose rows all come through unchanged keeps its
// file; a range with an inserted, updated or deleted key is written again, from the merge's rows.
// Only the rows of the range being walked are held until it is known to be unchanged.
// Iceberg's `current/` now writes row deltas (delta-files.ts); the hive layout writes its snapshot
// through this class with no previous files (every row written), so the ranges are unused there.
import { SinkError } from '../../errors.js';
import type { ShapedRow } from '../shared/column-types.js';
import type { RowOrigin } from './table-merge.js';
import type { TableFile } from './table-layout.js';

/** A file this run writes: its encoder's row count, closed by `end`. */
export interface WrittenPart {
  encoder: { readonly rows: number; write(row: ShapedRow): void | Promise<void>; end(): Promise<void> };
}

/**
 * The most an unchanged range's rows hold in memory before it is written anyway (a range of a
 * large `fileRows`): writing a range that turns out unchanged costs bytes, never correctness.
 */
export const HELD_BYTES = 16 * 1024 * 1024;

/** One file of the new snapshot, in key order: a previous file kept, or one this run wrote. */
export type CurrentFile<P> = { kept: TableFile } | { written: P };

export class CurrentFiles<P extends WrittenPart> {
  /** The previous files in key order; undefined: every row is written (a first run, a new layout). */
  readonly #ranges: readonly TableFile[] | undefined;
  readonly #fileRows: number;
  readonly #open: (part: number) => Promise<P>;
  readonly order: Array<CurrentFile<P>> = [];
  readonly written: P[] = [];
  #index = 0;
  /** Previous rows of range #index the merge went past. */
  #consumed = 0;
  /** Rows of range #index while it is unchanged: dropped if it stays so, written once it is not. */
  #held: ShapedRow[] = [];
  #heldBytes = 0;
  #dirty = false;
  #part: P | undefined;

  constructor(previous: readonly TableFile[] | undefined, fileRows: number, open: (part: number) => Promise<P>) {
    this.#ranges = previous;
    this.#fileRows = fileRows;
    this.#open = open;
  }

  /** A row of the new snapshot, in key order. */
  async row(row: ShapedRow, origin: RowOrigin): Promise<void> {
    if (!this.#ranges) return this.#write(row, this.#fileRows);
    if (origin !== 'inserted') await this.#previousRow();
    if (origin !== 'unchanged') await this.#change();
    if (this.#dirty) return this.#write(row, 2 * this.#fileRows);
    this.#held.push(row);
    this.#heldBytes += row.bytes;
    if (this.#heldBytes > HELD_BYTES) await this.#change();
  }

  /** A previous key the run deleted: its range is written again without it. */
  async deleted(): Promise<void> {
    if (!this.#ranges) return;
    await this.#previousRow();
    await this.#change();
  }

  /** The last ranges closed, the open file ended; a snapshot of no row gets one empty file (its schema). */
  async end(): Promise<void> {
    const ranges = this.#ranges;
    // Every previous row came through: each range left is complete (those after the first, empty).
    while (ranges && this.#index < ranges.length) {
      if (this.#consumed !== ranges[this.#index]!.rows) this.#mismatch();
      await this.#closeRange();
    }
    await this.#endPart();
    if (this.order.length === 0) {
      this.#part = await this.#openPart();
      await this.#endPart();
    }
  }

  /** The merge reached the next previous key: the ranges it has gone past are closed first. */
  async #previousRow(): Promise<void> {
    const ranges = this.#ranges!;
    while (this.#index < ranges.length && this.#consumed >= ranges[this.#index]!.rows) await this.#closeRange();
    if (this.#index >= ranges.length) this.#mismatch();
    this.#consumed++;
  }

  async #change(): Promise<void> {
    if (this.#dirty) return;
    this.#dirty = true;
    const held = this.#held;
    this.#held = [];
    this.#heldBytes = 0;
    for (const row of held) await this.#write(row, 2 * this.#fileRows);
  }

  /** An unchanged range keeps its file (an empty one goes); a changed one's files are complete. */
  async #closeRange(): Promise<void> {
    const ranges = this.#ranges!;
    const range = ranges[this.#index]!;
    // A rewritten range left small (its keys deleted) is not a file of its own: the next range is
    // written into the same file, so files merge as they are rewritten instead of shrinking.
    const small = this.#dirty && (this.#part?.encoder.rows ?? 0) < this.#fileRows / 2;
    const merge = small && this.#part !== undefined && this.#index + 1 < ranges.length;
    if (this.#dirty && !merge) await this.#endPart();
    else if (!this.#dirty && range.rows > 0) this.order.push({ kept: range });
    this.#held = [];
    this.#heldBytes = 0;
    this.#dirty = merge;
    this.#index++;
    this.#consumed = 0;
  }

  /** Rotated at `maxRows`: a rewritten range may grow with inserts up to twice the file size before it splits. */
  async #write(row: ShapedRow, maxRows: number): Promise<void> {
    this.#part ??= await this.#openPart();
    const pending = this.#part.encoder.write(row);
    if (pending) await pending;
    if (this.#part.encoder.rows >= maxRows) await this.#endPart();
  }

  async #openPart(): Promise<P> {
    const part = await this.#open(this.written.length);
    this.written.push(part);
    this.order.push({ written: part });
    return part;
  }

  async #endPart(): Promise<void> {
    const part = this.#part;
    this.#part = undefined;
    await part?.encoder.end();
  }

  #mismatch(): never {
    throw new SinkError(
      'table: the merge state and the data files of the current Iceberg snapshot do not hold the same number of rows; nothing was published. ' +
        'Run once with --full-refresh after removing the table folder, or report it as a bug',
      { code: 'table.manifest' },
    );
  }
}
