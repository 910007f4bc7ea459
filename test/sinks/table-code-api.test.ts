// The table sink in code (tableSink with a StageContext): numeric keys, records fed in random
// chunk sizes, `ignoreFields` (a change of those columns alone is no change, and the snapshot
// keeps the earlier row), an incremental run (the run description's cursor) inferring no delete,
// a full run checking its delete candidates through `ctx.recordLookup` (and warning
// without one), and options naming what does not exist.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import type { RecordLookup } from '../../src/core/stage.js';
import { ConfigError } from '../../src/errors.js';
import { tableSink } from '../../src/sinks/index.js';
import { duckdbQuery, sqlString } from '../helpers/duckdb.js';
import { testContext } from '../helpers/stage-context.js';
import { randomBatches, tempDir } from './records.js';

const columns = { id: 'int64', price: 'int64', updatedAt: 'timestamp' } as const;

async function run(
  dir: string,
  day: string,
  records: Array<Record<string, unknown>>,
  incremental: boolean,
): Promise<void> {
  const ctx = testContext({ baseDir: dir, run: incremental ? { cursor: { previous: 1 } } : {} });
  ctx.run.id = `run-${day}`;
  ctx.run.startedAt = new Date(`${day}T02:00:00Z`);
  await pipeline(
    randomBatches(records, 7, day.length + records.length),
    tableSink({ path: 'table', key: 'id', columns, ignoreFields: ['updatedAt'], sortBufferBytes: 300 }, ctx),
  );
}

describe('tableSink in code', () => {
  it('numeric keys in numeric order; ignoreFields; incremental runs infer no delete', async () => {
    const dir = await tempDir('table-code-');
    const day1 = [3, 20, 100, 7, 1].map((id) => ({ id, price: id * 10, updatedAt: 1000 }));
    await run(dir, '2026-05-01', day1, false);
    // id 20: only updatedAt moved (ignored: unchanged); id 7: price changed; id 5: new; ids 3, 100, 1: not sent.
    await run(
      dir,
      '2026-05-02',
      [
        { id: 20, price: 200, updatedAt: 2000 },
        { id: 7, price: 71, updatedAt: 2000 },
        { id: 5, price: 50, updatedAt: 2000 },
      ],
      true,
    );
    const root = join(dir, 'table');
    const snap = await duckdbQuery(
      `SELECT id::INTEGER AS id, price::INTEGER AS price, epoch(updatedAt)::INTEGER AS u FROM read_parquet(${sqlString(join(root, 'snapshot/dt=2026-05-02/*.parquet'))})`,
    );
    expect(snap.rows).toEqual([
      { id: 1, price: 10, u: 1000 },
      { id: 3, price: 30, u: 1000 },
      { id: 5, price: 50, u: 2000 },
      { id: 7, price: 71, u: 2000 },
      { id: 20, price: 200, u: 1000 },
      { id: 100, price: 1000, u: 1000 },
    ]);
    const changes = await duckdbQuery(
      `SELECT id::INTEGER AS id, _change, _run_id FROM read_parquet(${sqlString(join(root, 'changes/dt=2026-05-02/*.parquet'))}) ORDER BY id`,
    );
    expect(changes.rows).toEqual([
      { id: 5, _change: 'insert', _run_id: 'run-2026-05-02' },
      { id: 7, _change: 'update', _run_id: 'run-2026-05-02' },
    ]);
    const manifest = JSON.parse(await readFile(join(root, '_table.json'), 'utf8'));
    expect(manifest.versions.map((v: any) => [v.mode, v.counts])).toEqual([
      ['first', { inserted: 5, updated: 0, deleted: 0, unchanged: 0 }],
      ['incremental', { inserted: 1, updated: 1, deleted: 0, unchanged: 4 }],
    ]);
    // The change file's schema: the record's columns, then _change, _changed_at, _run_id, then _extra.
    const described = await duckdbQuery(
      `DESCRIBE SELECT * FROM read_parquet(${sqlString(join(root, 'changes/dt=2026-05-02/*.parquet'))}, hive_partitioning = false)`,
    );
    expect(described.rows.map((r) => `${r.column_name} ${r.column_type}`)).toEqual([
      'id BIGINT',
      'price BIGINT',
      'updatedAt TIMESTAMP WITH TIME ZONE',
      '_change VARCHAR',
      '_changed_at TIMESTAMP WITH TIME ZONE',
      '_run_id VARCHAR',
      '_extra JSON',
    ]);
  });

  it('a record re-delivered with its fields in another order is unchanged (the rows compare, not only the bytes)', async () => {
    const dir = await tempDir('table-code-');
    await run(
      dir,
      '2026-05-01',
      [1, 2, 3].map((id) => ({ id, price: id * 10, updatedAt: 1000 })),
      false,
    );
    // A full run: id 1 the same record byte for byte, id 2 the same values in another field order
    // (other serialized bytes, the same row), id 3 a new price.
    await run(
      dir,
      '2026-05-02',
      [
        { id: 1, price: 10, updatedAt: 1000 },
        { updatedAt: 1000, price: 20, id: 2 },
        { id: 3, price: 31, updatedAt: 1000 },
      ],
      false,
    );
    const root = join(dir, 'table');
    const manifest = JSON.parse(await readFile(join(root, '_table.json'), 'utf8'));
    expect(manifest.versions.at(-1).counts).toEqual({ inserted: 0, updated: 1, deleted: 0, unchanged: 2 });
    const snap = await duckdbQuery(
      `SELECT id::INTEGER AS id, price::INTEGER AS price FROM read_parquet(${sqlString(join(root, 'snapshot/dt=2026-05-02/*.parquet'))})`,
    );
    expect(snap.rows).toEqual([
      { id: 1, price: 10 },
      { id: 2, price: 20 },
      { id: 3, price: 31 },
    ]);
  });

  it('a full run asks ctx.recordLookup for its delete candidates, in lookups of maxIds; without one it warns', async () => {
    const dir = await tempDir('table-code-');
    const fullRun = async (day: string, records: Array<Record<string, unknown>>, lookup?: RecordLookup) => {
      const ctx = testContext({ baseDir: dir, fields: lookup ? { recordLookup: lookup } : {} });
      ctx.run.id = `run-${day}`;
      ctx.run.startedAt = new Date(`${day}T02:00:00Z`);
      const events: Array<{ kind: string; code: string; [k: string]: unknown }> = [];
      ctx.events.on('info', (e) => events.push({ kind: 'info', ...e }));
      ctx.events.on('warning', (e) => events.push({ kind: 'warning', ...e }));
      await pipeline(
        randomBatches(records, 3),
        tableSink({ path: 'table', key: 'id', columns, deletes: { maxRatio: 1 }, sortBufferBytes: 300 }, ctx),
      );
      return events.filter((e) => e.code.startsWith('table.deletes'));
    };
    await fullRun(
      '2026-05-01',
      [1, 2, 3, 4, 5, 6].map((id) => ({ id, price: id * 10, updatedAt: 1000 })),
    );
    // The extract has 1 and 2; of the candidates 3..6 the API still has 3 (changed) and 5 (as it was).
    const asked: number[][] = [];
    const exists = new Map<number, Record<string, unknown>>([
      [3, { id: 3, price: 31, updatedAt: 2000 }],
      [5, { id: 5, price: 50, updatedAt: 1000 }],
    ]);
    const lookup: RecordLookup = {
      available: true,
      endpoint: 'test.lookup',
      maxIds: 2,
      async read(ids, onRecord) {
        asked.push(ids.map(Number));
        for (const id of ids) if (exists.has(Number(id))) await onRecord(exists.get(Number(id))!);
        return { requests: 1 };
      },
    };
    const checked = await fullRun(
      '2026-05-02',
      [1, 2].map((id) => ({ id, price: id * 10, updatedAt: 1000 })),
      lookup,
    );
    expect(asked).toEqual([
      [3, 4],
      [5, 6],
    ]);
    expect(checked).toEqual([
      expect.objectContaining({ kind: 'info', code: 'table.deletes_checking', candidates: 4 }),
      expect.objectContaining({
        kind: 'info',
        code: 'table.deletes_checked',
        checked: 4,
        kept: 2,
        deleted: 2,
        requests: 2,
      }),
    ]);
    const root = join(dir, 'table');
    const changes = await duckdbQuery(
      `SELECT id::INTEGER AS id, _change, price::INTEGER AS price FROM read_parquet(${sqlString(join(root, 'changes/dt=2026-05-02/*.parquet'))}) ORDER BY id`,
    );
    expect(changes.rows).toEqual([
      { id: 3, _change: 'update', price: 31 },
      { id: 4, _change: 'delete', price: 40 },
      { id: 6, _change: 'delete', price: 60 },
    ]);
    const snap = await duckdbQuery(
      `SELECT id::INTEGER AS id, price::INTEGER AS price FROM read_parquet(${sqlString(join(root, 'snapshot/dt=2026-05-02/*.parquet'))})`,
    );
    expect(snap.rows).toEqual([
      { id: 1, price: 10 },
      { id: 2, price: 20 },
      { id: 3, price: 31 },
      { id: 5, price: 50 },
    ]);

    // No lookup in the context: the deletes are written unchecked, as before, with a warning.
    const unchecked = await fullRun('2026-05-03', [{ id: 1, price: 10, updatedAt: 1000 }]);
    expect(unchecked).toEqual([expect.objectContaining({ kind: 'warning', code: 'table.deletes_unchecked' })]);
    expect(unchecked[0]!.message).toContain('3 delete(s) were not checked against the API');
    const manifest = JSON.parse(await readFile(join(root, '_table.json'), 'utf8'));
    expect(manifest.versions.map((v: any) => v.counts)).toEqual([
      { inserted: 6, updated: 0, deleted: 0, unchanged: 0 },
      { inserted: 0, updated: 1, deleted: 2, unchanged: 3 },
      { inserted: 0, updated: 0, deleted: 3, unchanged: 1 },
    ]);
  });

  it('refuses options naming what does not exist, and records without a key', async () => {
    const dir = await tempDir('table-code-');
    expect(() =>
      tableSink({ path: 'table', columns, ignoreFields: ['updated_at'] }, testContext({ baseDir: dir })),
    ).toThrow(ConfigError);
    expect(() =>
      tableSink({ path: 'table', columns, ignoreFields: ['updated_at'] }, testContext({ baseDir: dir })),
    ).toThrow(/ignoreFields names "updated_at", which is not a column/);
    const failed = await pipeline(
      randomBatches([{ id: 1 }, { price: 2 }], 1),
      tableSink({ path: 'table', columns }, testContext({ baseDir: dir })),
    ).then(
      () => undefined,
      (e: unknown) => e as Error & { code: string },
    );
    expect(failed?.code).toBe('table.key');
    expect(failed?.message).toContain('record #2 has no usable key at "id"');
    // A state cursor without the table it belongs to: the snapshot would hold only the changed records.
    const incremental = await pipeline(
      randomBatches([{ id: 1 }], 1),
      tableSink({ path: 'other', columns }, testContext({ baseDir: dir, run: { cursor: { previous: 5 } } })),
    ).then(
      () => undefined,
      (e: unknown) => e as Error & { code: string },
    );
    expect(incremental?.code).toBe('table.needs_full');
    expect(incremental?.message).toContain('--full-refresh');
  });
});
