// The table's merge as a plain function (issue 38): two key-ordered inputs, the previous merge
// state and a run's sorted records, into current rows, change rows and the new state. No stream,
// no file: arrays in, arrays out.
import { serialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import type { RecordSchema } from '../../src/core/record-schema.js';
import { ColumnSchema, RecordShaper, type ColumnSchemaSettings } from '../../src/sinks/shared/column-schema.js';
import type { ShapedRow } from '../../src/sinks/shared/column-types.js';
import type { PreviousRecord } from '../../src/sinks/table/merge-state.js';
import {
  mergeTable,
  type ChangeKind,
  type IncomingRecord,
  type MergeOptions,
} from '../../src/sinks/table/table-merge.js';
import type { Key } from '../../src/sinks/table/sorted-records.js';

const settings: ColumnSchemaSettings = {
  nested: 'flatten',
  lists: 'native',
  timestamps: 'millis',
  timestampInput: 'seconds',
  prices: 'minor-units',
  excluded: new Set(),
};
const recordSchema: RecordSchema = {
  fields: [
    { name: 'id', type: { kind: 'string' } },
    { name: 'name', type: { kind: 'string' } },
    { name: 'stock', type: { kind: 'int32' } },
  ],
};
const schema = new ColumnSchema(recordSchema, settings);
const NAME = schema.columns.findIndex((c) => c.name === 'name');

type Rec = Record<string, unknown>;
/** A record's key: `id`, or `n` for the numeric-key case. */
const keyOf = (record: Rec) => (record.n ?? record.id) as Key;
const body = (key: Key, record: Rec) => serialize([key, record]);
const previous = (records: Rec[]): AsyncIterable<PreviousRecord> =>
  (async function* () {
    for (const record of records)
      yield { key: keyOf(record), body: body(keyOf(record), record), record, lineage: null };
  })();
const incoming = (records: Rec[], found: readonly string[] = []): AsyncIterable<IncomingRecord> =>
  (async function* () {
    for (const record of records) {
      const key = keyOf(record);
      yield { key, body: body(key, record), record, found: found.includes(key as string) };
    }
  })();

/** Runs the merge into arrays: current rows and change rows as `id/name` strings, state as records. */
async function merge(
  prev: Rec[],
  next: Rec[],
  options: Partial<MergeOptions> & Pick<MergeOptions, 'mode'>,
  found?: string[],
) {
  const current: ShapedRow[] = [];
  const changes: Array<[ChangeKind, ShapedRow]> = [];
  const state: Uint8Array[] = [];
  const result = await mergeTable(
    previous(prev),
    incoming(next, found),
    {
      current: async (row) => void current.push(row),
      change: async (row, kind) => void changes.push([kind, row]),
      state: async (b) => void state.push(b),
    },
    { shaper: new RecordShaper(schema), previousShaper: new RecordShaper(schema), ignored: [], ...options },
  );
  const show = (row: ShapedRow) => `${String(row.values[0])}/${String(row.values[NAME])}`;
  return {
    result,
    current: current.map(show),
    changes: changes.map(([kind, row]) => `${kind} ${show(row)}`),
    state,
  };
}

const a = { id: 'a', name: 'apple', stock: 1 };
const b = { id: 'b', name: 'bread', stock: 2 };
const c = { id: 'c', name: 'cheese', stock: 3 };
const d = { id: 'd', name: 'dates', stock: 4 };

describe('mergeTable', () => {
  it('a first run: every record an insert, the state its bodies in key order', async () => {
    const out = await merge([], [a, b, c], { mode: 'first' });
    expect(out.current).toEqual(['a/apple', 'b/bread', 'c/cheese']);
    expect(out.changes).toEqual(['insert a/apple', 'insert b/bread', 'insert c/cheese']);
    expect(out.state).toEqual([body('a', a), body('b', b), body('c', c)]);
    expect(out.result).toEqual({
      counts: { inserted: 3, updated: 0, deleted: 0, unchanged: 0 },
      rows: 3,
      previousRows: 0,
      kept: 0,
      keptInvalid: 0,
    });
  });

  it('a full run: unchanged, updated, inserted and deleted keys, each in key order', async () => {
    const b2 = { ...b, name: 'brioche' };
    const out = await merge([a, b, c], [a, b2, d], { mode: 'full' });
    expect(out.current).toEqual(['a/apple', 'b/brioche', 'd/dates']);
    expect(out.changes).toEqual(['update b/brioche', 'delete c/cheese', 'insert d/dates']);
    // An unchanged key keeps its previous frame; a changed or new one the run's.
    expect(out.state).toEqual([body('a', a), body('b', b2), body('d', d)]);
    expect(out.result.counts).toEqual({ inserted: 1, updated: 1, deleted: 1, unchanged: 1 });
    expect(out.result.rows).toBe(3);
    expect(out.result.previousRows).toBe(3);
  });

  it('an incremental run keeps the previous keys it did not receive, unchanged and without a change row', async () => {
    const out = await merge([a, b, c], [{ ...b, stock: 20 }], { mode: 'incremental' });
    expect(out.current).toEqual(['a/apple', 'b/bread', 'c/cheese']);
    expect(out.changes).toEqual(['update b/bread']);
    expect(out.state[0]).toEqual(body('a', a));
    expect(out.state[2]).toEqual(body('c', c));
    expect(out.result.counts).toEqual({ inserted: 0, updated: 1, deleted: 0, unchanged: 2 });
  });

  it('the same row from other bytes is unchanged, and the state takes the incoming bytes', async () => {
    const reordered = { stock: 1, name: 'apple', id: 'a' };
    const out = await merge([reordered], [a], { mode: 'full' });
    expect(out.changes).toEqual([]);
    expect(out.result.counts.unchanged).toBe(1);
    expect(out.state).toEqual([body('a', a)]);
  });

  it('ignoreFields: a change in an ignored column alone keeps the earlier row and the earlier record', async () => {
    const renamed = { ...a, name: 'apples' };
    const out = await merge([a], [renamed], { mode: 'full', ignored: [NAME] });
    expect(out.current).toEqual(['a/apple']);
    expect(out.changes).toEqual([]);
    expect(out.state).toEqual([body('a', a)]);
    // Another column still counts.
    const restocked = await merge([a], [{ ...a, name: 'apples', stock: 9 }], { mode: 'full', ignored: [NAME] });
    expect(restocked.changes).toEqual(['update a/apples']);
  });

  it('a full run keeps a missing key whose current version is invalid, and counts the keys the check found', async () => {
    const out = await merge([a, b, c], [b], { mode: 'full', keptInvalid: (p) => p.key === 'c' }, []);
    expect(out.current).toEqual(['b/bread', 'c/cheese']);
    expect(out.changes).toEqual(['delete a/apple']);
    expect(out.result).toMatchObject({ kept: 1, keptInvalid: 1 });
    const found = await merge([a, b], [a, { ...b, stock: 5 }], { mode: 'full' }, ['b']);
    expect(found.result).toMatchObject({ kept: 1, keptInvalid: 0 });
    expect(found.changes).toEqual(['update b/bread']);
  });

  it('numeric keys merge in key order, and each key is reported before it is merged', async () => {
    const n = (k: number) => ({ n: k, id: `k${k}`, name: `n${k}`, stock: k });
    const keys: number[] = [];
    const out = await merge([n(2), n(10)], [n(3), n(10)], {
      mode: 'full',
      onKey: (k) => void keys.push(k),
    });
    expect(out.current).toEqual(['k3/n3', 'k10/n10']);
    expect(out.changes).toEqual(['delete k2/n2', 'insert k3/n3']);
    expect(keys).toEqual([1, 2, 3]);
  });
});
