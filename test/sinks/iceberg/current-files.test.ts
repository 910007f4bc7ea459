// The key-range files of an Iceberg current/ snapshot (current-files.ts) over plain arrays: a
// range whose rows all come through unchanged keeps its file, a range with an insert, update or
// delete is written again with its rows in order, and row counts that do not add up are refused.
// Snapshot expiry by age (expire-snapshots.ts) beside: by count and by age, the newest stays.
import { describe, expect, it } from 'vitest';
import { CurrentFiles, HELD_BYTES, type WrittenPart } from '../../../src/sinks/table/current-files.js';
import { ExpireSnapshots } from '../../../src/sinks/table/iceberg/expire-snapshots.js';
import type { ShapedRow } from '../../../src/sinks/shared/column-types.js';
import type { Snapshot, TableMetadata } from '../../../src/sinks/table/iceberg/iceberg-types.js';
import type { RowOrigin } from '../../../src/sinks/table/table-merge.js';

class ArrayPart implements WrittenPart {
  readonly values: unknown[] = [];
  ended = false;
  readonly encoder = {
    rows: 0,
    write: (row: ShapedRow) => {
      this.values.push(row.values[0]);
      this.encoder.rows++;
    },
    end: async () => {
      this.ended = true;
    },
  };
}

const previous = [
  { path: 'current/data/a.parquet', rows: 3, bytes: 30 },
  { path: 'current/data/b.parquet', rows: 3, bytes: 30 },
  { path: 'current/data/c.parquet', rows: 3, bytes: 30 },
];

/** Runs `steps` (a row with its origin, or a delete) through CurrentFiles; the files in order. */
async function layout(steps: Array<[string, RowOrigin] | 'delete'>, fileRows = 3): Promise<string[]> {
  const files = new CurrentFiles(previous, fileRows, () => Promise.resolve(new ArrayPart()));
  for (const step of steps)
    if (step === 'delete') await files.deleted();
    else await files.row({ values: [step[0]], bytes: 1 }, step[1]);
  await files.end();
  expect(files.written.every((p) => p.ended)).toBe(true);
  return files.order.map((f) => ('kept' in f ? f.kept.path : `new:${f.written.values.join(',')}`));
}

const u = (k: string): [string, RowOrigin] => [k, 'unchanged'];

describe('CurrentFiles', () => {
  it('keeps the files of unchanged ranges and writes the changed ones again, in key order', async () => {
    expect(await layout(['a1', 'a2', 'a3', 'b1', 'b2', 'b3', 'c1', 'c2', 'c3'].map(u))).toEqual(
      previous.map((p) => p.path),
    );
    // An update in b, an insert after c's last key, a delete in a.
    expect(
      await layout([
        u('a1'),
        'delete',
        u('a3'),
        u('b1'),
        ['b2', 'updated'],
        u('b3'),
        u('c1'),
        u('c2'),
        u('c3'),
        ['c4', 'inserted'],
      ]),
    ).toEqual(['new:a1,a3', 'new:b1,b2,b3', 'new:c1,c2,c3,c4']);
    // An insert between a's last key and b's first goes with a; b and c stay.
    expect(
      await layout([u('a1'), u('a2'), u('a3'), ['a4', 'inserted'], ...['b1', 'b2', 'b3', 'c1', 'c2', 'c3'].map(u)]),
    ).toEqual(['new:a1,a2,a3,a4', 'current/data/b.parquet', 'current/data/c.parquet']);
  });

  it('writes the next range into the file of a rewritten range left under half the file size', async () => {
    // a keeps one row of three: a1 goes with b's rows; c stays. The last range has no next: alone.
    expect(await layout([u('a1'), 'delete', 'delete', ...['b1', 'b2', 'b3', 'c1', 'c2', 'c3'].map(u)])).toEqual([
      'new:a1,b1,b2,b3',
      'current/data/c.parquet',
    ]);
    expect(await layout([...['a1', 'a2', 'a3', 'b1', 'b2', 'b3'].map(u), 'delete', 'delete', u('c3')])).toEqual([
      'current/data/a.parquet',
      'current/data/b.parquet',
      'new:c3',
    ]);
  });

  it('splits a rewritten range that grew past twice the file size', async () => {
    const inserts = ['c4', 'c5', 'c6', 'c7'].map((k): [string, RowOrigin] => [k, 'inserted']);
    expect(await layout([...['a1', 'a2', 'a3', 'b1', 'b2', 'b3', 'c1', 'c2', 'c3'].map(u), ...inserts])).toEqual([
      'current/data/a.parquet',
      'current/data/b.parquet',
      'new:c1,c2,c3,c4,c5,c6',
      'new:c7',
    ]);
  });

  it('writes an unchanged range whose rows pass the memory bound instead of holding them', async () => {
    const files = new CurrentFiles(previous, 3, () => Promise.resolve(new ArrayPart()));
    for (const k of ['a1', 'a2', 'a3']) await files.row({ values: [k], bytes: HELD_BYTES / 2 }, 'unchanged');
    for (const k of ['b1', 'b2', 'b3', 'c1', 'c2', 'c3']) await files.row({ values: [k], bytes: 1 }, 'unchanged');
    await files.end();
    expect(files.order.map((f) => ('kept' in f ? f.kept.path : `new:${f.written.values.join(',')}`))).toEqual([
      'new:a1,a2,a3',
      'current/data/b.parquet',
      'current/data/c.parquet',
    ]);
  });

  it('refuses a merge whose previous rows do not add up to the files', async () => {
    await expect(layout(['a1', 'a2', 'a3', 'b1'].map(u))).rejects.toMatchObject({ code: 'table.manifest' });
    await expect(layout(Array.from({ length: 10 }, (_, i) => u(`k${i}`)))).rejects.toMatchObject({
      code: 'table.manifest',
    });
  });

  it('without previous files writes every row, rotated at the file size, and one empty file for no row', async () => {
    const files = new CurrentFiles<ArrayPart>(undefined, 2, () => Promise.resolve(new ArrayPart()));
    for (const k of ['a', 'b', 'c']) await files.row({ values: [k], bytes: 1 }, 'unchanged');
    await files.end();
    expect(files.written.map((p) => p.values)).toEqual([['a', 'b'], ['c']]);
    const empty = new CurrentFiles<ArrayPart>(undefined, 2, () => Promise.resolve(new ArrayPart()));
    await empty.end();
    expect(empty.written.map((p) => p.values)).toEqual([[]]);
  });
});

describe('ExpireSnapshots by age', () => {
  const DAY = 86_400_000;
  const now = new Date('2026-11-20T00:00:00Z');
  const snapshot = (id: number, daysAgo: number): Snapshot => ({
    'snapshot-id': id,
    'sequence-number': id,
    'timestamp-ms': now.getTime() - daysAgo * DAY,
    'manifest-list': `file:///t/metadata/snap-${id}.avro`,
    summary: { operation: 'overwrite' },
  });
  const metadata = {
    snapshots: [snapshot(1, 9), snapshot(2, 5), snapshot(3, 1)],
    refs: {},
  } as unknown as TableMetadata;
  const removed = (expiry: ExpireSnapshots, added: Snapshot) =>
    expiry.removals(added).flatMap((u) => ('snapshot-ids' in u ? u['snapshot-ids'] : []));

  it('expires snapshots older than the age even within the count; the new one and `keep` stay', () => {
    expect(removed(new ExpireSnapshots(metadata, 10), snapshot(4, 0))).toEqual([]);
    expect(removed(new ExpireSnapshots(metadata, 10, [], { maxAgeMs: 3 * DAY, now }), snapshot(4, 0))).toEqual([1, 2]);
    expect(removed(new ExpireSnapshots(metadata, 10, [2], { maxAgeMs: 3 * DAY, now }), snapshot(4, 0))).toEqual([1]);
    expect(removed(new ExpireSnapshots(metadata, 2, [], { maxAgeMs: 30 * DAY, now }), snapshot(4, 0))).toEqual([1, 2]);
    // A new snapshot stamped in the past (a clock behind) is never expired by its own commit.
    expect(removed(new ExpireSnapshots(metadata, 10, [], { maxAgeMs: DAY / 2, now }), snapshot(4, 2))).toEqual([
      1, 2, 3,
    ]);
  });
});
