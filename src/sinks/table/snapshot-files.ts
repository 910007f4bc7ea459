// The data files of a hive table's snapshot: every row written, in key order, rotated at the file
// size, and one empty file for a snapshot of no row (its schema). Iceberg's `current/` writes row
// deltas instead (delta-files.ts), whose parts have the same shape.
import type { ShapedRow } from '../shared/column-types.js';

/** A file this run writes: its encoder's row count, closed by `end`. */
export interface WrittenPart {
  encoder: { readonly rows: number; write(row: ShapedRow): void | Promise<void>; end(): Promise<void> };
}

export class SnapshotFiles<P extends WrittenPart> {
  readonly #fileRows: number;
  readonly #open: (part: number) => Promise<P>;
  /** The files written, in key order. */
  readonly written: P[] = [];
  #part: P | undefined;

  constructor(fileRows: number, open: (part: number) => Promise<P>) {
    this.#fileRows = fileRows;
    this.#open = open;
  }

  /** A row of the new snapshot, in key order. */
  async row(row: ShapedRow): Promise<void> {
    this.#part ??= await this.#openPart();
    const pending = this.#part.encoder.write(row);
    if (pending) await pending;
    if (this.#part.encoder.rows >= this.#fileRows) await this.#endPart();
  }

  /** A deleted key needs nothing here: the snapshot is written whole. */
  async deleted(): Promise<void> {}

  /** The open file ended; a snapshot of no row gets one empty file. */
  async end(): Promise<void> {
    if (this.written.length === 0) this.#part = await this.#openPart();
    await this.#endPart();
  }

  async #openPart(): Promise<P> {
    const part = await this.#open(this.written.length);
    this.written.push(part);
    return part;
  }

  async #endPart(): Promise<void> {
    const part = this.#part;
    this.#part = undefined;
    await part?.encoder.end();
  }
}
