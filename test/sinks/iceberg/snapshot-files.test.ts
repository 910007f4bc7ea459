// A hive snapshot's files (snapshot-files.ts) over plain arrays: rotated at the file size, one
// empty file for no row.
// Snapshot expiry by age (expire-snapshots.ts) beside: by count and by age, the newest stays.
import { describe, expect, it } from 'vitest';
import { SnapshotFiles, type WrittenPart } from '../../../src/sinks/table/snapshot-files.js';
import { ExpireSnapshots } from '../../../src/sinks/table/iceberg/expire-snapshots.js';
import type { ShapedRow } from '../../../src/sinks/shared/column-types.js';
import type { Snapshot, TableMetadata } from '../../../src/sinks/table/iceberg/iceberg-types.js';

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

describe('SnapshotFiles', () => {
  it('writes every row, rotated at the file size, and one empty file for no row', async () => {
    const files = new SnapshotFiles<ArrayPart>(2, () => Promise.resolve(new ArrayPart()));
    for (const k of ['a', 'b', 'c']) await files.row({ values: [k], bytes: 1 });
    await files.end();
    expect(files.written.map((p) => p.values)).toEqual([['a', 'b'], ['c']]);
    const empty = new SnapshotFiles<ArrayPart>(2, () => Promise.resolve(new ArrayPart()));
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
