// Issue 36 item 8: expiry keeps every snapshot a ref names and never drops a ref the sink did not
// create. Another engine tags a snapshot (a `tag` ref in the metadata `refs`); the sink's later
// commits with keepSnapshots: 1 expire every other old snapshot, and a rollback past the tagged
// one keeps it too.
import { describe, expect, it } from 'vitest';
import type { TypedColumn } from '../../../src/sinks/shared/column-types.js';
import { FilesCatalog } from '../../../src/sinks/table/iceberg/files-catalog.js';
import { rollbackTo } from '../../../src/sinks/table/iceberg/iceberg-commit.js';
import { tempDir } from '../records.js';
import { localTable, run } from './iceberg-helpers.js';

const COLUMNS: TypedColumn[] = [{ name: 'id', type: { kind: 'string' } }];

describe('Iceberg refs made by another engine', () => {
  it('expiry keeps the tagged snapshot and the tag; a rollback past it keeps both too', async () => {
    const root = await tempDir('iceberg-refs-');
    const catalog = new FilesCatalog();
    const table = localTable(root, 'current');
    const commitRun = (runId: string, minute: number) =>
      run(catalog, table, {
        runId,
        operation: 'overwrite',
        columns: COLUMNS,
        rows: [[runId]],
        keepSnapshots: 1,
        minute,
      });
    const r1 = await commitRun('r1', 1);
    const tagged = r1.metadata['current-snapshot-id']!;
    const [withTag] = await catalog.commit([
      {
        table,
        base: r1,
        requirements: [],
        updates: [{ action: 'set-snapshot-ref', 'ref-name': 'audit', type: 'tag', 'snapshot-id': tagged }],
      },
    ]);
    expect(withTag!.metadata.refs?.audit?.['snapshot-id']).toBe(tagged);
    await commitRun('r2', 2);
    const r3 = await commitRun('r3', 3);
    const ids = r3.metadata.snapshots!.map((s) => s['snapshot-id']);
    expect(ids).toContain(tagged);
    expect(ids).toHaveLength(2);
    expect(r3.metadata.refs?.audit).toEqual({ 'snapshot-id': tagged, type: 'tag' });

    // A branch on the newest snapshot, then the sink rolls main back to the tagged one: the branch stays.
    const newest = r3.metadata['current-snapshot-id']!;
    const [branched] = await catalog.commit([
      {
        table,
        base: r3,
        requirements: [],
        updates: [{ action: 'set-snapshot-ref', 'ref-name': 'etl', type: 'branch', 'snapshot-id': newest }],
      },
    ]);
    const [rolled] = await catalog.commit([rollbackTo(table, branched!, tagged)]);
    expect(rolled!.metadata.refs?.etl?.['snapshot-id']).toBe(newest);
    expect(rolled!.metadata.refs?.main?.['snapshot-id']).toBe(tagged);
    expect(rolled!.metadata.snapshots!.map((s) => s['snapshot-id']).sort()).toEqual([tagged, newest].sort());
  });
});
