// Lineage columns in a table (src/sinks/table/table-lineage.ts), hive and iceberg layouts: a current
// row keeps the `_run_id`/`_extracted_at` of the run that last CHANGED it; the lineage columns never
// make an unchanged key look changed (two runs without a catalog change write 0 change rows); change
// rows carry the run that saw the change; a table whose state predates lineage gets null lineage
// for the keys no run changed since.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { tableSink } from '../../src/sinks/index.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { readIceberg } from '../helpers/iceberg-reader.js';
import { testContext } from '../helpers/stage-context.js';
import { tempDir } from './records.js';

type Rec = Record<string, unknown>;
const columns = { id: 'string', price: 'int64' } as const;
const start = (run: number) => new Date(Date.UTC(2026, 4, run, 2, 0, 0));

async function run(
  dir: string,
  n: number,
  records: Rec[],
  opts: { format?: 'hive' | 'iceberg'; incremental?: boolean; lineage?: boolean; timestamps?: 'raw' } = {},
): Promise<void> {
  const ctx = testContext({ baseDir: dir, run: opts.incremental ? { cursor: { previous: 1 } } : {} });
  ctx.run.id = `run-${n}`;
  ctx.run.startedAt = start(n);
  await pipeline(
    Readable.from(records),
    tableSink(
      {
        path: 'table',
        key: 'id',
        columns,
        format: opts.format ?? 'hive',
        lineage: opts.lineage ?? true,
        deletes: { maxRatio: 1 },
        ...(opts.timestamps ? { timestamps: opts.timestamps } : {}),
      },
      ctx,
    ),
  );
}

interface LineageRow {
  id: string;
  run: string | null;
  at: number | null;
}

/** id, _run_id and _extracted_at (epoch ms) of rows DuckDB reads from Parquet files. */
async function parquetLineage(glob: string, extra = ''): Promise<Array<LineageRow & Rec>> {
  const { rows } = await duckdbQuery(
    `SELECT id, _run_id AS run, epoch_ms(_extracted_at)::BIGINT AS at${extra} FROM read_parquet(${sqlString(glob)}, hive_partitioning = false) ORDER BY id`,
  );
  return rows.map((r) => ({
    ...r,
    id: String(r.id),
    run: r.run as string | null,
    at: r.at === null ? null : Number(r.at),
  }));
}

const lineage = (id: string, n: number): LineageRow => ({ id, run: `run-${n}`, at: start(n).getTime() });

const A = { id: 'A', price: 10 };
const B = { id: 'B', price: 20 };
const C = { id: 'C', price: 30 };

describe('table lineage, hive layout', () => {
  it('current rows keep the run that last changed them; an unchanged run writes 0 changes', async () => {
    const dir = await tempDir('table-lineage-');
    const root = join(dir, 'table');
    const snapshot = (n: number) => parquetLineage(join(root, `snapshot/dt=2026-05-0${n}/*.parquet`));
    const changes = (n: number) => parquetLineage(join(root, `changes/dt=2026-05-0${n}/*.parquet`), ', _change');
    const counts = async () =>
      (JSON.parse(await readFile(join(root, '_table.json'), 'utf8')).versions as Array<{ counts: unknown }>).map(
        (v) => v.counts,
      );

    await run(dir, 1, [A, B, C]);
    expect(await snapshot(1)).toEqual([lineage('A', 1), lineage('B', 1), lineage('C', 1)]);
    expect(await changes(1)).toEqual(['A', 'B', 'C'].map((id) => ({ ...lineage(id, 1), _change: 'insert' })));

    // No catalog change (a full run; A's members in another order: the same row): nothing changed.
    await run(dir, 2, [{ price: 10, id: 'A' }, B, C]);
    expect((await counts()).at(-1)).toEqual({ inserted: 0, updated: 0, deleted: 0, unchanged: 3 });
    expect(await readdir(join(root, 'changes')).then((d) => d.includes('dt=2026-05-02'))).toBe(false);
    expect(await snapshot(2)).toEqual([lineage('A', 1), lineage('B', 1), lineage('C', 1)]);

    // B changes, D is new; A and C unchanged (incremental: C is not sent).
    await run(dir, 3, [A, { id: 'B', price: 21 }, { id: 'D', price: 40 }], { incremental: true });
    expect((await counts()).at(-1)).toEqual({ inserted: 1, updated: 1, deleted: 0, unchanged: 2 });
    expect(await snapshot(3)).toEqual([lineage('A', 1), lineage('B', 3), lineage('C', 1), lineage('D', 3)]);
    expect(await changes(3)).toEqual([
      { ...lineage('B', 3), _change: 'update' },
      { ...lineage('D', 3), _change: 'insert' },
    ]);

    // A full run without C: its delete row is the run that saw the delete, whatever C's row said.
    await run(dir, 4, [A, { id: 'B', price: 21 }, { price: 40, id: 'D' }]);
    expect((await counts()).at(-1)).toEqual({ inserted: 0, updated: 0, deleted: 1, unchanged: 3 });
    expect(await snapshot(4)).toEqual([lineage('A', 1), lineage('B', 3), lineage('D', 3)]);
    expect(await changes(4)).toEqual([{ ...lineage('C', 4), _change: 'delete' }]);

    // The change rows' columns: the record's, the lineage columns (`_run_id` is the change's), then the change's.
    const described = await duckdbQuery(
      `DESCRIBE SELECT * FROM read_parquet(${sqlString(join(root, 'changes/dt=2026-05-04/*.parquet'))}, hive_partitioning = false)`,
    );
    expect(described.rows.map((r) => `${r.column_name} ${r.column_type}`)).toEqual([
      'id VARCHAR',
      'price BIGINT',
      '_run_id VARCHAR',
      '_extracted_at TIMESTAMP WITH TIME ZONE',
      '_change VARCHAR',
      '_changed_at TIMESTAMP WITH TIME ZONE',
      '_extra JSON',
    ]);
  });

  it('a table written before lineage was turned on: null lineage until a run changes the key', async () => {
    const dir = await tempDir('table-lineage-late-');
    const root = join(dir, 'table');
    await run(dir, 1, [A, B], { lineage: false });
    await run(dir, 2, [A, { id: 'B', price: 22 }]);
    expect(await parquetLineage(join(root, 'snapshot/dt=2026-05-02/*.parquet'))).toEqual([
      { id: 'A', run: null, at: null },
      lineage('B', 2),
    ]);
    // Turned off again: the columns go, the change detection is the same (nothing changed).
    await run(dir, 3, [A, { id: 'B', price: 22 }], { lineage: false });
    const versions = JSON.parse(await readFile(join(root, '_table.json'), 'utf8')).versions;
    expect(versions.at(-1).counts).toEqual({ inserted: 0, updated: 0, deleted: 0, unchanged: 2 });
  });
});

describe('table lineage, iceberg layout', () => {
  it('current/ keeps the run that last changed a row; changes/ rows the run that saw the change', async () => {
    const dir = await tempDir('table-lineage-ice-');
    const root = join(dir, 'table');
    const read = async (table: 'current' | 'changes') =>
      (await readIceberg(join(root, table)))
        .map((r) => ({
          id: String(r.id),
          run: r._run_id as string,
          at: r._extracted_at instanceof Date ? r._extracted_at.getTime() : Number(r._extracted_at) / 1000,
          ...(table === 'changes' ? { change: r._change } : {}),
        }))
        .sort((x, y) => `${x.run}${x.id}`.localeCompare(`${y.run}${y.id}`));

    await run(dir, 1, [A, B], { format: 'iceberg' });
    await run(dir, 2, [A, B], { format: 'iceberg' });
    expect(await read('current')).toEqual([lineage('A', 1), lineage('B', 1)]);
    // The unchanged run appended no change row.
    expect(await read('changes')).toEqual([
      { ...lineage('A', 1), change: 'insert' },
      { ...lineage('B', 1), change: 'insert' },
    ]);
    await run(dir, 3, [A, { id: 'B', price: 23 }], { format: 'iceberg' });
    expect(await read('current')).toEqual([lineage('A', 1), lineage('B', 3)]);
    expect((await read('changes')).at(-1)).toEqual({ ...lineage('B', 3), change: 'update' });
  });

  it('timestamps: raw keeps the record columns raw; _extracted_at is still an Iceberg timestamp', async () => {
    const dir = await tempDir('table-lineage-raw-');
    await run(dir, 1, [A], { format: 'iceberg', timestamps: 'raw' });
    const [row] = await readIceberg(join(dir, 'table', 'current'));
    const at = row!._extracted_at;
    expect(at instanceof Date ? at.getTime() : Number(at) / 1000).toBe(start(1).getTime());
  });
});
