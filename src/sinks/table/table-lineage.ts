// The lineage columns of a table (`lineage: true`, shared/lineage.ts). A current row carries the
// run that last CHANGED it, not the run that last saw it: otherwise every run would rewrite every
// row's lineage and an analyst could not tell the rows a run changed from the ones it only kept.
// So the merge state remembers, per key, the run id and extraction instant of its last change
// (`[key, record, runId, extractedAtMs]` instead of `[key, record]`), change detection leaves the
// lineage columns out, and an unchanged key's row gets its stored lineage back. A change row
// carries the run that saw the change (`_run_id` is then the lineage column: one column, not two).
// A key of a state written before lineage was turned on has no stored lineage: null until it changes.
import { serialize } from 'node:v8';
import type { ColumnSchema } from '../shared/column-schema.js';
import type { ShapedRow } from '../shared/column-types.js';
import { LINEAGE_EXTRACTED_AT, LINEAGE_RUN_ID } from '../shared/lineage.js';
import type { Key } from './sorted-records.js';
import { CHANGE_COLUMNS } from './table-options.js';

/** The run id and extraction instant (epoch milliseconds) of a key's last change, as the state keeps them. */
export type StoredLineage = readonly [runId: string, extractedAtMs: number];

export class TableLineage {
  /** Column indexes of `_run_id` and `_extracted_at` in the snapshot rows; undefined when lineage is off. */
  readonly #at: { runId: number; extractedAt: number; micros: boolean } | undefined;
  readonly #current: StoredLineage;

  constructor(schema: ColumnSchema, run: { id: string; startedAt: Date }) {
    const runId = schema.columns.findIndex((c) => c.name === LINEAGE_RUN_ID);
    const extractedAt = schema.columns.findIndex((c) => c.name === LINEAGE_EXTRACTED_AT);
    this.#at =
      schema.constants.length > 0 && runId >= 0 && extractedAt >= 0
        ? { runId, extractedAt, micros: schema.columns[extractedAt]!.type.kind === 'timestamp-micros' }
        : undefined;
    this.#current = [run.id, run.startedAt.getTime()];
  }

  get enabled(): boolean {
    return this.#at !== undefined;
  }

  /** The change columns a change row adds: without `_run_id` when the row has the lineage column of that name. */
  changeColumns(): ReadonlyArray<(typeof CHANGE_COLUMNS)[number]> {
    return this.#at ? CHANGE_COLUMNS.slice(0, 2) : CHANGE_COLUMNS;
  }

  /** Columns the change comparison leaves out: lineage never makes an unchanged row look changed. */
  get compareIgnored(): readonly number[] {
    return this.#at ? [this.#at.runId, this.#at.extractedAt] : [];
  }

  /** The lineage a state frame `[key, record, runId?, extractedAtMs?]` stores, or null. */
  static read(decoded: readonly unknown[]): StoredLineage | null {
    const [, , runId, at] = decoded;
    return typeof runId === 'string' && typeof at === 'number' ? [runId, at] : null;
  }

  /** The bytes an incoming `[key, record]` body is compared with: the stored record without its lineage. */
  static recordBody(previous: { body: Uint8Array; key: Key; record: unknown; lineage: StoredLineage | null }) {
    return previous.lineage ? serialize([previous.key, previous.record]) : previous.body;
  }

  /** The state frame of a record this run inserted or updated: this run's lineage. */
  changedBody(next: { body: Uint8Array; key: Key; record: unknown }): Uint8Array {
    return this.#at ? serialize([next.key, next.record, ...this.#current]) : next.body;
  }

  /** The state frame of an incoming record equal to the stored one: the stored lineage stays. */
  keptBody(next: { body: Uint8Array; key: Key; record: unknown }, lineage: StoredLineage | null): Uint8Array {
    return this.#at && lineage ? serialize([next.key, next.record, ...lineage]) : next.body;
  }

  /** A snapshot row of a key this run did not change: the lineage of the run that last did (null if unknown). */
  stamp(row: ShapedRow, lineage: StoredLineage | null): ShapedRow {
    const at = this.#at;
    if (!at) return row;
    row.values[at.runId] = lineage ? lineage[0] : null;
    row.values[at.extractedAt] = lineage ? BigInt(lineage[1]) * (at.micros ? 1000n : 1n) : null;
    return row;
  }
}
