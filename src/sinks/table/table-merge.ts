// The table's merge (ARCHITECTURE.md, "The table sink"): one pass over two key-ordered inputs, the
// previous version's merge state and this run's sorted records, key by key, into the current rows
// (the snapshot), the change rows and the new merge state. A plain function over iterables and
// three outputs: the sink gives it files, a test gives it arrays.
import { serialize } from 'node:v8';
import type { RecordShaper } from '../shared/column-schema.js';
import type { ShapedRow } from '../shared/column-types.js';
import type { PreviousRecord } from './merge-state.js';
import { compareKeys, type Key } from './sorted-records.js';
import type { TableMode } from './table-layout.js';
import { TableLineage } from './table-lineage.js';

/** A record of this run, in key order: `body` is `v8.serialize([key, record])`; `found` when the delete check returned it. */
export interface IncomingRecord {
  key: Key;
  body: Uint8Array;
  readonly record: Record<string, unknown>;
  found: boolean;
}

export type ChangeKind = 'insert' | 'update' | 'delete';

/**
 * Where a snapshot row comes from: a previous key's row as it was, a previous key's new row, or a
 * new key's. Iceberg's row delta writes only the rows that are not `unchanged` (delta-files.ts).
 */
export type RowOrigin = 'unchanged' | 'updated' | 'inserted';

/** Where the merge writes; each is awaited, in key order. */
export interface MergeOutputs {
  /** A row of the new snapshot (one per key that stays), and whether its key or row is new. */
  current(row: ShapedRow, origin: RowOrigin): Promise<void>;
  /** A change row: the shaped row and what happened to its key. */
  change(row: ShapedRow, kind: ChangeKind): Promise<void>;
  /** A frame body of the new merge state (`v8.serialize([key, record])`). */
  state(body: Uint8Array): Promise<void>;
}

export interface MergeOptions {
  /** first or incremental: a previous key missing from the run stays; full: it is deleted. */
  mode: TableMode;
  /** Shapes this run's records (and warns of fields it puts in `_extra`). */
  shaper: RecordShaper;
  /** Shapes the previous version's records, silently. */
  previousShaper: RecordShaper;
  /** Column positions whose change alone is not a change (`ignoreFields`). */
  ignored: readonly number[];
  /** The lineage columns (lineage: true): left out of the comparison, an unchanged row keeps its last change's. */
  lineage?: TableLineage | undefined;
  /** Whether a previous key missing from the run still exists but its current version is invalid: its row stays. */
  keptInvalid?(previous: PreviousRecord): boolean;
  /** Called before each key (a stop check, progress). */
  onKey?(keys: number, rows: number, counts: MergeCounts): void;
}

export interface MergeCounts {
  inserted: number;
  updated: number;
  deleted: number;
  unchanged: number;
}

export interface MergeResult {
  counts: MergeCounts;
  /** Rows of the new snapshot. */
  rows: number;
  /** Keys of the previous version. */
  previousRows: number;
  /** Keys missing from the extract that the delete check found: updated or unchanged, not deleted. */
  kept: number;
  /** Of those, the ones whose current version a transform rejected as invalid: their previous row stays. */
  keptInvalid: number;
}

/** Merges `previous` (the last version's state) and `incoming` (this run's records), both in key order. */
export async function mergeTable(
  previous: AsyncIterable<PreviousRecord>,
  incoming: AsyncIterable<IncomingRecord>,
  out: MergeOutputs,
  options: MergeOptions,
): Promise<MergeResult> {
  const result: MergeResult = {
    counts: { inserted: 0, updated: 0, deleted: 0, unchanged: 0 },
    rows: 0,
    previousRows: 0,
    kept: 0,
    keptInvalid: 0,
  };
  const prevIt = previous[Symbol.asyncIterator]();
  const nextIt = incoming[Symbol.asyncIterator]();
  let p = await prevIt.next();
  let n = await nextIt.next();
  let keys = 0;
  while (!p.done || !n.done) {
    options.onKey?.(++keys, result.rows, result.counts);
    const order = p.done ? 1 : n.done ? -1 : compareKeys(p.value.key, n.value.key);
    if (order < 0) {
      await onlyPrevious(p.value!, out, options, result);
      p = await prevIt.next();
    } else if (order > 0) {
      const row = options.shaper.shape(n.value!.record);
      await out.current(row, 'inserted');
      await out.change(row, 'insert');
      await out.state(options.lineage?.changedBody(n.value!) ?? n.value!.body);
      result.rows++;
      result.counts.inserted++;
      n = await nextIt.next();
    } else {
      await both(p.value!, n.value!, out, options, result);
      p = await prevIt.next();
      n = await nextIt.next();
    }
  }
  return result;
}

/** A previous key the run did not receive: deleted in a full run, kept otherwise. */
async function onlyPrevious(
  previous: PreviousRecord,
  out: MergeOutputs,
  options: MergeOptions,
  result: MergeResult,
): Promise<void> {
  result.previousRows++;
  const row = options.previousShaper.shape(previous.record);
  // A candidate the check found invalid now exists: its last valid row stays, as in an incremental run.
  const invalidNow = options.keptInvalid?.(previous) ?? false;
  if (options.mode === 'incremental' || invalidNow) {
    await out.current(stamp(options, row, previous), 'unchanged');
    await out.state(previous.body);
    result.rows++;
    result.counts.unchanged++;
    if (invalidNow) {
      result.kept++;
      result.keptInvalid++;
    }
  } else {
    await out.change(row, 'delete');
    result.counts.deleted++;
  }
}

/** A key in both: unchanged when its row is the same (bytes first, then the shaped columns), else updated. */
async function both(
  previous: PreviousRecord,
  next: IncomingRecord,
  out: MergeOutputs,
  options: MergeOptions,
  result: MergeResult,
): Promise<void> {
  result.previousRows++;
  result.rows++;
  if (next.found) result.kept++;
  const { body, record: before } = previous;
  if (Buffer.compare(TableLineage.recordBody(previous), next.body) === 0) {
    // The same key and record serialized to the same bytes: the same row, unchanged. Shaped
    // by this run's shaper, which warns of fields it puts in _extra, as for any incoming record.
    await out.current(stamp(options, options.shaper.shape(before), previous), 'unchanged');
    await out.state(body);
    result.counts.unchanged++;
    return;
  }
  const old = options.previousShaper.shape(before);
  const row = options.shaper.shape(next.record);
  const ignored = [...options.ignored, ...(options.lineage?.compareIgnored ?? [])];
  if (comparable(old, ignored).equals(comparable(row, ignored))) {
    await out.current(stamp(options, old, previous), 'unchanged');
    // The same row from other bytes (fields in another order, a number or string held in
    // another representation, as a state written by an earlier version holds them). With
    // ignoreFields the earlier record stays (the snapshot keeps its row); without, the
    // records are equal in every column, and the incoming bytes let the next run compare
    // this key as bytes.
    const kept = options.lineage?.keptBody(next, previous.lineage) ?? next.body;
    await out.state(options.ignored.length === 0 ? kept : body);
    result.counts.unchanged++;
  } else {
    await out.current(row, 'updated');
    await out.change(row, 'update');
    await out.state(options.lineage?.changedBody(next) ?? next.body);
    result.counts.updated++;
  }
}

/** A row of a key this run did not change, with the lineage of the run that last did. */
function stamp(options: MergeOptions, row: ShapedRow, previous: PreviousRecord): ShapedRow {
  return options.lineage ? options.lineage.stamp(row, previous.lineage) : row;
}

/** A row's values as bytes, the ignored columns blanked: equal bytes, the same row. */
function comparable(row: ShapedRow, ignored: readonly number[]): Buffer {
  if (ignored.length === 0) return serialize(row.values);
  const values = row.values.slice();
  for (const i of ignored) values[i] = null;
  return serialize(values);
}
