// The repair of a `changes/` table a kill left one run ahead of `current/`, when the snapshot to
// roll back to had expired (what a version before issue 35 item 7 left with keepSnapshots: 1: its
// commit of changes/ expired the snapshot current/ still named). The repair must not roll back to
// no snapshot (every earlier change row would go): a new snapshot holds the earlier runs' rows
// without the ahead run's, and the garbage walk removes only that run's file (its journal names it). Built with
// prepareCommit as that version committed; read back by icebird.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TypedColumn } from '../../../src/sinks/shared/column-types.js';
import { IcebergLayout } from '../../../src/sinks/table/iceberg-layout.js';
import { FilesCatalog } from '../../../src/sinks/table/iceberg/files-catalog.js';
import type { IcebergTableRef } from '../../../src/sinks/table/iceberg/iceberg-catalog.js';
import { tableSchema } from '../../../src/sinks/table/iceberg/iceberg-commit.js';
import { prepareCommit } from '../../../src/sinks/table/iceberg/snapshot-operations.js';
import { TableStore } from '../../../src/sinks/table/table-store.js';
import { LocalObjectStore } from '../../../src/storage/object-store.js';
import { WriteJournal } from '../../../src/storage/write-journal.js';
import { listFiles } from '../../cli/cli-process.js';
import { readIceberg } from '../../helpers/iceberg-reader.js';
import { tempDir } from '../records.js';
import { localTable, T0, writeDataFile } from './iceberg-helpers.js';

const COLUMNS: TypedColumn[] = [
  { name: '_run_id', type: { kind: 'string' } },
  { name: 'id', type: { kind: 'string' } },
];

/** One run's commit of one table, as the sink made it before the fix: nothing kept beyond keepSnapshots. */
async function commit(
  catalog: FilesCatalog,
  table: IcebergTableRef,
  runId: string,
  ids: string[],
  extra: Record<string, string> = {},
): Promise<void> {
  const base = await catalog.load(table);
  const schema = tableSchema(base?.metadata, COLUMNS);
  const rows = ids.map((id) => [runId, id]);
  const file = await writeDataFile(table, `data/part-00000-${runId}.parquet`, schema.columns, schema.schema, rows);
  const prepared = await prepareCommit({
    table,
    base,
    files: [file],
    operation: table.name === 'current' ? 'overwrite' : 'append',
    columns: COLUMNS,
    summary: { 'catalog-streams.run-id': runId, ...extra },
    runId,
    keepSnapshots: 1,
    now: new Date(T0),
  });
  await catalog.commit([prepared.commit]);
}

describe('the repair of changes/ when the snapshot current/ names had expired', () => {
  it('keeps every earlier run’s change rows and drops only the ahead run’s', async () => {
    const root = await tempDir('iceberg-repair-');
    const catalog = new FilesCatalog();
    const current = localTable(root, 'current');
    const changes = localTable(root, 'changes');
    // Two runs committed both tables; a third committed changes/ (expiring the second's snapshot) and was killed.
    for (const run of ['r1', 'r2']) {
      await commit(catalog, changes, run, [`${run}-a`, `${run}-b`]);
      await commit(catalog, current, run, ['a', 'b'], { 'catalog-streams.state': `_table/state-${run}.v8.gz` });
    }
    await commit(catalog, changes, 'r3', ['r3-a']);
    expect((await catalog.load(changes))!.metadata.snapshots).toHaveLength(1);
    // The killed run had journaled its data file (storage/write-journal.ts): the proof the garbage walk needs.
    await (await WriteJournal.open(new LocalObjectStore(root), 'r3')).record(['changes/data/part-00000-r3.parquet']);

    const layout = new IcebergLayout(new TableStore(new LocalObjectStore(root)), {
      key: 'id',
      keepSnapshots: 1,
      catalog,
      stores: { current: current.store, changes: changes.store },
    });
    const opened = await layout.open();
    await layout.close();
    expect(opened.previous?.runId).toBe('r2');
    expect(opened.repaired).toMatch(
      /run r2's snapshot had expired: a new snapshot holds every earlier run's change rows/,
    );
    const rows = await readIceberg(join(root, 'changes'));
    expect(rows.map((r) => `${String(r._run_id)} ${String(r.id)}`).sort()).toEqual([
      'r1 r1-a',
      'r1 r1-b',
      'r2 r2-a',
      'r2 r2-b',
    ]);
    const files = await listFiles(join(root, 'changes/data'));
    expect(files).toEqual(['part-00000-r1.parquet', 'part-00000-r2.parquet']);
    // The next repair finds changes/ at the run current/ names: nothing to do.
    const again = new IcebergLayout(new TableStore(new LocalObjectStore(root)), {
      key: 'id',
      keepSnapshots: 1,
      catalog,
      stores: { current: localTable(root, 'current').store, changes: localTable(root, 'changes').store },
    });
    expect((await again.open()).repaired).toBeUndefined();
    await again.close();
  });
});
